/* Why a program does not load: after a failed load, each program of the object (and of those
 * after it) is loaded alone in a fresh copy, and the verifier's log and libbpf's messages of
 * each one that fails are read down to one line naming the cause (the full log with --verbose).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "loader_int.h"
#include "log.h"
#include "util.h"

#define LOAD_LOG_SIZE  (4u << 20) /* a level-1 verifier log holds the failing path only */
#define LOAD_MSGS_SIZE 16384	  /* libbpf's own messages about one load */

/* the kernel release that brought a helper or kfunc egret's programs use, when it matters */
static const struct {
	const char *sym, *since;
} sym_since[] = {
	{ "bpf_task_from_pid", "6.3" },		{ "bpf_task_release", "6.3" },
	{ "bpf_send_signal_task", "6.13" },	{ "bpf_loop", "5.17" },
	{ "bpf_get_current_task_btf", "5.11" }, { "bpf_task_storage_get", "5.11" },
};

static const char *since_of(const char *sym)
{
	for (size_t i = 0; i < ARRAY_SIZE(sym_since); i++) {
		if (!strcmp(sym_since[i].sym, sym))
			return sym_since[i].since;
	}
	return NULL;
}

/* the identifier after key in text, into word; NULL when key is not there */
static const char *word_after(const char *text, const char *key, char *word, size_t size)
{
	const char *p = text ? strstr(text, key) : NULL;
	size_t n = 0;

	if (!p)
		return NULL;
	p += strlen(key);
	while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < size)
		n++;
	memcpy(word, p, n);
	word[n] = '\0';
	return word;
}

/* the rest of the line after key in text, into out; NULL when key is not there */
static const char *line_after(const char *text, const char *key, char *out, size_t size)
{
	const char *p = text ? strstr(text, key) : NULL;
	size_t n;

	if (!p)
		return NULL;
	p += strlen(key);
	n = strcspn(p, "\n");
	snprintf(out, size, "%.*s", (int)n, p);
	return out;
}

/* The verifier's last word: its last line but the statistics. */
static void last_line(const char *log, char *out, size_t size)
{
	const char *best = NULL, *p = log;
	size_t best_len = 0;

	while (p && *p) {
		size_t n = strcspn(p, "\n");

		if (n && strncmp(p, "processed ", 10) && strncmp(p, "verification time", 17) &&
		    strncmp(p, "stack depth", 11) && strncmp(p, "-- ", 3)) {
			best = p;
			best_len = n;
		}
		p += n + (p[n] == '\n');
	}
	snprintf(out, size, "%.*s", best ? (int)best_len : 0, best ? best : "");
}

static void explain_sym(char *out, size_t size, const char *what, const char *sym, const char *tail)
{
	const char *since = since_of(sym);

	snprintf(out, size, "%s %s %s%s%s%s", what, sym, tail, since ? " (Linux " : "",
		 since ? since : "", since ? " has it)" : "");
}

/* One line saying why a program did not load, from the verifier's log and libbpf's messages. */
void loader__explain(const char *vlog, const char *msgs, char *out, size_t size)
{
	char w[128], line[256];

	if (word_after(vlog, "unknown func ", w, sizeof(w)) ||
	    word_after(vlog, "cannot use helper ", w, sizeof(w)) ||
	    word_after(vlog, "program of this type cannot use helper ", w, sizeof(w)))
		explain_sym(out, size, "helper", w, "is not available to this program type here");
	else if (word_after(msgs, "extern (func ksym) '", w, sizeof(w)))
		explain_sym(out, size, "kfunc", w, "is missing from this kernel");
	else if (vlog && strstr(vlog, "BPF program is too large"))
		snprintf(out, size,
			 "too large for this kernel's verifier (1,000,000 instructions)");
	else if (line_after(vlog, "Unreleased reference", line, sizeof(line)))
		snprintf(out, size, "the verifier found a reference not released%s", line);
	else if (line_after(vlog, "failed to resolve CO-RE relocation ", line, sizeof(line)) ||
		 line_after(msgs, "failed to resolve CO-RE relocation ", line, sizeof(line)))
		snprintf(out, size, "a kernel type differs here: %s", line);
	else if (word_after(msgs, "failed to find kernel BTF type ID of '", w, sizeof(w)))
		snprintf(out, size, "this kernel has no tracepoint or function %s", w);
	else if (last_line(vlog, line, sizeof(line)), line[0])
		snprintf(out, size, "the verifier says: %s", line);
	else if (line_after(msgs, "BPF program load failed: ", line, sizeof(line)))
		snprintf(out, size, "the kernel refused it: %s", line);
	else if (last_line(msgs, line, sizeof(line)), line[0])
		snprintf(out, size, "%s", line);
	else
		snprintf(out, size, "no reason given");
}

