/* Logging to stderr with a program prefix, and libbpf's output routed through the same filter
 * (libbpf debug chatter only with --verbose).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "log.h"

static const char *log_prog = "egret";
static enum log_level log_level = LOG_LVL_INFO;

/* while set, libbpf's output goes here (and to stderr only with --verbose) */
static char *capture_buf;
static size_t capture_size, capture_len;

__attribute__((format(printf, 2, 0))) static int libbpf_print(enum libbpf_print_level level,
							      const char *fmt, va_list ap)
{
	if (capture_buf && level != LIBBPF_DEBUG) {
		va_list copy;
		int n;

		va_copy(copy, ap);
		n = vsnprintf(capture_buf + capture_len, capture_size - capture_len, fmt, copy);
		va_end(copy);
		if (n > 0)
			capture_len += (size_t)n < capture_size - capture_len
					       ? (size_t)n
					       : capture_size - capture_len - 1;
		return log_level < LOG_LVL_DEBUG ? 0 : vfprintf(stderr, fmt, ap);
	}
	if (capture_buf && log_level < LOG_LVL_DEBUG)
		return 0;
	if (level == LIBBPF_DEBUG && log_level < LOG_LVL_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && log_level < LOG_LVL_INFO)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void log_libbpf_capture(char *buf, size_t size)
{
	capture_buf = size ? buf : NULL;
	capture_size = size;
	capture_len = 0;
	if (capture_buf)
		capture_buf[0] = '\0';
}

void log_init(const char *prog, enum log_level level)
{
	log_prog = prog;
	log_level = level;
	libbpf_set_print(libbpf_print);
}

void log_set_level(enum log_level level)
{
	log_level = level;
}

bool log_enabled(enum log_level level)
{
	return level <= log_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const tags[] = { "error: ", "warning: ", "", "debug: " };
	char buf[2048];
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s%s\n", log_prog, tags[level], buf);
}

void log_note(const char *fmt, ...)
{
	char buf[PATH_MAX + 1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", log_prog, buf);
}

void log_text(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* A usage error: one line naming the problem and where help is; returns exit status 2. */
int log_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", log_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see %s --help)\n", log_prog);
	return 2;
}
