#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileops.h"
#include "json.h"
#include "path.h"
#include "state.h"

static int
copy_fd(int in, int out, int *werr)
{
	char buf[65536];
	ssize_t n;

	*werr = 0;
	for (;;) {
		n = read(in, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			return 0;
		if (qsb_write_all(out, buf, (size_t)n) < 0) {
			*werr = 1;
			return -1;
		}
	}
}

int
qsb_file_read(int fsfd, const char *rootpath, const char *path, int outfd,
    struct qsb_err *e)
{
	char rel[PATH_MAX];
	struct stat st;
	int fd, werr, rc = -1;

	if (qsb_path_rel(rootpath, path, rel, sizeof(rel), e) < 0)
		return -1;
	if ((fd = qsb_path_open(fsfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY,
	    0, path, e)) < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "'%s'", path);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		qsb_err_set(e, QSB_E_FILE_NOT_FOUND, "'%s': is a directory",
		    path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		qsb_err_set(e, QSB_E_PERMISSION_DENIED,
		    "'%s': not a regular file", path);
		goto out;
	}
	if (fcntl(fd, F_SETFL, 0) < 0 || copy_fd(fd, outfd, &werr) < 0) {
		if (werr)
			qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot write the content of '%s'", path);
		else
			qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "cannot read '%s'",
			    path);
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

/* Opens directory rel beneath fsfd, creating missing components when mk;
 * new directories get the owner of their parent when we are root. */
static int
open_dir(int fsfd, const char *rel, bool mk, const char *shown,
    struct qsb_err *e)
{
	char prefix[PATH_MAX];
	struct stat pst;
	const char *p;
	size_t l;
	int fd, prev = -1;

	fd = qsb_path_open(fsfd, rel, O_RDONLY | O_DIRECTORY, 0, shown, e);
	if (fd >= 0 || !mk || e->code != QSB_E_FILE_NOT_FOUND)
		return fd;
	/* walk the components from the top, each resolved beneath fsfd */
	if ((prev = dup(fsfd)) < 0)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "'%s'", shown);
	for (p = rel; ; ) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		const char *end = strchr(p, '/');
		l = end ? (size_t)(end - rel) : strlen(rel);
		memcpy(prefix, rel, l);
		prefix[l] = '\0';
		fd = qsb_path_open(fsfd, prefix, O_RDONLY | O_DIRECTORY, 0,
		    shown, e);
		if (fd < 0 && e->code == QSB_E_FILE_NOT_FOUND) {
			char comp[NAME_MAX + 1];
			size_t cl = end ? (size_t)(end - p) : strlen(p);
			if (cl > NAME_MAX) {
				close(prev);
				return qsb_err_set(e, QSB_E_FILE_WRITE_FAILED,
				    "'%s': name too long", shown);
			}
			memcpy(comp, p, cl);
			comp[cl] = '\0';
			if (mkdirat(prev, comp, 0755) < 0 && errno != EEXIST) {
				qsb_err_sys(e, errno == EACCES ?
				    QSB_E_PERMISSION_DENIED :
				    QSB_E_FILE_WRITE_FAILED,
				    "cannot create directory '%s'", prefix);
				close(prev);
				return -1;
			}
			if (geteuid() == 0 && (fstat(prev, &pst) < 0 ||
			    fchownat(prev, comp, pst.st_uid, pst.st_gid,
			    AT_SYMLINK_NOFOLLOW) < 0)) {
				qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
				    "cannot set the owner of '%s'", prefix);
				close(prev);
				return -1;
			}
			fd = qsb_path_open(fsfd, prefix, O_RDONLY |
			    O_DIRECTORY, 0, shown, e);
		}
		if (fd < 0) {
			close(prev);
			return -1;
		}
		close(prev);
		prev = fd;
		if (end == NULL)
			break;
		p = end;
	}
	return prev;
}

