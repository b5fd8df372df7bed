#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <linux/close_range.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "exec.h"
#include "json.h"
#include "landlock.h"
#include "parse.h"
#include "path.h"
#include "protect.h"
#include "rmtree.h"
#include "ring.h"
#include "root.h"
#include "seccomp.h"
#include "state.h"
#include "strv.h"
#include "workspace.h"

extern char **environ;

const struct qsb_backend_ops *
qsb_backend_get(int type)
{
	switch (type) {
	case QSB_BK_NATIVE:
		return &qsb_backend_native;
	case QSB_BK_BWRAP:
		return &qsb_backend_bwrap;
	case QSB_BK_NONE:
		return &qsb_backend_none;
	default:
		return NULL;
	}
}

const char *
qsb_signame(int sig)
{
	static const struct { int n; const char *s; } t[] = {
		{ SIGHUP, "SIGHUP" }, { SIGINT, "SIGINT" },
		{ SIGQUIT, "SIGQUIT" }, { SIGILL, "SIGILL" },
		{ SIGTRAP, "SIGTRAP" }, { SIGABRT, "SIGABRT" },
		{ SIGBUS, "SIGBUS" }, { SIGFPE, "SIGFPE" },
		{ SIGKILL, "SIGKILL" }, { SIGUSR1, "SIGUSR1" },
		{ SIGSEGV, "SIGSEGV" }, { SIGUSR2, "SIGUSR2" },
		{ SIGPIPE, "SIGPIPE" }, { SIGALRM, "SIGALRM" },
		{ SIGTERM, "SIGTERM" }, { SIGCHLD, "SIGCHLD" },
		{ SIGCONT, "SIGCONT" }, { SIGSTOP, "SIGSTOP" },
		{ SIGTSTP, "SIGTSTP" }, { SIGTTIN, "SIGTTIN" },
		{ SIGTTOU, "SIGTTOU" }, { SIGURG, "SIGURG" },
		{ SIGXCPU, "SIGXCPU" }, { SIGXFSZ, "SIGXFSZ" },
		{ SIGVTALRM, "SIGVTALRM" }, { SIGPROF, "SIGPROF" },
		{ SIGWINCH, "SIGWINCH" }, { SIGIO, "SIGIO" },
		{ SIGPWR, "SIGPWR" }, { SIGSYS, "SIGSYS" },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].n == sig)
			return t[i].s;
	return "SIGUNKNOWN";
}

/* --- the plan ------------------------------------------------------------ */

/* Sets NAME=VALUE in s, replacing an earlier NAME. */
static void
env_set(struct qsb_strv *s, const char *name, const char *value)
{
	size_t i, l = strlen(name);

	for (i = 0; i < s->n; i++)
		if (strncmp(s->v[i], name, l) == 0 && s->v[i][l] == '=') {
			free(s->v[i]);
			if ((s->v[i] = qsb_fmt("%s=%s", name, value)) == NULL)
				s->nomem = true;
			return;
		}
	qsb_strv_take(s, qsb_fmt("%s=%s", name, value));
}

static bool
env_name_valid(const char *s, size_t l)
{
	size_t i;

	if (l == 0 || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' &&
	    s[0] <= 'z') || s[0] == '_'))
		return false;
	for (i = 1; i < l; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' &&
		    s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '_'))
			return false;
	return true;
}

static const char *
env_lookup(char **env, const char *name)
{
	size_t l = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, l) == 0 && (*env)[l] == '=')
			return *env + l + 1;
	return NULL;
}

bool
qsb_userns_works(char *why, size_t whysz)
{
	int st, fd;
	pid_t pid;
	char buf[16] = "";

	if ((pid = fork()) < 0) {
		snprintf(why, whysz, "fork: %s", strerror(errno));
		return false;
	}
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno & 0xff);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return true;
	if ((fd = open("/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
	    O_RDONLY | O_CLOEXEC)) >= 0) {
		if (read(fd, buf, sizeof(buf) - 1) < 0)
			buf[0] = '\0';
		close(fd);
	}
	snprintf(why, whysz, "user namespaces are unavailable (%s)%s",
	    WIFEXITED(st) ? strerror(WEXITSTATUS(st)) : "probe crashed",
	    buf[0] == '1' ? "; AppArmor restricts unprivileged user "
	    "namespaces" : "");
	return false;
}

/* snprintf for messages, which may be cut short */
static void
msgf(char *buf, size_t sz, const char *f, ...)
    __attribute__((format(printf, 3, 4)));
static void
msgf(char *buf, size_t sz, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	(void)vsnprintf(buf, sz, f, ap);
	va_end(ap);
}

static int
more_permissive(int a, int b)
{
	return a > b;	/* strict < compat < permissive */
}

static int
pick_backend(const struct qsb_config *cfg, struct qsb_plan *p, int want,
    struct qsb_err *e)
{
	static const int order[] = { QSB_BK_NATIVE, QSB_BK_BWRAP };
	const struct qsb_backend_ops *b;
	char why[512], first[512] = "";
	bool degraded;
	size_t i;

	if (want == QSB_BK_FIREJAIL || want == QSB_BK_DOCKER) {
		msgf(first, sizeof(first), "the %s backend is not built "
		    "into this version of qsb", qsb_backend_names[want]);
		if (cfg->policy.fallback == QSB_FB_MANUAL)
			return qsb_err_set(e, QSB_E_SANDBOX_UNAVAILABLE, "%s",
			    first);
		want = QSB_BK_AUTO;
	}
	if (want != QSB_BK_AUTO) {
		b = qsb_backend_get(want);
		if (b->probe(p, &degraded, why, sizeof(why)) == 1) {
			p->backend = want;
			if (degraded) {
				p->degraded = true;
				p->landlock_only = want == QSB_BK_NATIVE;
				strlcpy(p->reason, why, sizeof(p->reason));
			}
			return 0;
		}
		if (want == QSB_BK_NONE || cfg->policy.fallback ==
		    QSB_FB_MANUAL)
			return qsb_err_set(e, QSB_E_SANDBOX_UNAVAILABLE,
			    "the %s backend is unusable: %s",
			    qsb_backend_names[want], why);
		msgf(first, sizeof(first), "%s is unusable: %s",
		    qsb_backend_names[want], why);
	}
	/* auto, or a fallback the policy allows: the strongest usable;
	 * never none */
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (order[i] == want)
			continue;
		b = qsb_backend_get(order[i]);
		if (b->probe(p, &degraded, why, sizeof(why)) != 1)
			continue;
		p->backend = order[i];
		p->landlock_only = degraded && order[i] == QSB_BK_NATIVE;
		if (*first || degraded) {
			p->degraded = true;
			msgf(p->reason, sizeof(p->reason), "%s%s%s%s",
			    first, *first ? "; fell back to " : "",
			    *first ? qsb_backend_names[order[i]] : "",
			    degraded ? why : "");
		}
		return 0;
	}
	return qsb_err_set(e, QSB_E_SANDBOX_UNAVAILABLE,
	    "no sandbox backend is usable here%s%s", *first ? ": " : "",
	    first);
}

