#include <sys/file.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "event.h"
#include "json.h"
#include "parse.h"
#include "perm.h"
#include "policy.h"
#include "root.h"
#include "run.h"
#include "state.h"
#include "status.h"

/* lastAccessedAt and lastExitCode; best effort: the run is over either
 * way.  Called by qsb_exec_run as soon as the status is known. */
static void
record(const struct qsb_plan *p, int exit_code, void *arg)
{
	const struct qsb_run *r = arg;
	const char *id = p->ws->id;
	struct qsb_ws w;
	struct qsb_err e;
	int dirfd, lfd;

	if ((lfd = qsb_ws_lock(r->root, id, &dirfd, &e)) < 0)
		return;
	if (qsb_ws_load_at(r->root, dirfd, id, &w, &e) == 0) {
		w.last_accessed_at = qsb_now_ms();
		w.has_last_exit = true;
		w.last_exit_code = exit_code;
		(void)qsb_ws_save(dirfd, &w, &e);
		qsb_ws_free(&w);
	}
	close(lfd);
	close(dirfd);
}

static void
event_start(const struct qsb_run *r)
{
	const struct qsb_plan *p = &r->plan;
	struct qsb_jw w;
	char *cmd = qsb_cmdline(p->argv), *red = NULL;
	size_t l;

	if (cmd != NULL && p->secret_values[0] != NULL)
		red = qsb_redact(cmd, strlen(cmd), p->secret_values, false,
		    &l);
	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "sessionId");
	qsb_jw_str(&w, p->ws->id);
	qsb_jw_key(&w, "command");
	qsb_jw_str(&w, red ? red : cmd);
	qsb_jw_key(&w, "backend");
	qsb_jw_str(&w, qsb_backend_names[p->backend]);
	qsb_jw_key(&w, "mode");
	qsb_jw_str(&w, qsb_mode_names[p->mode]);
	qsb_jw_obj_end(&w);
	if (qsb_jw_finish(&w) == 0)
		(void)qsb_event(r->root, "execute:start", p->ws->id, w.buf,
		    w.len, NULL);
	qsb_jw_free(&w);
	free(cmd);
	free(red);
}

static void
event_end(const struct qsb_root *root, const struct qsb_plan *p,
    const struct qsb_exec_result *res, const struct qsb_err *e,
    const char *id)
{
	struct qsb_jw w;

	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "sessionId");
	qsb_jw_str(&w, id);
	if (e != NULL) {
		qsb_jw_key(&w, "error");
		qsb_jw_str(&w, e->msg);
		qsb_jw_key(&w, "code");
		qsb_jw_str(&w, qsb_code_name(e->code));
	} else {
		/* the result without its output: the log stays small and
		 * holds nothing the command printed */
		qsb_jw_key(&w, "result");
		qsb_exec_result_write(&w, p, res, false);
	}
	qsb_jw_obj_end(&w);
	if (qsb_jw_finish(&w) == 0)
		(void)qsb_event(root, e ? "execute:error" : "execute:complete",
		    id, w.buf, w.len, NULL);
	qsb_jw_free(&w);
}

struct pkgcheck {
	struct qsb_perm	*pm;
	const char	*id;
	struct qsb_err	*e;
	int		 rc;
};

static void
pkg(enum qsb_ptype t, const char *name, void *arg)
{
	struct pkgcheck *pc = arg;

	if (pc->rc == 0)
		pc->rc = qsb_perm_gate(pc->pm, pc->id, t, name, pc->e);
}

/* DESIGN 5: command:execute (the command line), package installs (each
 * package), network:access when the run has network. */
static int
gate(const struct qsb_root *root, const struct qsb_plan *p,
    struct qsb_err *e)
{
	struct pkgcheck pc;
	struct qsb_perm pm;
	char *cmd;
	int rc;

	if (qsb_perm_open(&pm, root, e) < 0)
		return -1;
	if ((cmd = qsb_cmdline(p->argv)) == NULL) {
		qsb_perm_close(&pm);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	}
	rc = qsb_perm_gate(&pm, p->ws->id, QSB_P_COMMAND_EXECUTE, cmd, e);
	free(cmd);
	if (rc == 0) {
		pc.pm = &pm;
		pc.id = p->ws->id;
		pc.e = e;
		pc.rc = 0;
		qsb_package_installs(p->argv, pkg, &pc);
		rc = pc.rc;
	}
	if (rc == 0 && p->network)
		rc = qsb_perm_gate(&pm, p->ws->id, QSB_P_NETWORK_ACCESS, "*",
		    e);
	qsb_perm_close(&pm);
	return rc;
}

