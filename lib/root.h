/*
 * The root directory (DESIGN.md section 2): --root, else $QSB_ROOT, else
 * $XDG_STATE_HOME/qsb, else $HOME/.local/state/qsb.  Created 0700 on first
 * use; refused when another user owns it or others can write to it, since
 * everything the sandbox guarantees rests on nobody else changing it.
 */
#ifndef QSB_ROOT_H
#define QSB_ROOT_H

#include "diag.h"

struct qsb_root {
	char	*path;		/* canonical, absolute */
	int	 fd;		/* the root directory */
	int	 wsfd;		/* ROOT/ws */
	int	 trashfd;	/* ROOT/trash */
	int	 permfd;	/* ROOT/perm */
};

/* Which directory would be used (no file system access); malloc'd. */
char	*qsb_root_locate(const char *opt, struct qsb_err *);
int	 qsb_root_open(struct qsb_root *, const char *opt, struct qsb_err *);
void	 qsb_root_close(struct qsb_root *);
/* mkdir -p with mode for each created component. */
int	 qsb_mkdir_p(const char *path, mode_t mode);

#endif
