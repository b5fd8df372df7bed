#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "json.h"
#include "root.h"
#include "rmtree.h"
#include "state.h"
#include "workspace.h"

const struct qsb_ws_subdir qsb_ws_subdirs[] = {
	{ "projects",		"projectsPath",		0755 },
	{ "node_modules",	"nodeModulesPath",	0755 },
	{ "pyenv",		"pythonEnvPath",	0755 },
	{ "bin",		"binPath",		0755 },
	{ "cache",		"cachePath",		0755 },
	{ "home",		"homePath",		0700 },
	{ "tmp",		"tmpPath",		0700 },
	{ NULL, NULL, 0 }
};

int
qsb_ws_open(const struct qsb_root *r, const char *id, struct qsb_err *e)
{
	int fd;

	if (!qsb_id_valid(id))
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "invalid session "
		    "id '%s': expected [A-Za-z0-9][A-Za-z0-9._-]{0,127}", id);
	if ((fd = openat(r->wsfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
			return qsb_err_set(e, QSB_E_WORKSPACE_NOT_FOUND,
			    "no workspace '%s'", id);
		return qsb_err_sys(e, QSB_E_WORKSPACE_NOT_FOUND,
		    "workspace '%s'", id);
	}
	return fd;
}

int
qsb_ws_open_fs(int wsdirfd, struct qsb_err *e)
{
	int fd;

	if ((fd = openat(wsdirfd, "fs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return qsb_err_sys(e, QSB_E_FILE_NOT_FOUND,
		    "cannot open the workspace's files");
	return fd;
}

static int
set_paths(const struct qsb_root *r, struct qsb_ws *w, struct qsb_err *e)
{
	if (asprintf(&w->workspace_root, "%s/ws", r->path) < 0) {
		w->workspace_root = NULL;
		goto nomem;
	}
	if (asprintf(&w->dir, "%s/%s", w->workspace_root, w->id) < 0) {
		w->dir = NULL;
		goto nomem;
	}
	if (asprintf(&w->root_path, "%s/fs", w->dir) < 0) {
		w->root_path = NULL;
		goto nomem;
	}
	return 0;
nomem:
	return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
}

void
qsb_ws_free(struct qsb_ws *w)
{
	if (w == NULL)
		return;
	free(w->workspace_root);
	free(w->dir);
	free(w->root_path);
	w->workspace_root = w->dir = w->root_path = NULL;
}

static int
want_time(const struct qsb_json *j, const char *key, int64_t *out,
    struct qsb_err *e)
{
	char *s = NULL;

	if (qsb_json_want_str(j, 0, key, true, &s, "", e) < 0)
		return -1;
	if (qsb_parse_time(s, out) < 0) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "field '%s': invalid "
		    "date '%s'", key, s);
		free(s);
		return -1;
	}
	free(s);
	return 0;
}

static int
parse_record(const char *buf, size_t len, const char *id, struct qsb_ws *w,
    struct qsb_err *e)
{
	struct qsb_json j;
	char *s = NULL;
	long long v;
	int k, rc = -1;

	if (qsb_json_parse(&j, buf, len, e) < 0)
		return -1;
	if (j.t[0].type != QSB_JOBJ) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "expected an object");
		goto out;
	}
	if (qsb_json_want_str(&j, 0, "id", true, &s, "", e) < 0)
		goto out;
	if (strcmp(s, id) != 0) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "field 'id' is '%s', "
		    "the directory is '%s'", s, id);
		goto out;
	}
	strlcpy(w->id, id, sizeof(w->id));
	if ((k = qsb_json_get(&j, 0, "sandboxConfig")) < 0) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field 'sandboxConfig' is missing");
		goto out;
	}
	memset(&w->sb, 0, sizeof(w->sb));
	w->sb.enabled = true;
	w->sb.mode = QSB_MODE_COMPAT;
	if (qsb_sbconfig_parse(&j, k, &w->sb, false, "sandboxConfig", e) < 0)
		goto out;
	if ((k = qsb_json_get(&j, 0, "retentionPolicy")) < 0) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field 'retentionPolicy' is missing");
		goto out;
	}
	memset(&w->ret, 0, sizeof(w->ret));
	if (qsb_retention_parse(&j, k, &w->ret, false, "retentionPolicy",
	    e) < 0)
		goto out;
	if (want_time(&j, "createdAt", &w->created_at, e) < 0 ||
	    want_time(&j, "lastAccessedAt", &w->last_accessed_at, e) < 0)
		goto out;
	w->has_last_exit = false;
	if ((k = qsb_json_get(&j, 0, "lastExitCode")) >= 0 &&
	    j.t[k].type != QSB_JNULL) {
		if (qsb_json_i64(&j, k, &v) < 0 || v < -1 || v > 255) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "field 'lastExitCode': expected an integer");
			goto out;
		}
		w->has_last_exit = true;
		w->last_exit_code = (int)v;
	}
	rc = 0;
