/*
 * The native backend: qsb's own sandbox, needing nothing installed.
 *
 *   qsb-exec ── X: [user ns: the caller's uid mapped to itself], then
 *                  unshare(mount, pid, ipc, uts, and net when network is off)
 *               └─ C: pid 1 of the new pid namespace; builds the root
 *                     (tmpfs base, the mode's read-only binds, fresh /proc,
 *                     /dev, /tmp, the workspace, protected paths read-only),
 *                     pivots into it
 *                   └─ G: the command (exec.c: qsb_exec_child)
 *
 * C reports G's status and then kills whatever is left in the namespace;
 * X and C die with their parent (PR_SET_PDEATHSIG), and the namespace with
 * C.  Where no user namespace can be made and we are not root, X itself
 * becomes the command, confined by Landlock and seccomp alone (degraded).
 * Invariant: any failure before the command's execve ends the run with a
 * SETUP report; nothing runs with less confinement than planned.
 */
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/mount.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "landlock.h"
#include "path.h"
#include "root.h"
#include "seccomp.h"
#include "workspace.h"

#ifndef AT_RECURSIVE
#define AT_RECURSIVE	0x8000
#endif

struct native_priv {
	bool	degraded;
};

/*
 * Landlock and seccomp are needed in every case (with namespaces, and in
 * the degraded mode without them).  Whether a user namespace can be made
 * is found out by making it: native_launch falls back to the degraded mode
 * when the clone is refused, so no probe child runs per command.
 */
static int
native_probe(const struct qsb_plan *p, bool *degraded, char *why,
    size_t whysz)
{
	const char *lwhy = NULL;

	(void)p;
	*degraded = false;
	if (qsb_ll_abi(&lwhy) == 0) {
		snprintf(why, whysz, "%s", lwhy);
		return 0;
	}
	if (!qsb_seccomp_available()) {
		snprintf(why, whysz, "seccomp is unavailable");
		return 0;
	}
	return 1;
}

/* --- building the root (in C, pid 1 of the new namespaces) ---------------- */

struct fail {
	char	msg[240];
};

static int
setfail(struct fail *f, const char *what, const char *path)
{
	int saved = errno;

	/* a long path is cut short in the message, which is fine */
	if (snprintf(f->msg, sizeof(f->msg), "%s '%s': %s", what, path,
	    strerror(saved)) >= (int)sizeof(f->msg))
		f->msg[sizeof(f->msg) - 1] = '\0';
	errno = saved;
	return -1;
}

static int
writefile(const char *path, const char *s)
{
	int fd, rc;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	rc = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	if (close(fd) < 0)
		rc = -1;
	return rc;
}

static int
setattr(const char *path, bool recursive, uint64_t set)
{
	struct mount_attr a;

	memset(&a, 0, sizeof(a));
	a.attr_set = set;
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path,
	    recursive ? AT_RECURSIVE : 0, &a, sizeof(a));
}

/* Binds src (a path or, when srcfd >= 0, that descriptor) on dst with
 * attributes attr (MOUNT_ATTR_*), recursively when rec. */
static int
bind(const char *src, int srcfd, const char *dst, bool rec, uint64_t attr,
    struct fail *f)
{
	char fdpath[64];

	if (srcfd >= 0) {
		snprintf(fdpath, sizeof(fdpath), "/oldroot/proc/self/fd/%d",
		    srcfd);
		src = fdpath;
	}
	if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) < 0)
		return setfail(f, "cannot bind", dst);
	if (attr != 0 && setattr(dst, rec, attr) < 0)
		return setfail(f, "cannot restrict", dst);
	return 0;
}

