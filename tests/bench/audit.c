/* egret_bench_audit: what the audit stream costs the processes it watches, and egretd.
 *
 * Two storms, each one process at a time on CPU 0 running as an unprivileged uid of its own
 * (agents on CPU 1):
 *   exec storm    fork + exec /bin/true + wait
 *   file storm    create, write 64 bytes, close, unlink
 * in four places, measured in interleaved rounds of the same run:
 *   no agent        a plain cgroup, no egretd, no audit rules
 *   egret, outside  egretd running, the storm in a cgroup outside its sandboxes (what every
 *                   other process on the host pays for egret's tracepoints)
 *   egret           the storm in a sandbox of egretd (its default audit options)
 *   auditd          auditd with rules for the same syscalls (execve, clone, opens for write,
 *                   creat, unlink, rename, chmod) filtered to the storm's uid
 * Each configuration's median rate is printed as a ratio to "no agent"'s, with the agent's CPU
 * time per 1,000 events (egretd; auditd plus the kauditd kernel thread) and events lost (egret:
 * records the stream is missing, counted against what the storm did; auditd: the kernel's lost
 * counter). Then a paced exec storm at 1,600 execs/s (Sysmon for Linux's published test load)
 * for egret and auditd: the agent's share of one core and events lost; a machine that cannot
 * exec that fast gets its achieved rate and the agent's CPU per exec scaled to the pace.
 *
 * auditd: started from a config of the bench's own (log in the bench's temp dir) unless one is
 * running; the bench's rules carry the key "egret-bench" and are deleted at the end. While it
 * measures other configurations a "never,task" rule keeps audit off the storm's processes.
 * Last, egret's BPF time per operation from kernel.bpf_stats_enabled (on for the storm, then put
 * back), per program and in all: the exec storm in a sandbox, and an open storm (a file no read
 * pattern names, opened read-only and closed: an open egret does not report). With
 * --without-kernel-feature NAME each is measured again with egretd told the kernel lacks NAME
 * (its fallback), and the ratio of the two printed.
 * Run as root:
 *   egret_bench_audit [--rounds N] [--seconds S] [--paced-seconds S] [--paced-rate R] [--no-auditd]
 *                     [--bpf-seconds S] [--bpf-only] [--without-kernel-feature NAME]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bench.h"
#include "cgroup.h"
#include "collector.h"
#include "harness.h"
#include "util.h"

/* The storms run as "nobody": auditd's rules filter on the uid, and a uid with a name keeps
 * auditd's ENRICHED log format from looking it up in NSS afresh for every record.
 */
#define STORM_UID  65534
#define AUDIT_KEY  "egret-bench"
#define MAX_ROUNDS 32

enum storm {
	EXEC_STORM,
	FILE_STORM,
	STORMS,
	/* bpf_stats only: open a file egret does not report (read-only, no read pattern names
	 * it) and close it
	 */
	OPEN_STORM = STORMS,
};
enum config {
	NO_AGENT,
	EGRET_OUTSIDE,
	EGRET,
	AUDITD,
	CONFIGS
};

static const char *const storm_names[STORMS] = { "exec storm (fork + exec /bin/true + wait)",
						 "file storm (create, write, close, unlink)" };
static const char *const config_names[CONFIGS] = { "no agent", "egret, outside sandboxes",
						   "egret, in a sandbox", "auditd" };

struct sample {
	double rate;	   /* operations per second */
	uint64_t ops;	   /* operations done */
	uint64_t events;   /* events the agent recorded */
	uint64_t lost;	   /* events the agent lost */
	double agent_cpu;  /* seconds */
	double idle_share; /* paced runs: the agent's share of a core with nothing happening */
};

#define IDLE_SECONDS 3

static struct sample samples[CONFIGS][STORMS][MAX_ROUNDS];
static char base_cgroup[PATH_MAX], files_dir[PATH_MAX], audit_dir[PATH_MAX];
static struct egret_instance inst;
static pid_t our_auditd, kauditd;
static int audit_enabled_before = -1;
static bool use_auditd = true;

