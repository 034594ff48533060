/* apt's Packages lists, read and indexed once: a package's stanza is found by the hash of its
 * name, and a list is kept while it is in use and unchanged (device, inode, size, mtime), so an
 * install of many packages reads a 50 MiB list once, not once per package. pkgmeta__expire
 * (pkgmeta.h) drops the unused ones.
 *
 * Compressed lists (apt's Acquire::GzipIndexes keeps them lz4) are opened in the sandbox's root
 * like every other file and decompressed from that descriptor: lz4 by egret itself (a frame
 * decoder that stays inside the bytes it was given), gz, xz, zst, bz2 and lzma by the host's
 * gzip, xz, zstd or bzip2 reading the descriptor as its standard input (5 s each). apt-helper
 * is not used: it picks the format by the name it is given, so it would need the path.
 */
#ifndef EGRET_APTLIST_H
#define EGRET_APTLIST_H

#include <stdbool.h>
#include <stddef.h>

struct apt_list;

/* the list at path in root (compressed: not plain text, the format by its extension)
 * indexed, NULL when it cannot be read
 */
const struct apt_list *apt_list__get(int root, const char *path, bool compressed);
/* An lz4 frame (or several) decompressed into a malloc'd, NUL-terminated buffer of at most max
 * bytes, NULL when it is not one, is cut short, or holds more (exported for the tests).
 */
char *apt_list__lz4(const unsigned char *in, size_t len, size_t max, size_t *outlen);
/* field of pkg's stanza (at version, unless NULL) in the list */
bool apt_list__stanza(const struct apt_list *l, const char *pkg, const char *version,
		      const char *field, char *out, size_t size);

#endif /* EGRET_APTLIST_H */
