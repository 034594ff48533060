/* egretd's signals, read from a signalfd in the main loop: SIGHUP reloads and reopens the sinks,
 * SIGTERM, SIGINT and SIGQUIT stop egretd; either sent from a sandbox is refused and reported
 * as a Tamper event naming the sender.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "egret/ocsf.h"
#include "egretd.h"
#include "log.h"
#include "peer.h"
#include "policy.h"
#include "sandbox.h"
#include "util.h"

/* Who sent a SIGHUP: the process that called kill(2) (its pid and uid from the signal, its
 * command from /proc), or the kernel (a terminal hangup).
 */
static void hup_sender(const struct signalfd_siginfo *si, struct ucred *cr, char *actor,
		       size_t size)
{
	char who[128];

	*cr = (struct ucred){ .pid = (pid_t)si->ssi_pid, .uid = si->ssi_uid, .gid = 0 };
	if (si->ssi_code == SI_KERNEL || !si->ssi_pid) {
		*cr = (struct ucred){ 0 }; /* pid 0: no process sent it */
		snprintf(actor, size, "SIGHUP from the kernel");
		return;
	}
	engine__actor_of(cr, who, sizeof(who));
	snprintf(actor, size, "SIGHUP from %s", who);
}

/* The sandbox cgroup the kernel recorded for this signal's sender when it sent it
 * (signal_senders, written by egret_sigsys for sandboxed senders only) into out; false when
 * there is no record of this sender. The record is used up.
 */
static bool signal_recorded(struct daemon *d, const struct signalfd_siginfo *si, char *out,
			    size_t size)
{
	struct egret_signal_key k = { .tgid = (__u32)getpid(), .sig = si->ssi_signo };
	int fd = d->loader.maps.signal_senders;
	struct egret_signal_sender v;
	const char *name;

	if (fd < 0 || bpf_map_lookup_elem(fd, &k, &v) || v.tgid != si->ssi_pid)
		return false;
	bpf_map_delete_elem(fd, &k);
	name = sandbox_names__lookup(&d->engine.reg, v.sandbox_id);
	if (name && name[0])
		return snprintf(out, size, "%s/%s", d->paths.cgroup_root, name) < (int)size;
	return snprintf(out, size, "%s/(sandbox %llu)", d->paths.cgroup_root,
			(unsigned long long)v.sandbox_id) < (int)size;
}

/* Where a signal's sender was: the kernel's record of its sandbox at send time first, else its
 * /proc entry now. A sender that is gone (reaped) cannot be told from a sandboxed one:
 * PEER_UNKNOWN.
 */
static void signal_sender(struct daemon *d, const struct signalfd_siginfo *si, struct peer *p)
{
	struct peer_scope scope = daemon__peer_scope(d);
	char recorded[PATH_MAX];

	peer__of_signal((pid_t)si->ssi_pid, si->ssi_uid,
			signal_recorded(d, si, recorded, sizeof(recorded)) ? recorded : NULL,
			&scope, p);
}

static void comm_of(pid_t pid, char *out, size_t size)
{
	char path[64];
	int n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = read_file(path, out, size);
	if (n <= 0)
		snprintf(out, size, "?");
	else
		out[strcspn(out, "\n")] = '\0';
}

/* A signal from a sandbox that egretd refused: a Tamper event naming the sender. */
static void emit_signal_tamper(struct daemon *d, const struct peer *p, int sig, const char *actor,
			       const char *outcome)
{
	struct peer_scope scope = daemon__peer_scope(d);
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	Egret__V1__Process pr = EGRET__V1__PROCESS__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	char name[256], dir[PATH_MAX], comm[64], detail[512];
	struct stat st;

	peer__sandbox(p, &scope, name, sizeof(name));
	if (!join_path(dir, sizeof(dir), d->paths.cgroup_root, name) && !stat(dir, &st))
		sb.cgroup_id = st.st_ino;
	sb.name = name;
	comm_of(p->cred.pid, comm, sizeof(comm));
	pr.pid = pr.tid = (uint32_t)p->cred.pid;
	pr.uid = p->cred.uid;
	pr.comm = comm;
	snprintf(detail, sizeof(detail), "%s in sandbox %s: refused, %s", actor, name, outcome);
	t.kind = EGRET__V1__TAMPER__KIND__KIND_SIGNAL;
	t.target = (uint64_t)sig;
	t.detail = detail;
	ev.sandbox = &sb;
	ev.process = &pr;
	ev.class_uid = OCSF_PROCESS_ACTIVITY;
	ev.activity_id = OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	ev.tamper = &t;
	stream__emit(&d->stream, &ev);
	log_warn("%s", detail);
}

