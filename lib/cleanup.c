#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "event.h"
#include "json.h"
#include "parse.h"
#include "rmtree.h"
#include "root.h"
#include "state.h"
#include "strv.h"
#include "workspace.h"

struct cand {
	struct qsb_ws	*w;
	uint64_t	 size;
	bool		 sized;
	bool		 eligible;	/* not manual, not kept */
	int		 busy;		/* -1: not looked at yet */
	bool		 del;
};

struct run {
	const struct qsb_root		*r;
	const struct qsb_cleanup_opts	*o;
	struct qsb_strv			 deleted, errors;
	uint64_t			 freed;
	int				 count;
};

/* Removes (or, dry, measures) dirfd/name. */
static void
reclaim(struct run *x, int dirfd, const char *name, const char *what)
{
	struct qsb_err e;
	uint64_t n = 0;

	if (x->o->dry_run) {
		if (qsb_du(dirfd, name, &n, &e) == 0)
			x->freed += n;
		return;
	}
	if (qsb_rmtree(dirfd, name, &x->freed, &e) < 0)
		qsb_strv_take(&x->errors, qsb_fmt("%s: %s", what, e.msg));
}

/* Deletes interrupted in the trash, and half-built workspaces whose
 * create is gone (it holds meta/lock while building). */
static void
leftovers(struct run *x)
{
	struct dirent *de;
	char path[512];
	int fd, lfd;
	DIR *d;

	if ((fd = openat(x->r->trashfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) >= 0 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0)
				reclaim(x, dirfd(d), de->d_name,
				    "trash");
		closedir(d);
	}
	if ((fd = openat(x->r->wsfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0 || (d = fdopendir(fd)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, ".new.", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/meta/lock", de->d_name);
		lfd = openat(dirfd(d), path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) < 0) {
			close(lfd);
			continue;	/* still being built */
		}
		reclaim(x, dirfd(d), de->d_name, "an abandoned create");
		if (lfd >= 0)
			close(lfd);
	}
	closedir(d);
}

static uint64_t
size_of(struct run *x, struct cand *c)
{
	struct qsb_err e;

	if (!c->sized) {
		c->size = 0;
		if (qsb_du(x->r->wsfd, c->w->id, &c->size, &e) < 0)
			qsb_strv_take(&x->errors, qsb_fmt("workspace '%s': %s",
			    c->w->id, e.msg));
		c->sized = true;
	}
	return c->size;
}

/* Whether a command or terminal runs in it; looked at only for the
 * workspaces that would go (destroy looks again, atomically). */
static bool
busy(struct run *x, struct cand *c)
{
	int dirfd;

	if (c->busy < 0) {
		c->busy = 0;
		if ((dirfd = qsb_ws_open(x->r, c->w->id, NULL)) >= 0) {
			c->busy = qsb_ws_busy(dirfd);
			close(dirfd);
		}
	}
	return c->busy;
}

static int
by_access(const void *a, const void *b)
{
	const struct cand *x = *(const struct cand *const *)a;
	const struct cand *y = *(const struct cand *const *)b;

	if (x->w->last_accessed_at != y->w->last_accessed_at)
		return x->w->last_accessed_at < y->w->last_accessed_at ? -1 : 1;
	return strcmp(x->w->id, y->w->id);
}

static void
bad_record(const char *id, const struct qsb_err *e, void *arg)
{
	struct run *x = arg;

	(void)id;
	qsb_strv_take(&x->errors, qsb_fmt("%s", e->msg));
}

static void
delete(struct run *x, struct cand *c)
{
	struct qsb_ws_destroyed res;
	struct qsb_err e;

	if (x->o->dry_run) {
		x->freed += size_of(x, c);
	} else {
		if (qsb_ws_destroy(x->r, c->w->id, QSB_DESTROY_IDLE, &res,
		    &e) < 0) {
			if (e.code != QSB_E_WORKSPACE_NOT_FOUND)
				qsb_strv_take(&x->errors, qsb_fmt(
				    "workspace '%s': %s", c->w->id, e.msg));
			return;
		}
		if (res.busy)
			return;	/* it started something meanwhile */
		x->freed += res.freed;
	}
	qsb_strv_add(&x->deleted, c->w->id);
	x->count++;
}

int
qsb_cleanup(const struct qsb_root *r, const struct qsb_config *cfg,
    const struct qsb_cleanup_opts *o, struct qsb_cleanup_result *res,
    struct qsb_err *e)
{
	struct run x;
	struct qsb_ws *v = NULL;
	struct cand *c = NULL, **order = NULL;
	struct qsb_jw jw;
	size_t n = 0, i, m, left;
	long long maxws;
	uint64_t maxsize, total;
	int64_t now = qsb_now_ms();
	int lfd = -1, rc = -1;

	memset(res, 0, sizeof(*res));
	memset(&x, 0, sizeof(x));
	x.r = r;
	x.o = o;
	maxws = o->max_workspaces ? o->max_workspaces :
	    cfg->retention.has_max_workspaces ? cfg->retention.max_workspaces : 0;
	maxsize = o->max_size ? o->max_size :
	    cfg->retention.has_max_size ? cfg->retention.max_size : 0;
	/* one cleanup at a time */
	if ((lfd = qsb_lock(r->fd, "lock", LOCK_EX, e)) < 0)
		return -1;
	if (!o->dry_run)
		(void)qsb_event(r, "cleanup:start", o->session, NULL, 0, NULL);
	if (o->session == NULL)
		leftovers(&x);
	if (qsb_ws_list(r, &v, &n, bad_record, &x, e) < 0)
		goto out;
	if ((c = calloc(n + 1, sizeof(*c))) == NULL ||
	    (order = calloc(n + 1, sizeof(*order))) == NULL) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
		goto out;
	}
	/* each workspace's own retention */
	for (i = 0; i < n; i++) {
		struct qsb_ws *w = &v[i];
		c[i].w = w;
		c[i].busy = -1;
		if (w->ret.mode == QSB_RET_MANUAL)
			continue;
		if (w->ret.has_preserve_on_error && w->ret.preserve_on_error &&
		    w->has_last_exit && w->last_exit_code != 0)
			continue;
		c[i].eligible = true;
		if (o->session != NULL && strcmp(o->session, w->id) != 0)
			continue;
		if ((o->all || w->ret.mode == QSB_RET_ALWAYS ||
		    (w->ret.mode == QSB_RET_TIMEOUT && w->ret.has_max_age &&
		    now - w->last_accessed_at > (int64_t)w->ret.max_age) ||
		    (w->ret.has_max_size && size_of(&x, &c[i]) >
		    w->ret.max_size)) && !busy(&x, &c[i]))
			c[i].del = true;
	}
	/* the global caps: least recently accessed first */
	if (o->session == NULL && (maxws > 0 || maxsize > 0)) {
		for (i = m = 0; i < n; i++)
			if (c[i].eligible && !c[i].del)
				order[m++] = &c[i];
		qsort(order, m, sizeof(*order), by_access);
		for (i = left = 0; i < n; i++)
			left += !c[i].del;
		for (i = 0; maxws > 0 && (long long)left > maxws && i < m;
		    i++) {
			if (busy(&x, order[i]))
				continue;
			order[i]->del = true;
			left--;
		}
		if (maxsize > 0) {
			for (i = 0, total = 0; i < n; i++)
				if (!c[i].del)
					total += size_of(&x, &c[i]);
			for (i = 0; total > maxsize && i < m; i++) {
				if (order[i]->del || busy(&x, order[i]))
					continue;
				order[i]->del = true;
				total -= size_of(&x, order[i]);
			}
		}
	}
	for (i = 0; i < n; i++)
		if (c[i].del)
			delete(&x, &c[i]);
	res->deleted_count = x.count;
	res->freed = x.freed;
	res->dry_run = o->dry_run;
	if ((res->deleted = qsb_strv_done(&x.deleted)) == NULL ||
	    (res->errors = qsb_strv_done(&x.errors)) == NULL) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
		goto out;
	}
	memset(&x.deleted, 0, sizeof(x.deleted));
	memset(&x.errors, 0, sizeof(x.errors));
	if (!o->dry_run) {
		qsb_jw_init(&jw, 0);
		qsb_jw_obj(&jw);
		qsb_jw_key(&jw, "result");
		qsb_cleanup_write(&jw, res);
		qsb_jw_obj_end(&jw);
		if (qsb_jw_finish(&jw) == 0)
			(void)qsb_event(r, "cleanup:complete", o->session,
			    jw.buf, jw.len, NULL);
		qsb_jw_free(&jw);
	}
	rc = 0;
out:
	if (rc < 0)
		qsb_cleanup_free(res);
	qsb_strv_free(x.deleted.v);
	qsb_strv_free(x.errors.v);
	free(order);
	free(c);
	qsb_ws_list_free(v, n);
	if (lfd >= 0)
		close(lfd);
	return rc;
}

void
qsb_cleanup_write(struct qsb_jw *w, const struct qsb_cleanup_result *r)
{
	size_t i;

	qsb_jw_obj(w);
	qsb_jw_key(w, "deletedCount");
	qsb_jw_int(w, r->deleted_count);
	qsb_jw_key(w, "freedSpace");
	qsb_jw_uint(w, r->freed);
	qsb_jw_key(w, "errors");
	qsb_jw_arr(w);
	for (i = 0; r->errors && r->errors[i]; i++)
		qsb_jw_str(w, r->errors[i]);
	qsb_jw_arr_end(w);
	qsb_jw_key(w, "deleted");
	qsb_jw_arr(w);
	for (i = 0; r->deleted && r->deleted[i]; i++)
		qsb_jw_str(w, r->deleted[i]);
	qsb_jw_arr_end(w);
	qsb_jw_key(w, "dryRun");
	qsb_jw_bool(w, r->dry_run);
	qsb_jw_obj_end(w);
}

void
qsb_cleanup_free(struct qsb_cleanup_result *r)
{
	qsb_strv_free(r->deleted);
	qsb_strv_free(r->errors);
	r->deleted = r->errors = NULL;
}
