/* One logging pair for egretd and egretctl: messages go to stderr, lowercase, no final period,
 * naming the thing they are about.
 */
#ifndef EGRET_LOG_H
#define EGRET_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LVL_ERR,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
};

void log_init(const char *prog, enum log_level level);
void log_set_level(enum log_level level);
bool log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* text as it is (no prefix, no newline added, no length limit), when level is enabled */
void log_text(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A message to the person running a command (egretctl's refusals and notes): the program's
 * prefix and no level tag, shown at every level.
 */
void log_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int log_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* libbpf's messages into buf (NUL-terminated, cut at size) instead of stderr, until called with
 * size 0; with --verbose they still go to stderr too
 */
void log_libbpf_capture(char *buf, size_t size);

#define log_err(...)   log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif /* EGRET_LOG_H */