/* ---- the storms ---------------------------------------------------------------------------- */

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = t_ns / 1000000000ull, .tv_nsec = t_ns % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int exec_once(void)
{
	static char *const argv[] = { "/bin/true", NULL }, *const envp[] = { NULL };
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execve(argv[0], argv, envp);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return 0;
}

static int file_once(uint64_t i)
{
	static const char data[64] = "egret bench";
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/f%llu", files_dir, (unsigned long long)i);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, sizeof(data)) != sizeof(data))
		return -1;
	close(fd);
	return unlink(path);
}

static int open_once(void)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/plain.txt", files_dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* In a child in cgroup, as STORM_UID: the storm for `seconds`, paced at `pace` per second when
 * pace > 0; the result through shared memory.
 */
static struct sample run_storm(enum storm s, const char *cgroup, double seconds, double pace)
{
	struct sample *shared, out = {};
	pid_t pid;

	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		      0);
	if (shared == MAP_FAILED)
		return out;
	memset(shared, 0, sizeof(*shared));
	pid = fork();
	if (pid == 0) {
		uint64_t t0, end, i = 0, now;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bench_pin(0, 0);
		if (cgroup__join(cgroup, getpid()) || setgroups(0, NULL) || setgid(STORM_UID) ||
		    setuid(STORM_UID))
			_exit(1);
		t0 = now = now_ns(CLOCK_MONOTONIC);
		end = t0 + (uint64_t)(seconds * 1e9);
		while (now < end) {
			if (pace > 0)
				sleep_until(t0 + (uint64_t)(i * 1e9 / pace));
			if (s == EXEC_STORM   ? exec_once()
			    : s == FILE_STORM ? file_once(i)
					      : open_once())
				_exit(2);
			i++;
			now = now_ns(CLOCK_MONOTONIC);
		}
		shared->ops = i;
		shared->rate = i / ((now - t0) / 1e9);
		_exit(0);
	}
	int status = 0;

	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		out = *shared;
	else
		fprintf(stderr, "bench: the %s failed in %s (status %#x)\n",
			s < STORMS ? storm_names[s] : "open storm", cgroup, status);
	munmap(shared, sizeof(*shared));
	return out;
}

/* ---- egret ----------------------------------------------------------------------------------- */

static uint64_t ringbuf_drops(void)
{
	char pin[PATH_MAX + 32];
	uint64_t sum = 0;
	int fd;

	snprintf(pin, sizeof(pin), "%s/maps/counters", inst.state_dir);
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return 0;
	collector__counter(fd, EGRET_CNT_RINGBUF_DROPS, &sum);
	close(fd);
	return sum;
}

/* Every record of the storm is counted against the stream: no file budget (the default, 20,000
 * file records a second per sandbox, would turn most of the file storm into Loss counts).
 */
/* without: a kernel feature egretd is to do without (--without-kernel-feature), or NULL */
static void start_egret(const char *without)
{
	const char *args[] = { "--file-budget", "0", without ? "--without-kernel-feature" : NULL,
			       without, NULL };

	if (harness_init(&inst) || harness_start(&inst, args)) {
		fprintf(stderr, "bench: egretd did not start:\n%s\n", harness_log(&inst));
		exit(1);
	}
	bench_pin(inst.egretd, 1);
}

static bool is_audit_event(const Egret__V1__Event *ev)
{
	switch (ev->payload_case) {
	case EGRET__V1__EVENT__PAYLOAD_EXEC:
	case EGRET__V1__EVENT__PAYLOAD_FORK:
	case EGRET__V1__EVENT__PAYLOAD_EXIT:
	case EGRET__V1__EVENT__PAYLOAD_FILE:
		return true;
	default:
		return false;
	}
}

/* The storm's events in egret's stream: execs of /bin/true, or creates and deletes under the
 * storm's directory; *all gets every event of the sandbox "bench" (forks and exits too), or
 * with any_sandbox, every process and file event at all.
 */