/* SIGHUP: reload, and reopen the sinks (log rotation), for a sender outside every sandbox. One
 * in a sandbox is ignored and reported; one egretd cannot identify any more (it exited and was
 * reaped before egretd read the signal) is refused, since it may have been in a sandbox:
 * `egretctl reload` is the way that always works.
 */
static void on_hup(struct daemon *d, const struct signalfd_siginfo *si)
{
	char err[POLICY_ERR_LEN], actor[160], why[320];
	struct ucred cr;
	struct peer p = { .place = PEER_HOST };

	hup_sender(si, &cr, actor, sizeof(actor));
	if (cr.pid)
		signal_sender(d, si, &p);
	if (p.place == PEER_SANDBOX) {
		emit_signal_tamper(d, &p, SIGHUP, actor, "the policy was not reloaded");
		return;
	}
	if (p.place == PEER_UNKNOWN) {
		snprintf(why, sizeof(why),
			 "the sender could not be identified (%s), so it may have been in a "
			 "sandbox: not reloaded (use egretctl reload)",
			 p.why);
		engine__refuse_reload(&d->engine, actor, &cr, why);
		log_err("reload on %s: %s", actor, why);
	} else if (engine__reload(&d->engine, actor, &cr, false, err, sizeof(err))) {
		log_err("reload on %s: %s: nothing changed", actor, err);
	} else {
		log_info("reloaded %s on %s", d->opt.policy, actor);
	}
	for (unsigned int i = 0; i < d->stream.nsinks; i++)
		sink__reopen(d->stream.sinks[i]);
}

/* SIGTERM, SIGINT or SIGQUIT the kernel saw a sandboxed process send (its sender is dead by
 * now): egretd does not stop, and reports it.
 */
static bool stop_from_sandbox(struct daemon *d, const struct signalfd_siginfo *si)
{
	struct peer_scope scope = daemon__peer_scope(d);
	char recorded[PATH_MAX], actor[160], who[128];
	struct peer p;
	struct ucred cr = { .pid = (pid_t)si->ssi_pid, .uid = si->ssi_uid };

	if (!signal_recorded(d, si, recorded, sizeof(recorded)))
		return false;
	peer__of_signal(cr.pid, cr.uid, recorded, &scope, &p);
	if (p.place != PEER_SANDBOX)
		return false;
	engine__actor_of(&cr, who, sizeof(who));
	snprintf(actor, sizeof(actor), "%s from %s", sigabbrev_np((int)si->ssi_signo) ?: "signal",
		 who);
	emit_signal_tamper(d, &p, (int)si->ssi_signo, actor, "egretd did not stop");
	return true;
}

static void on_signal(struct watch *w, uint32_t events)
{
	struct daemon *d = w->data;
	struct signalfd_siginfo si;

	while (read(w->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			on_hup(d, &si);
			continue;
		}
		if (stop_from_sandbox(d, &si))
			continue;
		snprintf(d->stop_reason, sizeof(d->stop_reason), "%s",
			 strsignal((int)si.ssi_signo));
		d->loop.stop = true;
	}
}

int daemon__setup_signals(struct daemon *d)
{
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	d->sigw = (struct watch){ .fd = fd, .fn = on_signal, .data = d };
	return loop__add(&d->loop, &d->sigw, EPOLLIN);
}
