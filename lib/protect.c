#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protect.h"
#include "strv.h"

/* Matches pattern components against path components. */
static bool
match(const char *pat, const char *path)
{
	char pc[NAME_MAX + 1], nc[NAME_MAX + 1];
	const char *pe, *ne;
	size_t pl, nl;

	if (*pat == '\0')
		return *path == '\0';
	pe = strchr(pat, '/');
	pl = pe ? (size_t)(pe - pat) : strlen(pat);
	if (pl == 2 && pat[0] == '*' && pat[1] == '*') {
		const char *rest = pe ? pe + 1 : "";
		/* zero directories, or one more and try again */
		if (match(rest, path))
			return true;
		if (*path == '\0')
			return false;
		ne = strchr(path, '/');
		return ne ? match(pat, ne + 1) : match(pat, "");
	}
	if (*path == '\0')
		return false;
	ne = strchr(path, '/');
	nl = ne ? (size_t)(ne - path) : strlen(path);
	if (pl > NAME_MAX || nl > NAME_MAX)
		return false;
	memcpy(pc, pat, pl);
	pc[pl] = '\0';
	memcpy(nc, path, nl);
	nc[nl] = '\0';
	if (fnmatch(pc, nc, 0) != 0)
		return false;
	return match(pe ? pe + 1 : "", ne ? ne + 1 : "");
}

bool
qsb_glob_match(const char *pattern, const char *path)
{
	return match(pattern, path);
}

void
qsb_protect_free(char **v)
{
	qsb_strv_free(v);
}

static bool
any_match(char *const *patterns, const char *rel)
{
	size_t i;

	for (i = 0; patterns[i]; i++)
		if (qsb_glob_match(patterns[i], rel))
			return true;
	return false;
}

int
qsb_protect_find(int rootfd, char *const *patterns, char ***out, size_t *np)
{
	struct qsb_strv found = { NULL, 0, 0, false }, queue = { NULL, 0, 0, false };
	char rel[PATH_MAX], *dir;
	struct dirent *de;
	struct stat st;
	size_t head = 0, visited = 0;
	int dfd, depth;
	DIR *d;

	qsb_strv_add(&queue, "");
	while (!queue.nomem && head < queue.n &&
	    visited < QSB_PROTECT_MAXVISIT) {
		dir = queue.v[head++];
		depth = 0;
		for (const char *p = dir; *p; p++)
			depth += *p == '/';
		if (*dir)
			depth++;
		dfd = *dir ? openat(rootfd, dir, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC) : openat(rootfd, ".", O_RDONLY |
		    O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || (d = fdopendir(dfd)) == NULL) {
			if (dfd >= 0)
				close(dfd);
			continue;
		}
		const char *base = strrchr(dir, '/');
		bool in_git = strcmp(base ? base + 1 : dir, ".git") == 0;
		while ((de = readdir(d)) != NULL && visited <
		    QSB_PROTECT_MAXVISIT) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			visited++;
			if ((size_t)snprintf(rel, sizeof(rel), "%s%s%s", dir,
			    *dir ? "/" : "", de->d_name) >= sizeof(rel))
				continue;
			if (fstatat(dirfd(d), de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(st.st_mode))
				continue;
			if ((S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) &&
			    any_match(patterns, rel)) {
				qsb_strv_add(&found, rel);
				continue;	/* all of it is protected */
			}
			if (S_ISDIR(st.st_mode) && !in_git &&
			    depth + 1 < QSB_PROTECT_MAXDEPTH &&
			    strcmp(de->d_name, "node_modules") != 0)
				qsb_strv_add(&queue, rel);
		}
		closedir(d);
	}
	if (queue.nomem)
		found.nomem = true;
	qsb_strv_free(queue.v);
	if ((*out = qsb_strv_done(&found)) == NULL)
		return errno = ENOMEM, -1;
	*np = found.n;
	return 0;
}
