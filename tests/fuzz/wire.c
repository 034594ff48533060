/* Fuzz target: the stream framing (varint length prefixes) of bytes from a spool, a file or a
 * socket. Invariants: a frame lies inside the buffer, and wire__whole() counts exactly the frames
 * a frame-by-frame walk finds.
 */
#include <stdint.h>
#include <stdlib.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0, walked = 0, count = 0, bytes;

	while (off < size) {
		size_t total, msg_off;
		int r = wire__frame(data + off, size - off, &total, &msg_off);

		if (r <= 0)
			break;
		if (total > size - off || msg_off > total)
			abort();
		off += total;
		walked++;
	}
	bytes = wire__whole(data, size, SIZE_MAX, &count);
	if (count != walked || bytes != off)
		abort();
	return 0;
}
