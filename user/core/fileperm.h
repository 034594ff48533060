/* StrictModes for egretd's own files: the policy, the live rules and the spool are trusted only
 * when nobody but root (or egretd's own uid) could have written them, or could replace them:
 * the file, and every directory any lookup of its path passes through (symlinks followed, each
 * link's own directory included, up to /), must be owned by root or egretd's uid and not
 * writable by group or others. Like sshd's StrictModes, a sticky world-writable directory such
 * as /tmp is not accepted anywhere on the way.
 */
#ifndef EGRET_FILEPERM_H
#define EGRET_FILEPERM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#define FILEPERM_ERR_LEN 640

enum fileperm_type {
	FILEPERM_FILE, /* a regular file */
	FILEPERM_DIR,  /* a directory */
};

struct fileperm_opts {
	enum fileperm_type type;
	bool may_be_missing; /* a missing last component is fine (the directories above it are still
				checked): a file egretd creates later */
	const char *trusted; /* a directory taken as safe with everything above it, or NULL: check
				up to / (tests check paths below a directory of their own) */
};

/* Check path as above: 0 (st, when given, is what the path names; st_ino 0 when missing),
 * -EPERM when something on the way could be written by someone else, -ENOENT when it is missing,
 * another -errno when it cannot be looked up. err says what is wrong, with its owner, its mode
 * and what to do, starting with what ("policy /etc/egret/egret.policy: ...").
 */
int fileperm__check(const char *what, const char *path, const struct fileperm_opts *o,
		    struct stat *st, char *err, size_t errsz);
/* Open a regular file for reading and check it (the descriptor's own owner and mode, then the
 * path, which must still name the file opened: one swapped in after the open is refused).
 * The descriptor, or -errno with err filled.
 */
int fileperm__open(const char *what, const char *path, const char *trusted, char *err,
		   size_t errsz);

/* A directory taken as safe with everything above it wherever a check names none: egretd's
 * --trusted-dir, for a policy in a directory nobody outside egretd's own mount namespace can
 * reach but that looks world-writable (a Kubernetes ConfigMap volume). NULL: none.
 */
void fileperm__trust(const char *dir);

/* The instance's files: the policy (a file), the live rules (a file egretd may have to create)
 * and the spool (a directory, NULL to skip); 0 or the first failure, with err filled.
 */
int fileperm__check_instance(const char *policy, const char *live, const char *spool, char *err,
			     size_t errsz);

#endif /* EGRET_FILEPERM_H */