int loader__diag_init(struct loader *l)
{
	if (!l->load_log)
		l->load_log = malloc(LOAD_LOG_SIZE);
	if (!l->load_msgs)
		l->load_msgs = malloc(LOAD_MSGS_SIZE);
	return l->load_log && l->load_msgs ? 0 : -ENOMEM;
}

void loader__diag_free(struct loader *l)
{
	free(l->load_log);
	free(l->load_msgs);
	l->load_log = l->load_msgs = NULL;
}

int loader__diag_load(struct loader *l, struct bpf_object *obj)
{
	struct bpf_program *prog;
	int err;

	bpf_object__for_each_program(prog, obj)
	{
		l->load_log[0] = '\0';
		bpf_program__set_log_buf(prog, l->load_log, LOAD_LOG_SIZE);
	}
	log_libbpf_capture(l->load_msgs, LOAD_MSGS_SIZE);
	err = bpf_object__load(obj);
	log_libbpf_capture(NULL, 0);
	return err;
}

/* Load one program of the unit alone, in a fresh copy of its object: 0, or -errno with the
 * verifier's log in l->load_log and libbpf's messages in l->load_msgs.
 */
static int load_alone(struct loader *l, const struct loader_unit *u, const char *name)
{
	struct loader_unit t = { .ops = u->ops };
	struct bpf_program *prog;
	int err = u->ops->open(&t, l->paths, l->cfg);

	if (err)
		return err;
	bpf_object__for_each_program(prog, t.obj)
		bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog), name));
	err = loader__diag_load(l, t.obj);
	u->ops->destroy(t.skel);
	return err;
}

/* After a failed load: which of the unit's programs cannot load, and why, one line each (the
 * full verifier log with --verbose). Returns how many.
 */
static unsigned int diagnose_unit(struct loader *l, const struct loader_unit *u)
{
	const struct kernel_features *kf = l->cfg->kf;
	struct bpf_program *prog;
	unsigned int bad = 0;

	bpf_object__for_each_program(prog, u->obj)
	{
		const char *name = bpf_program__name(prog);
		char why[512];

		if (!bpf_program__autoload(prog) || !load_alone(l, u, name))
			continue;
		loader__explain(l->load_log, l->load_msgs, why, sizeof(why));
		log_err("program '%s' (%s, object '%s') cannot load on Linux %s: %s", name,
			bpf_program__section_name(prog), u->ops->name, kf ? kf->release : "here",
			why);
		log_text(LOG_LVL_DEBUG, "%s%s-- end of the log of '%s' --\n", l->load_msgs,
			 l->load_log, name);
		bad++;
	}
	return bad;
}

void loader__diagnose(struct loader *l, unsigned int from, int err)
{
	unsigned int bad = 0;

	for (unsigned int i = from; i < l->nunits; i++)
		bad += diagnose_unit(l, &l->units[i]);
	if (!bad) {
		log_err("failed to load BPF object '%s': %s (each of its programs loads alone)",
			l->units[from].ops->name, strerror(-err));
		return;
	}
	log_err("%u program%s cannot load on this kernel; nothing new was attached%s", bad,
		bad == 1 ? "" : "s",
		log_enabled(LOG_LVL_DEBUG) ? "" : " (run with --verbose for the verifier logs)");
}
