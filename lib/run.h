/*
 * One run of a command in a workspace, as every entry point does it
 * (qsb-exec, its --json requests, a terminal's supervisor, the ACP
 * adapter): load the workspace, plan, ask the permission policy, hold the
 * workspace busy, run, record, log.  Bad input changes nothing; a refusal
 * is logged (execute:error).
 */
#ifndef QSB_RUN_H
#define QSB_RUN_H

#include <stdbool.h>

#include "diag.h"
#include "exec.h"
#include "workspace.h"

struct qsb_root;
struct qsb_config;

struct qsb_run {
	const struct qsb_root	*root;
	const struct qsb_config	*cfg;
	struct qsb_ws		 ws;
	struct qsb_plan		 plan;
	int			 dirfd;		/* ROOT/ws/ID, until held */
	int			 afd;		/* meta/active, held shared */
	bool			 loaded, planned;
};

/* Loads, plans and gates.  On failure fills e; the run is freed. */
int	 qsb_run_prepare(struct qsb_run *, const struct qsb_root *,
	    const struct qsb_config *, const char *id,
	    const struct qsb_exec_req *, struct qsb_err *);
/* Marks the workspace busy (meta/active, shared) and checks that it is
 * still the one planned for (cleanup may have moved it meanwhile). */
int	 qsb_run_hold(struct qsb_run *, struct qsb_err *);
/* Runs it: execute:start, the command, lastAccessedAt and lastExitCode,
 * execute:complete or execute:error.  Releases the hold. */
int	 qsb_run_exec(struct qsb_run *, struct qsb_exec_result *,
	    struct qsb_err *);
void	 qsb_run_free(struct qsb_run *);

#endif
