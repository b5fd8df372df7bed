#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmtree.h"

struct level {
	char	*name;		/* name in the parent */
	ino_t	 ino;
	off_t	 off;		/* qsb_du: readdir position to resume at */
};

struct stack {
	struct level	*v;
	size_t		 n, cap;
};

static int
push(struct stack *s, const char *name, ino_t ino)
{
	struct level *nv;

	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		if ((nv = reallocarray(s->v, ncap, sizeof(*nv))) == NULL)
			return -1;
		s->v = nv;
		s->cap = ncap;
	}
	if ((s->v[s->n].name = strdup(name)) == NULL)
		return -1;
	s->v[s->n].ino = ino;
	s->v[s->n].off = 0;
	s->n++;
	return 0;
}

static void
stack_free(struct stack *s)
{
	while (s->n > 0)
		free(s->v[--s->n].name);
	free(s->v);
}

/* Opens dirfd/name as a directory without following a symlink, and checks
 * that it is the inode expected (when ino != 0) on device dev. */
static int
opendir_at(int dirfd, const char *name, dev_t dev, ino_t ino, int fix)
{
	struct stat st;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fix) {
		if (fchmodat(dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) < 0)
			return -1;
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_dev != dev ||
	    (ino != 0 && st.st_ino != ino)) {
		close(fd);
		return errno = EXDEV, -1;
	}
	if (fix && (st.st_mode & 0700) != 0700)
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	return fd;
}

static int
unlink_fix(int dirfd, const char *name, int flags)
{
	struct stat st;

	if (unlinkat(dirfd, name, flags) == 0 || errno == ENOENT)
		return 0;
	if (errno != EACCES && errno != EPERM)
		return -1;
	if (fstat(dirfd, &st) < 0 || fchmod(dirfd, (st.st_mode & 07777) |
	    0700) < 0)
		return -1;
	if (unlinkat(dirfd, name, flags) == 0 || errno == ENOENT)
		return 0;
	return -1;
}

int
qsb_rmtree(int dirfd, const char *name, uint64_t *freed, struct qsb_err *e)
{
	struct stack s = { NULL, 0, 0 };
	struct stat st, cst;
	struct dirent *de;
	uint64_t sum = 0;
	int cur = -1, fd, par, removed, descended, rc = -1;
	DIR *d;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return qsb_err_sys(e, QSB_E_CLEANUP_FAILED, "'%s'", name);
	}
	if (!S_ISDIR(st.st_mode)) {
		if (unlink_fix(dirfd, name, 0) < 0)
			return qsb_err_sys(e, QSB_E_CLEANUP_FAILED,
			    "cannot remove '%s'", name);
		if (freed && st.st_nlink <= 1)
			*freed += (uint64_t)st.st_blocks * 512;
		return 0;
	}
	if ((cur = opendir_at(dirfd, name, st.st_dev, st.st_ino, 1)) < 0) {
		qsb_err_sys(e, QSB_E_CLEANUP_FAILED, "cannot open '%s'", name);
		goto out;
	}
	if (push(&s, name, st.st_ino) < 0)
		goto nomem;
	while (s.n > 0) {
		if ((fd = dup(cur)) < 0 || (d = fdopendir(fd)) == NULL) {
			if (fd >= 0)
				close(fd);
			qsb_err_sys(e, QSB_E_CLEANUP_FAILED, "cannot read '%s'",
			    s.v[s.n - 1].name);
			goto out;
		}
		rewinddir(d);
		removed = descended = 0;
		while ((errno = 0, de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			if (fstatat(cur, de->d_name, &cst,
			    AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno == ENOENT)
					continue;
				qsb_err_sys(e, QSB_E_CLEANUP_FAILED, "'%s'",
				    de->d_name);
				closedir(d);
				goto out;
			}
			if (S_ISDIR(cst.st_mode)) {
				if (cst.st_dev != st.st_dev) {
					qsb_err_set(e, QSB_E_CLEANUP_FAILED,
					    "'%s': another file system is "
					    "mounted there; not crossing",
					    de->d_name);
					closedir(d);
					goto out;
				}
				fd = opendir_at(cur, de->d_name, st.st_dev,
				    cst.st_ino, 1);
				if (fd < 0) {
					qsb_err_sys(e, QSB_E_CLEANUP_FAILED,
					    "cannot open '%s'", de->d_name);
					closedir(d);
					goto out;
				}
				if (push(&s, de->d_name, cst.st_ino) < 0) {
					close(fd);
					closedir(d);
					goto nomem;
				}
				close(cur);
				cur = fd;
				descended = 1;
				break;
			}
			if (unlink_fix(cur, de->d_name, 0) < 0) {
				qsb_err_sys(e, QSB_E_CLEANUP_FAILED,
				    "cannot remove '%s'", de->d_name);
				closedir(d);
				goto out;
			}
			if (cst.st_nlink <= 1)
				sum += (uint64_t)cst.st_blocks * 512;
			removed++;
		}
		if (de == NULL && errno != 0) {
			qsb_err_sys(e, QSB_E_CLEANUP_FAILED, "cannot read '%s'",
			    s.v[s.n - 1].name);
			closedir(d);
			goto out;
		}
		closedir(d);
		if (descended || removed)
			continue;	/* reread: readdir may skip entries
					 * removed under it */
		/* empty: go up and remove it */
		if (fstat(cur, &cst) == 0)
			sum += (uint64_t)cst.st_blocks * 512;
		if (s.n == 1)
			par = dirfd;
		else if ((par = opendir_at(cur, "..", st.st_dev,
		    s.v[s.n - 2].ino, 0)) < 0) {
			qsb_err_sys(e, QSB_E_CLEANUP_FAILED,
			    "cannot go back up from '%s'", s.v[s.n - 1].name);
			goto out;
		}
		close(cur);
		cur = -1;
		if (unlink_fix(par, s.v[s.n - 1].name, AT_REMOVEDIR) < 0) {
			qsb_err_sys(e, QSB_E_CLEANUP_FAILED,
			    "cannot remove '%s'", s.v[s.n - 1].name);
			if (par != dirfd)
				close(par);
			goto out;
		}
		free(s.v[--s.n].name);
		if (s.n > 0)
			cur = par;
	}
	rc = 0;
	goto out;
nomem:
	qsb_err_sys(e, QSB_E_CLEANUP_FAILED, "out of memory");
out:
	if (cur >= 0)
		close(cur);
	stack_free(&s);
	if (freed)
		*freed += sum;
	return rc;
}

