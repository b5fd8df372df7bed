#include <sys/file.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "event.h"
#include "exec.h"
#include "json.h"
#include "landlock.h"
#include "parse.h"
#include "root.h"
#include "seccomp.h"
#include "state.h"
#include "status.h"

#ifndef QSB_VERSION
#define QSB_VERSION "0.0.0"
#endif

/* Finds prog on PATH (or the standard directories). */
static bool
which(const char *prog, char *out, size_t outsz)
{
	const char *path = getenv("PATH");
	char dirs[4096], *d, *save = NULL;

	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	if (strlcpy(dirs, path, sizeof(dirs)) >= sizeof(dirs))
		return false;
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":",
	    &save)) {
		if (*d != '/')
			continue;
		if ((size_t)snprintf(out, outsz, "%s/%s", d, prog) < outsz &&
		    access(out, X_OK) == 0)
			return true;
	}
	return false;
}

/* The first line `path --version` prints (within two seconds). */
static void
version_of(const char *path, char *out, size_t outsz)
{
	int p[2], st;
	char buf[256];
	ssize_t n = 0, k;
	pid_t pid;
	struct pollfd pfd;

	out[0] = '\0';
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(p[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		execl(path, path, "--version", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	while ((size_t)n < sizeof(buf) - 1 && poll(&pfd, 1, 2000) == 1 &&
	    (k = read(p[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += k;
	close(p[0]);
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	strlcpy(out, buf, outsz);
}

static long
read_long(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

void
qsb_caps_probe(struct qsb_caps *c, bool versions)
{
	const char *lwhy = NULL;
	struct qsb_backend_info *b;
	int t;

	memset(c, 0, sizeof(*c));
	c->landlock_abi = qsb_ll_abi(&lwhy);
	if (lwhy)
		strlcpy(c->landlock_why, lwhy, sizeof(c->landlock_why));
	c->seccomp = qsb_seccomp_available();
	/* root's native backend needs none, bwrap always does */
	c->userns = qsb_userns_works(c->userns_why, sizeof(c->userns_why));
	c->max_userns = read_long("/proc/sys/user/max_user_namespaces");
	c->apparmor_restrict =
	    (int)read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");

	for (t = QSB_BK_NATIVE; t <= QSB_BK_NONE; t++)
		c->b[t].type = t;
	/* native: built in */
	b = &c->b[QSB_BK_NATIVE];
	b->present = true;
	strlcpy(b->version, "qsb " QSB_VERSION, sizeof(b->version));
	{
		/* embedded in qsb-exec, installed next to this program */
		char self[PATH_MAX], *slash;
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n > 0) {
			self[n] = '\0';
			if ((slash = strrchr(self, '/')) != NULL)
				*slash = '\0';
			if ((size_t)snprintf(b->path, sizeof(b->path),
			    "%s/qsb-exec", self) >= sizeof(b->path))
				b->path[0] = '\0';
		}
	}
	if (c->landlock_abi == 0 || !c->seccomp)
		snprintf(b->why, sizeof(b->why), "%s", c->landlock_abi == 0 ?
		    c->landlock_why : "seccomp is unavailable");
	else if (geteuid() == 0 || c->userns)
		b->usable = true;
	else {
		b->usable = b->degraded = true;
		snprintf(b->why, sizeof(b->why), "%s: confined by Landlock and "
		    "seccomp alone", c->userns_why);
	}
	/* bwrap */
	b = &c->b[QSB_BK_BWRAP];
	{
		const char *env = getenv("QSB_BWRAP");
		if (env != NULL && *env == '/') {
			b->present = access(env, X_OK) == 0;
			strlcpy(b->path, env, sizeof(b->path));
		} else
			b->present = which("bwrap", b->path, sizeof(b->path));
	}
	if (!b->present) {
		b->path[0] = '\0';
		snprintf(b->why, sizeof(b->why),
		    "bubblewrap (bwrap) is not installed");
	} else {
		if (versions)
			version_of(b->path, b->version, sizeof(b->version));
		if (!c->seccomp)
			snprintf(b->why, sizeof(b->why),
			    "seccomp is unavailable");
		else if (!c->userns)
			snprintf(b->why, sizeof(b->why), "bubblewrap needs %s",
			    c->userns_why);
		else
			b->usable = true;
	}
	/* firejail and docker: detected, not driven by this version */
	b = &c->b[QSB_BK_FIREJAIL];
	if ((b->present = which("firejail", b->path, sizeof(b->path))) &&
	    versions)
		version_of(b->path, b->version, sizeof(b->version));
	else if (!b->present)
		b->path[0] = '\0';
	snprintf(b->why, sizeof(b->why), "%sthe firejail backend is not built "
	    "into this version of qsb", b->present ? "" :
	    "firejail is not installed, and ");
	b = &c->b[QSB_BK_DOCKER];
	if ((b->present = which("docker", b->path, sizeof(b->path)) ||
	    which("podman", b->path, sizeof(b->path))) && versions)
		version_of(b->path, b->version, sizeof(b->version));
	else if (!b->present)
		b->path[0] = '\0';
	snprintf(b->why, sizeof(b->why), "%sthe docker backend is not built "
	    "into this version of qsb", b->present ? "" :
	    "neither docker nor podman is installed, and ");
	/* none */
	b = &c->b[QSB_BK_NONE];
	b->present = b->usable = true;
	strlcpy(b->why, "no sandbox: rlimits and timeout only (insecure)",
	    sizeof(b->why));
}

int
qsb_caps_resolve(const struct qsb_caps *c, int want, int fallback,
    bool *usable, bool *degraded, char *why, size_t whysz)
{
	static const int order[] = { QSB_BK_NATIVE, QSB_BK_BWRAP };
	char first[600] = "";
	size_t i;

	*degraded = false;
	if (want != QSB_BK_AUTO) {
		const struct qsb_backend_info *b = &c->b[want];
		if (b->usable || want == QSB_BK_NONE ||
		    fallback == QSB_FB_MANUAL) {
			*usable = b->usable;
			*degraded = b->degraded || want == QSB_BK_NONE;
			snprintf(why, whysz, "%s", b->why);
			return want;
		}
		/* as qsb-exec does: the policy lets it fall back */
		snprintf(first, sizeof(first), "%s is unusable: %s",
		    qsb_backend_names[want], b->why);
	}
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const struct qsb_backend_info *b = &c->b[order[i]];
		if (order[i] == want || !b->usable)
			continue;
		*usable = true;
		*degraded = b->degraded || *first;
		if (*first)
			snprintf(why, whysz, "%s; falls back to %s%s%s", first,
			    qsb_backend_names[order[i]], b->degraded ? ": " : "",
			    b->degraded ? b->why : "");
		else
			snprintf(why, whysz, "%s", b->degraded ? b->why : "");
		return order[i];
	}
	*usable = false;
	snprintf(why, whysz, "no sandbox backend is usable here: native: %s; "
	    "bwrap: %s", c->b[QSB_BK_NATIVE].why, c->b[QSB_BK_BWRAP].why);
	return want == QSB_BK_AUTO ? QSB_BK_NATIVE : want;
}

void
qsb_caps_write(struct qsb_jw *w, const struct qsb_caps *c,
    const struct qsb_config *cfg)
{
	struct qsb_cg_info cg;
	static const char *const layouts[] = { "none", "v1", "v2", "hybrid" };
	int t, k;
	size_t i;

	qsb_cg_probe(&cg);
	qsb_jw_obj(w);
	qsb_jw_key(w, "backends");
	qsb_jw_obj(w);
	for (t = QSB_BK_NATIVE; t <= QSB_BK_NONE; t++) {
		const struct qsb_backend_info *b = &c->b[t];
		qsb_jw_key(w, qsb_backend_names[t]);
		qsb_jw_obj(w);
		qsb_jw_key(w, "present");
		qsb_jw_bool(w, b->present);
		qsb_jw_key(w, "usable");
		qsb_jw_bool(w, b->usable);
		qsb_jw_key(w, "degraded");
		qsb_jw_bool(w, b->degraded);
		qsb_jw_key(w, "path");
		qsb_jw_str(w, b->path[0] ? b->path : NULL);
		qsb_jw_key(w, "version");
		qsb_jw_str(w, b->version[0] ? b->version : NULL);
		qsb_jw_key(w, "reason");
		qsb_jw_str(w, b->why[0] ? b->why : NULL);
		qsb_jw_obj_end(w);
	}
	qsb_jw_obj_end(w);
	qsb_jw_key(w, "kernel");
	qsb_jw_obj(w);
	qsb_jw_key(w, "userNamespaces");
	qsb_jw_obj(w);
	qsb_jw_key(w, "available");
	qsb_jw_bool(w, c->userns);
	qsb_jw_key(w, "reason");
	qsb_jw_str(w, c->userns ? NULL : c->userns_why);
	qsb_jw_key(w, "maxUserNamespaces");
	if (c->max_userns >= 0)
		qsb_jw_int(w, c->max_userns);
	else
		qsb_jw_null(w);
	qsb_jw_key(w, "apparmorRestricted");
	if (c->apparmor_restrict >= 0)
		qsb_jw_bool(w, c->apparmor_restrict > 0);
	else
		qsb_jw_null(w);
	qsb_jw_obj_end(w);
	qsb_jw_key(w, "landlock");
	qsb_jw_obj(w);
	qsb_jw_key(w, "abi");
	qsb_jw_int(w, c->landlock_abi);
	qsb_jw_key(w, "reason");
	qsb_jw_str(w, c->landlock_abi ? NULL : c->landlock_why);
	qsb_jw_obj_end(w);
	qsb_jw_key(w, "seccomp");
	qsb_jw_obj(w);
	qsb_jw_key(w, "available");
	qsb_jw_bool(w, c->seccomp);
	qsb_jw_key(w, "denied");
	qsb_jw_arr(w);
	for (i = 0; qsb_seccomp_denied[i]; i++)
		qsb_jw_str(w, qsb_seccomp_denied[i]);
	qsb_jw_arr_end(w);
	qsb_jw_obj_end(w);
	qsb_jw_key(w, "cgroup");
	qsb_jw_obj(w);
	qsb_jw_key(w, "version");
	qsb_jw_str(w, layouts[cg.layout]);
	qsb_jw_key(w, "v2Controllers");
	qsb_jw_str(w, cg.v2controllers);
	qsb_jw_key(w, "usable");
	qsb_jw_obj(w);
	for (k = 0; k < QSB_CG_N; k++) {
		qsb_jw_key(w, qsb_cg_ctl_names[k]);
		qsb_jw_str(w, qsb_cg_name(cg.usable[k]));
	}
	qsb_jw_obj_end(w);
	qsb_jw_key(w, "memoryFallback");
	qsb_jw_str(w, cg.usable[QSB_CG_MEMORY] ? NULL : "rlimit-as");
	qsb_jw_obj_end(w);
	qsb_jw_obj_end(w);
	qsb_jw_key(w, "protectedPaths");
	qsb_jw_arr(w);
	for (i = 0; cfg->protected_paths && cfg->protected_paths[i]; i++)
		qsb_jw_str(w, cfg->protected_paths[i]);
	qsb_jw_arr_end(w);
	qsb_jw_key(w, "hiddenPaths");
	qsb_jw_arr(w);
	for (i = 0; cfg->hidden_paths && cfg->hidden_paths[i]; i++)
		qsb_jw_str(w, cfg->hidden_paths[i]);
	qsb_jw_arr_end(w);
	qsb_jw_obj_end(w);
}

/*
 * ROOT/status.json: {"backends":{"NAME":{"available":B,"reason":S|null,
 * "checkedAt":T},...}}, rewritten (under ROOT/config.lock) only when an
 * availability changes.  A backend is presumed available until seen
 * otherwise: unavailable at first look, or any change later, is an event.
 */
/* What status.json says of backend: true with *available when known. */
static bool
seen(const struct qsb_root *r, const char *backend, bool *available)
{
	struct qsb_json j;
	char *buf = NULL;
	size_t len;
	bool known = false;
	int k;

	if (qsb_state_read(r->fd, "status.json", 1 << 20, &buf, &len,
	    NULL) < 0)
		return false;
	if (qsb_json_parse(&j, buf, len, NULL) == 0) {
		if (j.t[0].type == QSB_JOBJ &&
		    (k = qsb_json_get(&j, 0, "backends")) >= 0 &&
		    j.t[k].type == QSB_JOBJ &&
		    (k = qsb_json_get(&j, k, backend)) >= 0 &&
		    j.t[k].type == QSB_JOBJ)
			known = qsb_json_bool(&j, qsb_json_get(&j, k,
			    "available"), available) == 0;
		qsb_json_free(&j);
	}
	free(buf);
	return known;
}

void
qsb_availability_note(const struct qsb_root *r, const char *backend,
    bool usable, const char *why)
{
	struct qsb_json j;
	struct qsb_jw w, ev;
	char *buf = NULL;
	size_t len;
	bool before = true, known = false, parsed = false;
	int lfd, bk = -1, k;

	/* the common case, nothing changed, reads without the lock */
	if (seen(r, backend, &before) && before == usable)
		return;
	if ((lfd = qsb_lock(r->fd, "config.lock", LOCK_EX, NULL)) < 0)
		return;
	memset(&j, 0, sizeof(j));
	if (qsb_state_read(r->fd, "status.json", 1 << 20, &buf, &len,
	    NULL) == 0 && qsb_json_parse(&j, buf, len, NULL) == 0) {
		parsed = true;
		if (j.t[0].type == QSB_JOBJ &&
		    (bk = qsb_json_get(&j, 0, "backends")) >= 0 &&
		    j.t[bk].type == QSB_JOBJ &&
		    (k = qsb_json_get(&j, bk, backend)) >= 0 &&
		    j.t[k].type == QSB_JOBJ)
			known = qsb_json_bool(&j, qsb_json_get(&j, k,
			    "available"), &before) == 0;
		if (bk >= 0 && j.t[bk].type != QSB_JOBJ)
			bk = -1;
	}
	if (known && before == usable)
		goto out;
	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "backends");
	qsb_jw_obj(&w);
	if (bk >= 0)	/* the others as they were */
		for (k = qsb_json_first(&j, bk); k >= 0;
		    k = qsb_json_sibling(&j, bk, k)) {
			char *name = qsb_json_str(&j, k, NULL);
			if (name != NULL && strcmp(name, backend) != 0 &&
			    j.t[k + 1].type == QSB_JOBJ) {
				qsb_jw_key(&w, name);
				qsb_jw_raw(&w, j.s + j.t[k + 1].start,
				    (size_t)(j.t[k + 1].end - j.t[k + 1].start));
			}
			free(name);
		}
	qsb_jw_key(&w, backend);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "available");
	qsb_jw_bool(&w, usable);
	qsb_jw_key(&w, "reason");
	qsb_jw_str(&w, usable ? NULL : why);
	qsb_jw_key(&w, "checkedAt");
	qsb_jw_time(&w, qsb_now_ms());
	qsb_jw_obj_end(&w);
	qsb_jw_obj_end(&w);
	qsb_jw_obj_end(&w);
	if (qsb_jw_finish(&w) == 0 &&
	    qsb_state_write(r->fd, "status.json", w.buf, w.len, 0600,
	    NULL) == 0 && (known || !usable)) {
		qsb_jw_init(&ev, 0);
		qsb_jw_obj(&ev);
		qsb_jw_key(&ev, "backend");
		qsb_jw_str(&ev, backend);
		if (!usable) {
			qsb_jw_key(&ev, "reason");
			qsb_jw_str(&ev, why);
		}
		qsb_jw_obj_end(&ev);
		if (qsb_jw_finish(&ev) == 0)
			(void)qsb_event(r, usable ? "sandbox:recovered" :
			    "sandbox:unavailable", NULL, ev.buf, ev.len, NULL);
		qsb_jw_free(&ev);
	}
	qsb_jw_free(&w);
out:
	if (parsed)
		qsb_json_free(&j);
	free(buf);
	close(lfd);
}
