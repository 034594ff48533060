/* pbdecode (user/delivery/pbdecode.h), the one-pass decoder the OTLP and JSON sinks read the
 * spool with: every shape of event egretd writes is decoded by it (not handed to protobuf-c)
 * into what protobuf-c would make of the same bytes; what it declines still decodes through
 * pbdecode__unpack_any as protobuf-c decodes it. pbencode, the one-pass encoder egretd spools
 * with, writes the bytes protobuf-c's pack writes for each of them.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../fuzz/pbdecodecheck.h"

static uint8_t buf[1 << 16];

static size_t packed(const Egret__V1__Event *ev)
{
	size_t n = egret__v1__event__get_packed_size(ev);

	cr_assert_leq(n, sizeof(buf) - 64);
	cr_assert_eq(egret__v1__event__pack(ev, buf), n);
	cr_expect(pbencode_check(&ev->base), "pbencode wrote other bytes than protobuf-c");
	return n;
}

/* the bytes decode by pbdecode itself, to protobuf-c's message */
static void decoded_alike(size_t n)
{
	bool decoded;

	cr_expect(pbdecode_check(buf, n, &decoded), "not protobuf-c's message");
	cr_expect(decoded, "declined an event in egretd's own shape (%zu bytes)", n);
}

/* declined, and pbdecode__unpack_any gives protobuf-c's answer (ok: whether it decodes) */
static void declined(size_t n, bool ok)
{
	struct arena a;
	bool decoded;
	ProtobufCMessage *m;

	cr_expect(pbdecode_check(buf, n, &decoded));
	cr_expect_not(decoded, "decoded what protobuf-c would decode otherwise (%zu bytes)", n);
	arena__init(&a);
	m = pbdecode__unpack_any(&egret__v1__event__descriptor, &a.pb, n, buf);
	cr_expect_eq(m != NULL, ok, "protobuf-c's answer was %s", ok ? "a message" : "none");
	arena__release(&a);
}

static char *labels[] = { "app=web", "tier=front", "team=" };

/* an event as egretd writes one: its envelope whole (a container sandbox, a process) and a
 * file payload
 */
struct envelope {
	Egret__V1__Event ev;
	Egret__V1__Sandbox sb;
	Egret__V1__Container c;
	Egret__V1__ContainerImage img;
	Egret__V1__Process p;
	Egret__V1__FileActivity fa;
};

static void envelope(struct envelope *e)
{
	*e = (struct envelope){ .ev = EGRET__V1__EVENT__INIT,
				.sb = EGRET__V1__SANDBOX__INIT,
				.c = EGRET__V1__CONTAINER__INIT,
				.img = EGRET__V1__CONTAINER_IMAGE__INIT,
				.p = EGRET__V1__PROCESS__INIT,
				.fa = EGRET__V1__FILE_ACTIVITY__INIT };
	e->ev.stream_id = "0123456789abcdef0123456789abcdef";
	e->ev.seq = 1ull << 40;
	e->ev.time_unix_nano = 1764700000123456789ull;
	e->ev.host = "host-\xc3\xa9";
	e->ev.sensor_version = "0.1";
	e->ev.class_uid = 1001;
	e->ev.activity_id = 2;
	e->img.name = "docker.io/library/python:3.12";
	e->img.tag = "3.12";
	e->c.uid = "c0ffee";
	e->c.image = &e->img;
	e->c.runtime = "runc";
	e->c.labels = labels;
	e->c.n_labels = 3;
	e->sb.cgroup_id = 4242;
	e->sb.name = "box";
	e->sb.container = &e->c;
	e->ev.sandbox = &e->sb;
	e->p.pid = 77;
	e->p.uid = 1000;
	e->p.comm = "python3";
	e->p.exec_id = ~0ull;
	e->p.lost_case = EGRET__V1__PROCESS__LOST_EXEC_LOST;
	e->p.exec_lost = true;
	e->ev.process = &e->p;
	e->fa.path = "/home/build/.local/lib/python3.11/site-packages/requests/adapters.py";
	e->fa.op = EGRET__V1__FILE_ACTIVITY__OP__OP_WRITE;
	e->ev.payload_case = EGRET__V1__EVENT__PAYLOAD_FILE;
	e->ev.file = &e->fa;
}