/* A set of inode numbers, for counting hard links once. */
struct inoset {
	ino_t	*v;
	size_t	 n, cap;
};

static int
inoset_add(struct inoset *h, ino_t ino)
{
	size_t i, j;
	ino_t *nv;

	if (h->n * 2 >= h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 64;
		if ((nv = calloc(ncap, sizeof(*nv))) == NULL)
			return -1;
		for (i = 0; i < h->cap; i++)
			if (h->v[i] != 0) {
				for (j = h->v[i] % ncap; nv[j] != 0;
				    j = (j + 1) % ncap)
					;
				nv[j] = h->v[i];
			}
		free(h->v);
		h->v = nv;
		h->cap = ncap;
	}
	for (i = ino % h->cap; h->v[i] != 0; i = (i + 1) % h->cap)
		if (h->v[i] == ino)
			return 0;	/* seen */
	h->v[i] = ino;
	h->n++;
	return 1;
}

int
qsb_du(int dirfd, const char *name, uint64_t *bytes, struct qsb_err *e)
{
	struct stack s = { NULL, 0, 0 };
	struct inoset seen = { NULL, 0, 0 };
	struct stat st, cst;
	struct dirent *de;
	uint64_t sum = 0;
	int cur = -1, fd, par, descended, rc = -1;
	DIR *d;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "'%s'", name);
	sum = (uint64_t)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode))
		goto done;
	if ((cur = opendir_at(dirfd, name, st.st_dev, st.st_ino, 0)) < 0) {
		qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "cannot open '%s'", name);
		goto out;
	}
	if (push(&s, name, st.st_ino) < 0)
		goto nomem;
	while (s.n > 0) {
		if ((fd = dup(cur)) < 0 || (d = fdopendir(fd)) == NULL) {
			if (fd >= 0)
				close(fd);
			qsb_err_sys(e, QSB_E_FILE_NOT_FOUND,
			    "cannot read '%s'", s.v[s.n - 1].name);
			goto out;
		}
		if (s.v[s.n - 1].off != 0)
			seekdir(d, s.v[s.n - 1].off);
		descended = 0;
		while ((de = readdir(d)) != NULL) {
			s.v[s.n - 1].off = telldir(d);
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			if (fstatat(cur, de->d_name, &cst,
			    AT_SYMLINK_NOFOLLOW) < 0)
				continue;	/* vanished */
			if (cst.st_nlink > 1 && !S_ISDIR(cst.st_mode)) {
				int r = inoset_add(&seen, cst.st_ino);
				if (r < 0) {
					closedir(d);
					goto nomem;
				}
				if (r == 0)
					continue;
			}
			sum += (uint64_t)cst.st_blocks * 512;
			if (!S_ISDIR(cst.st_mode) || cst.st_dev != st.st_dev)
				continue;
			fd = opendir_at(cur, de->d_name, st.st_dev, cst.st_ino,
			    0);
			if (fd < 0)
				continue;	/* unreadable: counted itself */
			if (push(&s, de->d_name, cst.st_ino) < 0) {
				close(fd);
				closedir(d);
				goto nomem;
			}
			close(cur);
			cur = fd;
			descended = 1;
			break;
		}
		closedir(d);
		if (descended)
			continue;
		if (s.n == 1) {
			free(s.v[--s.n].name);
			break;
		}
		if ((par = opendir_at(cur, "..", st.st_dev, s.v[s.n - 2].ino,
		    0)) < 0) {
			qsb_err_sys(e, QSB_E_FILE_NOT_FOUND,
			    "cannot go back up from '%s'", s.v[s.n - 1].name);
			goto out;
		}
		close(cur);
		cur = par;
		free(s.v[--s.n].name);
	}
done:
	*bytes = sum;
	rc = 0;
	goto out;
nomem:
	qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
out:
	if (cur >= 0)
		close(cur);
	stack_free(&s);
	free(seen.v);
	return rc;
}