static void count_egret_events(bool any_sandbox, uint64_t counts[STORMS], uint64_t *all,
			       uint64_t *loss_events)
{
	struct events evs;

	counts[EXEC_STORM] = counts[FILE_STORM] = *all = *loss_events = 0;
	if (events_read(inst.sink_path, &evs))
		return;
	for (size_t i = 0; i < evs.n; i++) {
		const Egret__V1__Event *ev = evs.ev[i];

		if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_LOSS) {
			(*loss_events)++;
			continue;
		}
		if (any_sandbox ? !is_audit_event(ev)
				: !ev->sandbox || strcmp(ev->sandbox->name, "bench"))
			continue;
		(*all)++;
		if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXEC && ev->exec->n_args &&
		    !strcmp(ev->exec->args[0], "/bin/true"))
			counts[EXEC_STORM]++;
		else if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FILE &&
			 strstr(ev->file->path, files_dir) &&
			 (ev->file->op == EGRET__V1__FILE_ACTIVITY__OP__OP_CREATE ||
			  ev->file->op == EGRET__V1__FILE_ACTIVITY__OP__OP_UNLINK))
			counts[FILE_STORM]++;
	}
	events_free(&evs);
}

/* A new file with text in it. */
static int create_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t len = strlen(text);
	bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	if (!ok)
		fprintf(stderr, "bench: cannot write %s: %s\n", path, strerror(errno));
	return ok ? 0 : -1;
}

/* ---- auditd ---------------------------------------------------------------------------------- */

static int auditctl(char *out, size_t size, const char *a1, const char *a2, const char *a3)
{
	char *argv[] = { "auditctl", (char *)a1, (char *)a2, (char *)a3, NULL };

	return run_cmd(argv, out, size);
}