Test(pbdecode, every_shape_egretd_writes_is_decoded_as_protobuf_c_decodes_it)
{
	Egret__V1__Event empty = EGRET__V1__EVENT__INIT;
	struct envelope e;
	Egret__V1__Event *ev = &e.ev;
	Egret__V1__ProcessExec x = EGRET__V1__PROCESS_EXEC__INIT;
	Egret__V1__Heartbeat hb = EGRET__V1__HEARTBEAT__INIT;
	Egret__V1__SinkState s1 = EGRET__V1__SINK_STATE__INIT, s2 = EGRET__V1__SINK_STATE__INIT;
	Egret__V1__SinkState *sinks[] = { &s1, &s2 };
	Egret__V1__Counter k = EGRET__V1__COUNTER__INIT, *counters[] = { &k, &k, &k };
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	Egret__V1__DnsQuery q = EGRET__V1__DNS_QUERY__INIT;
	uint64_t args[] = { 0, 1, 1ull << 63, 300 };
	char *argv[] = { "python3", "-c", "", "print(\"x\")" };

	/* nothing set: an empty message */
	decoded_alike(packed(&empty));
	envelope(&e);
	decoded_alike(packed(ev));
	x.args = argv;
	x.n_args = 4;
	x.cwd = "/work";
	ev->payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
	ev->exec = &x;
	decoded_alike(packed(ev));
	s1.uri = "file:/var/log/egret.pb";
	s1.up = true;
	s1.delivered = 12;
	s2.error = "connection refused";
	k.name = "ring_drops";
	k.value = 3;
	hb.sinks = sinks;
	hb.n_sinks = 2;
	hb.counters = counters;
	hb.n_counters = 3;
	ev->payload_case = EGRET__V1__EVENT__PAYLOAD_HEARTBEAT;
	ev->heartbeat = &hb;
	decoded_alike(packed(ev));
	/* a packed repeated uint64 (proto3's default), and a negative int32 (ten bytes) */
	t.kind = EGRET__V1__TAMPER__KIND__KIND_SECCOMP;
	t.args = args;
	t.n_args = 4;
	t.killed = true;
	ev->payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	ev->tamper = &t;
	decoded_alike(packed(ev));
	/* a negative int32 (ten bytes on the wire), a oneof member chosen with its zero value */
	e.fa.result = -13;
	e.p.exec_lost = false;
	ev->payload_case = EGRET__V1__EVENT__PAYLOAD_FILE;
	ev->file = &e.fa;
	decoded_alike(packed(ev));
	/* a float: a fraction, then -0.0 (left out by protobuf-c, as zero) */
	q.name = "example.com";
	q.name_entropy = -0.0f;
	ev->payload_case = EGRET__V1__EVENT__PAYLOAD_DNS_QUERY;
	ev->dns_query = &q;
	decoded_alike(packed(ev));
	q.name_entropy = 3.25f;
	ev->payload_case = EGRET__V1__EVENT__PAYLOAD_DNS_QUERY;
	ev->dns_query = &q;
	decoded_alike(packed(ev));
}

Test(pbdecode, what_protobuf_would_merge_or_keep_is_left_to_protobuf_c)
{
	struct envelope e;
	size_t n, m;

	envelope(&e);
	e.fa.path = "/etc/shadow";
	n = packed(&e.ev);
	/* an unknown field (a newer egretd's): field 1000, varint 1 */
	memcpy(buf + n, "\xc0\x3e\x01", 3);
	declined(n + 3, true);
	/* the sandbox twice (protobuf merges the two) */
	m = 0;
	buf[n + m++] = 6 << 3 | 2;
	buf[n + m++] = 2;
	buf[n + m++] = 1 << 3;
	buf[n + m++] = 7;
	declined(n + m, true);
	/* a second payload member (the last one wins) */
	m = 0;
	buf[n + m++] = (28 << 3 | 2) | 0x80; /* field 28's tag takes two bytes */
	buf[n + m++] = (28 << 3 | 2) >> 7;
	buf[n + m++] = 0;
	declined(n + m, true);
	/* the wrong wire type for seq (a string where a varint is), and a group */
	m = 0;
	buf[n + m++] = 2 << 3 | 2;
	buf[n + m++] = 0;
	declined(n + m, false);
	buf[n] = 9 << 3 | 3;
	declined(n + 1, false);
	/* an unknown field of a length and bytes: protobuf-c keeps it with its length prefix, and
	 * pbencode writes it back as protobuf-c does (field 100, "A")
	 */
	memcpy(buf + n, "\xa2\x06\x01\x41", 4);
	declined(n + 4, true);
	/* a tag in six bytes, a length prefix in six: protobuf-c reads at most five of either */
	memcpy(buf, "\x90\x80\x80\x80\x80\x00\x05", 7);
	declined(7, false);
	memcpy(buf, "\x22\x81\x80\x80\x80\x80\x00\x61", 8);
	declined(8, false);
	/* a bool (Process.exec_lost) in ten bytes whose last holds more than the 64th bit:
	 * protobuf-c reads true, where the 64-bit value is 0
	 */
	memcpy(buf, "\x3a\x0b\x60\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02", 13);
	declined(13, true);
	n = packed(&e.ev);
	/* cut short, anywhere */
	for (size_t cut = 1; cut < n; cut += 7) {
		bool decoded;

		cr_expect(pbdecode_check(buf, cut, &decoded), "cut at %zu", cut);
	}
}

/* pbdecode does not check proto2's required fields: no message an Event holds has one */
static void no_required(const ProtobufCMessageDescriptor *d, unsigned int depth)
{
	cr_assert_lt(depth, 8, "%s nests too deep", d->name);
	for (unsigned int i = 0; i < d->n_fields; i++) {
		cr_expect_neq(d->fields[i].label, PROTOBUF_C_LABEL_REQUIRED, "%s.%s is required",
			      d->name, d->fields[i].name);
		if (d->fields[i].type == PROTOBUF_C_TYPE_MESSAGE)
			no_required(d->fields[i].descriptor, depth + 1);
	}
}

Test(pbdecode, no_message_of_the_stream_has_a_required_field)
{
	no_required(&egret__v1__event__descriptor, 0);
}
