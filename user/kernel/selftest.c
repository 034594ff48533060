/* The start-up self-test of the kernel's path matcher; see selftest.h. The user-space matcher
 * here follows bpf/lib/audit.bpf.h path_wanted() step for step: FNV-1a of each of the first
 * EGRET_PATTERN_DEPTH components in the first EGRET_SELFTEST_PATH - 1 bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>

#include "egret/fnv.h"
#include "egret/policy.h"
#include "loader.h"
#include "log.h"
#include "selftest.h"
#include "util.h"

#define SAMPLE_TAIL "/egret-selftest" /* a name below each pattern's sample */

struct comps {
	__u64 hash[EGRET_PATTERN_DEPTH];
	unsigned int n;
};

static void comps_of(const char *path, size_t len, struct comps *c)
{
	__u64 h = EGRET_FNV64_OFFSET;
	bool in = false;

	if (len > EGRET_SELFTEST_PATH - 1)
		len = EGRET_SELFTEST_PATH - 1;
	c->n = 0;
	for (size_t j = 0;; j++) {
		char ch = j < len ? path[j] : '/';

		if (ch != '/') {
			in = true;
			h = egret_fnv64_byte(h, (__u8)ch);
			continue;
		}
		if (in && c->n < EGRET_PATTERN_DEPTH)
			c->hash[c->n++] = h;
		in = false;
		h = EGRET_FNV64_OFFSET;
		if (j >= len)
			break;
	}
}

static bool pattern_matches(const struct egret_pattern *p, const struct comps *c)
{
	if (p->ncomp > EGRET_PATTERN_DEPTH || c->n < p->ncomp)
		return false;
	for (unsigned int i = 0; i < p->ncomp; i++) {
		if (!(p->wild & (1u << i)) && p->hash[i] != c->hash[i])
			return false;
	}
	return true;
}

static bool any_matches(const struct egret_pattern *patterns, unsigned int n, const struct comps *c,
			__u8 kind)
{
	for (unsigned int i = 0; i < n; i++) {
		if (patterns[i].kind == kind && pattern_matches(&patterns[i], c))
			return true;
	}
	return false;
}

/* What the kernel's path_wanted() must say about path for kind. */
bool selftest__path_wanted(const struct egret_pattern *patterns, unsigned int n, const char *path,
			   size_t len, __u8 kind)
{
	struct comps c;

	comps_of(path, len, &c);
	if (kind == EGRET_PATTERN_WRITE && any_matches(patterns, n, &c, EGRET_PATTERN_SKIP))
		return false;
	return any_matches(patterns, n, &c, kind);
}

/* A path a pattern names: each '*' component becomes "x". 0, or -ENAMETOOLONG. */
int selftest__sample(const char *pattern, char *out, size_t size)
{
	size_t used = 0;

	for (const char *p = pattern; *p;) {
		size_t n = strcspn(p, "/");
		bool star = n == 1 && *p == '*';

		if (used + (n ? n : 1) + 1 > size)
			return -ENAMETOOLONG;
		if (!n) {
			out[used++] = *p++;
			continue;
		}
		memcpy(out + used, star ? "x" : p, star ? 1 : n);
		used += star ? 1 : n;
		p += n;
	}
	out[used] = '\0';
	return 0;
}

/* The kernel's answer for one path and kind: 0 or 1, or -errno. */
static int kernel_wants(int prog_fd, int map_fd, const char *path, __u8 kind)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	struct egret_selftest t = { .kind = kind };
	__u32 zero = 0;

	t.len = (__u32)strnlen(path, sizeof(t.path));
	memcpy(t.path, path, t.len);
	if (bpf_map_update_elem(map_fd, &zero, &t, BPF_ANY) ||
	    bpf_prog_test_run_opts(prog_fd, &opts))
		return -errno;
	return (int)opts.retval;
}

static int check_path(int prog_fd, int map_fd, const struct loader_config *cfg, const char *path)
{
	static const __u8 kinds[] = { EGRET_PATTERN_WRITE, EGRET_PATTERN_READ };

	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		bool want = selftest__path_wanted(cfg->patterns, cfg->npatterns, path, strlen(path),
						  kinds[k]);
		int got = kernel_wants(prog_fd, map_fd, path, kinds[k]);

		if (got < 0) {
			log_err("cannot run the path matcher's self-test (egret_selftest): %s",
				strerror(-got));
			return got;
		}
		if (got == (int)want)
			continue;
		log_err("this kernel's verifier broke egret's path matcher: a %s of %s is %s by the "
			"patterns but %s by the kernel; file events would be wrong, so egretd stops "
			"(run with --verbose and report it with the kernel release)",
			kinds[k] == EGRET_PATTERN_READ ? "read" : "write", path,
			want ? "reported" : "not reported", got ? "reported" : "not reported");
		return -EPROTO;
	}
	return 0;
}

/* Every configured pattern's sample path, and a name below it, then a few fixed paths. */
int selftest__path_matcher(int prog_fd, int map_fd, const struct loader_config *cfg)
{
	static const char *const fixed[] = { "/", "/egret-selftest", "/proc/1/environ", "/dev/null",
					     "/etc/hostname" };
	char path[EGRET_PATTERN_LEN + sizeof(SAMPLE_TAIL)];
	int err;

	if (prog_fd < 0 || map_fd < 0) {
		log_err("the path matcher's self-test (egret_selftest) is not loaded");
		return -ENOENT;
	}
	for (unsigned int i = 0; i < cfg->npatterns; i++) {
		if (!cfg->pattern_text[i][0] ||
		    selftest__sample(cfg->pattern_text[i], path, EGRET_PATTERN_LEN))
			continue;
		err = check_path(prog_fd, map_fd, cfg, path);
		if (err)
			return err;
		if (strlen(path) > 1)
			strcat(path, SAMPLE_TAIL);
		err = check_path(prog_fd, map_fd, cfg, path);
		if (err)
			return err;
	}
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
		err = check_path(prog_fd, map_fd, cfg, fixed[i]);
		if (err)
			return err;
	}
	log_debug("path matcher self-test passed (%u patterns)", cfg->npatterns);
	return 0;
}