/* A field of `auditctl -s`; -1 when absent. */
static long long audit_status(const char *field)
{
	char out[4096], key[64], *p;

	if (auditctl(out, sizeof(out), "-s", NULL, NULL))
		return -1;
	snprintf(key, sizeof(key), "\n%s ", field);
	memmove(out + 1, out, strlen(out) + 1);
	out[0] = '\n';
	p = strstr(out, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static int audit_rules(const char *text)
{
	char path[PATH_MAX + 16], out[4096];
	int err;

	snprintf(path, sizeof(path), "%s/rules", audit_dir);
	if (create_file(path, text, 0600))
		return -1;
	err = auditctl(out, sizeof(out), "-R", path, NULL);
	if (err)
		fprintf(stderr, "bench: auditctl -R: %s\n", out);
	return err;
}

#define U "-F uid=65534 -k " AUDIT_KEY "\n"
static const char storm_rules[] =
	"-a always,exit -F arch=b64 -S execve,execveat " U
	"-a always,exit -F arch=b64 -S clone,clone3,fork,vfork " U
	"-a always,exit -F arch=b64 -S openat -F a2&0x243 " U
	"-a always,exit -F arch=b64 -S open -F a1&0x243 " U
	"-a always,exit -F arch=b64 -S creat,unlink,unlinkat,rename,renameat,renameat2 " U
	"-a always,exit -F arch=b64 -S chmod,fchmod,fchmodat " U;
static bool quiet_rule; /* the bench added "-a never,task" */

/* "-a never,task" keeps audit off tasks created while other configurations are measured (task
 * rules take no key: the bench remembers whether it added one).
 */
static void audit_quiet(bool on)
{
	char out[4096];

	if (on && !quiet_rule) {
		auditctl(out, sizeof(out), "-l", NULL, NULL);
		if (!strstr(out, "-a never,task"))
			quiet_rule = !auditctl(NULL, 0, "-a", "never,task", NULL);
	} else if (!on && quiet_rule) {
		auditctl(NULL, 0, "-d", "never,task", NULL);
		quiet_rule = false;
	}
}

static void audit_delete_ours(void)
{
	auditctl(NULL, 0, "-D", "-k", AUDIT_KEY);
	audit_quiet(false);
}

static pid_t find_kauditd(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	while (d && (de = readdir(d)) && !found) {
		char path[300], comm[32];

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (read_file(path, comm, sizeof(comm)) > 0 && !strncmp(comm, "kauditd", 7))
			found = atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

static int start_auditd(void)
{
	char conf[PATH_MAX + 16], text[1024], plugins[PATH_MAX + 16];
	pid_t running = (pid_t)audit_status("pid");

	audit_enabled_before = (int)audit_status("enabled");
	if (audit_enabled_before < 0) {
		fprintf(stderr,
			"bench: auditctl does not work; install auditd or pass --no-auditd\n");
		return -1;
	}
	snprintf(plugins, sizeof(plugins), "%s/plugins.d", audit_dir);
	mkdir(plugins, 0750);
	if (running <= 0) {
		snprintf(conf, sizeof(conf), "%s/auditd.conf", audit_dir);
		snprintf(
			text, sizeof(text),
			"log_file = %s/audit.log\nlog_format = ENRICHED\nlog_group = root\n"
			"flush = INCREMENTAL_ASYNC\nfreq = 50\nmax_log_file = 0\n"
			"max_log_file_action = IGNORE\nspace_left = 75\nspace_left_action = IGNORE\n"
			"admin_space_left = 50\nadmin_space_left_action = IGNORE\n"
			"disk_full_action = IGNORE\ndisk_error_action = IGNORE\n"
			"q_depth = 2000\nplugin_dir = %s\n",
			audit_dir, plugins);
		if (create_file(conf, text, 0640))
			return -1;
		our_auditd = fork();
		if (our_auditd == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			execlp("auditd", "auditd", "-n", "-c", audit_dir, NULL);
			_exit(127);
		}
		for (int i = 0; i < 50 && (running = (pid_t)audit_status("pid")) <= 0; i++)
			usleep(100000);
		if (running <= 0) {
			fprintf(stderr, "bench: auditd did not start\n");
			return -1;
		}
	} else {
		printf("using the auditd already running (pid %d)\n", running);
	}
	bench_pin(running, 1);
	kauditd = find_kauditd();
	/* the backlog of a stock Debian rules file */
	auditctl(NULL, 0, "-b", "8192", NULL);
	auditctl(NULL, 0, "-e", "1", NULL);
	audit_quiet(true);
	return 0;
}

static void stop_auditd(void)
{
	if (audit_enabled_before < 0)
		return;
	audit_delete_ours();
	if (our_auditd > 0) {
		kill(our_auditd, SIGTERM);
		waitpid(our_auditd, NULL, 0);
		our_auditd = 0;
	}
	if (audit_enabled_before >= 0) {
		char v[8];

		snprintf(v, sizeof(v), "%d", audit_enabled_before);
		auditctl(NULL, 0, "-e", v, NULL);
	}
	audit_enabled_before = -1;
}

static double auditd_cpu(void)
{
	return bench_cpu_seconds((pid_t)audit_status("pid")) +
	       (kauditd ? bench_cpu_seconds(kauditd) : 0);
}

/* SYSCALL records with the bench's key written since *offset (our own auditd's log only). */
static uint64_t auditd_records(long *offset)
{
	char path[PATH_MAX + 16], line[8192];
	uint64_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/audit.log", audit_dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	fseek(f, *offset, SEEK_SET);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "type=SYSCALL", 12) && strstr(line, "key=\"" AUDIT_KEY "\""))
			n++;
	}
	*offset = ftell(f);
	fclose(f);
	return n;
}

/* ---- one configuration ------------------------------------------------------------------------ */

/* Both storms in configuration c, or the paced exec storm when pace > 0 (into out[EXEC]). */
static void measure(enum config c, double seconds, double pace, struct sample out[STORMS])
{
	char sandbox[PATH_MAX];
	const char *cgroup = base_cgroup;
	uint64_t drops0 = 0, counts[STORMS], all, loss_events;
	long log_off = 0;
	double cpu0 = 0, cpu1 = 0;
	int nstorms = pace > 0 ? 1 : STORMS;

	if (c == EGRET || c == EGRET_OUTSIDE) {
		start_egret(NULL);
		snprintf(sandbox, sizeof(sandbox), "%s/bench", inst.cgroup_root);
		if (c == EGRET) {
			mkdir(sandbox, 0755);
			cgroup = sandbox;
		}
		usleep(200000); /* the sandbox's creation event, out of the way */
		drops0 = ringbuf_drops();
		cpu0 = bench_cpu_seconds(inst.egretd);
	} else if (c == AUDITD) {
		audit_delete_ours();
		audit_rules(storm_rules);
		auditd_records(&log_off); /* from the end of the log */
		cpu0 = auditd_cpu();
	}
	int64_t lost0 = c == AUDITD ? audit_status("lost") : 0;
	double idle_share = 0;

	if (pace > 0) {
		/* what the agent costs doing nothing, for scaling its CPU to the pace */
		sleep(IDLE_SECONDS);
		idle_share =
			((c == AUDITD ? auditd_cpu() : bench_cpu_seconds(inst.egretd)) - cpu0) /
			IDLE_SECONDS;
		cpu0 += idle_share * IDLE_SECONDS;
	}

	for (int s = 0; s < nstorms; s++)
		out[s] = run_storm((enum storm)s, cgroup, seconds, pace);

	if (c == EGRET || c == EGRET_OUTSIDE) {
		usleep(300000); /* egretd drains every 25 ms */
		cpu1 = bench_cpu_seconds(inst.egretd);
		count_egret_events(c == EGRET_OUTSIDE, counts, &all, &loss_events);
		for (int s = 0; s < nstorms; s++) {
			uint64_t want = c == EGRET ? out[s].ops * (s == EXEC_STORM ? 1 : 2) : 0;

			out[s].lost = want > counts[s] ? want - counts[s] : 0;
			out[s].events = all; /* both storms share the instance: split below */
		}
		if (c == EGRET_OUTSIDE && all)
			fprintf(stderr,
				"bench: %llu events from outside the sandboxes (expected none)\n",
				(unsigned long long)all);
		out[0].lost += ringbuf_drops() - drops0 + loss_events;
		harness_cleanup(&inst);
	} else if (c == AUDITD) {
		usleep(300000);
		cpu1 = auditd_cpu();
		out[0].lost = (uint64_t)(audit_status("lost") - lost0);
		out[0].events = our_auditd ? auditd_records(&log_off) : 0;
		audit_delete_ours();
		audit_quiet(true);
	}
	/* CPU and events over the whole configuration, kept in the first storm's sample */
	out[0].agent_cpu = cpu1 - cpu0;
	out[0].idle_share = idle_share;
	for (int s = 1; s < nstorms; s++)
		out[s].agent_cpu = 0;
}

/* ---- report -------------------------------------------------------------------------------- */

static void report(int rounds, double seconds)
{
	double base[STORMS];

	for (int s = 0; s < STORMS; s++) {
		double v[MAX_ROUNDS];

		for (int r = 0; r < rounds; r++)
			v[r] = samples[NO_AGENT][s][r].rate;
		base[s] = bench_median(v, rounds);
	}
	printf("\n%d interleaved rounds of %.1f s per storm; medians, ratios to \"no agent\"\n",
	       rounds, seconds);
	for (int s = 0; s < STORMS; s++) {
		printf("\n%s\n%-26s %10s %12s\n", storm_names[s], "config", "ops/s", "vs no agent");
		for (int c = 0; c < CONFIGS; c++) {
			double v[MAX_ROUNDS];

			if (c == AUDITD && !use_auditd)
				continue;
			for (int r = 0; r < rounds; r++)
				v[r] = samples[c][s][r].rate;
			printf("%-26s %10.0f %12.3f\n", config_names[c], bench_median(v, rounds),
			       bench_median(v, rounds) / base[s]);
		}
	}
	printf("\nagents, over both storms of every round:\n%-26s %10s %10s %14s %10s\n", "config",
	       "events", "lost", "CPU ms/1000ev", "CPU ms");
	for (int c = EGRET; c < CONFIGS; c++) {
		uint64_t events = 0, lost = 0;
		double cpu = 0;

		if (c == AUDITD && !use_auditd)
			continue;
		for (int r = 0; r < rounds; r++) {
			events += samples[c][0][r].events;
			for (int s = 0; s < STORMS; s++)
				lost += samples[c][s][r].lost;
			cpu += samples[c][0][r].agent_cpu;
		}
		printf("%-26s %10llu %10llu %14.2f %10.0f\n", config_names[c],
		       (unsigned long long)events, (unsigned long long)lost,
		       events ? cpu * 1e6 / events : 0, cpu * 1e3);
	}
	if (use_auditd)
		printf("(auditd: SYSCALL records, one per audited syscall; it has no exit records;"
		       " CPU is auditd plus kauditd)\n");
}

/* ---- egret's BPF per operation (kernel.bpf_stats_enabled) ------------------------------------ */

#define MAX_PROGS 128

struct prog_snap {
	uint32_t id;
	char name[BPF_OBJ_NAME_LEN];
	struct bench_prog_stats st;
};

/* Every program behind a link egretd pinned, each once: how many into snap */
static int snap_progs(struct prog_snap *snap)
{
	char dir[PATH_MAX + 16], pin[PATH_MAX + 300];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/links", inst.state_dir);
	d = opendir(dir);
	while (d && (de = readdir(d)) && n < MAX_PROGS) {
		struct bpf_link_info li = {};
		struct bpf_prog_info pi = {};
		__u32 ll = sizeof(li), pl = sizeof(pi);
		bool dup = false;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(pin, sizeof(pin), "%s/%s", dir, de->d_name);
		fd = bpf_obj_get(pin);
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &li, &ll)) {
			close(fd);
			continue;
		}
		close(fd);
		for (int i = 0; i < n; i++)
			dup |= snap[i].id == li.prog_id;
		if (dup)
			continue;
		fd = bpf_prog_get_fd_by_id(li.prog_id);
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &pi, &pl) == 0) {
			snap[n].id = li.prog_id;
			memcpy(snap[n].name, pi.name, sizeof(snap[n].name));
			snap[n].st = (struct bench_prog_stats){ .ns = pi.run_time_ns,
								.cnt = pi.run_cnt,
								.found = true };
			n++;
		}
		close(fd);
	}
	if (d)
		closedir(d);
	return n;
}

