/*
 * The bwrap backend: the same modes through bubblewrap.
 *
 * bwrap runs as the sandbox user (when qsb runs as root it drops to that
 * user first, so that bubblewrap makes an unprivileged user namespace and
 * the caller's root never reaches the command).  The workspace and the
 * protected paths are passed as descriptors opened here (--bind-fd,
 * --ro-bind-fd), because the sandbox user may not be able to walk the path
 * to the qsb root.  Our seccomp program is passed with --seccomp.
 *
 * The command runs under `sh -c`, which first writes a byte to fd 3: a
 * bwrap that exits without that byte failed to build the sandbox (exit 125
 * with bwrap's message), and sh gives the 126/127 of a command that cannot
 * be run.  bubblewrap reports a command killed by signal N as status
 * 128+N, so a command that exits with such a status itself is reported as
 * killed by that signal.
 */
#include <sys/mman.h>
#include <linux/close_range.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "seccomp.h"
#include "workspace.h"

static const char *
bwrap_path(void)
{
	static const char *const cands[] = { "/usr/bin/bwrap",
	    "/usr/local/bin/bwrap", "/bin/bwrap", NULL };
	const char *env = getenv("QSB_BWRAP");
	size_t i;

	if (env != NULL && *env == '/')
		return access(env, X_OK) == 0 ? env : NULL;
	for (i = 0; cands[i]; i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return NULL;
}

static int
bwrap_probe(const struct qsb_plan *p, bool *degraded, char *why,
    size_t whysz)
{
	char uwhy[256];

	(void)p;
	*degraded = false;
	if (bwrap_path() == NULL) {
		snprintf(why, whysz, "bubblewrap (bwrap) is not installed");
		return 0;
	}
	if (!qsb_seccomp_available()) {
		snprintf(why, whysz, "seccomp is unavailable");
		return 0;
	}
	/* bwrap (not setuid on Debian) needs user namespaces; as root we
	 * run it as the sandbox user, who needs them too */
	if (!qsb_userns_works(uwhy, sizeof(uwhy))) {
		snprintf(why, whysz, "bubblewrap needs %s", uwhy);
		return 0;
	}
	return 1;
}

struct argv {
	char	**v;
	size_t	  n, cap;
	int	  nomem;
};

static void
arg(struct argv *a, const char *s)
{
	char **nv;

	if (a->n + 2 > a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 128;
		if ((nv = reallocarray(a->v, ncap, sizeof(*nv))) == NULL) {
			a->nomem = 1;
			return;
		}
		a->v = nv;
		a->cap = ncap;
	}
	if ((a->v[a->n] = strdup(s)) == NULL)
		a->nomem = 1;
	else
		a->n++;
	a->v[a->n] = NULL;
}

static void
argf(struct argv *a, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void
argf(struct argv *a, const char *f, ...)
{
	char buf[PATH_MAX + 64];
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	arg(a, buf);
}

/* The child: builds bwrap's arguments and runs it.  Never returns. */
static __attribute__((noreturn)) void
bwrap_child(const struct qsb_plan *p, int rfd, int markw)
{
	static const char *const strict_dirs[] = { "/usr", "/bin", "/sbin",
	    "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", NULL };
	struct qsb_seccomp sc;
	struct argv a = { NULL, 0, 0, 0 };
	char target[PATH_MAX], msg[240];
	const char *bw = bwrap_path();
	struct stat st;
	int scfd, memfd, fd;
	ssize_t n;
	size_t i;

	/* out of the way of 3 and 4, where bwrap's descriptors go */
	if ((fd = fcntl(rfd, F_DUPFD_CLOEXEC, 10)) < 0 ||
	    (markw = fcntl(markw, F_DUPFD_CLOEXEC, 10)) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0, "descriptors");
		_exit(125);
	}
	rfd = fd;
	if (bw == NULL) {
		qsb_report(rfd, QSB_REP_SETUP, ENOENT, 0, "bwrap is gone");
		_exit(125);
	}
	if (p->as_root && qsb_root_view(p, msg, sizeof(msg)) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0, msg);
		_exit(125);
	}
	/* the seccomp program, in a memfd bwrap reads */
	if (qsb_seccomp_build(&sc, !p->network) < 0 ||
	    (memfd = memfd_create("qsb-seccomp", 0)) < 0 ||
	    write(memfd, sc.insns, sc.n * sizeof(sc.insns[0])) !=
	    (ssize_t)(sc.n * sizeof(sc.insns[0])) ||
	    lseek(memfd, 0, SEEK_SET) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0,
		    "cannot prepare the seccomp program");
		_exit(125);
	}
	if ((scfd = fcntl(memfd, F_DUPFD_CLOEXEC, 10)) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0, "descriptors");
		_exit(125);
	}
	close(memfd);
	if (p->as_root) {
		/* bubblewrap runs as the sandbox user: its user namespace
		 * then maps only that user, and what that user cannot reach
		 * needs no hiding */
		if (setgroups(0, NULL) < 0 ||
		    setresgid(p->gid, p->gid, p->gid) < 0 ||
		    setresuid(p->uid, p->uid, p->uid) < 0 || getuid() == 0) {
			qsb_report(rfd, QSB_REP_SETUP, errno, 0,
			    "cannot become the sandbox user");
			_exit(125);
		}
	}

	arg(&a, bw);
	arg(&a, "--unshare-all");
	if (p->network)
		arg(&a, "--share-net");
	if (p->network)
		arg(&a, "--share-net");
	arg(&a, "--die-with-parent");
	arg(&a, "--new-session");
	arg(&a, "--cap-drop");
	arg(&a, "ALL");
	arg(&a, "--hostname");
	arg(&a, "qsb");
	arg(&a, "--clearenv");
	for (i = 0; p->envp[i]; i++) {
		const char *eq = strchr(p->envp[i], '=');
		char name[256];
		if (eq == NULL || (size_t)(eq - p->envp[i]) >= sizeof(name))
			continue;
		memcpy(name, p->envp[i], (size_t)(eq - p->envp[i]));
		name[eq - p->envp[i]] = '\0';
		arg(&a, "--setenv");
		arg(&a, name);
		arg(&a, eq + 1);
	}
	if (p->mode == QSB_MODE_STRICT) {
		for (i = 0; strict_dirs[i]; i++) {
			if (lstat(strict_dirs[i], &st) < 0)
				continue;
			if (S_ISLNK(st.st_mode)) {
				n = readlink(strict_dirs[i], target,
				    sizeof(target) - 1);
				if (n < 0)
					continue;
				target[n] = '\0';
				arg(&a, "--symlink");
				arg(&a, target);
				arg(&a, strict_dirs[i]);
			} else if (S_ISDIR(st.st_mode)) {
				arg(&a, "--ro-bind");
				arg(&a, strict_dirs[i]);
				arg(&a, strict_dirs[i]);
			}
		}
		if (p->network) {
			arg(&a, "--ro-bind-try");
			arg(&a, "/run/systemd/resolve");
			arg(&a, "/run/systemd/resolve");
		}
	} else {
		arg(&a, "--ro-bind");
		arg(&a, "/");
		arg(&a, "/");
		arg(&a, "--tmpfs");
		arg(&a, "/run");
		if (p->network) {
			arg(&a, "--ro-bind-try");
			arg(&a, "/run/systemd/resolve");
			arg(&a, "/run/systemd/resolve");
		}
		arg(&a, "--remount-ro");
		arg(&a, "/run");
		for (i = 0; p->hidden[i]; i++) {
			if (lstat(p->hidden[i], &st) < 0 ||
			    S_ISLNK(st.st_mode))
				continue;
			if (S_ISDIR(st.st_mode)) {
				arg(&a, "--perms");
				arg(&a, "0000");
				arg(&a, "--tmpfs");
				arg(&a, p->hidden[i]);
				arg(&a, "--remount-ro");
				arg(&a, p->hidden[i]);
			} else {
				arg(&a, "--ro-bind");
				arg(&a, "/dev/null");
				arg(&a, p->hidden[i]);
			}
		}
	}
	arg(&a, "--proc");
	arg(&a, "/proc");
	arg(&a, "--dev");
	arg(&a, "/dev");
	arg(&a, "--tmpfs");
	arg(&a, "/tmp");
	/* the qsb root: hidden, but for this workspace (as root, the view
	 * prepared above already shows nothing else) */
	if (!p->as_root && p->mode != QSB_MODE_STRICT) {
		arg(&a, "--tmpfs");
		arg(&a, p->state_root);
	}
	arg(&a, p->writable ? "--bind" : "--ro-bind");
	arg(&a, p->ws->root_path);
	arg(&a, p->ws->root_path);
	for (i = 0; p->protected[i]; i++) {
		argf(&a, "%s/%s", p->ws->root_path, p->protected[i]);
		if (a.nomem || lstat(a.v[a.n - 1], &st) < 0 ||
		    S_ISLNK(st.st_mode)) {
			free(a.v[--a.n]);
			a.v[a.n] = NULL;
			continue;
		}
		free(a.v[--a.n]);
		a.v[a.n] = NULL;
		arg(&a, "--ro-bind");
		argf(&a, "%s/%s", p->ws->root_path, p->protected[i]);
		argf(&a, "%s/%s", p->ws->root_path, p->protected[i]);
	}
	if (!p->as_root && p->mode != QSB_MODE_STRICT) {
		arg(&a, "--remount-ro");
		arg(&a, p->state_root);
	}
	arg(&a, "--chdir");
	arg(&a, p->cwd);
	arg(&a, "--seccomp");
	arg(&a, "4");	/* scfd, moved there below */
	arg(&a, "--");
	arg(&a, "/bin/sh");
	arg(&a, "-c");
	arg(&a, "printf x >&3 && exec 3>&- && exec \"$0\" \"$@\"");
	for (i = 0; p->argv[i]; i++)
		arg(&a, p->argv[i]);
	if (a.nomem) {
		qsb_report(rfd, QSB_REP_SETUP, ENOMEM, 0, "out of memory");
		_exit(125);
	}
	/* descriptors bwrap uses stay open across its exec */
	/* bubblewrap passes on whatever it inherits: every descriptor but
	 * stdio, the marker (3) and the seccomp program is closed on exec,
	 * so none of ours (a directory of the qsb root, say) gets in */
	if (dup2(markw, 3) < 0 || dup2(scfd, 4) < 0 ||
	    syscall(SYS_close_range, 5, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0, "descriptors");
		_exit(125);
	}
	execv(bw, a.v);
	snprintf(msg, sizeof(msg), "cannot run %s: %s", bw, strerror(errno));
	qsb_report(rfd, QSB_REP_SETUP, errno, 0, msg);
	_exit(125);
}

