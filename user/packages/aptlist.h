/* apt's Packages lists, read and indexed once: a package's stanza is found by the hash of its
 * name, and a list is kept while it is in use and unchanged (device, inode, size, mtime), so an
 * install of many packages reads a 50 MiB list once, not once per package. Compressed lists
 * are read through apt's own helper. pkgmeta__expire (pkgmeta.h) drops the unused ones.
 */
#ifndef EGRET_APTLIST_H
#define EGRET_APTLIST_H

#include <stdbool.h>
#include <stddef.h>

struct apt_list;

/* the list at path (compressed: not plain text) indexed, NULL when it cannot be read */
const struct apt_list *apt_list__get(const char *path, bool compressed);
/* field of pkg's stanza (at version, unless NULL) in the list */
bool apt_list__stanza(const struct apt_list *l, const char *pkg, const char *version,
		      const char *field, char *out, size_t size);

#endif /* EGRET_APTLIST_H */