int
qsb_file_write(int fsfd, const char *rootpath, const char *path, int infd,
    bool mkparents, struct stat *out, char *relp, struct qsb_err *e)
{
	char rel[PATH_MAX], dir[PATH_MAX], base[NAME_MAX + 1], tmp[NAME_MAX + 1];
	struct stat st, pst;
	mode_t mode, um;
	uid_t uid;
	gid_t gid;
	int pfd = -1, tfd = -1, fd = -1, werr, rc = -1, tries;
	bool exists;

	if (qsb_path_rel(rootpath, path, rel, sizeof(rel), e) < 0 ||
	    qsb_path_split(rel, dir, sizeof(dir), base, sizeof(base), e) < 0)
		return -1;
	if ((pfd = open_dir(fsfd, dir, mkparents, path, e)) < 0)
		return -1;
	exists = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && S_ISLNK(st.st_mode)) {
		/* Write to where the link leads, if that is inside: the
		 * kernel resolves it beneath rootPath. */
		if ((tfd = qsb_path_open(fsfd, rel, O_PATH, 0, path, e)) < 0) {
			if (e->code == QSB_E_FILE_NOT_FOUND)
				qsb_err_set(e, QSB_E_FILE_NOT_FOUND,
				    "'%s': dangling symbolic link", path);
			goto out;
		}
		if (qsb_path_of_fd(tfd, rootpath, rel, sizeof(rel)) < 0) {
			qsb_err_sys(e, QSB_E_PERMISSION_DENIED,
			    "'%s': cannot follow the link", path);
			goto out;
		}
		close(tfd);
		tfd = -1;
		close(pfd);
		if (qsb_path_split(rel, dir, sizeof(dir), base, sizeof(base),
		    e) < 0 || (pfd = open_dir(fsfd, dir, false, path, e)) < 0)
			goto out;
		exists = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (exists && S_ISLNK(st.st_mode)) {
			qsb_err_set(e, QSB_E_PERMISSION_DENIED,
			    "'%s': changed while being written", path);
			goto out;
		}
	}
	if (fstat(pfd, &pst) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "'%s'", path);
		goto out;
	}
	if (exists) {
		if (S_ISDIR(st.st_mode)) {
			qsb_err_set(e, QSB_E_FILE_WRITE_FAILED,
			    "'%s': is a directory", path);
			goto out;
		}
		if (!S_ISREG(st.st_mode)) {
			qsb_err_set(e, QSB_E_PERMISSION_DENIED,
			    "'%s': not a regular file", path);
			goto out;
		}
		mode = st.st_mode & 07777;
		uid = st.st_uid;
		gid = st.st_gid;
	} else {
		um = umask(0);
		umask(um);
		mode = 0666 & ~um;
		uid = pst.st_uid;
		gid = pst.st_gid;
	}
	for (tries = 0; tries < 16; tries++) {
		if (qsb_tmpname(tmp, sizeof(tmp), ".qsb-write") < 0)
			break;
		fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		qsb_err_sys(e, errno == EACCES || errno == EROFS ?
		    QSB_E_PERMISSION_DENIED : QSB_E_FILE_WRITE_FAILED,
		    "cannot write '%s'", path);
		goto out;
	}
	if (copy_fd(infd, fd, &werr) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, werr ?
		    "cannot write '%s'" : "cannot read the content for '%s'",
		    path);
		goto unlink;
	}
	if (fchmod(fd, mode) < 0 || (geteuid() == 0 &&
	    fchown(fd, uid, gid) < 0) || fsync(fd) < 0 || fstat(fd, out) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot write '%s'",
		    path);
		goto unlink;
	}
	if (renameat(pfd, tmp, pfd, base) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot write '%s'",
		    path);
		goto unlink;
	}
	if (fsync(pfd) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot sync '%s'",
		    path);
		goto out;
	}
	if (relp != NULL && (strcmp(dir, ".") == 0 ?
	    strlcpy(relp, base, PATH_MAX) >= PATH_MAX :
	    (size_t)snprintf(relp, PATH_MAX, "%s/%s", dir, base) >= PATH_MAX))
		strlcpy(relp, base, PATH_MAX);	/* a name, if not the path */
	rc = 0;
	goto out;
unlink:
	unlinkat(pfd, tmp, 0);
out:
	if (fd >= 0)
		close(fd);
	if (tfd >= 0)
		close(tfd);
	if (pfd >= 0)
		close(pfd);
	return rc;
}

void
qsb_fileinfo_write(struct qsb_jw *w, const char *name, const char *relpath,
    const struct stat *st)
{
	const char *type;

	if (S_ISREG(st->st_mode))
		type = "file";
	else if (S_ISDIR(st->st_mode))
		type = "dir";
	else if (S_ISLNK(st->st_mode))
		type = "symlink";
	else
		type = "other";
	qsb_jw_obj(w);
	qsb_jw_key(w, "name");
	qsb_jw_str(w, name);
	qsb_jw_key(w, "path");
	qsb_jw_str(w, relpath);
	qsb_jw_key(w, "type");
	qsb_jw_str(w, type);
	qsb_jw_key(w, "size");
	qsb_jw_int(w, (long long)st->st_size);
	qsb_jw_key(w, "mtime");
	qsb_jw_time(w, (int64_t)st->st_mtim.tv_sec * 1000 +
	    st->st_mtim.tv_nsec / 1000000);
	qsb_jw_obj_end(w);
}

static int
namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
qsb_file_list(int fsfd, const char *rootpath, const char *path,
    struct qsb_jw *w, struct qsb_err *e)
{
	char rel[PATH_MAX], canon[PATH_MAX], sub[PATH_MAX * 2];
	char **names = NULL, **nn;
	struct dirent *de;
	struct stat st;
	size_t n = 0, cap = 0, i;
	int fd, dfd, rc = -1;
	const char *slash;
	DIR *d = NULL;

	if (qsb_path_rel(rootpath, path, rel, sizeof(rel), e) < 0)
		return -1;
	if ((fd = qsb_path_open(fsfd, rel, O_PATH, 0, path, e)) < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "'%s'", path);
		goto out;
	}
	if (qsb_path_of_fd(fd, rootpath, canon, sizeof(canon)) < 0)
		strlcpy(canon, rel, sizeof(canon));
	qsb_jw_arr(w);
	if (!S_ISDIR(st.st_mode)) {
		slash = strrchr(canon, '/');
		qsb_fileinfo_write(w, slash ? slash + 1 : canon, canon, &st);
		qsb_jw_arr_end(w);
		rc = 0;
		goto out;
	}
	if ((dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (d = fdopendir(dfd)) == NULL) {
		if (dfd >= 0)
			close(dfd);
		qsb_err_sys(e, errno == EACCES ? QSB_E_PERMISSION_DENIED :
		    QSB_E_FILE_NOT_FOUND, "cannot list '%s'", path);
		goto out;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nn = reallocarray(names, cap, sizeof(*nn))) ==
			    NULL)
				goto nomem;
			names = nn;
		}
		if ((names[n] = strdup(de->d_name)) == NULL)
			goto nomem;
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), namecmp);
	for (i = 0; i < n; i++) {
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;	/* removed meanwhile */
		if (strcmp(canon, ".") == 0)
			snprintf(sub, sizeof(sub), "%s", names[i]);
		else
			snprintf(sub, sizeof(sub), "%s/%s", canon, names[i]);
		qsb_fileinfo_write(w, names[i], sub, &st);
	}
	qsb_jw_arr_end(w);
	rc = 0;
	goto out;
nomem:
	qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (d != NULL)
		closedir(d);
	close(fd);
	return rc;
}
