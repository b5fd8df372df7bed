/*
 * Recursive deletion that a hostile tree cannot steer: entries are reached
 * through directory descriptors (openat/unlinkat), symlinks are removed and
 * never followed, a directory on another file system stops the walk, and
 * only one directory descriptor is open at a time, so depth costs nothing.
 * Read-only directories are made writable to be emptied.
 */
#ifndef QSB_RMTREE_H
#define QSB_RMTREE_H

#include <stdint.h>

#include "diag.h"

/* Removes dirfd/name (file or tree).  *freed (may be NULL) grows by the
 * allocated bytes released. Fails with CLEANUP_FAILED. */
int	 qsb_rmtree(int dirfd, const char *name, uint64_t *freed,
	    struct qsb_err *);
/* Allocated bytes of the tree at dirfd/name (like du -s), same rules. */
int	 qsb_du(int dirfd, const char *name, uint64_t *bytes, struct qsb_err *);

#endif
