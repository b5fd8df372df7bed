/*
 * Reclaiming space (DESIGN.md section 7).  One cleanup at a time (ROOT/lock).
 * It finishes deletes left in ROOT/trash/, removes abandoned half-built
 * workspaces, applies every workspace's RetentionPolicy, then evicts the
 * least recently accessed non-manual workspaces beyond the global caps.
 * Never a workspace in use (a running exec or terminal), never a manual
 * one, never one whose last command failed when preserveOnError is set.
 * Deletion goes through qsb_rmtree: no symlink followed, no file system
 * crossed; freedSpace counts allocated bytes.
 */
#ifndef QSB_CLEANUP_H
#define QSB_CLEANUP_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"

struct qsb_root;
struct qsb_config;
struct qsb_jw;

struct qsb_cleanup_opts {
	bool		 dry_run;
	bool		 all;		/* every non-manual one, whatever its age */
	const char	*session;	/* only this one */
	long long	 max_workspaces;	/* 0: none */
	uint64_t	 max_size;	/* 0: none */
};

struct qsb_cleanup_result {
	int		 deleted_count;
	uint64_t	 freed;
	char		**deleted;	/* ids */
	char		**errors;	/* messages */
	bool		 dry_run;
};

int	 qsb_cleanup(const struct qsb_root *, const struct qsb_config *,
	    const struct qsb_cleanup_opts *, struct qsb_cleanup_result *,
	    struct qsb_err *);
void	 qsb_cleanup_write(struct qsb_jw *, const struct qsb_cleanup_result *);
void	 qsb_cleanup_free(struct qsb_cleanup_result *);

#endif
