/*
 * Resource limits through cgroups, where the machine lets us use them:
 * cgroup v2 when our cgroup has the controller delegated, else the v1
 * hierarchy of the controller when we may create a group in it (root).
 * Which one applied, if any, is reported per controller; memory falls back
 * to RLIMIT_AS in the caller.
 */
#ifndef QSB_CGROUP_H
#define QSB_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "diag.h"

enum qsb_cg_ctl { QSB_CG_MEMORY, QSB_CG_PIDS, QSB_CG_CPU, QSB_CG_N };

struct qsb_cg {
	char	*dir[QSB_CG_N];		/* the group created, per controller */
	int	 version[QSB_CG_N];	/* 1 or 2; 0: not applied */
};

/* What the machine offers, for qsb-status: version (0, 1, 2, or 3 for
 * hybrid) and, per controller, the version we could use (0: none). */
struct qsb_cg_info {
	int	 layout;
	int	 usable[QSB_CG_N];
	char	 v2controllers[256];
};
void	 qsb_cg_probe(struct qsb_cg_info *);

/* Creates the groups for the limits asked for (mem: bytes, 0 = none;
 * cpus: 0 = none; pids: 0 = none).  Controllers that cannot be used are
 * left out, never an error. */
int	 qsb_cg_create(struct qsb_cg *, const char *name, uint64_t mem,
	    double cpus, long pids);
/* Moves pid into every group created. */
int	 qsb_cg_attach(const struct qsb_cg *, pid_t, struct qsb_err *);
/* Removes the groups (they must be empty). */
void	 qsb_cg_destroy(struct qsb_cg *);
const char *qsb_cg_name(int version);
extern const char *const qsb_cg_ctl_names[];

#endif