static int
tmpfs(const char *dst, const char *opts, struct fail *f)
{
	if (mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return setfail(f, "cannot mount a tmpfs on", dst);
	return 0;
}

static char *
under(char *buf, size_t sz, const char *prefix, const char *path)
{
	if ((size_t)snprintf(buf, sz, "%s%s", prefix, path) >= sz)
		return NULL;
	return buf;
}

static int
make_dev(struct fail *f)
{
	static const char *const nodes[] = { "null", "zero", "full",
	    "random", "urandom", "tty", NULL };
	static const char *const links[][2] = {
		{ "/proc/self/fd", "/newroot/dev/fd" },
		{ "/proc/self/fd/0", "/newroot/dev/stdin" },
		{ "/proc/self/fd/1", "/newroot/dev/stdout" },
		{ "/proc/self/fd/2", "/newroot/dev/stderr" },
		{ "pts/ptmx", "/newroot/dev/ptmx" },
	};
	char src[64], dst[64];
	size_t i;
	int fd;

	if (qsb_mkdir_p("/newroot/dev", 0755) < 0)
		return setfail(f, "cannot create", "/dev");
	if (tmpfs("/newroot/dev", "mode=0755", f) < 0)
		return -1;
	for (i = 0; nodes[i]; i++) {
		snprintf(src, sizeof(src), "/oldroot/dev/%s", nodes[i]);
		snprintf(dst, sizeof(dst), "/newroot/dev/%s", nodes[i]);
		if ((fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0666)) < 0)
			return setfail(f, "cannot create", dst);
		close(fd);
		if (bind(src, -1, dst, false, MOUNT_ATTR_NOSUID |
		    MOUNT_ATTR_NOEXEC, f) < 0)
			return -1;
	}
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][0], links[i][1]) < 0)
			return setfail(f, "cannot create", links[i][1]);
	if (mkdir("/newroot/dev/pts", 0755) < 0 ||
	    mkdir("/newroot/dev/shm", 01777) < 0)
		return setfail(f, "cannot create", "/dev/pts");
	if (mount("devpts", "/newroot/dev/pts", "devpts", MS_NOSUID |
	    MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620") < 0)
		return setfail(f, "cannot mount", "/dev/pts");
	if (tmpfs("/newroot/dev/shm", "mode=1777", f) < 0)
		return -1;
	return setattr("/newroot/dev", false, MOUNT_ATTR_RDONLY) < 0 ?
	    setfail(f, "cannot restrict", "/dev") : 0;
}

/* strict: the system's read-only directories; merged-/usr symlinks are
 * recreated as symlinks */
static int
strict_base(const struct qsb_plan *p, struct fail *f)
{
	static const char *const dirs[] = { "/usr", "/bin", "/sbin", "/lib",
	    "/lib32", "/lib64", "/libx32", "/etc", "/opt", NULL };
	char src[PATH_MAX], dst[PATH_MAX], target[PATH_MAX];
	struct stat st;
	ssize_t n;
	size_t i;

	for (i = 0; dirs[i]; i++) {
		snprintf(src, sizeof(src), "/oldroot%s", dirs[i]);
		snprintf(dst, sizeof(dst), "/newroot%s", dirs[i]);
		if (lstat(src, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			if ((n = readlink(src, target, sizeof(target) - 1)) < 0)
				return setfail(f, "cannot read", src);
			target[n] = '\0';
			if (symlink(target, dst) < 0)
				return setfail(f, "cannot create", dst);
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		if (mkdir(dst, 0755) < 0 || bind(src, -1, dst, true,
		    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
		    f) < 0)
			return f->msg[0] ? -1 : setfail(f, "cannot create", dst);
	}
	/* a resolv.conf that points into /run needs its target */
	if (p->network && lstat("/oldroot/run/systemd/resolve", &st) == 0 &&
	    (qsb_mkdir_p("/newroot/run/systemd/resolve", 0755) < 0 ||
	    bind("/oldroot/run/systemd/resolve", -1,
	    "/newroot/run/systemd/resolve", true, MOUNT_ATTR_RDONLY |
	    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, f) < 0))
		return f->msg[0] ? -1 : setfail(f, "cannot create", "/run");
	return 0;
}

/* compat: the whole file system read-only, with /run (sockets of host
 * services) and the credential stores hidden */
static int
compat_base(const struct qsb_plan *p, struct fail *f)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct stat st;
	size_t i;

	if (bind("/oldroot", -1, "/newroot", true, MOUNT_ATTR_RDONLY |
	    MOUNT_ATTR_NOSUID, f) < 0)
		return -1;
	if (lstat("/newroot/run", &st) == 0 && S_ISDIR(st.st_mode)) {
		if (tmpfs("/newroot/run", "mode=0755", f) < 0)
			return -1;
		if (p->network && lstat("/oldroot/run/systemd/resolve",
		    &st) == 0 && (qsb_mkdir_p("/newroot/run/systemd/resolve",
		    0755) < 0 || bind("/oldroot/run/systemd/resolve", -1,
		    "/newroot/run/systemd/resolve", true, MOUNT_ATTR_RDONLY |
		    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, f) < 0))
			return f->msg[0] ? -1 : setfail(f, "cannot create",
			    "/run/systemd/resolve");
		if (setattr("/newroot/run", false, MOUNT_ATTR_RDONLY) < 0)
			return setfail(f, "cannot restrict", "/run");
	}
	for (i = 0; p->hidden[i]; i++) {
		if (!under(src, sizeof(src), "/oldroot", p->hidden[i]) ||
		    !under(dst, sizeof(dst), "/newroot", p->hidden[i]))
			continue;
		if (lstat(src, &st) < 0 || S_ISLNK(st.st_mode))
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (tmpfs(dst, "mode=0000,size=4k,nr_inodes=1", f) < 0 ||
			    setattr(dst, false, MOUNT_ATTR_RDONLY) < 0)
				return f->msg[0] ? -1 :
				    setfail(f, "cannot hide", dst);
		} else if (bind("/oldroot/dev/null", -1, dst, false,
		    MOUNT_ATTR_RDONLY, f) < 0)
			return -1;
	}
	return 0;
}

static int
build_root(const struct qsb_plan *p, struct fail *f)
{
	char dst[PATH_MAX], rootdir[PATH_MAX], proc[PATH_MAX];
	const char *rootpath = p->ws->root_path;
	struct stat st;
	bool hidden = false;
	size_t i;
	int fd, wsfd;

	f->msg[0] = '\0';
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return setfail(f, "cannot make mounts private", "/");
	/* a tmpfs base, the host's root kept at /oldroot while building */
	if (tmpfs("/tmp", "mode=0755", f) < 0)
		return -1;
	if (chdir("/tmp") < 0 || mkdir("newroot", 0755) < 0 ||
	    mkdir("oldroot", 0755) < 0)
		return setfail(f, "cannot prepare", "/tmp");
	if (mount("newroot", "newroot", NULL, MS_BIND | MS_REC, NULL) < 0)
		return setfail(f, "cannot bind", "newroot");
	if (syscall(SYS_pivot_root, "/tmp", "/tmp/oldroot") < 0)
		return setfail(f, "cannot pivot", "/tmp");
	if (chdir("/") < 0)
		return setfail(f, "cannot enter", "/");
	/* the workspace, in this mount namespace (a descriptor from before
	 * unshare would belong to the host's and could not be bound); the
	 * qsb root is canonical and only its owner can change it */
	if (!under(proc, sizeof(proc), "/oldroot", rootpath))
		return errno = ENAMETOOLONG, setfail(f, "path", rootpath);
	if ((wsfd = open(proc, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return setfail(f, "cannot open", rootpath);

	if ((p->mode == QSB_MODE_STRICT ? strict_base(p, f) :
	    compat_base(p, f)) < 0)
		return -1;
	if (qsb_mkdir_p("/newroot/proc", 0755) < 0)
		return setfail(f, "cannot create", "/proc");
	if (mount("proc", "/newroot/proc", "proc", MS_NOSUID | MS_NODEV |
	    MS_NOEXEC, NULL) < 0)
		return setfail(f, "cannot mount", "/proc");
	if (make_dev(f) < 0)
		return -1;
	if (qsb_mkdir_p("/newroot/tmp", 01777) < 0)
		return setfail(f, "cannot create", "/tmp");
	if (tmpfs("/newroot/tmp", "mode=1777", f) < 0)
		return -1;

	/* the qsb root: never visible, but for this workspace's files */
	if (!under(rootdir, sizeof(rootdir), "/newroot", p->state_root) ||
	    !under(dst, sizeof(dst), "/newroot", rootpath))
		return errno = ENAMETOOLONG, setfail(f, "path", rootpath);
	if (lstat(rootdir, &st) == 0) {
		if (tmpfs(rootdir, "mode=0755", f) < 0)
			return -1;
		hidden = true;
	} else if (qsb_mkdir_p(rootdir, 0755) < 0)
		return setfail(f, "cannot place the workspace at", rootdir);
	if (qsb_mkdir_p(dst, 0755) < 0)
		return setfail(f, "cannot create", dst);
	if (bind(NULL, wsfd, dst, false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
	    (p->writable ? 0 : MOUNT_ATTR_RDONLY), f) < 0)
		return -1;
	/* protected paths: read-only binds onto themselves, reached
	 * beneath the workspace without following links */
	for (i = 0; p->protected[i]; i++) {
		fd = qsb_path_open(wsfd, p->protected[i], O_PATH | O_NOFOLLOW,
		    0, p->protected[i], NULL);
		if (fd < 0)
			continue;	/* gone since the search */
		if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) {
			close(fd);
			continue;
		}
		snprintf(proc, sizeof(proc), "/oldroot/proc/self/fd/%d", fd);
		if (!under(dst, sizeof(dst), "/newroot", rootpath) ||
		    strlcat(dst, "/", sizeof(dst)) >= sizeof(dst) ||
		    strlcat(dst, p->protected[i], sizeof(dst)) >= sizeof(dst)) {
			close(fd);
			continue;
		}
		if (bind(proc, -1, dst, false, MOUNT_ATTR_RDONLY |
		    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, f) < 0) {
			close(fd);
			return -1;
		}
		close(fd);
	}
	if (hidden && setattr(rootdir, false, MOUNT_ATTR_RDONLY) < 0)
		return setfail(f, "cannot restrict", rootdir);
	if (p->mode == QSB_MODE_STRICT && setattr("/newroot", false,
	    MOUNT_ATTR_RDONLY) < 0)
		return setfail(f, "cannot restrict", "/");

	close(wsfd);
	/* leave the host's root behind */
	if (umount2("/oldroot", MNT_DETACH) < 0)
		return setfail(f, "cannot detach", "/oldroot");
	if (chdir("/newroot") < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return setfail(f, "cannot pivot into", "the new root");
	return 0;
}

/* --- the processes ---------------------------------------------------------- */

/* C: pid 1 of the new namespaces, made by clone() in qsb-exec.  It waits
 * for the go byte (maps written, cgroups joined); EOF instead means
 * qsb-exec is gone, and with it the reason to run. */
struct init_args {
	const struct qsb_plan	*p;
	int			 rfd, syncfd, outw, errw;
	int			 close_fds[4];
};

static __attribute__((noreturn)) void
init_main(void *arg)
{
	struct init_args *ia = arg;
	const struct qsb_plan *p = ia->p;
	int rfd = ia->rfd, st, i;
	struct fail f;
	pid_t g, w;
	char c;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	for (i = 0; i < 4; i++)
		if (ia->close_fds[i] >= 0)
			close(ia->close_fds[i]);
	while ((st = (int)read(ia->syncfd, &c, 1)) < 0 && errno == EINTR)
		;
	if (st != 1)
		_exit(125);
	close(ia->syncfd);
	if (qsb_child_stdio(p, ia->outw, ia->errw) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0, "cannot set up stdio");
		_exit(125);
	}
	if (sethostname("qsb", 3) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0, "sethostname");
		_exit(125);
	}
	if (build_root(p, &f) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0, f.msg);
		_exit(125);
	}
	if ((g = fork()) < 0) {
		qsb_report(rfd, QSB_REP_SETUP, errno, 0, "fork");
		_exit(125);
	}
	if (g == 0)
		qsb_exec_child(p, rfd, QSB_CHILD_NAMESPACED);
	/* the command's stdio belongs to the command */
	if ((st = open("/dev/null", O_RDWR)) >= 0) {
		dup2(st, 0);
		dup2(st, 1);
		dup2(st, 2);
		if (st > 2)
			close(st);
	}
	for (;;) {
		w = waitpid(-1, &st, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			_exit(0);
		if (w != g)
			continue;	/* an orphan, reaped */
		qsb_report(rfd, QSB_REP_STATUS, WIFEXITED(st),
		    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), NULL);
		/* the namespace ends with its command */
		kill(-1, SIGKILL);
		while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
			;
		_exit(0);
	}
}

/* Maps the sandbox user (the caller) to itself in pid's new user
 * namespace; an unprivileged process may map exactly its own ids. */
static int
write_maps(const struct qsb_plan *p, pid_t pid)
{
	char path[64], map[64];

	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	if (writefile(path, "deny") < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)p->uid,
	    (unsigned)p->uid);
	if (writefile(path, map) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)p->gid,
	    (unsigned)p->gid);
	return writefile(path, map);
}

