/*
 * Workspaces: ROOT/ws/ID/{meta,fs}.
 *
 * Invariants:
 * - A workspace is visible under its id only once complete: create builds
 *   ROOT/ws/.new.ID.RANDOM and renames it into place with RENAME_NOREPLACE,
 *   so of two creates of one id exactly one wins.
 * - destroy renames into ROOT/trash/ first, then deletes; an interrupted
 *   delete leaves nothing visible and is finished by the next cleanup.
 * - meta/workspace.json is replaced whole under meta/lock (LOCK_EX).
 * - Activity: every running exec and terminal supervisor holds LOCK_SH on
 *   meta/active; a terminal supervisor also holds LOCK_EX on
 *   meta/terminals/TID/lock and writes its pid to meta/terminals/TID/pid.
 */
#ifndef QSB_WORKSPACE_H
#define QSB_WORKSPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "diag.h"
#include "parse.h"

struct qsb_root;
struct qsb_jw;

struct qsb_ws {
	char			 id[QSB_ID_MAX + 1];
	char			*workspace_root;	/* ROOT/ws */
	char			*dir;			/* ROOT/ws/ID */
	char			*root_path;		/* ROOT/ws/ID/fs */
	struct qsb_sbconfig	 sb;
	struct qsb_retention	 ret;
	int64_t			 created_at;
	int64_t			 last_accessed_at;
	bool			 has_last_exit;
	int			 last_exit_code;
};

/* The fs/ subdirectories and the Workspace fields naming them. */
struct qsb_ws_subdir {
	const char	*dir;
	const char	*field;
	mode_t		 mode;
};
extern const struct qsb_ws_subdir qsb_ws_subdirs[];

/* Opens ROOT/ws/ID (a directory, not a symlink).  Invalid id:
 * CONFIG_INVALID; missing: WORKSPACE_NOT_FOUND. */
int	 qsb_ws_open(const struct qsb_root *, const char *id, struct qsb_err *);
/* Opens dirfd/fs for path resolution. */
int	 qsb_ws_open_fs(int wsdirfd, struct qsb_err *);
int	 qsb_ws_load(const struct qsb_root *, const char *id, struct qsb_ws *,
	    struct qsb_err *);
int	 qsb_ws_load_at(const struct qsb_root *, int wsdirfd, const char *id,
	    struct qsb_ws *, struct qsb_err *);
void	 qsb_ws_free(struct qsb_ws *);
void	 qsb_ws_write(struct qsb_jw *, const struct qsb_ws *);
/* Writes meta/workspace.json; the caller holds the lock. */
int	 qsb_ws_save(int wsdirfd, const struct qsb_ws *, struct qsb_err *);
/* Opens and locks a workspace (LOCK_EX on meta/lock) and checks that the
 * locked directory is still the one named id.  Returns the lock fd and
 * stores the directory fd in *dirfd. */
int	 qsb_ws_lock(const struct qsb_root *, const char *id, int *dirfd,
	    struct qsb_err *);

int	 qsb_ws_create(const struct qsb_root *, const struct qsb_config *,
	    const char *id, const struct qsb_sbconfig *,
	    const struct qsb_retention *, struct qsb_ws *out,
	    struct qsb_err *);

struct qsb_ws_destroyed {
	uint64_t	freed;
	int		killed;		/* terminals killed by force */
	bool		busy;		/* QSB_DESTROY_IDLE: left alone */
};
/* How: refuse while a terminal runs (0), kill the terminals first
 * (QSB_DESTROY_FORCE), or leave a busy workspace alone, terminal or exec,
 * and say so in busy (QSB_DESTROY_IDLE, for cleanup: atomic with the
 * move to the trash, since meta/active is held exclusively until then). */
#define QSB_DESTROY_FORCE	0x1
#define QSB_DESTROY_IDLE	0x2
int	 qsb_ws_destroy(const struct qsb_root *, const char *id, int how,
	    struct qsb_ws_destroyed *, struct qsb_err *);

/* All workspaces, sorted by id.  A record that cannot be read is reported
 * through bad (if not NULL) and left out. */
int	 qsb_ws_list(const struct qsb_root *, struct qsb_ws **, size_t *,
	    void (*bad)(const char *id, const struct qsb_err *, void *),
	    void *arg, struct qsb_err *);
void	 qsb_ws_list_free(struct qsb_ws *, size_t);

/* Sets lastAccessedAt to now (under the lock) and logs workspace:accessed. */
int	 qsb_ws_touch(const struct qsb_root *, const char *id,
	    struct qsb_err *);

/* The disk quota: 0 with *remaining the bytes left (0: no quota), or
 * FILE_WRITE_FAILED when the workspace's allocated size has reached it. */
int	 qsb_ws_quota(const struct qsb_ws *, uint64_t *remaining,
	    struct qsb_err *);
/* Running terminals of a workspace: count, and (when pids is not NULL) up
 * to npids supervisor pids. */
int	 qsb_ws_terminals_running(int wsdirfd, pid_t *pids, int npids);
/* Whether any exec or terminal runs in the workspace. */
bool	 qsb_ws_busy(int wsdirfd);

#endif
