#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmtree.h"

/*
 * A directory read with getdents64 straight into a buffer: what qsb_du
 * needs of readdir, without the fstat and fcntl that fdopendir adds for
 * each directory.  off is the position after the entry last returned.
 */
struct dirbuf {
	int	 fd;
	size_t	 pos, len;
	off_t	 off;
	char	 buf[16384] __attribute__((aligned(8)));
};

static struct dirbuf *
dirbuf_open(int fd, off_t off)
{
	struct dirbuf *d;

	if ((d = malloc(sizeof(*d))) == NULL)
		return NULL;
	d->fd = fd;
	d->pos = d->len = 0;
	d->off = off;
	if (off != 0 && lseek(fd, off, SEEK_SET) < 0) {
		free(d);
		return NULL;
	}
	return d;
}

/* The next entry's name and type, or NULL at the end (or on an error). */
static const char *
dirbuf_next(struct dirbuf *d)
{
	struct linux_dirent64 {
		uint64_t	d_ino;
		int64_t		d_off;
		unsigned short	d_reclen;
		unsigned char	d_type;
		char		d_name[];
	} *de;
	long n;

	if (d->pos >= d->len) {
		n = syscall(SYS_getdents64, d->fd, d->buf, sizeof(d->buf));
		if (n <= 0)
			return NULL;
		d->len = (size_t)n;
		d->pos = 0;
	}
	de = (struct linux_dirent64 *)(void *)(d->buf + d->pos);
	d->pos += de->d_reclen;
	d->off = de->d_off;
	return de->d_name;
}

static void
dirbuf_close(struct dirbuf *d)
{
	close(d->fd);
	free(d);
}

struct level {
	char	*name;		/* name in the parent */
	ino_t	 ino;
	off_t	 off;		/* qsb_du: position to resume reading at */
	struct dirbuf *d;	/* qsb_du: the open directory, or NULL */
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
	s->v[s->n].d = NULL;
	s->n++;
	return 0;
}

static void
stack_free(struct stack *s)
{
	while (s->n > 0) {
		s->n--;
		if (s->v[s->n].d != NULL)
			dirbuf_close(s->v[s->n].d);
		free(s->v[s->n].name);
	}
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

/*
 * qsb_du keeps the streams of the first QSB_DU_KEEP levels open, so that a
 * large directory near the top (ROOT/ws with thousands of workspaces) is
 * read once; deeper levels are closed on the way down and resumed with
 * seekdir on the way back, so that depth costs no descriptors.
 */
#define QSB_DU_KEEP	16

int
qsb_du(int at, const char *name, uint64_t *bytes, struct qsb_err *e)
{
	struct stack s = { NULL, 0, 0 };
	struct inoset seen = { NULL, 0, 0 };
	struct stat st, cst;
	const char *dn;
	struct level *l;
	uint64_t sum = 0;
	int cur = -1, fd, par, dfd, rc = -1;
	bool descended;
	struct dirbuf *d;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "'%s'", name);
	sum = (uint64_t)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode))
		goto done;
	if ((cur = opendir_at(at, name, st.st_dev, st.st_ino, 0)) < 0) {
		qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "cannot open '%s'", name);
		goto out;
	}
	if (push(&s, name, st.st_ino) < 0)
		goto nomem;
	while (s.n > 0) {
		l = &s.v[s.n - 1];
		if (l->d == NULL) {
			/* cur is this directory: read it from where it was
			 * left */
			if ((l->d = dirbuf_open(cur, l->off)) == NULL) {
				qsb_err_sys(e, QSB_E_FILE_NOT_FOUND,
				    "cannot read '%s'", l->name);
				goto out;
			}
			cur = -1;
		}
		d = l->d;
		dfd = d->fd;
		descended = false;
		while ((dn = dirbuf_next(d)) != NULL) {
			if (strcmp(dn, ".") == 0 || strcmp(dn, "..") == 0)
				continue;
			if (fstatat(dfd, dn, &cst,
			    AT_SYMLINK_NOFOLLOW) < 0)
				continue;	/* vanished */
			if (cst.st_nlink > 1 && !S_ISDIR(cst.st_mode)) {
				int r = inoset_add(&seen, cst.st_ino);
				if (r < 0)
					goto nomem;
				if (r == 0)
					continue;
			}
			sum += (uint64_t)cst.st_blocks * 512;
			if (!S_ISDIR(cst.st_mode) || cst.st_dev != st.st_dev)
				continue;
			/* measuring, not deleting: the fstatat above decided
			 * (same file system, a directory); no second look */
			fd = openat(dfd, dn, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue;	/* unreadable: counted itself */
			if (push(&s, dn, cst.st_ino) < 0) {
				close(fd);
				goto nomem;
			}
			/* deep: the parent is closed, to be resumed */
			l = &s.v[s.n - 2];
			if (s.n - 1 > QSB_DU_KEEP) {
				l->off = d->off;
				dirbuf_close(d);
				l->d = NULL;
			}
			cur = fd;
			descended = true;
			break;
		}
		if (descended)
			continue;
		/* this level is done */
		l = &s.v[s.n - 1];
		if (s.n > 1 && s.v[s.n - 2].d == NULL) {
			/* the parent was closed: back up through ".." */
			if ((par = opendir_at(l->d->fd, "..", st.st_dev,
			    s.v[s.n - 2].ino, 0)) < 0) {
				qsb_err_sys(e, QSB_E_FILE_NOT_FOUND,
				    "cannot go back up from '%s'", l->name);
				goto out;
			}
			cur = par;
		}
		dirbuf_close(l->d);
		l->d = NULL;
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