/* Storm s in a sandbox of egretd (default audit options but the file budget; without: a kernel
 * feature it is to do without, or NULL): egret's BPF time per operation, in all and per program
 * that ran, from kernel.bpf_stats_enabled (on for the storm, then put back as it was). Returns
 * the total net of bpf_stats' own cost, in ns an operation (0: not measured).
 */
static double bpf_cost(enum storm s, double seconds, const char *without)
{
	static struct prog_snap a[MAX_PROGS], b[MAX_PROGS];
	struct bench_prog_stats nop_a, nop_b;
	struct bench_nop nop;
	char sandbox[PATH_MAX];
	struct sample out;
	double total = 0, runs_all = 0, floor;
	int na, nb, err;

	start_egret(without);
	snprintf(sandbox, sizeof(sandbox), "%s/bench", inst.cgroup_root);
	mkdir(sandbox, 0755);
	usleep(200000);
	err = bench_nop_open(&nop);
	if (err)
		fprintf(stderr, "bench: no empty program to measure bpf_stats' own cost: %s\n",
			strerror(-err));
	bench_stats_on();
	na = snap_progs(a);
	bench_nop_stats(&nop, &nop_a);
	out = run_storm(s, sandbox, seconds, 0);
	bench_nop_stats(&nop, &nop_b);
	nb = snap_progs(b);
	bench_stats_off();
	bench_nop_close(&nop);
	floor = nop_a.found && nop_b.found ? bench_ns_per_run(&nop_a, &nop_b) : 0;
	printf("\n%s in a sandbox%s%s, %llu operations: egret's BPF per operation\n%-18s %12s "
	       "%12s %12s\n",
	       s == EXEC_STORM ? "exec storm (fork + exec /bin/true + exit)"
			       : "open storm (open a file no pattern names read-only, close)",
	       without ? ", egretd --without-kernel-feature " : "", without ? without : "",
	       (unsigned long long)out.ops, "program", "runs/op", "ns/run", "ns/op");
	for (int j = 0; j < nb && out.ops; j++) {
		for (int i = 0; i < na; i++) {
			uint64_t runs, ns;

			if (a[i].id != b[j].id)
				continue;
			runs = b[j].st.cnt - a[i].st.cnt;
			ns = b[j].st.ns - a[i].st.ns;
			if (!runs)
				break;
			total += (double)ns / (double)out.ops;
			runs_all += (double)runs / (double)out.ops;
			printf("%-18s %12.2f %12.0f %12.0f\n", b[j].name,
			       (double)runs / (double)out.ops, (double)ns / (double)runs,
			       (double)ns / (double)out.ops);
			break;
		}
	}
	printf("%-18s %12.2f %12s %12.0f (%.2f us)\n", "all of egret", runs_all, "", total,
	       total / 1e3);
	/* each run counted includes bpf_stats' own clock reads, which cost nothing with it off */
	if (floor > 0)
		printf("%-18s %12.2f %12.0f %12.0f\n%-18s %12s %12s %12.0f (%.2f us)\n",
		       "bpf_stats itself", runs_all, floor, floor * runs_all, "egret, net of it",
		       "", "", total - floor * runs_all, (total - floor * runs_all) / 1e3);
	harness_cleanup(&inst);
	return floor > 0 && out.ops ? total - floor * runs_all : 0;
}

