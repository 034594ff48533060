/* Fuzz target: a spool directory as an earlier egretd (or a crash, a full disk, an operator)
 * left it: segment files of any name and content and a cursors file, written by the target
 * into a fresh directory, then opened as egretd opens it and delivered to a file sink.
 *
 * Input: chunks of [kind][length, 2 bytes little-endian][bytes]. kind & 3: 0 a segment named by
 * the first byte (its number), the rest its content; 1 a file named by the bytes (up to the
 * first NUL, '/' made '_'), content "x"; 2 the cursors file, where '@' stands for the sink's
 * URI; 3 a segment of N well-formed events (N the first byte & 15, number the second byte).
 * Invariants: the spool always opens (a damaged spool never stops egretd); what the sink
 * delivers is whole events; the next open finds nothing more to report.
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "sink.h"
#include "stream.h"
#include "wire.h"

static char dir[64], spool[96], out[128], uri[160];

static void write_at(const char *name, const void *p, size_t n)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", spool, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	if (write(fd, p, n) < 0) {
		/* nothing to do: the spool is read as it is */
	}
	close(fd);
}

/* n events of one stream, framed as the spool holds them */
static void write_events(const char *name, unsigned int n, unsigned int first)
{
	uint8_t buf[16 * 256];
	size_t len = 0;

	for (unsigned int i = 0; i < n; i++) {
		Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
		size_t sz;

		ev.stream_id = "0123456789abcdef0123456789abcdef";
		ev.seq = first + i;
		ev.host = "fuzz";
		sz = egret__v1__event__get_packed_size(&ev);
		len += wire__varint_put(sz, buf + len);
		len += egret__v1__event__pack(&ev, buf + len);
	}
	write_at(name, buf, len);
}

static void build(const uint8_t *data, size_t size)
{
	for (size_t off = 0; off + 3 <= size;) {
		unsigned int kind = data[off] & 3;
		size_t n = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
		const uint8_t *p = data + off + 3;
		char name[64];

		off += 3;
		if (n > size - off)
			n = size - off;
		off += n;
		if (kind == 0 && n) {
			snprintf(name, sizeof(name), "%020u.seg", p[0]);
			write_at(name, p + 1, n - 1);
		} else if (kind == 1 && n) {
			size_t l = strnlen((const char *)p, n < 60 ? n : 60);

			memcpy(name, p, l);
			name[l] = '\0';
			for (char *c = name; *c; c++)
				*c = *c == '/' ? '_' : *c;
			if (strcmp(name, ".") && strcmp(name, "..") && l)
				write_at(name, "x", 1);
		} else if (kind == 2) {
			char text[4096];
			size_t t = 0;

			for (size_t i = 0; i < n && t + sizeof(uri) < sizeof(text); i++) {
				if (p[i] == '@') {
					memcpy(text + t, uri, strlen(uri));
					t += strlen(uri);
				} else {
					text[t++] = (char)p[i];
				}
			}
			write_at("cursors", text, t);
		} else if (kind == 3 && n >= 2) {
			snprintf(name, sizeof(name), "%020u.seg", p[1]);
			write_events(name, p[0] & 15, 1 + p[1] * 16u);
		}
	}
}

/* the sink's file: whole records, each an Event */
static void check_delivered(void)
{
	static uint8_t buf[1 << 20];
	size_t len, off = 0;
	FILE *f = fopen(out, "r");

	if (!f)
		return;
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (off < len) {
		size_t total, msg;
		Egret__V1__Event *ev;

		if (wire__frame(buf + off, len - off, &total, &msg) != 1)
			abort();
		ev = egret__v1__event__unpack(NULL, total - msg, buf + off + msg);
		if (!ev)
			abort();
		egret__v1__event__free_unpacked(ev, NULL);
		off += total;
	}
}

static int rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct loop loop;
	static struct stream s;
	static struct sink k;
	char err[160];

	if (!loop.epfd) {
		log_init("fuzz", LOG_LVL_ERR);
		if (loop__init(&loop))
			abort();
	}
	snprintf(dir, sizeof(dir), "%s/egret-fuzz-spool-XXXXXX",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
	if (!mkdtemp(dir))
		return 0;
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	snprintf(out, sizeof(out), "%s/out.pb", dir);
	snprintf(uri, sizeof(uri), "file:%s", out);
	mkdir(spool, 0700);
	build(data, size);
	stream__init(&s);
	if (stream__open_spool(&s, spool, SPOOL_MIN_LIMIT, SPOOL_SYNC_NEVER))
		abort(); /* a damaged spool must never stop egretd */
	if (sink__parse(&k, uri, err, sizeof(err)) || stream__add_sink(&s, &k, &loop))
		abort();
	stream__report_damage(&s);
	stream__flush(&s);
	stream__free(&s);
	check_delivered();
	stream__init(&s);
	if (stream__open_spool(&s, spool, SPOOL_MIN_LIMIT, SPOOL_SYNC_NEVER) || s.spool.ndamage)
		abort(); /* the first open set everything right */
	stream__free(&s);
	nftw(dir, rm, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
