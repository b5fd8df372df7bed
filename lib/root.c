#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "root.h"

static char *
join(const char *a, const char *b)
{
	char *p;

	if (asprintf(&p, "%s/%s", a, b) < 0)
		return NULL;
	return p;
}

char *
qsb_root_locate(const char *opt, struct qsb_err *e)
{
	const char *v;
	char *p, *cwd, *abs;

	if (opt != NULL && *opt != '\0')
		p = strdup(opt);
	else if ((v = getenv("QSB_ROOT")) != NULL && *v != '\0')
		p = strdup(v);
	else if ((v = getenv("XDG_STATE_HOME")) != NULL && *v == '/')
		p = join(v, "qsb");
	else if ((v = getenv("HOME")) != NULL && *v == '/')
		p = join(v, ".local/state/qsb");
	else {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "cannot find the root: "
		    "HOME is not set; use --root or QSB_ROOT");
		return NULL;
	}
	if (p == NULL) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
		return NULL;
	}
	if (*p == '/')
		return p;
	if ((cwd = getcwd(NULL, 0)) == NULL) {
		qsb_err_sys(e, QSB_E_CONFIG_INVALID, "root '%s'", p);
		free(p);
		return NULL;
	}
	abs = join(cwd, p);
	free(cwd);
	free(p);
	if (abs == NULL)
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	return abs;
}

int
qsb_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *s;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	for (s = buf + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -1;
		*s = c;
		if (c == '\0')
			break;
	}
	return 0;
}

static int
subdir(int rootfd, const char *name, const char *rootpath, struct qsb_err *e)
{
	struct stat st;
	int fd;

	if (mkdirat(rootfd, name, 0700) < 0 && errno != EEXIST)
		return qsb_err_sys(e, QSB_E_CONFIG_INVALID,
		    "cannot create '%s/%s'", rootpath, name);
	if ((fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return qsb_err_sys(e, QSB_E_CONFIG_INVALID,
		    "cannot open '%s/%s'", rootpath, name);
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0) {
		close(fd);
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "'%s/%s': must be owned by uid %u and not writable by "
		    "others", rootpath, name, (unsigned)geteuid());
	}
	return fd;
}

static int
touch(int dirfd, const char *name)
{
	int fd;

	if ((fd = openat(dirfd, name, O_RDONLY | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) < 0)
		return -1;
	close(fd);
	return 0;
}

int
qsb_root_open(struct qsb_root *r, const char *opt, struct qsb_err *e)
{
	static const char *const permdirs[] = { "requests", "pending",
	    "approvals", NULL };
	struct stat st;
	char *want, *canon = NULL;
	size_t i;

	memset(r, 0, sizeof(*r));
	r->fd = r->wsfd = r->trashfd = r->permfd = -1;
	if ((want = qsb_root_locate(opt, e)) == NULL)
		return -1;
	if (qsb_mkdir_p(want, 0700) < 0) {
		qsb_err_sys(e, QSB_E_CONFIG_INVALID, "cannot create root '%s'",
		    want);
		goto fail;
	}
	if ((canon = realpath(want, NULL)) == NULL) {
		qsb_err_sys(e, QSB_E_CONFIG_INVALID, "root '%s'", want);
		goto fail;
	}
	if ((r->fd = open(canon, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0) {
		qsb_err_sys(e, QSB_E_CONFIG_INVALID, "cannot open root '%s'",
		    canon);
		goto fail;
	}
	if (fstat(r->fd, &st) < 0) {
		qsb_err_sys(e, QSB_E_CONFIG_INVALID, "root '%s'", canon);
		goto fail;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "root '%s' must be owned "
		    "by uid %u and not writable by group or others", canon,
		    (unsigned)geteuid());
		goto fail;
	}
	if ((r->wsfd = subdir(r->fd, "ws", canon, e)) < 0 ||
	    (r->trashfd = subdir(r->fd, "trash", canon, e)) < 0 ||
	    (r->permfd = subdir(r->fd, "perm", canon, e)) < 0)
		goto fail;
	/* the permission store's layout (perm.h) and the lock files, made
	 * with the root, so that later reads create nothing */
	for (i = 0; permdirs[i]; i++)
		if (mkdirat(r->permfd, permdirs[i], 0700) < 0 &&
		    errno != EEXIST) {
			qsb_err_sys(e, QSB_E_CONFIG_INVALID,
			    "cannot create '%s/perm/%s'", canon, permdirs[i]);
			goto fail;
		}
	if ((mkdirat(r->fd, "terminals", 0700) < 0 && errno != EEXIST) ||
	    touch(r->fd, "lock") < 0 || touch(r->fd, "config.lock") < 0 ||
	    touch(r->permfd, "lock") < 0 ||
	    touch(r->fd, "terminals/.lock") < 0) {
		qsb_err_sys(e, QSB_E_CONFIG_INVALID, "cannot create the lock "
		    "files of '%s'", canon);
		goto fail;
	}
	free(want);
	r->path = canon;
	return 0;
fail:
	free(want);
	free(canon);
	qsb_root_close(r);
	return -1;
}

void
qsb_root_close(struct qsb_root *r)
{
	if (r == NULL)
		return;
	if (r->fd >= 0)
		close(r->fd);
	if (r->wsfd >= 0)
		close(r->wsfd);
	if (r->trashfd >= 0)
		close(r->trashfd);
	if (r->permfd >= 0)
		close(r->permfd);
	free(r->path);
	memset(r, 0, sizeof(*r));
	r->fd = r->wsfd = r->trashfd = r->permfd = -1;
}