out:
	free(s);
	qsb_json_free(&j);
	return rc;
}

/* The Workspace of record text buf (which it frees). */
static int
load_record(const struct qsb_root *r, const char *id, char *buf, size_t len,
    struct qsb_ws *w, struct qsb_err *e)
{
	struct qsb_err sub;
	int rc;

	rc = parse_record(buf, len, id, w, &sub);
	free(buf);
	if (rc < 0)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "workspace '%s': meta/workspace.json: %s", id, sub.msg);
	if (set_paths(r, w, e) < 0) {
		qsb_ws_free(w);
		return -1;
	}
	return 0;
}

int
qsb_ws_load_at(const struct qsb_root *r, int dirfd, const char *id,
    struct qsb_ws *w, struct qsb_err *e)
{
	struct qsb_err sub;
	char *buf = NULL;
	size_t len;
	int mfd, rc;

	memset(w, 0, sizeof(*w));
	if ((mfd = openat(dirfd, "meta", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return qsb_err_sys(e, QSB_E_CONFIG_INVALID,
		    "workspace '%s': meta", id);
	rc = qsb_state_read(mfd, "workspace.json", QSB_STATE_MAX, &buf, &len,
	    &sub);
	close(mfd);
	if (rc < 0)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "workspace '%s': %s", id, sub.msg);
	return load_record(r, id, buf, len, w, e);
}

/*
 * The record in one open (list reads thousands): openat2 beneath ROOT/ws,
 * no symlink anywhere on the way.  Returns 1 when that did not work, for
 * qsb_ws_load's step-by-step path to say why.
 */
static int
load_direct(const struct qsb_root *r, const char *id, struct qsb_ws *w,
    struct qsb_err *e)
{
	struct open_how how;
	struct stat st;
	char path[QSB_ID_MAX + 32], *buf = NULL;
	size_t len;
	ssize_t n;
	int fd;

	if (!qsb_id_valid(id))
		return 1;
	snprintf(path, sizeof(path), "%s/meta/workspace.json", id);
	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS;
	if ((fd = (int)syscall(SYS_openat2, r->wsfd, path, &how,
	    sizeof(how))) < 0)
		return 1;
	/* records are replaced whole, never grown: one read of one byte
	 * more than the size comes back short, at the end */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > QSB_STATE_MAX ||
	    (buf = malloc((size_t)st.st_size + 2)) == NULL ||
	    (n = read(fd, buf, (size_t)st.st_size + 1)) < 0 ||
	    n > st.st_size) {
		free(buf);
		close(fd);
		return 1;
	}
	close(fd);
	len = (size_t)n;
	buf[len] = '\0';
	memset(w, 0, sizeof(*w));
	return load_record(r, id, buf, len, w, e);
}

int
qsb_ws_load(const struct qsb_root *r, const char *id, struct qsb_ws *w,
    struct qsb_err *e)
{
	int fd, rc;

