/* egretd's single-threaded event loop: epoll over watched file descriptors. */
#ifndef EGRET_LOOP_H
#define EGRET_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct watch;
typedef void (*watch_fn)(struct watch *w, uint32_t events);

struct watch {
	int fd;
	watch_fn fn;
	void *data;
};

struct loop {
	int epfd;
	bool stop;
};

int loop__init(struct loop *l);
int loop__add(struct loop *l, struct watch *w, uint32_t events);
int loop__mod(struct loop *l, struct watch *w, uint32_t events);
void loop__del(struct loop *l, struct watch *w);
int loop__run_once(struct loop *l, int timeout_ms);
void loop__close(struct loop *l);

#endif /* EGRET_LOOP_H */
