#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "state.h"

const char *const qsb_cg_ctl_names[] = { "memory", "pids", "cpu", NULL };
/* v1 hierarchies name cpu as "cpu" or "cpu,cpuacct" */
static const char *const v1opt[] = { "memory", "pids", "cpu" };

const char *
qsb_cg_name(int version)
{
	return version == 2 ? "cgroup-v2" : version == 1 ? "cgroup-v1" : NULL;
}

static int
put(const char *dir, const char *file, const char *val)
{
	char path[4096];
	int fd, rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    sizeof(path))
		return errno = ENAMETOOLONG, -1;
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	rc = qsb_write_all(fd, val, strlen(val));
	if (close(fd) < 0)
		rc = -1;
	return rc;
}

static bool
has_word(const char *list, const char *word, char sep)
{
	size_t l = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word)) != NULL) {
		if ((p == list || p[-1] == sep || p[-1] == ' ') &&
		    (p[l] == '\0' || p[l] == sep || p[l] == ' ' ||
		    p[l] == '\n'))
			return true;
		p += l;
	}
	return false;
}

/* The mount point of the cgroup v2 hierarchy, or of the v1 hierarchy
 * carrying controller ctl (NULL: v2). */
static int
mountpoint(const char *ctl, char *out, size_t outsz)
{
	char line[4096], *fields[12], *sep, *p, *opts;
	int n, found = -1;
	FILE *f;

	if ((f = fopen("/proc/self/mountinfo", "re")) == NULL)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f) != NULL) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SRC SUPER */
		if ((sep = strstr(line, " - ")) == NULL)
			continue;
		*sep = '\0';
		for (n = 0, p = strtok(line, " "); p && n < 12;
		    p = strtok(NULL, " "))
			fields[n++] = p;
		if (n < 5)
			continue;
		p = strtok(sep + 3, " ");
		if (p == NULL)
			continue;
		if (ctl == NULL && strcmp(p, "cgroup2") == 0)
			found = 0;
		else if (ctl != NULL && strcmp(p, "cgroup") == 0) {
			strtok(NULL, " ");		/* source */
			opts = strtok(NULL, " \n");	/* super options */
			if (opts && has_word(opts, ctl, ','))
				found = 0;
		}
		if (found == 0 && strlcpy(out, fields[4], outsz) >= outsz)
			found = -1;
	}
	fclose(f);
	return found;
}

/* Our own group in the v2 hierarchy (ctl NULL) or ctl's v1 hierarchy. */
static int
own_group(const char *ctl, char *out, size_t outsz)
{
	char line[4096], *a, *b;
	int found = -1;
	FILE *f;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((a = strchr(line, ':')) == NULL ||
		    (b = strchr(a + 1, ':')) == NULL)
			continue;
		*a = *b = '\0';	/* line: the id, a + 1: the controllers */
		if ((ctl == NULL && strcmp(line, "0") == 0 && a[1] == '\0') ||
		    (ctl != NULL && has_word(a + 1, ctl, ',')))
			found = strlcpy(out, b + 1, outsz) < outsz ? 0 : -1;
	}
	fclose(f);
	return found;
}

static int
readfile(const char *path, char *buf, size_t sz)
{
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sz - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

void
qsb_cg_probe(struct qsb_cg_info *info)
{
	char mnt[2048], grp[2048], path[4200];
	bool v1 = false, v2 = false;
	int c;

	memset(info, 0, sizeof(*info));
	if (mountpoint(NULL, mnt, sizeof(mnt)) == 0 &&
	    own_group(NULL, grp, sizeof(grp)) == 0) {
		v2 = true;
		snprintf(path, sizeof(path), "%s%s/cgroup.controllers", mnt,
		    strcmp(grp, "/") == 0 ? "" : grp);
		if (readfile(path, info->v2controllers,
		    sizeof(info->v2controllers)) == 0)
			info->v2controllers[strcspn(info->v2controllers,
			    "\n")] = '\0';
		snprintf(path, sizeof(path), "%s%s", mnt,
		    strcmp(grp, "/") == 0 ? "" : grp);
		for (c = 0; c < QSB_CG_N; c++)
			if (has_word(info->v2controllers, qsb_cg_ctl_names[c],
			    ' ') && access(path, W_OK) == 0)
				info->usable[c] = 2;
	}
	for (c = 0; c < QSB_CG_N; c++) {
		if (mountpoint(v1opt[c], mnt, sizeof(mnt)) < 0 ||
		    own_group(v1opt[c], grp, sizeof(grp)) < 0)
			continue;
		v1 = true;
		snprintf(path, sizeof(path), "%s%s", mnt, grp);
		if (info->usable[c] == 0 && access(path, W_OK) == 0)
			info->usable[c] = 1;
	}
	info->layout = v1 && v2 ? 3 : v2 ? 2 : v1 ? 1 : 0;
}

static char *
mkgroup(const char *mnt, const char *grp, const char *name)
{
	char *dir;

	if (asprintf(&dir, "%s%s/%s", mnt, strcmp(grp, "/") == 0 ? "" : grp,
	    name) < 0)
		return NULL;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		free(dir);
		return NULL;
	}
	return dir;
}

