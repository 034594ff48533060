/* proc_stopping (user/core/util.c), what egret's keeper and egretd look at before they continue
 * each other: a stop signal queued but not yet taken leaves the process running ('S') for a
 * while, and is a stop all the same; a stopped thread is one; a process continued is not.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "util.h"

static pid_t child = -1;

static void reap(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	child = -1;
}

/* a child sleeping with SIGTSTP blocked: a SIGTSTP sent to it stays pending */
static pid_t sleeper(void)
{
	int ready[2];
	char c;

	cr_assert_eq(pipe(ready), 0);
	child = fork();
	cr_assert(child >= 0);
	if (child == 0) {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGTSTP);
		sigprocmask(SIG_BLOCK, &set, NULL);
		close(ready[0]);
		(void)!write(ready[1], "r", 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return child;
}

static bool wait_for(pid_t pid, int want)
{
	for (int i = 0; i < 500; i++) {
		if (proc_stopping(pid) == want)
			return true;
		usleep(10000);
	}
	return false;
}

TestSuite(stopping, .fini = reap);

Test(stopping, a_running_process_is_not_stopping)
{
	pid_t pid = sleeper();

	cr_expect_eq(proc_stopping(pid), 0);
	cr_expect_eq(proc_stopping(getpid()), 0);
}

Test(stopping, a_stop_pending_is_stopping_though_the_process_runs)
{
	pid_t pid = sleeper();

	cr_assert_eq(kill(pid, SIGTSTP), 0);
	cr_expect_eq(proc_stopping(pid), 1, "a pending SIGTSTP was not seen");
	cr_expect_neq(proc_state(pid), 'T', "the child stopped though it blocks SIGTSTP");
	/* SIGCONT takes pending stops away */
	cr_assert_eq(kill(pid, SIGCONT), 0);
	cr_expect_eq(proc_stopping(pid), 0, "SIGCONT left a stop pending");
}

Test(stopping, a_stopped_process_is_stopping_until_continued)
{
	pid_t pid = sleeper();

	cr_assert_eq(kill(pid, SIGSTOP), 0);
	cr_expect_eq(proc_stopping(pid), 1, "a SIGSTOP just sent was not seen");
	for (int i = 0; i < 500 && proc_state(pid) != 'T'; i++)
		usleep(10000);
	cr_expect_eq(proc_state(pid), 'T', "the child did not stop");
	cr_expect_eq(proc_stopping(pid), 1, "a stopped child is not stopping");
	cr_assert_eq(kill(pid, SIGCONT), 0);
	cr_expect(wait_for(pid, 0), "the child was not seen continued");
}

Test(stopping, a_process_gone_is_an_error)
{
	pid_t pid = sleeper();

	reap();
	cr_expect_lt(proc_stopping(pid), 0);
}