static int
native_status(struct qsb_proc *pr, int ws, int *code, int *sig)
{
	struct native_priv *np = pr->priv;

	/* with namespaces C reports the command's status, so we get here
	 * only when C was killed (by us); degraded, the child was the
	 * command */
	if (WIFSIGNALED(ws)) {
		*code = 128 + WTERMSIG(ws);
		*sig = WTERMSIG(ws);
		return 0;
	}
	if (np != NULL && np->degraded) {
		*code = WEXITSTATUS(ws);
		*sig = 0;
		return 0;
	}
	return -1;
}

static struct native_priv priv_full = { false }, priv_degraded = { true };

static int
launch_degraded(struct qsb_plan *p, struct qsb_proc *pr, int *out, int *err,
    int *rep, int *sync, struct qsb_err *e)
{
	pid_t self = getpid(), pid;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		qsb_launch_undo(out, err, rep, sync);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "cannot become the subreaper");
	}
	if ((pid = fork()) < 0) {
		qsb_launch_undo(out, err, rep, sync);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "fork");
	}
	if (pid == 0)	/* no namespaces: Landlock and seccomp */
		qsb_exec_child(p, qsb_launch_child(p, self, out, err, rep,
		    sync), QSB_CHILD_LANDLOCK);
	qsb_launch_parent(pr, pid, out, err, rep, sync);
	pr->reaper = true;
	pr->priv = &priv_degraded;
	pr->status = native_status;
	return 0;
}

