#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

int
qsb_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
qsb_read_all(int fd, size_t max, char **bufp, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf, *nb;
	ssize_t n;

	if ((buf = malloc(cap + 1)) == NULL)
		return -1;
	for (;;) {
		if (len == cap) {
			if (cap >= max) {
				free(buf);
				return errno = EFBIG, -1;
			}
			cap = cap * 2 > max ? max : cap * 2;
			if ((nb = realloc(buf, cap + 1)) == NULL) {
				free(buf);
				return -1;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
	return 0;
}

int
qsb_tmpname(char *buf, size_t sz, const char *prefix)
{
	static const char cs[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char sfx[13];
	int i;

	for (i = 0; i < 12; i++)
		sfx[i] = cs[arc4random_uniform(sizeof(cs) - 1)];
	sfx[12] = '\0';
	if ((size_t)snprintf(buf, sz, "%s.%s", prefix, sfx) >= sz)
		return errno = ENAMETOOLONG, -1;
	return 0;
}

int
qsb_fsync_dir(int dirfd)
{
	int fd, rc;

	/* dirfd may be O_PATH; fsync needs a real descriptor */
	if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

int
qsb_state_write(int dirfd, const char *name, const void *buf, size_t len,
    mode_t mode, struct qsb_err *e)
{
	char tmp[256], pfx[200];
	int fd = -1, tries;

	if ((size_t)snprintf(pfx, sizeof(pfx), ".%s.tmp", name) >= sizeof(pfx))
		return qsb_err_set(e, QSB_E_FILE_WRITE_FAILED,
		    "'%s': name too long", name);
	for (tries = 0; tries < 16; tries++) {
		if (qsb_tmpname(tmp, sizeof(tmp), pfx) < 0)
			return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "'%s'",
			    name);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot create '%s'", tmp);
	if (fchmod(fd, mode) < 0 || qsb_write_all(fd, buf, len) < 0 ||
	    fsync(fd) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot write '%s'",
		    name);
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot write '%s'",
		    name);
		goto fail;
	}
	fd = -1;
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED, "cannot rename '%s'",
		    name);
		goto fail;
	}
	if (qsb_fsync_dir(dirfd) < 0)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot sync the directory of '%s'", name);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	return -1;
}

int
qsb_state_read(int dirfd, const char *name, size_t max, char **buf,
    size_t *len, struct qsb_err *e)
{
	struct stat st;
	int fd, rc;

	if ((fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
	    O_NONBLOCK)) < 0)
		return qsb_err_sys(e, errno == ENOENT ? QSB_E_FILE_NOT_FOUND :
		    QSB_E_PERMISSION_DENIED, "cannot open '%s'", name);
	if (fstat(fd, &st) < 0) {
		rc = qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "'%s'", name);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = qsb_err_set(e, QSB_E_PERMISSION_DENIED,
		    "'%s': not a regular file", name);
		goto out;
	}
	if (qsb_read_all(fd, max, buf, len) < 0) {
		rc = qsb_err_sys(e, errno == EFBIG ? QSB_E_CONFIG_INVALID :
		    QSB_E_FILE_NOT_FOUND, "cannot read '%s'", name);
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

int
qsb_lock(int dirfd, const char *name, int op, struct qsb_err *e)
{
	int fd;

	if ((fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) < 0)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot open lock '%s'", name);
	while (flock(fd, op) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot lock '%s'", name);
		else
			qsb_err_set(e, QSB_E_PERMISSION_DENIED,
			    "'%s' is locked", name);
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}