/* Hidden credential stores that exist, as absolute paths. */
static void
hidden_paths(const struct qsb_config *cfg, struct qsb_strv *out)
{
	const char *homes[2] = { NULL, NULL };
	struct passwd *pw;
	struct stat st;
	char *h;
	size_t i, k;

	if ((pw = getpwuid(getuid())) != NULL && pw->pw_dir[0] == '/')
		homes[0] = pw->pw_dir;
	if ((h = getenv("HOME")) != NULL && *h == '/' &&
	    (homes[0] == NULL || strcmp(h, homes[0]) != 0))
		homes[1] = h;
	for (i = 0; cfg->hidden_paths[i]; i++) {
		const char *hp = cfg->hidden_paths[i];
		if (hp[0] == '/') {
			if (lstat(hp, &st) == 0)
				qsb_strv_take(out, strdup(hp));
			continue;
		}
		for (k = 0; k < 2; k++) {
			if (homes[k] == NULL)
				continue;
			char *full = qsb_fmt("%s/%s", homes[k], hp);
			if (full && lstat(full, &st) == 0 &&
			    !S_ISLNK(st.st_mode))
				qsb_strv_take(out, full);
			else
				free(full);
		}
	}
}

int
qsb_exec_plan(const struct qsb_root *r, const struct qsb_config *cfg,
    const struct qsb_ws *ws, const struct qsb_exec_req *q,
    struct qsb_plan *p, struct qsb_err *e)
{
	struct qsb_strv env = { NULL, 0, 0, 0 }, sec = { NULL, 0, 0, 0 };
	struct qsb_strv argv = { NULL, 0, 0, 0 }, hid = { NULL, 0, 0, 0 };
	char rel[PATH_MAX], *projects = NULL;
	static const char *const pass[] = { "TERM", "COLORTERM", "LANG",
	    "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", NULL };
	struct passwd *pw;
	const char *v;
	size_t i;
	int fsfd = -1, fd, want;

	memset(p, 0, sizeof(*p));
	p->ws = ws;
	p->cfg = cfg;
	p->state_root = r->path;
	p->stdio = q->stdio;
	p->stdin_null = q->stdin_null;
	p->timeout_ms = q->timeout_ms;
	p->output_limit = q->output_limit;
	p->as_root = geteuid() == 0;
	p->uid = p->as_root ? cfg->sandbox_uid : getuid();
	p->gid = p->as_root ? cfg->sandbox_gid : getgid();

	if (!ws->sb.enabled)
		return qsb_err_set(e, QSB_E_SANDBOX_UNAVAILABLE, "the sandbox "
		    "of workspace '%s' is disabled (enabled: false)", ws->id);
	/* mode, network, level: never wider than the workspace */
	p->mode = ws->sb.mode;
	if (q->mode >= 0) {
		if (more_permissive(q->mode, ws->sb.mode))
			return qsb_err_set(e, QSB_E_PERMISSION_DENIED,
			    "--mode %s: workspace '%s' allows at most %s",
			    qsb_mode_names[q->mode], ws->id,
			    qsb_mode_names[ws->sb.mode]);
		p->mode = q->mode;
	}
	p->network = ws->sb.network;
	if (q->network == 1 && !ws->sb.network)
		return qsb_err_set(e, QSB_E_PERMISSION_DENIED, "--network: "
		    "workspace '%s' has no network access", ws->id);
	if (q->network == 0)
		p->network = false;
	/* --permission-level: 0 read-only, 1 write, 2 write + the
	 * workspace's network, 3 the workspace's full configuration */
	p->level = q->level < 0 ? 3 : q->level;
	p->writable = p->level >= 1;
	if (p->mode == QSB_MODE_PERMISSIVE) {
		if (p->level == 3)
			p->network = q->network != 0;
		else
			p->mode = QSB_MODE_COMPAT;
	}
	if (p->level <= 1)
		p->network = false;
	else if (p->level == 2 && !ws->sb.network && q->network != 0) {
		p->level = 1;
		p->clamped = true;
	}

	/* backend */
	want = q->backend >= 0 ? q->backend : ws->sb.type;
	if (want == QSB_BK_NONE && ws->sb.type != QSB_BK_NONE &&
	    ws->sb.mode != QSB_MODE_PERMISSIVE)
		return qsb_err_set(e, QSB_E_PERMISSION_DENIED, "--backend none: "
		    "workspace '%s' is sandboxed with %s", ws->id,
		    qsb_backend_names[ws->sb.type]);
	if (p->mode == QSB_MODE_PERMISSIVE)
		want = QSB_BK_NONE;	/* rlimits and timeout only */
	p->wanted = want;
	p->picking = true;
	if (pick_backend(cfg, p, want, e) < 0)
		return -1;

	/* limits */
	p->memory = ws->sb.has_memory ? ws->sb.memory : 0;
	if (q->max_memory > 0 && (p->memory == 0 || q->max_memory < p->memory))
		p->memory = q->max_memory;
	p->cpus = ws->sb.has_cpus ? ws->sb.cpus : 0;
	if (qsb_ws_quota(ws, &p->fsize, e) < 0)
		return -1;

	/* cwd: inside rootPath, else projectsPath */
	if ((fd = open(ws->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsfd = qsb_ws_open_fs(fd, NULL);
		close(fd);
	}
	if (fsfd < 0)
		return qsb_err_sys(e, QSB_E_WORKSPACE_NOT_FOUND,
		    "workspace '%s': cannot open its files", ws->id);
	projects = qsb_fmt("%s/projects", ws->root_path);
	if (q->cwd != NULL && qsb_path_rel(ws->root_path, q->cwd, rel,
	    sizeof(rel), NULL) == 0 && (fd = qsb_path_open(fsfd, rel,
	    O_PATH | O_DIRECTORY, 0, q->cwd, NULL)) >= 0) {
		char canon[PATH_MAX];
		if (qsb_path_of_fd(fd, ws->root_path, canon,
		    sizeof(canon)) == 0)
			p->cwd = strcmp(canon, ".") == 0 ?
			    strdup(ws->root_path) :
			    qsb_fmt("%s/%s", ws->root_path, canon);
		close(fd);
	}
	if (p->cwd == NULL) {
		p->cwd = projects;
		projects = NULL;
	}

	/* protected paths, found now so that the sandbox binds exactly
	 * these */
	if (p->backend != QSB_BK_NONE && qsb_protect_find(fsfd,
	    cfg->protected_paths, &p->protected, &i) < 0) {
		close(fsfd);
		free(projects);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "cannot search for protected paths");
	}
	close(fsfd);
	free(projects);
	if (p->backend != QSB_BK_NONE && p->mode == QSB_MODE_COMPAT)
		hidden_paths(cfg, &hid);
	if ((p->hidden = qsb_strv_done(&hid)) == NULL) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
		goto fail;
	}

