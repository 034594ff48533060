/* The keeper: a small process, forked by egretd, that holds a file descriptor of every pinned
 * link and map of the state dir and puts back any pin that is removed, renamed or unmounted,
 * within milliseconds, whether egretd runs or not. Removing pins therefore removes nothing:
 * enforcement ends only when egretctl uninstall stops the keeper and egretd together.
 */
#ifndef EGRET_KEEPER_H
#define EGRET_KEEPER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "loop.h"

#define KEEPER_MAX_ITEMS 192
#define KEEPER_COMM	 "egret-keeper"
#define KEEPER_LINK	 "keeper" /* <state>/keeper: a symlink to the keeper's pid */
/* egretd's exit status after egretctl uninstall (RestartPreventExitStatus= in the unit) */
#define EGRETD_EXIT_UNINSTALLED 10

struct keeper_item {
	char path[PATH_MAX]; /* the pin */
	int fd;		     /* egretd's own handle of the pinned object */
};

/* A protected process (egretd, the keeper) stopped by a sandbox's signal is continued by the
 * other: where the kernel has no bpf_send_signal_task (before 6.13) no program can.
 */
struct stop_guard {
	pid_t pid;	     /* the process watched */
	int senders_fd;	     /* signal_senders: the kernel's record of sandboxed senders */
	uint64_t running_ns; /* CLOCK_BOOTTIME just before it was last seen neither stopped nor
			      * with a stop pending */
	const char *what;
};

struct keeper {
	char state_dir[PATH_MAX];
	unsigned int nitems;
	struct keeper_item *items;
	pid_t pid;	 /* running keeper, 0 when none */
	int pidfd, sock; /* readable when it exits; its reports of pins it put back */
	struct watch pw, sw;
	struct loop *loop;
	bool stopping;		 /* egretd asked it to go: do not start another */
	struct stop_guard guard; /* egretd's watch over the keeper (keeper__tick) */
	unsigned int restarts;
	/* a pin was put back (path); a keeper was (re)started (its pid) */
	void (*on_removed)(void *ctx, const char *path);
	void (*on_started)(void *ctx, pid_t pid);
	void *ctx;
};

/* egretd at start, before it changes any pin: the keeper a previous egretd left, told to stop
 * putting pins back (it still holds them); 0 when there is none.
 */
pid_t keeper__quiesce_old(const char *state_dir);
/* this egretd failed to start: the previous keeper goes on putting pins back */
void keeper__resume_old(pid_t pid);
/* every pin of the state dir now, held by a new keeper (k->items hold egretd's copies) */
int keeper__start(struct keeper *k, struct loop *loop, const char *state_dir);
/* the old keeper goes once the new one holds everything */
void keeper__kill(pid_t pid, int timeout_ms);
/* egretd, once a second: a keeper a sandbox stopped is continued (signals_fd: signal_senders) */
void keeper__tick(struct keeper *k, int signals_fd);
/* Continue g->pid if it is stopped and the kernel recorded a sandbox stopping it since it was
 * last seen running; whether it did.
 */
bool stop_guard__check(struct stop_guard *g);
/* egretctl uninstall through egretd: let go of everything and exit */
void keeper__stop(struct keeper *k);
void keeper__close(struct keeper *k);
/* systemd's fd store (no $NOTIFY_SOCKET: nothing): every pinned object, one per name; at
 * uninstall, none; at start, pins put back from what the store passed
 */
void keeper__store(const struct keeper *k);
void keeper__unstore(const struct keeper *k);
void keeper__restore(const char *state_dir);
/* egretctl uninstall without egretd: the keeper of a state dir, 0 when none runs */
pid_t keeper__find(const char *state_dir);

#endif /* EGRET_KEEPER_H */
