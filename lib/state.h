/*
 * State files.  Invariant: a state file is only ever replaced whole
 * (temporary file in the same directory, fsync, rename, fsync of the
 * directory), so a reader, or a kill -9 at any instant, sees either the old
 * or the new content, never a mix.  Mutations hold flock on a lock file.
 */
#ifndef QSB_STATE_H
#define QSB_STATE_H

#include <stddef.h>
#include <sys/types.h>

#include "diag.h"

/* Largest state file read back (a Workspace record, a policy, ...). */
#define QSB_STATE_MAX	(16u << 20)

int	 qsb_state_write(int dirfd, const char *name, const void *, size_t,
	    mode_t, struct qsb_err *);
/* Reads a regular file (not through a symlink).  A missing file fails with
 * FILE_NOT_FOUND and errno ENOENT. */
int	 qsb_state_read(int dirfd, const char *name, size_t max, char **buf,
	    size_t *len, struct qsb_err *);
/* Opens (creating) dirfd/name and flocks it with op (LOCK_SH, LOCK_EX,
 * optionally | LOCK_NB).  Returns the fd, or -1 (errno EWOULDBLOCK when
 * LOCK_NB and held). */
int	 qsb_lock(int dirfd, const char *name, int op, struct qsb_err *);
/* Creates an unpredictable name "PREFIX.XXXXXXXXXXXX" into buf. */
int	 qsb_tmpname(char *buf, size_t sz, const char *prefix);
int	 qsb_fsync_dir(int dirfd);
/* write(2) all of buf, retrying on EINTR and short writes. */
int	 qsb_write_all(int fd, const void *, size_t);
/* Reads all of fd into a new buffer (at most max bytes, else EFBIG). */
int	 qsb_read_all(int fd, size_t max, char **buf, size_t *len);

#endif