	/* the environment: a known list, then --env, then secrets */
	env_set(&env, "PATH", "");
	free(env.v[0]);
	env.v[0] = qsb_fmt("PATH=%s/bin:/usr/local/sbin:/usr/local/bin:"
	    "/usr/sbin:/usr/bin:/sbin:/bin", ws->root_path);
	env_set(&env, "HOME", "");
	free(env.v[1]);
	env.v[1] = qsb_fmt("HOME=%s/home", ws->root_path);
	qsb_strv_take(&env, qsb_fmt("TMPDIR=%s/tmp", ws->root_path));
	pw = getpwuid(p->uid);
	qsb_strv_take(&env, qsb_fmt("USER=%s", pw ? pw->pw_name : "qsb"));
	qsb_strv_take(&env, qsb_fmt("LOGNAME=%s", pw ? pw->pw_name : "qsb"));
	qsb_strv_take(&env, strdup("SHELL=/bin/sh"));
	qsb_strv_take(&env, qsb_fmt("XDG_CACHE_HOME=%s/cache", ws->root_path));
	qsb_strv_take(&env, qsb_fmt("npm_config_cache=%s/cache/npm",
	    ws->root_path));
	qsb_strv_take(&env, qsb_fmt("PIP_CACHE_DIR=%s/cache/pip",
	    ws->root_path));
	qsb_strv_take(&env, qsb_fmt("QSB_SESSION=%s", ws->id));
	for (i = 0; pass[i]; i++)
		if ((v = getenv(pass[i])) != NULL)
			env_set(&env, pass[i], v);
	for (i = 0; q->env && q->env[i]; i++) {
		const char *eq = strchr(q->env[i], '=');
		if (eq == NULL || !env_name_valid(q->env[i],
		    (size_t)(eq - q->env[i]))) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID, "--env '%s': "
			    "expected NAME=VALUE with NAME of letters, digits "
			    "and _", q->env[i]);
			goto fail;
		}
		char name[256];
		if ((size_t)(eq - q->env[i]) >= sizeof(name)) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "--env: name too long");
			goto fail;
		}
		memcpy(name, q->env[i], (size_t)(eq - q->env[i]));
		name[eq - q->env[i]] = '\0';
		env_set(&env, name, eq + 1);
	}
	for (i = 0; q->secrets && q->secrets[i]; i++) {
		const char *name = q->secrets[i];
		if (!env_name_valid(name, strlen(name))) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "--secret '%s': not a variable name", name);
			goto fail;
		}
		if ((v = env_lookup(env.v, name)) == NULL) {
			if ((v = getenv(name)) == NULL) {
				qsb_err_set(e, QSB_E_CONFIG_INVALID,
				    "--secret %s: no such variable in the "
				    "environment or --env", name);
				goto fail;
			}
			env_set(&env, name, v);
		}
		if (*v != '\0')
			qsb_strv_take(&sec, strdup(v));
	}
	if (qsb_strv_done(&sec) == NULL)
		sec.nomem = true;
	for (i = 0; q->argv[i]; i++)
		qsb_strv_take(&argv, strdup(q->argv[i]));
	if (env.nomem || sec.nomem || argv.nomem || hid.nomem ||
	    p->cwd == NULL) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
		goto fail;
	}
	p->envp = env.v;
	p->secret_values = sec.v;
	p->argv = argv.v;
	return 0;
fail:
	qsb_strv_free(env.v);
	qsb_strv_free(sec.v);
	qsb_strv_free(argv.v);
	qsb_plan_free(p);
	return -1;
}

void
qsb_plan_free(struct qsb_plan *p)
{
	free(p->cwd);
	qsb_strv_free(p->argv);
	qsb_strv_free(p->envp);
	if (p->secret_values) {
		for (size_t i = 0; p->secret_values[i]; i++)
			explicit_bzero(p->secret_values[i],
			    strlen(p->secret_values[i]));
	}
	qsb_strv_free(p->secret_values);
	qsb_protect_free(p->protected);
	qsb_strv_free(p->hidden);
	memset(p, 0, sizeof(*p));
}

/* --- the command's own process -------------------------------------------- */

void
qsb_report(int fd, int type, int a, int b, const char *msg)
{
	struct qsb_report r;
	size_t i = 0;

	memset(&r, 0, sizeof(r));
	r.type = type;
	r.a = a;
	r.b = b;
	if (msg)
		for (; msg[i] && i < sizeof(r.msg) - 1; i++)
			r.msg[i] = msg[i];
	(void)!write(fd, &r, sizeof(r));
}

static __attribute__((noreturn)) void
child_fail(int fd, const char *what, int err)
{
	char msg[240];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	qsb_report(fd, QSB_REP_SETUP, err, 0, msg);
	_exit(125);
}

/* Empties the bounding set (needs CAP_SETPCAP, which we have as root or
 * in our user namespace), so that no later execve regains anything. */
static int
drop_bounding(void)
{
	int c;

	for (c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -1;
	return 0;
}

static int
drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(d, 0, sizeof(d));
	return (int)syscall(SYS_capset, &h, d);
}

/* Grants access on everything beneath dir except the excluded paths (and
 * what leads to them, which is entered instead). */
