/* epoll event loop: each watch carries its callback. */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "loop.h"

int loop__init(struct loop *l)
{
	l->stop = false;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	return l->epfd < 0 ? -errno : 0;
}

static int ctl(struct loop *l, int op, struct watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	return epoll_ctl(l->epfd, op, w->fd, &ev) ? -errno : 0;
}

int loop__add(struct loop *l, struct watch *w, uint32_t events)
{
	return ctl(l, EPOLL_CTL_ADD, w, events);
}

int loop__mod(struct loop *l, struct watch *w, uint32_t events)
{
	return ctl(l, EPOLL_CTL_MOD, w, events);
}

void loop__del(struct loop *l, struct watch *w)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

/* Wait up to timeout_ms and run the callbacks of ready watches; returns how many ran. */
int loop__run_once(struct loop *l, int timeout_ms)
{
	struct epoll_event evs[32];
	int n = epoll_wait(l->epfd, evs, 32, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		struct watch *w = evs[i].data.ptr;

		w->fn(w, evs[i].events);
	}
	return n;
}

void loop__close(struct loop *l)
{
	if (l->epfd >= 0)
		close(l->epfd);
	l->epfd = -1;
}