int
qsb_run_prepare(struct qsb_run *r, const struct qsb_root *root,
    const struct qsb_config *cfg, const char *id,
    const struct qsb_exec_req *q, struct qsb_err *e)
{
	memset(r, 0, sizeof(*r));
	r->root = root;
	r->cfg = cfg;
	r->dirfd = r->afd = -1;
	if ((r->dirfd = qsb_ws_open(root, id, e)) < 0)
		return -1;
	if (qsb_ws_load_at(root, r->dirfd, id, &r->ws, e) < 0) {
		qsb_run_free(r);
		return -1;
	}
	r->loaded = true;
	/* the plan first: bad input is refused before anything changes */
	if (qsb_exec_plan(root, cfg, &r->ws, q, &r->plan, e) < 0) {
		if (e->code == QSB_E_SANDBOX_UNAVAILABLE && r->plan.picking)
			qsb_availability_note(root,
			    qsb_backend_names[r->plan.wanted], false, e->msg);
		/* a refusal is worth a record; bad input changes nothing */
		if (e->code != QSB_E_CONFIG_INVALID)
			event_end(root, NULL, NULL, e, id);
		qsb_run_free(r);
		return -1;
	}
	r->planned = true;
	qsb_availability_note(root, qsb_backend_names[r->plan.wanted],
	    r->plan.backend == r->plan.wanted ||
	    r->plan.wanted == QSB_BK_AUTO, r->plan.reason);
	/* the permission policy decides whether it runs at all */
	if (gate(root, &r->plan, e) < 0) {
		event_end(root, NULL, NULL, e, id);
		qsb_run_free(r);
		return -1;
	}
	return 0;
}

static bool
still_there(const struct qsb_run *r)
{
	struct stat a, b;

	return fstat(r->dirfd, &a) == 0 && fstatat(r->root->wsfd, r->ws.id,
	    &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
	    a.st_dev == b.st_dev;
}

int
qsb_run_hold(struct qsb_run *r, struct qsb_err *e)
{
	int mfd;

	/* busy while it runs: cleanup leaves a workspace alone while any
	 * process holds meta/active */
	mfd = openat(r->dirfd, "meta", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	r->afd = mfd < 0 ? qsb_err_sys(e, QSB_E_WORKSPACE_NOT_FOUND,
	    "workspace '%s': meta", r->ws.id) :
	    qsb_lock(mfd, "active", LOCK_SH, e);
	if (mfd >= 0)
		close(mfd);
	/* cleanup may have moved it to the trash while we waited */
	if (r->afd >= 0 && !still_there(r)) {
		close(r->afd);
		r->afd = qsb_err_set(e, QSB_E_WORKSPACE_NOT_FOUND,
		    "no workspace '%s'", r->ws.id);
	}
	close(r->dirfd);
	r->dirfd = -1;
	return r->afd < 0 ? -1 : 0;
}

int
qsb_run_exec(struct qsb_run *r, struct qsb_exec_result *res,
    struct qsb_err *e)
{
	int rc;

	event_start(r);
	r->plan.on_status = record;
	r->plan.on_status_arg = r;
	rc = qsb_exec_run(&r->plan, res, e);
	if (r->afd >= 0) {
		close(r->afd);
		r->afd = -1;
	}
	event_end(r->root, &r->plan, rc < 0 ? NULL : res, rc < 0 ? e : NULL,
	    r->ws.id);
	return rc;
}

void
qsb_run_free(struct qsb_run *r)
{
	if (r->planned)
		qsb_plan_free(&r->plan);
	if (r->loaded)
		qsb_ws_free(&r->ws);
	if (r->dirfd >= 0)
		close(r->dirfd);
	if (r->afd >= 0)
		close(r->afd);
	r->planned = r->loaded = false;
	r->dirfd = r->afd = -1;
}
