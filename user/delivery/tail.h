/* egretctl tail: decode an event stream to JSON lines, from a file (optionally followed as it
 * grows and rotates), stdin, or as a receiver egretd's tcp:// and unix: sinks connect to. As a
 * receiver it acknowledges what it has written out (the ?ack protocol: after each batch, the
 * number of records taken on the connection so far, as a varint), so egretd resends nothing
 * it does not have to and loses nothing if tail is killed.
 */
#ifndef EGRET_TAIL_H
#define EGRET_TAIL_H

#include <stdbool.h>
#include <stdio.h>

/* src: a path, "-", "tcp-listen://HOST:PORT" or "unix-listen:PATH". 0 when every record was
 * an Event and the stream ended whole, -EBADMSG when not (each reported on stderr), -errno
 * when the source cannot be read; a receiver returns only on an error.
 */
int tail__run(const char *src, bool follow, FILE *out);

#endif /* EGRET_TAIL_H */