int
qsb_cg_create(struct qsb_cg *cg, const char *name, uint64_t mem, double cpus,
    long pids)
{
	char mnt[2048], grp[2048], ctls[256], path[4200], val[64];
	bool want[QSB_CG_N] = { mem > 0, pids > 0, cpus > 0 };
	char *dir;
	int c;

	memset(cg, 0, sizeof(*cg));
	if (!want[QSB_CG_MEMORY] && !want[QSB_CG_PIDS] && !want[QSB_CG_CPU])
		return 0;
	/* v2: one group for all controllers our group has delegated */
	if (mountpoint(NULL, mnt, sizeof(mnt)) == 0 &&
	    own_group(NULL, grp, sizeof(grp)) == 0 &&
	    (dir = mkgroup(mnt, grp, name)) != NULL) {
		snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
		if (readfile(path, ctls, sizeof(ctls)) < 0)
			ctls[0] = '\0';
		for (c = 0; c < QSB_CG_N; c++) {
			if (!want[c] || !has_word(ctls, qsb_cg_ctl_names[c],
			    ' '))
				continue;
			int ok = -1;
			if (c == QSB_CG_MEMORY) {
				snprintf(val, sizeof(val), "%llu",
				    (unsigned long long)mem);
				ok = put(dir, "memory.max", val);
				if (ok == 0)
					(void)put(dir, "memory.swap.max", "0");
			} else if (c == QSB_CG_PIDS) {
				snprintf(val, sizeof(val), "%ld", pids);
				ok = put(dir, "pids.max", val);
			} else {
				snprintf(val, sizeof(val), "%ld 100000",
				    (long)(cpus * 100000));
				ok = put(dir, "cpu.max", val);
			}
			if (ok == 0) {
				cg->version[c] = 2;
				want[c] = false;
			}
		}
		bool used = false;
		for (c = 0; c < QSB_CG_N; c++)
			if (cg->version[c] == 2) {
				cg->dir[c] = strdup(dir);
				used = true;
			}
		if (!used)
			rmdir(dir);
		free(dir);
	}
	/* v1: a group per controller's hierarchy */
	for (c = 0; c < QSB_CG_N; c++) {
		if (!want[c] || mountpoint(v1opt[c], mnt, sizeof(mnt)) < 0 ||
		    own_group(v1opt[c], grp, sizeof(grp)) < 0 ||
		    (dir = mkgroup(mnt, grp, name)) == NULL)
			continue;
		int ok;
		if (c == QSB_CG_MEMORY) {
			snprintf(val, sizeof(val), "%llu",
			    (unsigned long long)mem);
			ok = put(dir, "memory.limit_in_bytes", val);
			/* with swap accounting, swap counts too */
			if (ok == 0)
				(void)put(dir, "memory.memsw.limit_in_bytes",
				    val);
		} else if (c == QSB_CG_PIDS) {
			snprintf(val, sizeof(val), "%ld", pids);
			ok = put(dir, "pids.max", val);
		} else {
			(void)put(dir, "cpu.cfs_period_us", "100000");
			snprintf(val, sizeof(val), "%ld",
			    (long)(cpus * 100000));
			ok = put(dir, "cpu.cfs_quota_us", val);
		}
		if (ok == 0) {
			cg->version[c] = 1;
			cg->dir[c] = dir;
		} else {
			rmdir(dir);
			free(dir);
		}
	}
	return 0;
}

int
qsb_cg_attach(const struct qsb_cg *cg, pid_t pid, struct qsb_err *e)
{
	char val[32];
	int c;

	snprintf(val, sizeof(val), "%d", (int)pid);
	for (c = 0; c < QSB_CG_N; c++) {
		if (cg->dir[c] == NULL)
			continue;
		/* v2: one directory for several controllers */
		if (c > 0 && cg->version[c] == 2 && cg->version[c - 1] == 2)
			continue;
		if (put(cg->dir[c], "cgroup.procs", val) < 0)
			return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
			    "cannot move the command into '%s'", cg->dir[c]);
	}
	return 0;
}

void
qsb_cg_destroy(struct qsb_cg *cg)
{
	int c, d;

	for (c = 0; c < QSB_CG_N; c++) {
		if (cg->dir[c] == NULL)
			continue;
		for (d = 0; d < c; d++)
			if (cg->dir[d] && strcmp(cg->dir[d], cg->dir[c]) == 0)
				break;
		if (d == c)
			(void)rmdir(cg->dir[c]);
	}
	for (c = 0; c < QSB_CG_N; c++)
		free(cg->dir[c]);
	memset(cg, 0, sizeof(*cg));
}
