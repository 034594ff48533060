/* The control protocol without a socket: a request split into words and dispatched, the framed
 * reply read back as egretctl reads it, and replies egretctl must not take for egretd's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "control.h"

static int cmd_echo(void *ctx, struct control_req *r)
{
	for (int i = 1; i < r->argc; i++)
		control__out(r, "%s\n", r->argv[i]);
	control__err(r, "%d words\n", r->argc);
	return 3;
}

static const struct control_cmd cmds[] = { { "echo", cmd_echo } };

/* egretctl's reading of a framed reply: its status, stdout and stderr text */
static int read_back(const struct control_req *r, char *out, size_t osz, char *err, size_t esz)
{
	static char msg[CONTROL_REPLY_CHUNK + 1];
	FILE *fo = fmemopen(out, osz, "w"), *fe = fmemopen(err, esz, "w");
	size_t off = 0, mlen;
	int status = -1, ret = 0;

	cr_assert(fo && fe);
	while (!ret && control__reply_next(r->reply, r->len, &off, msg, &mlen))
		ret = control__reply_msg(msg, mlen, fo, fe, &status);
	fclose(fo);
	fclose(fe);
	cr_assert_eq(ret, 1, "the reply does not end with a status");
	cr_expect_eq(off, r->len, "the reply was not read to its end");
	return status;
}

static void handle(struct control_req *r, uid_t uid, const char *msg, size_t n)
{
	struct control c = { .cmds = cmds,
			     .ncmds = 1,
			     .cgroup_mount = "/nonexistent",
			     .cgroup_root = "/nonexistent/egret" };
	char buf[256];

	memcpy(buf, msg, n);
	memset(r, 0, sizeof(*r));
	r->peer.pid = getpid();
	r->peer.uid = uid;
	r->place = PEER_HOST;
	control__handle(&c, buf, n, r);
}

Test(control, requests_and_replies)
{
	static const char req[] = "echo\0one\0two words\0";
	char out[256], err[256];
	struct control_req r;

	handle(&r, 0, req, sizeof(req) - 1);
	cr_expect_eq(read_back(&r, out, sizeof(out), err, sizeof(err)), 3);
	cr_expect_str_eq(out, "one\ntwo words\n");
	cr_expect_str_eq(err, "3 words\n");
	free(r.reply);
	/* not NUL-terminated words, an unknown request, a peer that is not root */
	handle(&r, 0, "echo\0x", 6);
	cr_expect_eq(read_back(&r, out, sizeof(out), err, sizeof(err)), 2);
	cr_expect_str_eq(err, "malformed request\n");
	free(r.reply);
	handle(&r, 0, "nope\0", 5);
	cr_expect_eq(read_back(&r, out, sizeof(out), err, sizeof(err)), 2);
	cr_expect_str_eq(err, "unknown request 'nope'\n");
	free(r.reply);
	handle(&r, 1000, req, sizeof(req) - 1);
	cr_expect_eq(read_back(&r, out, sizeof(out), err, sizeof(err)), 1);
	cr_expect(strstr(err, "uid 1000 is not allowed"), "%s", err);
	free(r.reply);
}

/* An end without its 4-byte status, or a tag egretd never sends, is not a reply: egretctl said
 * nothing of it and printed the bytes as text.
 */
Test(control, malformed_replies_are_errors)
{
	char text[64] = "";
	FILE *f = fmemopen(text, sizeof(text), "w");
	int status = -7;

	cr_assert(f);
	cr_expect_eq(control__reply_msg("x\1\2", 3, f, f, &status), -EBADMSG);
	cr_expect_eq(control__reply_msg("x\1\0\0\0\0", 6, f, f, &status), -EBADMSG);
	cr_expect_eq(control__reply_msg("qhello", 6, f, f, &status), -EBADMSG);
	cr_expect_eq(control__reply_msg("", 0, f, f, &status), -EBADMSG);
	cr_expect_eq(control__reply_msg("ook", 3, f, f, &status), 0);
	cr_expect_eq(control__reply_msg("x\5\0\0\0", 5, f, f, &status), 1);
	fclose(f);
	cr_expect_eq(status, 5);
	cr_expect_str_eq(text, "ok");
}
