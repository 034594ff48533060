/* Events to JSON: field names as in the .proto, enums by name, defaults left out, strings
 * escaped and made valid UTF-8.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pbjson.h"
#include "egret/v1/events.pb-c.h"

static char *json_of(const ProtobufCMessage *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	pbjson__print(f, m);
	fclose(f);
	return buf;
}

Test(pbjson, net_connect_event)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__NetConnect nc = EGRET__V1__NET_CONNECT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	char *json;

	ev.stream_id = "abc";
	ev.seq = 7;
	sb.cgroup_id = 42;
	sb.name = "build-1";
	ev.sandbox = &sb;
	nc.verdict = EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY;
	nc.dst_addr = "169.254.169.254";
	nc.dst_port = 80;
	nc.v4_mapped = 1;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_NET_CONNECT;
	ev.net_connect = &nc;
	json = json_of(&ev.base);
	cr_expect_str_eq(json,
			 "{\"stream_id\":\"abc\",\"seq\":7,\"sandbox\":{\"cgroup_id\":42,"
			 "\"name\":\"build-1\"},\"net_connect\":{\"verdict\":\"VERDICT_DENY\","
			 "\"dst_addr\":\"169.254.169.254\",\"dst_port\":80,\"v4_mapped\":"
			 "true}}");
	free(json);
}

Test(pbjson, strings_are_escaped_and_utf8)
{
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	char *json;

	p.comm = "a\"b\\c\n\x01\xff\xc3\xa9";
	json = json_of(&p.base);
	cr_expect_str_eq(json, "{\"comm\":\"a\\\"b\\\\c\\n\\u0001\\ufffd\xc3\xa9\"}");
	free(json);
}

Test(pbjson, empty_message)
{
	Egret__V1__Loss l = EGRET__V1__LOSS__INIT;
	char *json = json_of(&l.base);

	cr_expect_str_eq(json, "{}");
	free(json);
}
