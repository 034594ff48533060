/* egretd's start-up self-test of the kernel's path matcher: the audit object's file programs
 * decide in the kernel which paths are reported (bpf/lib/audit.bpf.h path_wanted), and a
 * verifier that mis-compiles that code (6.1's did, with state kept on the stack) silently
 * drops file events. Before anything is attached, egretd runs the very same code on sample
 * paths (egret_selftest, BPF_PROG_TEST_RUN) and compares with what the patterns say here.
 */
#ifndef EGRET_SELFTEST_H
#define EGRET_SELFTEST_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

#include "egret/audit.h"

struct loader_config;

bool selftest__path_wanted(const struct egret_pattern *patterns, unsigned int n, const char *path,
			   size_t len, __u8 kind);
int selftest__sample(const char *pattern, char *out, size_t size);
int selftest__path_matcher(int prog_fd, int map_fd, const struct loader_config *cfg);

#endif /* EGRET_SELFTEST_H */