static int
native_launch(struct qsb_plan *p, struct qsb_proc *pr, struct qsb_err *e)
{
	int out[2], err[2], rep[2], sync[2], flags;
	struct init_args ia;
	pid_t pid;

	if (qsb_launch_common(p, pr, out, err, rep, sync, e) < 0) {
		qsb_launch_undo(out, err, rep, sync);
		return -1;
	}
	if (p->landlock_only)
		return launch_degraded(p, pr, out, err, rep, sync, e);
	/* pid 1 of the new namespaces straight away: clone as fork does,
	 * the child going on on its copy of this stack (no stack switch:
	 * nothing for the sanitizers to object to) */
	flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
	    (p->network ? 0 : CLONE_NEWNET) | (p->as_root ? 0 : CLONE_NEWUSER);
	ia.p = p;
	ia.rfd = rep[1];
	ia.syncfd = sync[0];
	ia.outw = out[1];
	ia.errw = err[1];
	ia.close_fds[0] = rep[0];
	ia.close_fds[1] = sync[1];
	ia.close_fds[2] = out[0];
	ia.close_fds[3] = err[0];
	if ((pid = (pid_t)syscall(SYS_clone, (unsigned long)flags | SIGCHLD,
	    NULL, NULL, NULL, NULL)) == 0)
		init_main(&ia);
	if (pid < 0 && !p->as_root && (errno == EPERM || errno == EINVAL ||
	    errno == ENOSPC || errno == EUSERS || errno == EACCES)) {
		/* no user namespace for us: Landlock and seccomp alone,
		 * and the result says so (native_probe made sure we have
		 * them) */
		p->degraded = p->landlock_only = true;
		snprintf(p->reason, sizeof(p->reason), "user namespaces are "
		    "unavailable (%s): confined by Landlock and seccomp alone "
		    "(no mount, pid or network namespace: host processes are "
		    "visible, protected paths are not enforced)",
		    strerror(errno));
		return launch_degraded(p, pr, out, err, rep, sync, e);
	}
	if (pid < 0) {
		qsb_launch_undo(out, err, rep, sync);
		return qsb_err_sys(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "cannot create the sandbox's namespaces");
	}
	if (!p->as_root && write_maps(p, pid) < 0) {
		qsb_err_sys(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "cannot map the sandbox's user namespace");
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		qsb_launch_undo(out, err, rep, sync);
		return -1;
	}
	qsb_launch_parent(pr, pid, out, err, rep, sync);
	pr->init = pid;
	pr->pidns = qsb_pidns_of(pid);
	pr->priv = &priv_full;
	pr->status = native_status;
	return 0;
}

const struct qsb_backend_ops qsb_backend_native = {
	"native", native_probe, native_launch
};