struct bwrap_priv {
	int	markfd;
};

static int
bwrap_status(struct qsb_proc *pr, int ws, int *code, int *sig)
{
	struct bwrap_priv *bp = pr->priv;
	char c = 0;
	ssize_t n;

	n = read(bp->markfd, &c, 1);
	close(bp->markfd);
	free(bp);
	pr->priv = NULL;
	if (WIFSIGNALED(ws)) {
		*code = 128 + WTERMSIG(ws);
		*sig = WTERMSIG(ws);
		return 0;
	}
	if (n != 1 || c != 'x')
		return -1;	/* the sandbox never started the command */
	*code = WEXITSTATUS(ws);
	*sig = *code > 128 && *code < 128 + NSIG ? *code - 128 : 0;
	return 0;
}

static int
bwrap_launch(struct qsb_plan *p, struct qsb_proc *pr, struct qsb_err *e)
{
	int out[2], err[2], rep[2], sync[2], mark[2] = { -1, -1 };
	struct bwrap_priv *bp;
	pid_t self = getpid(), pid;

	if (qsb_launch_common(p, pr, out, err, rep, sync, e) < 0 ||
	    pipe2(mark, O_CLOEXEC) < 0 ||
	    (bp = malloc(sizeof(*bp))) == NULL) {
		if (mark[0] >= 0) {
			close(mark[0]);
			close(mark[1]);
		}
		qsb_launch_undo(out, err, rep, sync);
		return e->code ? -1 : qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "pipe");
	}
	if ((pid = fork()) < 0) {
		free(bp);
		close(mark[0]);
		close(mark[1]);
		qsb_launch_undo(out, err, rep, sync);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "fork");
	}
	if (pid == 0) {
		int rfd = qsb_launch_child(p, self, out, err, rep, sync);
		close(mark[0]);
		qsb_child_signals();
		if (chdir("/") < 0) {
			qsb_report(rfd, QSB_REP_SETUP, errno, 0, "chdir");
			_exit(125);
		}
		bwrap_child(p, rfd, mark[1]);
	}
	close(mark[1]);
	fcntl(mark[0], F_SETFL, O_NONBLOCK);
	bp->markfd = mark[0];
	qsb_launch_parent(pr, pid, out, err, rep, sync);
	pr->priv = bp;
	pr->status = bwrap_status;
	return 0;
}

const struct qsb_backend_ops qsb_backend_bwrap = {
	"bwrap", bwrap_probe, bwrap_launch
};
