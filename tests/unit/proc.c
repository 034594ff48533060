/* The process cache (user/events/proc.c) behind every event's Process, fed with kernel records
 * (collector__record): a forked process runs its parent's image; one whose exec record the
 * kernel lost (EGRET_HDR_EXEC_LOST) is marked exec_lost with no image, never its parent's, and
 * so are the processes it forks, until an exec of theirs is recorded.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <linux/types.h>

#include "collector.h"
#include "decoders.h"
#include "egret/audit.h"
#include "stream.h"

static struct stream stream;
static struct sandbox_names names;
static struct proc_cache procs;
static struct collector col;

/* the last event's process */
static struct {
	uint32_t pid;
	bool exec_lost;
	char exe[256];
	uint64_t exec_id, parent_exec_id;
} last;

static void observe(void *ctx, const Egret__V1__Event *ev, const struct env_block *env)
{
	const Egret__V1__Process *p = ev->process;

	memset(&last, 0, sizeof(last));
	if (!p)
		return;
	last.pid = p->pid;
	last.exec_lost = p->lost_case == EGRET__V1__PROCESS__LOST_EXEC_LOST && p->exec_lost;
	snprintf(last.exe, sizeof(last.exe), "%s", p->exe ? p->exe : "");
	last.exec_id = p->exec_id;
	last.parent_exec_id = p->parent_exec_id;
}

static void setup(void)
{
	stream__init(&stream);
	cr_assert_eq(sandbox_names__init(&names, "/nonexistent/egret-unit"), 0);
	cr_assert_eq(proc_cache__init(&procs), 0);
	cr_assert_eq(collector__init_offline(&col, &stream, &names), 0);
	cr_assert_eq(decoders__register(&col), 0);
	col.ctx.hooks.observe = observe;
	col.ctx.procs = &procs;
}

static void teardown(void)
{
	collector__free(&col);
	proc_cache__free(&procs);
	sandbox_names__free(&names);
	stream__free(&stream);
}

TestSuite(proc, .init = setup, .fini = teardown);

static void hdr(struct egret_event_hdr *h, __u32 type, uint32_t pid, bool lost)
{
	memset(h, 0, sizeof(*h));
	h->type = (__u16)type;
	h->flags = lost ? EGRET_HDR_EXEC_LOST : 0;
	h->pid = h->tid = pid;
	h->sandbox_id = 7;
	memcpy(h->comm, "x", 1);
}

static void exec_rec(uint32_t pid, uint64_t exec_id, uint64_t parent_exec_id, const char *exe)
{
	static struct egret_exec_event e;
	size_t len = strlen(exe);

	memset(&e, 0, sizeof(e));
	hdr(&e.hdr, EGRET_EV_EXEC, pid, false);
	e.exec_id = exec_id;
	e.parent_exec_id = parent_exec_id;
	e.ppid = 1;
	e.args_len = 2;
	memcpy(e.data, "x", 2);
	e.exe_len = (__u16)len;
	memcpy(e.data + 2, exe, len);
	collector__record(&col, &e, offsetof(struct egret_exec_event, data) + 2 + len);
}

static void fork_of(uint32_t parent, uint32_t child, uint64_t exec_id, bool lost)
{
	struct egret_fork_event f;

	hdr(&f.hdr, EGRET_EV_FORK, parent, lost);
	f.exec_id = exec_id;
	f.child_pid = child;
	f.pad = 0;
	collector__record(&col, &f, sizeof(f));
}

/* an event of pid: its exit (the cache forgets it) or, keep, a fork of a grandchild */
static void event_of(uint32_t pid, bool lost)
{
	fork_of(pid, pid + 1000, 0, lost);
}

Test(proc, a_forked_process_runs_its_parents_image)
{
	exec_rec(100, 7, 3, "/bin/sh");
	fork_of(100, 101, 7, false);
	event_of(101, false);
	cr_expect_eq(last.pid, 101);
	cr_expect_str_eq(last.exe, "/bin/sh");
	cr_expect_eq(last.exec_id, 7);
	cr_expect_not(last.exec_lost);
}

/* the case: the child's exec record was lost, its later events named the shell */
Test(proc, a_lost_exec_is_no_image_not_the_parents)
{
	exec_rec(100, 7, 3, "/bin/sh");
	fork_of(100, 101, 7, false);
	event_of(101, true);
	cr_expect_eq(last.pid, 101);
	cr_expect(last.exec_lost);
	cr_expect_str_eq(last.exe, "", "the parent's image: %s", last.exe);
	cr_expect_eq(last.exec_id, 0);
	cr_expect_eq(last.parent_exec_id, 7, "the image it was forked in is its parent's");
	/* later events of it say so too, flagged or not */
	event_of(101, false);
	cr_expect(last.exec_lost);
	cr_expect_str_eq(last.exe, "");
	/* the parent is untouched */
	event_of(100, false);
	cr_expect_not(last.exec_lost);
	cr_expect_str_eq(last.exe, "/bin/sh");
}

/* a process that ran an image of its own loses it the same way; its parent_exec_id stays */
Test(proc, a_lost_exec_after_an_exec)
{
	exec_rec(200, 11, 5, "/usr/bin/make");
	event_of(200, true);
	cr_expect(last.exec_lost);
	cr_expect_str_eq(last.exe, "");
	cr_expect_eq(last.parent_exec_id, 5);
}

/* a recorded exec makes the image known again */
Test(proc, an_exec_recorded_clears_the_mark)
{
	exec_rec(100, 7, 3, "/bin/sh");
	fork_of(100, 101, 7, false);
	event_of(101, true);
	exec_rec(101, 9, 7, "/usr/bin/python3");
	cr_expect_not(last.exec_lost);
	cr_expect_str_eq(last.exe, "/usr/bin/python3");
	event_of(101, false);
	cr_expect_not(last.exec_lost);
	cr_expect_str_eq(last.exe, "/usr/bin/python3");
	cr_expect_eq(last.exec_id, 9);
}

/* what an exec-lost process forks runs the same unknown image (the kernel marks it too) */
Test(proc, the_children_of_an_exec_lost_process_are_exec_lost)
{
	exec_rec(100, 7, 3, "/bin/sh");
	fork_of(100, 101, 7, false);
	fork_of(101, 102, 8, true); /* 101's first record after its lost exec is a fork */
	cr_expect(last.exec_lost, "the forking parent");
	event_of(102, false);
	cr_expect_eq(last.pid, 102);
	cr_expect(last.exec_lost);
	cr_expect_str_eq(last.exe, "", "%s", last.exe);
	cr_expect_eq(last.exec_id, 0);
}

/* a process egretd never saw: marked all the same */
Test(proc, an_unknown_process_is_marked_too)
{
	event_of(300, true);
	cr_expect_eq(last.pid, 300);
	cr_expect(last.exec_lost);
	event_of(301, false);
	cr_expect_not(last.exec_lost);
}
