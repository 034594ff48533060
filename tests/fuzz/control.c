/* Fuzz target: the control socket. The input is one request as egretd receives it (checked,
 * split into words, dispatched to a command that echoes its words), and, read again as
 * length-prefixed messages, replies as egretctl receives them.
 * Invariants: the words of a request are the request; the reply egretd frames reads back, in
 * egretctl, as exactly the text the command wrote and its exit status.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "log.h"

static char echoed_out[1 << 17], echoed_err[64];
static size_t echoed_len;

/* "echo WORDS...": each word on stdout, the count on stderr, status argc & 0x7f */
static int cmd_echo(void *ctx, struct control_req *r)
{
	echoed_len = 0;
	for (int i = 1; i < r->argc; i++) {
		size_t n = strlen(r->argv[i]);

		control__out(r, "%s\n", r->argv[i]);
		if (echoed_len + n + 1 <= sizeof(echoed_out)) {
			memcpy(echoed_out + echoed_len, r->argv[i], n);
			echoed_out[echoed_len + n] = '\n';
		}
		echoed_len += n + 1;
	}
	control__err(r, "%d\n", r->argc);
	snprintf(echoed_err, sizeof(echoed_err), "%d\n", r->argc);
	return r->argc & 0x7f;
}

static const struct control_cmd cmds[] = { { "echo", cmd_echo } };

static void check_words(const char *msg, size_t n, char **argv, int argc)
{
	size_t off = 0;

	for (int i = 0; i < argc; i++) {
		size_t w = strlen(argv[i]) + 1;

		if (argv[i] != msg + off || off + w > n)
			abort();
		off += w;
	}
	if (off != n)
		abort();
}

/* egretctl's side of a framed reply: returns the status, the text in out and err */
static int read_reply(const struct control_req *r, char **out, size_t *olen, char **err,
		      size_t *elen)
{
	static char msg[CONTROL_REPLY_CHUNK + 1];
	FILE *fo = open_memstream(out, olen), *fe = open_memstream(err, elen);
	size_t off = 0, mlen;
	int status = -1, ret = 0;

	if (!fo || !fe)
		abort();
	while (!ret && control__reply_next(r->reply, r->len, &off, msg, &mlen))
		ret = control__reply_msg(msg, mlen, fo, fe, &status);
	fclose(fo);
	fclose(fe);
	if (ret != 1 || off != r->len)
		abort(); /* egretd's reply must end with its status, and be read whole */
	return status;
}

static void fuzz_request(const uint8_t *data, size_t size)
{
	struct control c = { .cmds = cmds,
			     .ncmds = 1,
			     .cgroup_mount = "/nonexistent",
			     .cgroup_root = "/nonexistent/egret" };
	struct control_req r = { .peer = { .pid = getpid(), .uid = 0 }, .place = PEER_HOST };
	static char msg[CONTROL_MSG_MAX], copy[CONTROL_MSG_MAX];
	static char *argv[CONTROL_MAX_ARGS];
	size_t n = size < CONTROL_MSG_MAX ? size : CONTROL_MSG_MAX, olen, elen;
	char *out, *err;
	int argc, status;

	memcpy(msg, data, n);
	memcpy(copy, data, n);
	argc = control__parse_request(copy, n, argv, CONTROL_MAX_ARGS);
	if (argc > 0 && size <= CONTROL_MSG_MAX)
		check_words(copy, n, argv, argc);
	echoed_len = 0;
	echoed_err[0] = '\0';
	control__handle(&c, msg, size, &r);
	status = read_reply(&r, &out, &olen, &err, &elen);
	if (argc > 0 && size <= CONTROL_MSG_MAX && !strcmp(copy, "echo")) {
		if (status != (argc & 0x7f) || olen != echoed_len ||
		    (olen <= sizeof(echoed_out) && memcmp(out, echoed_out, olen)) ||
		    strcmp(err, echoed_err))
			abort();
	} else if (status == 0) {
		abort(); /* unknown or malformed requests fail */
	}
	free(out);
	free(err);
	free(r.reply);
}

/* The input as replies: messages of a 2-byte length each, read as egretctl reads them. */
static void fuzz_replies(const uint8_t *data, size_t size)
{
	FILE *null = fopen("/dev/null", "w");
	int status;

	if (!null)
		return;
	for (size_t off = 0; off + 2 <= size;) {
		size_t n = (size_t)data[off] << 8 | data[off + 1];
		int ret;

		off += 2;
		if (n > size - off)
			n = size - off;
		ret = control__reply_msg((const char *)data + off, n, null, null, &status);
		if ((ret != 0 && ret != 1 && ret != -EBADMSG) || (ret == 1 && n != 5))
			abort();
		off += n;
		if (ret)
			break;
	}
	fclose(null);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;

	if (!ready++)
		log_init("fuzz", LOG_LVL_ERR);
	fuzz_request(data, size);
	fuzz_replies(data, size);
	return 0;
}
