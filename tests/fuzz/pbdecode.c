/* Fuzz target: any bytes as an egret.v1.Event through pbdecode, the one-pass decoder the OTLP
 * and JSON sinks read the spool with. Invariant: its answer is protobuf-c's (it declines, or
 * both decode and the two messages pack to the same bytes): tests/fuzz/pbdecodecheck.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pbdecodecheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool decoded;

	if (!pbdecode_check(data, size, &decoded))
		abort();
	return 0;
}
