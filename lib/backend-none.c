/*
 * The none backend: no sandbox.  The command runs with rlimits and the
 * timeout only (and as the sandbox user when qsb runs as root); results
 * say "insecure": true.  qsb-exec is the tree's subreaper, so a timeout
 * still reaches every descendant, even one that left the session.
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"

static int
none_probe(const struct qsb_plan *p, bool *degraded, char *why, size_t whysz)
{
	(void)p;
	(void)why;
	(void)whysz;
	*degraded = false;
	return 1;
}

static int
none_status(struct qsb_proc *pr, int ws, int *code, int *sig)
{
	(void)pr;
	*code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	*sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
	return 0;
}

static int
none_launch(struct qsb_plan *p, struct qsb_proc *pr, struct qsb_err *e)
{
	int out[2], err[2], rep[2], sync[2];
	pid_t self = getpid(), pid;
	char msg[240];

	if (qsb_launch_common(p, pr, out, err, rep, sync, e) < 0) {
		qsb_launch_undo(out, err, rep, sync);
		return -1;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		qsb_launch_undo(out, err, rep, sync);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "cannot become the subreaper");
	}
	if ((pid = fork()) < 0) {
		qsb_launch_undo(out, err, rep, sync);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "fork");
	}
	if (pid == 0) {
		int rfd = qsb_launch_child(p, self, out, err, rep, sync);
		if (p->as_root && qsb_root_view(p, msg, sizeof(msg)) < 0) {
			qsb_report(rfd, QSB_REP_SETUP, errno, 0, msg);
			_exit(125);
		}
		qsb_exec_child(p, rfd, QSB_CHILD_BARE);
	}
	qsb_launch_parent(pr, pid, out, err, rep, sync);
	pr->reaper = true;
	pr->status = none_status;
	return 0;
}

const struct qsb_backend_ops qsb_backend_none = {
	"none", none_probe, none_launch
};