static int
ll_grant_except(struct qsb_ll *ll, const char *dir, char *const *excl,
    uint64_t access, int depth, struct qsb_err *e)
{
	char child[PATH_MAX];
	struct dirent *de;
	size_t i, cl;
	DIR *d;
	int rc = 0;

	if (depth > 32 || (d = opendir(dir)) == NULL)
		return 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		bool skip = false, leads = false;
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(child, sizeof(child), "%s/%s",
		    strcmp(dir, "/") == 0 ? "" : dir, de->d_name) >=
		    sizeof(child))
			continue;
		cl = strlen(child);
		for (i = 0; excl[i]; i++) {
			if (strcmp(excl[i], child) == 0)
				skip = true;
			else if (strncmp(excl[i], child, cl) == 0 &&
			    excl[i][cl] == '/')
				leads = true;
		}
		if (skip)
			continue;
		if (leads)
			rc = ll_grant_except(ll, child, excl, access,
			    depth + 1, e);
		else
			rc = qsb_ll_allow(ll, child, access, e);
	}
	closedir(d);
	return rc;
}

static int
landlock_rules(const struct qsb_plan *p, bool in_mountns, struct qsb_err *e)
{
	static const char *const strict_ro[] = { "/usr", "/bin", "/sbin",
	    "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
	    "/dev", NULL };
	static const char *const devw[] = { "/dev/null", "/dev/zero",
	    "/dev/full", "/dev/tty", "/dev/pts", "/dev/shm", "/dev/ptmx",
	    NULL };
	struct qsb_strv excl = { NULL, 0, 0, 0 };
	struct qsb_ll ll;
	size_t i;
	int rc = -1;

	/* TCP is also refused by seccomp when network is off; Landlock
	 * adds the same rule where the kernel has it */
	if (qsb_ll_new(&ll, !p->network, e) < 0)
		return -1;
	if (in_mountns) {
		/* the mount namespace already shows only what may be read */
		if (qsb_ll_allow(&ll, "/", QSB_LL_READ, e) < 0)
			goto out;
		if (qsb_ll_allow(&ll, "/dev", QSB_LL_READ | QSB_LL_WRITE,
		    e) < 0)
			goto out;
		if (p->writable && qsb_ll_allow(&ll, "/tmp", QSB_LL_READ |
		    QSB_LL_WRITE, e) < 0)
			goto out;
	} else if (p->mode == QSB_MODE_STRICT) {
		for (i = 0; strict_ro[i]; i++)
			if (qsb_ll_allow(&ll, strict_ro[i], QSB_LL_READ, e) < 0)
				goto out;
	} else {
		/* everything but the qsb root and the credential stores */
		qsb_strv_take(&excl, strdup(p->state_root));
		for (i = 0; p->hidden[i]; i++)
			qsb_strv_take(&excl, strdup(p->hidden[i]));
		if (excl.nomem) {
			qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "landlock");
			goto out;
		}
		if (ll_grant_except(&ll, "/", excl.v, QSB_LL_READ, 0, e) < 0)
			goto out;
	}
	if (!in_mountns)
		for (i = 0; devw[i]; i++)
			if (qsb_ll_allow(&ll, devw[i], QSB_LL_READ |
			    QSB_LL_WRITE, e) < 0)
				goto out;
	if (qsb_ll_allow(&ll, p->ws->root_path, QSB_LL_READ |
	    (p->writable ? QSB_LL_WRITE : 0), e) < 0)
		goto out;
	rc = qsb_ll_enforce(&ll, e);
out:
	qsb_strv_free(excl.v);
	qsb_ll_close(&ll);
	return rc;
}

int
qsb_child_stdio(const struct qsb_plan *p, int outw, int errw)
{
	int fd;

	if (p->stdin_null) {
		if ((fd = open("/dev/null", O_RDONLY)) < 0)
			return -1;
		if (fd != 0 && (dup2(fd, 0) < 0 || close(fd) < 0))
			return -1;
	}
	if (p->stdio == QSB_STDIO_PIPE) {
		if (dup2(outw, 1) < 0 || dup2(errw, 2) < 0)
			return -1;
		if (outw > 2)
			close(outw);
		if (errw > 2)
			close(errw);
	} else if (p->stdio == QSB_STDIO_MERGED) {
		if (dup2(outw, 1) < 0 || dup2(outw, 2) < 0)
			return -1;
		if (outw > 2)
			close(outw);
	}
	return 0;
}

void
qsb_child_signals(void)
{
	sigset_t none;
	int sig;

	/* qsb-exec blocks INT, TERM and HUP (for its signalfd) and ignores
	 * PIPE; a mask and ignored signals survive execve */
	struct {
		void		*handler;
		unsigned long	 flags;
		void		*restorer;
		uint64_t	 mask;
	} dfl = { SIG_DFL, 0, NULL, 0 };

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* the raw call: glibc's signal() refuses its reserved real-time
	 * signals, which a runtime may have set to be ignored */
	for (sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, sig, &dfl, NULL, 8);
}

void
qsb_exec_child(const struct qsb_plan *p, int rfd, int how)
{
	struct qsb_seccomp sc;
	struct qsb_err e;
	struct rlimit rl;
	int sig;

	qsb_child_signals();
	if (setsid() < 0 && errno != EPERM)
		child_fail(rfd, "setsid", errno);
	if (chdir(p->cwd) < 0)
		child_fail(rfd, p->cwd, errno);
	rl.rlim_cur = rl.rlim_max = 0;
	(void)setrlimit(RLIMIT_CORE, &rl);
	if (p->fsize > 0) {
		rl.rlim_cur = rl.rlim_max = p->fsize;
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			child_fail(rfd, "RLIMIT_FSIZE", errno);
	}
	if (p->memory > 0 && !p->memory_cgroup) {
		rl.rlim_cur = rl.rlim_max = p->memory;
		if (setrlimit(RLIMIT_AS, &rl) < 0)
			child_fail(rfd, "RLIMIT_AS", errno);
	}
	/* an inherited descriptor (a directory, a socket) would be a way
	 * out: only 0, 1 and 2 reach the command */
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(rfd, "close_range", errno);
	if (how == QSB_CHILD_NAMESPACED || (p->as_root && how !=
	    QSB_CHILD_BARE))
		if (drop_bounding() < 0)
			child_fail(rfd, "cannot drop capabilities", errno);
	if (p->as_root) {
		if (setgroups(0, NULL) < 0 ||
		    setresgid(p->gid, p->gid, p->gid) < 0 ||
		    setresuid(p->uid, p->uid, p->uid) < 0)
			child_fail(rfd, "cannot become the sandbox user",
			    errno);
		if (geteuid() == 0 || getuid() == 0)
			child_fail(rfd, "still root", EPERM);	/* fail safe */
	}
	if (how != QSB_CHILD_BARE) {
		/* in a user namespace we hold every capability until here */
		if (drop_caps() < 0)
			child_fail(rfd, "cannot drop capabilities", errno);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			child_fail(rfd, "no_new_privs", errno);
		if (landlock_rules(p, how == QSB_CHILD_NAMESPACED, &e) < 0) {
			qsb_report(rfd, QSB_REP_SETUP, 0, 0, e.msg);
			_exit(125);
		}
		if (qsb_seccomp_build(&sc, !p->network) < 0)
			child_fail(rfd, "seccomp", errno);
		if (qsb_seccomp_install(&sc) < 0)
			child_fail(rfd, "cannot install the seccomp filter",
			    errno);
	}
	environ = p->envp;
	execvp(p->argv[0], p->argv);
	sig = errno;
	qsb_report(rfd, QSB_REP_EXEC, sig, 0, NULL);
	_exit(sig == ENOENT || sig == ENOTDIR ? 127 : 126);
}