	if ((rc = load_direct(r, id, w, e)) <= 0)
		return rc;
	if ((fd = qsb_ws_open(r, id, e)) < 0)
		return -1;
	rc = qsb_ws_load_at(r, fd, id, w, e);
	close(fd);
	return rc;
}

void
qsb_ws_write(struct qsb_jw *jw, const struct qsb_ws *w)
{
	const struct qsb_ws_subdir *sd;
	char buf[QSB_SIZE_BUFSZ], *p;

	qsb_jw_obj(jw);
	qsb_jw_key(jw, "id");
	qsb_jw_str(jw, w->id);
	qsb_jw_key(jw, "rootPath");
	qsb_jw_str(jw, w->root_path);
	for (sd = qsb_ws_subdirs; sd->dir; sd++) {
		qsb_jw_key(jw, sd->field);
		if (asprintf(&p, "%s/%s", w->root_path, sd->dir) < 0) {
			qsb_jw_null(jw);
			continue;
		}
		qsb_jw_str(jw, p);
		free(p);
	}
	qsb_jw_key(jw, "sandboxConfig");
	qsb_jw_obj(jw);
	qsb_jw_key(jw, "type");
	qsb_jw_str(jw, qsb_backend_names[w->sb.type]);
	qsb_jw_key(jw, "platform");
	qsb_jw_str(jw, "linux");
	qsb_jw_key(jw, "enabled");
	qsb_jw_bool(jw, w->sb.enabled);
	qsb_jw_key(jw, "workspaceRoot");
	qsb_jw_str(jw, w->workspace_root);
	if (w->sb.has_memory) {
		qsb_fmt_size(w->sb.memory, buf);
		qsb_jw_key(jw, "memoryLimit");
		qsb_jw_str(jw, buf);
	}
	if (w->sb.has_cpus) {
		qsb_jw_key(jw, "cpuLimit");
		qsb_jw_double(jw, w->sb.cpus);
	}
	if (w->sb.has_disk) {
		qsb_fmt_size(w->sb.disk, buf);
		qsb_jw_key(jw, "diskQuota");
		qsb_jw_str(jw, buf);
	}
	qsb_jw_key(jw, "networkEnabled");
	qsb_jw_bool(jw, w->sb.network);
	qsb_jw_key(jw, "mode");
	qsb_jw_str(jw, qsb_mode_names[w->sb.mode]);
	qsb_jw_obj_end(jw);
	qsb_jw_key(jw, "createdAt");
	qsb_jw_time(jw, w->created_at);
	qsb_jw_key(jw, "lastAccessedAt");
	qsb_jw_time(jw, w->last_accessed_at);
	qsb_jw_key(jw, "retentionPolicy");
	qsb_retention_write(jw, &w->ret);
	qsb_jw_key(jw, "lastExitCode");
	if (w->has_last_exit)
		qsb_jw_int(jw, w->last_exit_code);
	else
		qsb_jw_null(jw);
	qsb_jw_obj_end(jw);
}

int
qsb_ws_save(int dirfd, const struct qsb_ws *w, struct qsb_err *e)
{
	struct qsb_jw jw;
	int mfd, rc;

	qsb_jw_init(&jw, 1);
	qsb_ws_write(&jw, w);
	if (qsb_jw_finish(&jw) < 0) {
		qsb_jw_free(&jw);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	}
	if ((mfd = openat(dirfd, "meta", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0) {
		qsb_jw_free(&jw);
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "workspace '%s': meta", w->id);
	}
	rc = qsb_state_write(mfd, "workspace.json", jw.buf, jw.len, 0600, e);
	close(mfd);
	qsb_jw_free(&jw);
	return rc;
}

int
qsb_ws_lock(const struct qsb_root *r, const char *id, int *dirfdp,
    struct qsb_err *e)
{
	struct stat a, b;
	int dirfd, lfd, mfd;

	if ((dirfd = qsb_ws_open(r, id, e)) < 0)
		return -1;
	if ((mfd = openat(dirfd, "meta", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0) {
		close(dirfd);
		return qsb_err_sys(e, QSB_E_CONFIG_INVALID,
		    "workspace '%s': meta", id);
	}
	lfd = qsb_lock(mfd, "lock", LOCK_EX, e);
	close(mfd);
	if (lfd < 0) {
		close(dirfd);
		return -1;
	}
	/* destroy may have moved it to the trash while we waited */
	if (fstat(dirfd, &a) < 0 || fstatat(r->wsfd, id, &b,
	    AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(lfd);
		close(dirfd);
		return qsb_err_set(e, QSB_E_WORKSPACE_NOT_FOUND,
		    "no workspace '%s'", id);
	}
	*dirfdp = dirfd;
	return lfd;
}

static int
mkdirs(int fsfd, uid_t uid, gid_t gid, bool chown_, struct qsb_err *e)
{
	const struct qsb_ws_subdir *sd;
	int fd;

	for (sd = qsb_ws_subdirs; sd->dir; sd++) {
		if (mkdirat(fsfd, sd->dir, sd->mode) < 0)
			return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot create '%s'", sd->dir);
		if ((fd = openat(fsfd, sd->dir, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) < 0)
			return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot open '%s'", sd->dir);
		if (fchmod(fd, sd->mode) < 0 ||
		    (chown_ && fchown(fd, uid, gid) < 0)) {
			close(fd);
			return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot set up '%s'", sd->dir);
		}
		close(fd);
	}
	return 0;
}

int
qsb_ws_create(const struct qsb_root *r, const struct qsb_config *cfg,
    const char *id, const struct qsb_sbconfig *sb,
    const struct qsb_retention *ret, struct qsb_ws *out, struct qsb_err *e)
{
	struct qsb_ws w;
	struct qsb_jw jw;
	struct stat st;
	char tmp[QSB_ID_MAX + 64], pfx[QSB_ID_MAX + 8];
	int tfd = -1, mfd = -1, ffd = -1, lfd = -1, rc = -1;
	bool chown_ = geteuid() == 0;

	memset(&w, 0, sizeof(w));
	memset(out, 0, sizeof(*out));
	if (!qsb_id_valid(id))
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "invalid session "
		    "id '%s': expected [A-Za-z0-9][A-Za-z0-9._-]{0,127}", id);
	if (fstatat(r->wsfd, id, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return qsb_err_set(e, QSB_E_WORKSPACE_EXISTS,
		    "workspace '%s' already exists", id);
	snprintf(pfx, sizeof(pfx), ".new.%s", id);
	if (qsb_tmpname(tmp, sizeof(tmp), pfx) < 0)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "'%s'", id);
	if (mkdirat(r->wsfd, tmp, 0700) < 0)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot create '%s/ws/%s'", r->path, tmp);
	if ((tfd = openat(r->wsfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot open '%s'",
		    tmp);
		goto fail;
	}
	if (mkdirat(tfd, "meta", 0700) < 0 || (mfd = openat(tfd, "meta",
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot create meta");
		goto fail;
	}
	/* held until the workspace is complete, so cleanup can tell a
	 * create in progress from an abandoned one */
	if ((lfd = qsb_lock(mfd, "lock", LOCK_EX, e)) < 0)
		goto fail;
	/* meta/active: held (shared) by every running command */
	{
		int afd = openat(mfd, "active", O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (afd < 0) {
			qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot create meta/active");
			goto fail;
		}
		close(afd);
	}
	if (mkdirat(tfd, "fs", 0755) < 0 || (ffd = openat(tfd, "fs",
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot create fs");
		goto fail;
	}
	if (fchmod(ffd, 0755) < 0 || (chown_ && fchown(ffd, cfg->sandbox_uid,
	    cfg->sandbox_gid) < 0)) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot set up fs");
		goto fail;
	}
	if (mkdirs(ffd, cfg->sandbox_uid, cfg->sandbox_gid, chown_, e) < 0)
		goto fail;

	strlcpy(w.id, id, sizeof(w.id));
	w.sb = *sb;
	w.ret = *ret;
	w.created_at = w.last_accessed_at = qsb_now_ms();
	if (set_paths(r, &w, e) < 0)
		goto fail;
	if (qsb_ws_save(tfd, &w, e) < 0)
		goto fail;
	if (fsync(ffd) < 0 || fsync(tfd) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot sync '%s'", id);
		goto fail;
	}
	if (renameat2(r->wsfd, tmp, r->wsfd, id, RENAME_NOREPLACE) < 0) {
		if (errno == EEXIST || errno == ENOTEMPTY)
			qsb_err_set(e, QSB_E_WORKSPACE_EXISTS,
			    "workspace '%s' already exists", id);
		else
			qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot create workspace '%s'", id);
		goto fail;
	}
	if (qsb_fsync_dir(r->wsfd) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot sync '%s/ws'",
		    r->path);
		goto out;	/* it exists: report, but do not undo */
	}
	qsb_jw_init(&jw, 0);
	qsb_jw_obj(&jw);
	qsb_jw_key(&jw, "workspace");
	qsb_ws_write(&jw, &w);
	qsb_jw_obj_end(&jw);
	if (qsb_jw_finish(&jw) == 0)
		(void)qsb_event(r, "workspace:created", id, jw.buf, jw.len,
		    NULL);
	qsb_jw_free(&jw);
	*out = w;
	memset(&w, 0, sizeof(w));
	rc = 0;
	goto out;
fail:
	if (ffd >= 0)
		close(ffd);
	ffd = -1;
	(void)qsb_rmtree(r->wsfd, tmp, NULL, NULL);
out:
	if (ffd >= 0)
		close(ffd);
	if (lfd >= 0)
		close(lfd);
	if (mfd >= 0)
		close(mfd);
	if (tfd >= 0)
		close(tfd);
	qsb_ws_free(&w);
	return rc;
}

int
qsb_ws_terminals_running(int wsdirfd, pid_t *pids, int npids)
{
	struct dirent *de;
	char path[512], buf[32];
	int dfd, lfd, pfd, n = 0;
	ssize_t k;
	DIR *d;

	if ((dfd = openat(wsdirfd, "meta/terminals", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) < 0)
		return 0;
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/lock", de->d_name);
		if ((lfd = openat(dfd, path, O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC)) < 0)
			continue;
		if (flock(lfd, LOCK_SH | LOCK_NB) == 0 ||
		    errno != EWOULDBLOCK) {
			close(lfd);
			continue;
		}
		close(lfd);
		if (pids != NULL && n < npids) {
			pids[n] = 0;
			snprintf(path, sizeof(path), "%s/pid", de->d_name);
			if ((pfd = openat(dfd, path, O_RDONLY | O_NOFOLLOW |
			    O_CLOEXEC)) >= 0) {
				k = read(pfd, buf, sizeof(buf) - 1);
				close(pfd);
				if (k > 0) {
					buf[k] = '\0';
					pids[n] = (pid_t)strtol(buf, NULL, 10);
				}
			}
		}
		n++;
	}
	closedir(d);
	return n;
}

bool
qsb_ws_busy(int wsdirfd)
{
	int fd;
	bool busy;

	if ((fd = openat(wsdirfd, "meta/active", O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return qsb_ws_terminals_running(wsdirfd, NULL, 0) > 0;
	busy = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return busy || qsb_ws_terminals_running(wsdirfd, NULL, 0) > 0;
}

/* SIGTERM, then SIGKILL, through a pidfd so that a recycled pid is never
 * signalled; waits for the process to end. */
static int
stop_pid(pid_t pid)
{
	struct pollfd pfd;
	int fd;

	if (pid <= 1)
		return -1;
	if ((fd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
		return errno == ESRCH ? 0 : -1;
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (syscall(SYS_pidfd_send_signal, fd, SIGTERM, NULL, 0) == 0 &&
	    poll(&pfd, 1, 5000) == 1) {
		close(fd);
		return 0;
	}
	(void)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
	pfd.revents = 0;
	if (poll(&pfd, 1, 5000) == 1) {
		close(fd);
		return 0;
	}
	close(fd);
	return errno = ETIMEDOUT, -1;
}

int
qsb_ws_destroy(const struct qsb_root *r, const char *id, int how,
    struct qsb_ws_destroyed *res, struct qsb_err *e)
{
	struct qsb_jw jw;
	pid_t pids[64];
	char tmp[QSB_ID_MAX + 64];
	int dirfd = -1, lfd = -1, afd = -1, n, i, round;
	bool force = how & QSB_DESTROY_FORCE;

	memset(res, 0, sizeof(*res));
	if (how & QSB_DESTROY_IDLE) {
		/* cleanup: a workspace in use is left alone.  meta/active
		 * held exclusively until it is in the trash: no exec starts
		 * in between (qsb-exec holds it shared, and checks after
		 * getting it that its workspace is still in place) */
		if ((lfd = qsb_ws_lock(r, id, &dirfd, e)) < 0)
			return -1;
		afd = openat(dirfd, "meta/active", O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC);
		if ((afd >= 0 && flock(afd, LOCK_EX | LOCK_NB) < 0) ||
		    qsb_ws_terminals_running(dirfd, NULL, 0) > 0) {
			res->busy = true;
			if (afd >= 0)
				close(afd);
			close(lfd);
			close(dirfd);
			return 0;
		}
		goto move;
	}
	for (round = 0; ; round++) {
		if ((dirfd = qsb_ws_open(r, id, e)) < 0)
			return -1;
		n = qsb_ws_terminals_running(dirfd, pids, 64);
		if (n > 0 && !force) {
			close(dirfd);
			return qsb_err_set(e, QSB_E_PERMISSION_DENIED,
			    "%d terminal%s running in workspace '%s'; "
			    "use --force to kill", n, n == 1 ? " is" : "s are",
			    id);
		}
		/* kill before taking the lock: a supervisor that is
		 * exiting may need it to record the exit status */
		for (i = 0; i < n && i < 64; i++) {
			if (stop_pid(pids[i]) < 0) {
				close(dirfd);
				return qsb_err_sys(e, QSB_E_CLEANUP_FAILED,
				    "cannot stop the terminal supervisor %d",
				    (int)pids[i]);
			}
			res->killed++;
		}
		close(dirfd);
		if ((lfd = qsb_ws_lock(r, id, &dirfd, e)) < 0)
			return -1;
		if (qsb_ws_terminals_running(dirfd, NULL, 0) == 0)
			break;
		close(lfd);
		close(dirfd);
		if (round == 3)
			return qsb_err_set(e, QSB_E_CLEANUP_FAILED,
			    "terminals keep starting in workspace '%s'", id);
	}
move:
	if (qsb_tmpname(tmp, sizeof(tmp), id) < 0 ||
	    renameat(r->wsfd, id, r->trashfd, tmp) < 0) {
		qsb_err_sys(e, QSB_E_CLEANUP_FAILED,
		    "cannot move workspace '%s' to the trash", id);
		if (afd >= 0)
			close(afd);
		close(lfd);
		close(dirfd);
		return -1;
	}
	(void)qsb_fsync_dir(r->wsfd);
	(void)qsb_fsync_dir(r->trashfd);
	if (afd >= 0)
		close(afd);
	close(lfd);
	close(dirfd);
	qsb_jw_init(&jw, 0);
	qsb_jw_obj(&jw);
	qsb_jw_key(&jw, "workspaceId");
	qsb_jw_str(&jw, id);
	qsb_jw_obj_end(&jw);
	if (qsb_jw_finish(&jw) == 0)
		(void)qsb_event(r, "workspace:destroyed", id, jw.buf, jw.len,
		    NULL);
	qsb_jw_free(&jw);
	if (qsb_rmtree(r->trashfd, tmp, &res->freed, e) < 0) {
		char m[sizeof(e->msg)];
		strlcpy(m, e->msg, sizeof(m));
		return qsb_err_set(e, QSB_E_CLEANUP_FAILED, "workspace '%s' "
		    "is destroyed but not all its files could be removed "
		    "(qsb-cleanup finishes it): %s", id, m);
	}
	return 0;
}

static int
idcmp(const void *a, const void *b)
{
	return strcmp(((const struct qsb_ws *)a)->id,
	    ((const struct qsb_ws *)b)->id);
}

int
qsb_ws_list(const struct qsb_root *r, struct qsb_ws **outp, size_t *np,
    void (*bad)(const char *, const struct qsb_err *, void *), void *arg,
    struct qsb_err *e)
{
	struct qsb_ws *v = NULL, *nv;
	struct qsb_err sub;
	struct dirent *de;
	size_t n = 0, cap = 0;
	int fd;
	DIR *d;

	if ((fd = openat(r->wsfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0
	    || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return qsb_err_sys(e, QSB_E_CONFIG_INVALID, "cannot read "
		    "'%s/ws'", r->path);
	}
	while ((de = readdir(d)) != NULL) {
		if (!qsb_id_valid(de->d_name))
			continue;	/* ".", "..", ".new.*" */
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = reallocarray(v, cap, sizeof(*v))) == NULL) {
				closedir(d);
				qsb_ws_list_free(v, n);
				return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
				    "out of memory");
			}
			v = nv;
		}
		if (qsb_ws_load(r, de->d_name, &v[n], &sub) < 0) {
			/* destroyed meanwhile: not an error */
			if (sub.code != QSB_E_WORKSPACE_NOT_FOUND && bad)
				bad(de->d_name, &sub, arg);
			continue;
		}
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), idcmp);
	*outp = v;
	*np = n;
	return 0;
}

void
qsb_ws_list_free(struct qsb_ws *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		qsb_ws_free(&v[i]);
	free(v);
}

int
qsb_ws_touch(const struct qsb_root *r, const char *id, struct qsb_err *e)
{
	struct qsb_ws w;
	struct qsb_jw jw;
	int dirfd, lfd, rc;

	if ((lfd = qsb_ws_lock(r, id, &dirfd, e)) < 0)
		return -1;
	if ((rc = qsb_ws_load_at(r, dirfd, id, &w, e)) == 0) {
		w.last_accessed_at = qsb_now_ms();
		rc = qsb_ws_save(dirfd, &w, e);
	}
	close(lfd);
	close(dirfd);
	if (rc == 0) {
		qsb_jw_init(&jw, 0);
		qsb_jw_obj(&jw);
		qsb_jw_key(&jw, "workspaceId");
		qsb_jw_str(&jw, id);
		qsb_jw_key(&jw, "timestamp");
		qsb_jw_time(&jw, w.last_accessed_at);
		qsb_jw_obj_end(&jw);
		if (qsb_jw_finish(&jw) == 0)
			(void)qsb_event(r, "workspace:accessed", id, jw.buf,
			    jw.len, NULL);
		qsb_jw_free(&jw);
		qsb_ws_free(&w);
	}
	return rc;
}

int
qsb_ws_quota(const struct qsb_ws *ws, uint64_t *remaining, struct qsb_err *e)
{
	uint64_t used = 0;
	struct qsb_err sub;
	int fd;

	*remaining = 0;
	if (!ws->sb.has_disk)
		return 0;
	if ((fd = open(ws->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "'%s'",
		    ws->dir);
	if (qsb_du(fd, "fs", &used, &sub) < 0) {
		close(fd);
		return qsb_err_set(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot measure the workspace: %s", sub.msg);
	}
	close(fd);
	if (used >= ws->sb.disk) {
		char q[QSB_SIZE_BUFSZ];
		qsb_fmt_size(ws->sb.disk, q);
		return qsb_err_set(e, QSB_E_FILE_WRITE_FAILED, "workspace "
		    "'%s' uses %llu bytes, its disk quota is %s", ws->id,
		    (unsigned long long)used, q);
	}
	*remaining = ws->sb.disk - used;
	return 0;
}
