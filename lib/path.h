/*
 * Paths inside a workspace.  Invariant: every path a user gives is resolved
 * by the kernel beneath the workspace's rootPath (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS); no string comparison decides
 * whether a path is inside.  ".." that would climb out, absolute symlinks
 * and symlinks leading outside all fail with PERMISSION_DENIED.
 */
#ifndef QSB_PATH_H
#define QSB_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"

/*
 * Turns a user's PATH into one relative to rootPath.  A relative PATH is
 * kept; an absolute PATH that names rootPath or lies under it lexically
 * becomes the remainder (the kernel still resolves that remainder beneath
 * rootPath); any other absolute PATH is PERMISSION_DENIED.
 */
int	 qsb_path_rel(const char *rootpath, const char *path, char *out,
	    size_t outsz, struct qsb_err *);
/* openat2 beneath basefd.  shown names the path in messages. */
int	 qsb_path_open(int basefd, const char *rel, uint64_t flags,
	    uint64_t mode, const char *shown, struct qsb_err *);
/* Splits rel into its directory part and last component; refuses an empty
 * last component, "." and "..". */
int	 qsb_path_split(const char *rel, char *dir, size_t dirsz, char *base,
	    size_t basesz, struct qsb_err *);
/* The path of fd relative to the directory rootpath, from the kernel's
 * own record of it (/proc/self/fd); "." for the root itself. */
int	 qsb_path_of_fd(int fd, const char *rootpath, char *out, size_t outsz);

#endif