/* Whether uid/gid can search directory st (mode bits only: the sandbox
 * user has no capabilities). */
static bool
searchable(const struct stat *st, uid_t uid, gid_t gid)
{
	if (st->st_uid == uid)
		return (st->st_mode & S_IXUSR) != 0;
	if (st->st_gid == gid)
		return (st->st_mode & S_IXGRP) != 0;
	return (st->st_mode & S_IXOTH) != 0;
}

int
qsb_root_view(const struct qsb_plan *p, char *msg, size_t msgsz)
{
	char src[64], path[PATH_MAX], top[PATH_MAX];
	const char *what = "unshare";
	struct mount_attr {
		uint64_t attr_set, attr_clr, propagation, userns_fd;
	} ma = { 0x1 /* MOUNT_ATTR_RDONLY */, 0, 0, 0 };
	size_t rl = strlen(p->state_root);
	struct stat st;
	char *s;
	int fd;

	/* the tmpfs goes on the highest directory of the path the sandbox
	 * user cannot search (all below it was out of reach anyway), and
	 * at the latest on the qsb root (hiding the other workspaces) */
	if (strlcpy(path, p->ws->root_path, sizeof(path)) >= sizeof(path) ||
	    strlcpy(top, p->state_root, sizeof(top)) >= sizeof(top))
		goto toolong;
	for (s = path + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if ((size_t)(s - path) > rl)
			break;
		if (stat(path, &st) == 0 && !searchable(&st, p->uid, p->gid)) {
			strlcpy(top, path, sizeof(top));
			break;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	if (unshare(CLONE_NEWNS) < 0)
		goto fail;
	what = "private mounts";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		goto fail;
	what = "open the workspace";
	if ((fd = open(p->ws->root_path, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		goto fail;
	what = "cover the path to the workspace";
	if (mount("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		goto fail;
	if (strlcpy(path, p->ws->root_path, sizeof(path)) >= sizeof(path))
		goto toolong;
	what = "create the workspace's path";
	for (s = path + strlen(top) + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			goto fail;
		*s = c;
		if (c == '\0')
			break;
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	what = "bind the workspace";
	if (mount(src, p->ws->root_path, NULL, MS_BIND, NULL) < 0)
		goto fail;
	close(fd);
	what = "restrict the path to the workspace";
	if (syscall(SYS_mount_setattr, AT_FDCWD, top, 0, &ma, sizeof(ma)) < 0)
		goto fail;
	return 0;
toolong:
	errno = ENAMETOOLONG;
fail:
	snprintf(msg, msgsz, "cannot %s: %s", what, strerror(errno));
	return -1;
}

/* --- launching ------------------------------------------------------------ */

int
qsb_launch_common(const struct qsb_plan *p, struct qsb_proc *pr,
    int *out, int *err, int *rep, int *sync, struct qsb_err *e)
{
	out[0] = out[1] = err[0] = err[1] = rep[0] = rep[1] = -1;
	sync[0] = sync[1] = -1;
	if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(sync, O_CLOEXEC) < 0 ||
	    (p->stdio != QSB_STDIO_INHERIT && pipe2(out, O_CLOEXEC) < 0) ||
	    (p->stdio == QSB_STDIO_PIPE && pipe2(err, O_CLOEXEC) < 0))
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "pipe");
	(void)pr;
	return 0;
}

void
qsb_launch_parent(struct qsb_proc *pr, pid_t pid, int *out, int *err,
    int *rep, int *sync)
{
	pr->pid = pid;
	pr->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (out[1] >= 0)
		close(out[1]);
	if (err[1] >= 0)
		close(err[1]);
	close(rep[1]);
	close(sync[0]);
	pr->outfd = out[0];
	pr->errfd = err[0];
	pr->reportfd = rep[0];
	pr->syncfd = sync[1];
}

int
qsb_launch_child(const struct qsb_plan *p, pid_t parent, int *out, int *err,
    int *rep, int *sync)
{
	ssize_t n;
	char c;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(125);
	close(rep[0]);
	close(sync[1]);
	if (out[0] >= 0)
		close(out[0]);
	if (err[0] >= 0)
		close(err[0]);
	while ((n = read(sync[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(125);	/* qsb-exec is gone */
	close(sync[0]);
	if (qsb_child_stdio(p, out[1], err[1]) < 0) {
		qsb_report(rep[1], QSB_REP_SETUP, errno, 0,
		    "cannot set up stdio");
		_exit(125);
	}
	return rep[1];
}

void
qsb_launch_undo(int *out, int *err, int *rep, int *sync)
{
	int *v[] = { out, err, rep, sync };
	size_t i;

	for (i = 0; i < 4; i++) {
		if (v[i][0] >= 0)
			close(v[i][0]);
		if (v[i][1] >= 0)
			close(v[i][1]);
	}
}

/* --- supervision ---------------------------------------------------------- */

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ino_t
qsb_pidns_of(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* Parent pid of pid from /proc/PID/stat (0 if gone). */
static pid_t
ppid_of(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd, pp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %*c %d", &pp) != 1)
		return 0;
	return pp;
}

/* The pid namespace of our child's child, when it has one of its own
 * (the sandbox's init under bwrap or X). */
static void
find_pidns(struct qsb_proc *pr)
{
	struct dirent *de;
	ino_t mine = qsb_pidns_of(getpid()), ns;
	pid_t pid;
	DIR *d;

	if (pr->pid <= 0 || (d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if ((pid = (pid_t)strtol(de->d_name, NULL, 10)) <= 0 ||
		    ppid_of(pid) != pr->pid)
			continue;
		if ((ns = qsb_pidns_of(pid)) != 0 && ns != mine) {
			pr->pidns = ns;
			pr->init = pid;
			break;
		}
	}
	closedir(d);
}

/* Signals every process of the tree: the whole pid namespace, or every
 * descendant of ours when we are the tree's subreaper.  Returns how many
 * were signalled. */
static int
tree_signal(struct qsb_proc *pr, int sig)
{
	struct dirent *de;
	pid_t self = getpid(), pid, a;
	int n = 0, hops;
	DIR *d;

	/* a sandbox whose namespace is not known yet (or that has none)
	 * is reached through our child; a namespace is signalled inside,
	 * so that its init can report how the command ended */
	if (pr->pidns == 0 && !pr->reaper)
		find_pidns(pr);
	if ((pr->pidns == 0 && !pr->reaper) || sig == SIGKILL)
		if (pr->pidfd >= 0 && syscall(SYS_pidfd_send_signal,
		    pr->pidfd, sig, NULL, 0) == 0 && pr->pidns == 0)
			n++;
	if ((d = opendir("/proc")) == NULL)
		return n;
	while ((de = readdir(d)) != NULL) {
		if ((pid = (pid_t)strtol(de->d_name, NULL, 10)) <= 0 ||
		    pid == self)
			continue;
		/* the namespace's init takes only SIGKILL from outside: it
		 * does not count as reached */
		if (sig != SIGKILL && pid == pr->init && pr->pidns != 0)
			continue;
		if (pr->pidns != 0) {
			if (qsb_pidns_of(pid) != pr->pidns)
				continue;
		} else if (pr->reaper) {
			for (a = pid, hops = 0; a > 1 && a != self &&
			    hops < 4096; hops++)
				a = ppid_of(a);
			if (a != self)
				continue;
		} else
			continue;
		if (kill(pid, sig) == 0)
			n++;
	}
	closedir(d);
	/* a namespace's init only takes SIGKILL from outside */
	if (sig == SIGKILL && pr->init > 0)
		(void)kill(pr->init, SIGKILL);
	return n;
}

static void
drain(int *fd, struct qsb_ring *ring, const struct qsb_plan *p)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = read(*fd, buf, sizeof(buf));
		if (n > 0) {
			if (p->on_output != NULL)
				p->on_output(buf, (size_t)n, p->on_output_arg);
			else
				qsb_ring_put(ring, buf, (size_t)n);
			if ((size_t)n < sizeof(buf))
				return;
			continue;
		}
		if (n < 0 && (errno == EINTR))
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(*fd);
		*fd = -1;
		return;
	}
}

struct reports {
	bool		 setup_failed;
	char		 setup_msg[240];
	int		 exec_errno;
	bool		 have_status;
	int		 exited, value;
};

static void
read_reports(struct qsb_proc *pr, struct reports *rp)
{
	struct qsb_report r;
	ssize_t n;

	for (;;) {
		n = read(pr->reportfd, &r, sizeof(r));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n != (ssize_t)sizeof(r)) {
			close(pr->reportfd);
			pr->reportfd = -1;
			return;
		}
		switch (r.type) {
		case QSB_REP_SETUP:
			if (!rp->setup_failed) {
				rp->setup_failed = true;
				r.msg[sizeof(r.msg) - 1] = '\0';
				strlcpy(rp->setup_msg, r.msg,
				    sizeof(rp->setup_msg));
			}
			break;
		case QSB_REP_EXEC:
			rp->exec_errno = r.a;
			break;
		case QSB_REP_STATUS:
			rp->have_status = true;
			rp->exited = r.a;
			rp->value = r.b;
			break;
		case QSB_REP_INIT:
			pr->init = r.a;
			pr->pidns = qsb_pidns_of(r.a);
			break;
		}
	}
}

static int
nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int
qsb_exec_run(struct qsb_plan *p, struct qsb_exec_result *res,
    struct qsb_err *e)
{
	const struct qsb_backend_ops *b = qsb_backend_get(p->backend);
	struct qsb_ring out, err;
	struct qsb_proc pr;
	struct reports rp;
	struct pollfd pfd[5];
	struct qsb_cg cg;
	struct signalfd_siginfo si;
	sigset_t mask, old;
	int64_t start, deadline = -1, killat = -1, closeat = -1, now;
	int64_t termagain = -1;
	int sigfd = -1, ws = 0, code = 0, sig = 0, n, i, rc = -1;
	bool exited = false, killed = false, told = false;
	char cgname[QSB_ID_MAX + 64];

	memset(res, 0, sizeof(*res));
	memset(&rp, 0, sizeof(rp));
	memset(&pr, 0, sizeof(pr));
	pr.pidfd = pr.outfd = pr.errfd = pr.reportfd = pr.syncfd = -1;
	start = mono_ms();
	qsb_ring_init(&out, p->output_limit);
	qsb_ring_init(&err, p->output_limit);
	res->degraded = p->degraded;
	strlcpy(res->reason, p->reason, sizeof(res->reason));

	/* limits through cgroups where we may, else RLIMIT_AS for memory */
	snprintf(cgname, sizeof(cgname), "qsb-%s-%d", p->ws->id, (int)getpid());
	qsb_cg_create(&cg, cgname, p->memory, p->cpus, 0);
	res->limit_memory = p->memory == 0 ? NULL :
	    cg.version[QSB_CG_MEMORY] ? qsb_cg_name(cg.version[QSB_CG_MEMORY]) :
	    "rlimit-as";
	res->limit_cpu = qsb_cg_name(cg.version[QSB_CG_CPU]);
	p->memory_cgroup = cg.version[QSB_CG_MEMORY] != 0;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	if ((sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "signalfd");
		goto out;
	}
	if (b->launch(p, &pr, e) < 0)
		goto out;
	/* the backend may have found less than it was probed for */
	res->degraded = p->degraded;
	strlcpy(res->reason, p->reason, sizeof(res->reason));
	if (cg.dir[0] || cg.dir[1] || cg.dir[2]) {
		if (qsb_cg_attach(&cg, pr.pid, e) < 0) {
			tree_signal(&pr, SIGKILL);
			goto reap;
		}
	}
	/* the child waits for this byte: its cgroups are in place */
	(void)!write(pr.syncfd, "g", 1);
	close(pr.syncfd);
	pr.syncfd = -1;
	if (pr.outfd >= 0)
		nonblock(pr.outfd);
	if (pr.errfd >= 0)
		nonblock(pr.errfd);
	nonblock(pr.reportfd);
	if (p->timeout_ms > 0)
		deadline = start + (int64_t)p->timeout_ms;

	while (!exited || pr.outfd >= 0 || pr.errfd >= 0 || pr.reportfd >= 0) {
		int timeout = -1;
		now = mono_ms();
		if (!exited && deadline >= 0 && now >= deadline && !killed) {
			res->timed_out = true;
			killed = true;
			termagain = tree_signal(&pr, SIGTERM) == 0 ?
			    now + 20 : -1;
			killat = now + QSB_KILL_GRACE_MS;
		}
		/* a SIGTERM that found nothing but the sandbox's init (the
		 * command not started yet) is sent again until it lands */
		if (termagain >= 0 && !exited && now >= termagain)
			termagain = tree_signal(&pr, SIGTERM) == 0 ? now + 20 :
			    -1;
		if (killat >= 0 && now >= killat) {
			tree_signal(&pr, SIGKILL);
			killat = now + 200;	/* and again, for stragglers */
		}
		if (exited && closeat >= 0 && now >= closeat)
			break;	/* something outside the tree holds a pipe */
		if (!exited && !killed && deadline >= 0)
			timeout = (int)(deadline - now);
		if (killat >= 0 && (timeout < 0 || killat - now < timeout))
			timeout = (int)(killat - now);
		if (termagain >= 0 && !exited && (timeout < 0 ||
		    termagain - now < timeout))
			timeout = (int)(termagain - now);
		if (closeat >= 0 && (timeout < 0 || closeat - now < timeout))
			timeout = (int)(closeat - now);
		if (timeout < 0 && timeout != -1)
			timeout = 0;
		n = 0;
		pfd[n++] = (struct pollfd){ sigfd, POLLIN, 0 };
		pfd[n++] = (struct pollfd){ exited ? -1 : pr.pidfd, POLLIN, 0 };
		pfd[n++] = (struct pollfd){ pr.outfd, POLLIN, 0 };
		pfd[n++] = (struct pollfd){ pr.errfd, POLLIN, 0 };
		pfd[n++] = (struct pollfd){ pr.reportfd, POLLIN, 0 };
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "poll");
			tree_signal(&pr, SIGKILL);
			goto reap;
		}
		if (pfd[0].revents & POLLIN) {
			while (read(sigfd, &si, sizeof(si)) == sizeof(si))
				res->interrupted = true;
			if (!killed && !exited) {
				killed = true;
				termagain = tree_signal(&pr, SIGTERM) == 0 ?
				    mono_ms() + 20 : -1;
				killat = mono_ms() + QSB_KILL_GRACE_MS;
			}
		}
		if (pr.outfd >= 0 && pfd[2].revents)
			drain(&pr.outfd, &out, p);
		if (pr.errfd >= 0 && pfd[3].revents)
			drain(&pr.errfd, &err, p);
		if (pr.reportfd >= 0 && pfd[4].revents) {
			read_reports(&pr, &rp);
			if (rp.have_status && !told && !rp.setup_failed &&
			    p->on_status != NULL) {
				told = true;
				p->on_status(p, res->timed_out ? 124 :
				    rp.exec_errno ? (rp.exec_errno == ENOENT ||
				    rp.exec_errno == ENOTDIR ? 127 : 126) :
				    rp.exited ? rp.value : 128 + rp.value,
				    p->on_status_arg);
			}
		}
		if (!exited && (pfd[1].revents & POLLIN)) {
			while (waitpid(pr.pid, &ws, 0) < 0 && errno == EINTR)
				;
			exited = true;
			res->duration_ms = mono_ms() - start;
			/* the tree goes with its command: a pid namespace
			 * died with its init (our child); descendants of a
			 * reaper we must find ourselves */
			if (pr.pidns == 0 || pr.init != pr.pid)
				tree_signal(&pr, SIGKILL);
			closeat = mono_ms() + QSB_KILL_GRACE_MS;
			killat = -1;
		}
	}
	if (pr.reportfd >= 0)
		read_reports(&pr, &rp);
	if (rp.setup_failed) {
		qsb_err_set(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "the %s sandbox could not be set up: %s", b->name,
		    rp.setup_msg);
		goto out;
	}
	if (rp.have_status) {
		code = rp.exited ? rp.value : 128 + rp.value;
		sig = rp.exited ? 0 : rp.value;
	} else if (pr.status(&pr, ws, &code, &sig) < 0) {
		/* what the sandbox tool said, if anything: its last line */
		bool t;
		size_t l = 0;
		char *said = qsb_ring_take(&err, &l, &t), *nl;
		while (said && l > 0 && said[l - 1] == '\n')
			said[--l] = '\0';
		nl = said ? strrchr(said, '\n') : NULL;
		qsb_err_set(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "the %s sandbox failed before running the command%s%.300s",
		    b->name, said && *said ? ": " : "", said == NULL ? "" :
		    nl ? nl + 1 : said);
		free(said);
		goto out;
	}
	if (rp.exec_errno != 0) {
		char msg[512];
		int m = snprintf(msg, sizeof(msg), "qsb-exec: %s: %s\n",
		    p->argv[0], rp.exec_errno == ENOENT ? "command not found" :
		    strerror(rp.exec_errno));
		if (p->on_output != NULL)
			p->on_output(msg, (size_t)m, p->on_output_arg);
		else
			qsb_ring_put(&err, msg, (size_t)m);
		code = rp.exec_errno == ENOENT || rp.exec_errno == ENOTDIR ?
		    127 : 126;
		sig = 0;
	}
	res->signal = sig;
	res->exit_code = res->timed_out ? 124 : code;
	if (!told && p->on_status != NULL)
		p->on_status(p, res->exit_code, p->on_status_arg);
	rc = 0;
	goto out;
reap:
	if (pr.pid > 0)
		while (waitpid(pr.pid, &ws, 0) < 0 && errno == EINTR)
			;
out:
	if (res->duration_ms == 0)
		res->duration_ms = mono_ms() - start;
	for (i = 0; i < 2; i++) {
		struct qsb_ring *rg = i ? &err : &out;
		bool t = false;
		size_t l = 0;
		char *s = qsb_ring_take(rg, &l, &t), *red;
		if (s && p->secret_values[0] != NULL &&
		    (red = qsb_redact(s, l, p->secret_values, t, &l)) != NULL) {
			free(s);
			s = red;
		}
		if (i) {
			res->err = s;
			res->errlen = l;
			res->err_truncated = t;
		} else {
			res->out = s;
			res->outlen = l;
			res->out_truncated = t;
		}
	}
	qsb_ring_free(&out);
	qsb_ring_free(&err);
	if (pr.syncfd >= 0)
		close(pr.syncfd);
	if (pr.outfd >= 0)
		close(pr.outfd);
	if (pr.errfd >= 0)
		close(pr.errfd);
	if (pr.reportfd >= 0)
		close(pr.reportfd);
	if (pr.pidfd >= 0)
		close(pr.pidfd);
	if (sigfd >= 0)
		close(sigfd);
	qsb_cg_destroy(&cg);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc < 0 && (res->out == NULL || res->err == NULL)) {
		qsb_exec_result_free(res);
	}
	return rc;
}

void
qsb_exec_result_free(struct qsb_exec_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

char *
qsb_redact(const char *buf, size_t len, char *const *secrets, bool cut_front,
    size_t *outlen)
{
	static const char mark[] = "[REDACTED]";
	struct { char *p; size_t len, cap; } o = { NULL, 0, 0 };
	size_t i = 0, k, sl, best;
	char *np;

	o.cap = len + 64;
	if ((o.p = malloc(o.cap)) == NULL)
		return NULL;
	if (cut_front) {
		/* the kept output may begin with the tail of a secret */
		for (k = 0; secrets[k]; k++) {
			sl = strlen(secrets[k]);
			for (best = sl > 1 ? sl - 1 : 0; best >= 3; best--)
				if (best <= len && memcmp(buf,
				    secrets[k] + sl - best, best) == 0)
					break;
			if (best >= 3 && best > i)
				i = best;
		}
		if (i > 0) {
			memcpy(o.p, mark, sizeof(mark) - 1);
			o.len = sizeof(mark) - 1;
		}
	}
	while (i < len) {
		for (k = 0; secrets[k]; k++) {
			sl = strlen(secrets[k]);
			if (sl > 0 && sl <= len - i &&
			    memcmp(buf + i, secrets[k], sl) == 0)
				break;
		}
		if (o.len + sizeof(mark) + 1 > o.cap) {
			o.cap = o.cap * 2 + sizeof(mark);
			if ((np = realloc(o.p, o.cap)) == NULL) {
				free(o.p);
				return NULL;
			}
			o.p = np;
		}
		if (secrets[k] != NULL) {
			memcpy(o.p + o.len, mark, sizeof(mark) - 1);
			o.len += sizeof(mark) - 1;
			i += strlen(secrets[k]);
		} else
			o.p[o.len++] = buf[i++];
	}
	o.p[o.len] = '\0';
	*outlen = o.len;
	return o.p;
}

char *
qsb_cmdline(char *const *argv)
{
	struct { char *p; size_t len, cap; } o = { NULL, 0, 0 };
	size_t i, j, need;
	char *np;

	for (i = 0; argv[i]; i++) {
		const char *a = argv[i];
		bool plain = *a != '\0';
		for (j = 0; a[j]; j++)
			if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%",
			    a[j]))
				plain = false;
		need = strlen(a) * 4 + 4;
		if (o.len + need + 1 > o.cap) {
			o.cap = (o.len + need + 1) * 2;
			if ((np = realloc(o.p, o.cap)) == NULL) {
				free(o.p);
				return NULL;
			}
			o.p = np;
		}
		if (i > 0)
			o.p[o.len++] = ' ';
		if (plain) {
			memcpy(o.p + o.len, a, strlen(a));
			o.len += strlen(a);
			continue;
		}
		o.p[o.len++] = '\'';
		for (j = 0; a[j]; j++) {
			if (a[j] == '\'') {
				memcpy(o.p + o.len, "'\\''", 4);
				o.len += 4;
			} else
				o.p[o.len++] = a[j];
		}
		o.p[o.len++] = '\'';
	}
	if (o.p == NULL && (o.p = malloc(1)) == NULL)
		return NULL;
	o.p[o.len] = '\0';
	return o.p;
}

void
qsb_exec_result_write(struct qsb_jw *w, const struct qsb_plan *p,
    const struct qsb_exec_result *r, bool with_output)
{
	qsb_jw_obj(w);
	if (with_output) {
		qsb_jw_key(w, "stdout");
		qsb_jw_strn(w, r->out ? r->out : "", r->outlen);
		qsb_jw_key(w, "stderr");
		qsb_jw_strn(w, r->err ? r->err : "", r->errlen);
	}
	qsb_jw_key(w, "exitCode");
	qsb_jw_int(w, r->exit_code);
	qsb_jw_key(w, "timedOut");
	qsb_jw_bool(w, r->timed_out);
	qsb_jw_key(w, "duration");
	qsb_jw_int(w, r->duration_ms);
	qsb_jw_key(w, "signal");
	if (r->signal)
		qsb_jw_str(w, qsb_signame(r->signal));
	else
		qsb_jw_null(w);
	qsb_jw_key(w, "truncated");
	qsb_jw_bool(w, r->out_truncated || r->err_truncated);
	qsb_jw_key(w, "backend");
	qsb_jw_str(w, qsb_backend_names[p->backend]);
	qsb_jw_key(w, "mode");
	qsb_jw_str(w, qsb_mode_names[p->mode]);
	qsb_jw_key(w, "sessionId");
	qsb_jw_str(w, p->ws->id);
	qsb_jw_key(w, "stdoutTruncated");
	qsb_jw_bool(w, r->out_truncated);
	qsb_jw_key(w, "stderrTruncated");
	qsb_jw_bool(w, r->err_truncated);
	qsb_jw_key(w, "network");
	qsb_jw_bool(w, p->network);
	qsb_jw_key(w, "permissionLevel");
	qsb_jw_int(w, p->level);
	qsb_jw_key(w, "permissionLevelClamped");
	qsb_jw_bool(w, p->clamped);
	qsb_jw_key(w, "insecure");
	qsb_jw_bool(w, p->backend == QSB_BK_NONE);
	qsb_jw_key(w, "degraded");
	qsb_jw_bool(w, r->degraded);
	if (r->degraded) {
		qsb_jw_key(w, "reason");
		qsb_jw_str(w, r->reason);
	}
	qsb_jw_key(w, "interrupted");
	qsb_jw_bool(w, r->interrupted);
	qsb_jw_key(w, "limits");
	qsb_jw_obj(w);
	qsb_jw_key(w, "memory");
	qsb_jw_str(w, r->limit_memory);
	qsb_jw_key(w, "cpu");
	qsb_jw_str(w, r->limit_cpu);
	qsb_jw_key(w, "fileSize");
	if (p->fsize > 0)
		qsb_jw_uint(w, p->fsize);
	else
		qsb_jw_null(w);
	qsb_jw_obj_end(w);
	qsb_jw_key(w, "cwd");
	qsb_jw_str(w, p->cwd);
	qsb_jw_obj_end(w);
}