/* Each storm's BPF cost; with without, again with egretd doing without that kernel feature, and
 * the ratio of the two (net of bpf_stats) in the same run.
 */
static void bpf_costs(double seconds, const char *without)
{
	static const enum storm storms[] = { EXEC_STORM, OPEN_STORM };

	for (size_t i = 0; i < sizeof(storms) / sizeof(storms[0]); i++) {
		enum storm s = storms[i];
		double with = bpf_cost(s, seconds, NULL), fallback;

		if (!without)
			continue;
		fallback = bpf_cost(s, seconds, without);
		if (with > 0 && fallback > 0)
			printf("%s: %.2f us net with the kernel's %s, %.2f us without: %.2fx\n",
			       s == EXEC_STORM ? "exec storm" : "open storm", with / 1e3, without,
			       fallback / 1e3, fallback / with);
		else
			printf("%s: no ratio (bpf_stats' own cost could not be measured, see above)\n",
			       s == EXEC_STORM ? "exec storm" : "open storm");
	}
}

static void cleanup(void)
{
	stop_auditd();
	harness_cleanup(&inst);
	rmdir(base_cgroup);
	if (files_dir[0]) {
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf %s %s", files_dir, audit_dir);
		if (system(cmd))
			fprintf(stderr, "bench: could not remove %s\n", files_dir);
	}
}

