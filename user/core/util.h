/* Small file-system and string helpers shared by egretd, egretctl and the tests. All return 0
 * or a negative errno.
 */
#ifndef EGRET_UTIL_H
#define EGRET_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int mkdir_p(const char *path, mode_t mode);
int write_file(const char *path, const char *data);
/* All of len bytes to fd (retrying short writes and EINTR): 0 or -errno. */
int write_all(int fd, const void *data, size_t len);
int read_file(const char *path, char *buf, size_t size);
/* open(path, flags, mode) that refuses what is not a regular file (-EINVAL); *size (when not
 * NULL) is its size. The fd or -errno. */
int open_regular(const char *path, int flags, mode_t mode, uint64_t *size);
int join_path(char *out, size_t size, const char *dir, const char *name);
bool str_starts_with(const char *s, const char *prefix);
size_t str_copy(char *dst, size_t size, const char *src);
int parse_u64(const char *s, uint64_t max, uint64_t *out);
/* "4096", "64K", "100M", "1G" (powers of 1024) */
int parse_size(const char *s, uint64_t *out);
void random_hex(char *out, size_t nbytes);
/* The state letter of /proc/PID/stat ('R', 'S', 'T'...), 0 when it cannot be read. */
char proc_state(pid_t pid);
/* Whether process pid is stopped or on its way to be: a thread in a stop or trace stop, or a
 * stop signal pending for the process or one of its threads (queued and not yet taken by a
 * thread, the process looks running). 1 stopping, 0 not, -errno when it cannot be read.
 */
int proc_stopping(pid_t pid);
uint64_t now_ns(int clock);

/* The length of the UTF-8 sequence at p (n bytes left), 0 when it is not a valid one (RFC
 * 3629: no overlong forms, surrogates or code points past U+10FFFF).
 */
size_t utf8_seq(const unsigned char *p, size_t n);
bool utf8_valid(const char *s, size_t len);

/* A process's environment ("K=V\0K=V\0..."), as the kernel read it when its image began: an
 * exec record's (egretd never sends it on). cut: longer than the kernel reads, the last
 * variable already left out.
 */
struct env_block {
	const char *vars;
	size_t len;
	bool cut;
};

#endif /* EGRET_UTIL_H */