static void on_signal(int sig)
{
	(void)sig;
	exit(130); /* runs cleanup() */
}

int main(int argc, char **argv)
{
	int rounds = 5;
	double seconds = 2, paced_seconds = 10, paced_rate = 1600, bpf_seconds = 3;
	bool bpf_only = false, no_auditd = false;
	const char *without = NULL;
	char mount_root[PATH_MAX];
	struct sample paced[CONFIGS][STORMS] = {};
	static const char usage[] = "usage: egret_bench_audit [--rounds 1-" BENCH_STR(
		MAX_ROUNDS) "] [--seconds S] "
			    "[--paced-seconds S] [--paced-rate EXECS/S] [--no-auditd] [--bpf-seconds S] "
			    "[--bpf-only] [--without-kernel-feature NAME]\n";
	const struct bench_opt opts[] = {
		{ "--rounds", 'i', &rounds },
		{ "--seconds", 'd', &seconds },
		{ "--paced-seconds", 'd', &paced_seconds },
		{ "--paced-rate", 'd', &paced_rate },
		{ "--bpf-seconds", 'd', &bpf_seconds },
		{ "--bpf-only", 'b', &bpf_only },
		{ "--no-auditd", 'b', &no_auditd },
		{ "--without-kernel-feature", 's', &without },
		{},
	};

	bench_args(argc, argv, opts, usage);
	use_auditd = !no_auditd;
	if (rounds < 1 || rounds > MAX_ROUNDS || seconds <= 0 || paced_seconds <= 0 ||
	    paced_rate <= 0 || bpf_seconds <= 0) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "egret_bench_audit: run as root\n");
		return 1;
	}
	harness_sweep_stale();
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	cgroup__find_v2_mount(mount_root, sizeof(mount_root));
	snprintf(base_cgroup, sizeof(base_cgroup), "%s/" HARNESS_PREFIX "%d-audit-base", mount_root,
		 getpid());
	snprintf(files_dir, sizeof(files_dir), "/tmp/" HARNESS_PREFIX "%d-audit-files", getpid());
	snprintf(audit_dir, sizeof(audit_dir), "/tmp/" HARNESS_PREFIX "%d-auditd", getpid());
	if ((mkdir(base_cgroup, 0755) && errno != EEXIST) || mkdir(files_dir, 0755) ||
	    chown(files_dir, STORM_UID, STORM_UID) || mkdir(audit_dir, 0700)) {
		fprintf(stderr, "bench: set-up failed: %s\n", strerror(errno));
		return 1;
	}
	{
		char plain[PATH_MAX + 16];
		int fd;

		snprintf(plain, sizeof(plain), "%s/plain.txt", files_dir);
		fd = open(plain, O_CREAT | O_WRONLY, 0644);
		if (fd < 0 || write(fd, "plain\n", 6) != 6) {
			fprintf(stderr, "bench: cannot write %s: %s\n", plain, strerror(errno));
			return 1;
		}
		close(fd);
	}
	if (bpf_only) {
		bpf_costs(bpf_seconds, without);
		return 0;
	}
	if (use_auditd && start_auditd())
		return 1;

	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < CONFIGS; k++) {
			enum config c = (enum config)((k + r) % CONFIGS); /* rotate the order */

			if (c == AUDITD && !use_auditd)
				continue;
			struct sample out[STORMS];

			measure(c, seconds, 0, out);
			for (int s = 0; s < STORMS; s++)
				samples[c][s][r] = out[s];
		}
		printf("round %d/%d done\n", r + 1, rounds);
		fflush(stdout);
	}
	report(rounds, seconds);

	printf("\nexec storm paced at %.0f/s for %.0f s (agent CPU as %% of one core):\n"
	       "%-26s %10s %10s %10s %14s %14s %10s\n",
	       paced_rate, paced_seconds, "config", "execs/s", "events", "lost", "CPU %",
	       "at the pace", "idle");
	for (int c = EGRET; c < CONFIGS; c++) {
		struct sample *p = &paced[c][0];
		double share;

		if (c == AUDITD && !use_auditd)
			continue;
		measure((enum config)c, paced_seconds, paced_rate, paced[c]);
		share = p->agent_cpu / paced_seconds * 100;
		/* a machine slower than the pace: idle share plus the CPU per exec times the pace */
		printf("%-26s %10.0f %10llu %10llu %14.2f %14.2f %10.2f\n", config_names[c],
		       p->rate, (unsigned long long)p->events, (unsigned long long)p->lost, share,
		       p->rate > 0 ? p->idle_share * 100 +
					     (share - p->idle_share * 100) * paced_rate / p->rate
				   : 0,
		       p->idle_share * 100);
	}
	if (paced[EGRET][0].rate < paced_rate * 0.95)
		printf("(this machine execs slower than %.0f/s; \"at the pace\" is the idle share plus "
		       "the agent's CPU per exec times %.0f)\n",
		       paced_rate, paced_rate);
	bpf_costs(bpf_seconds, without);
	return 0;
}
