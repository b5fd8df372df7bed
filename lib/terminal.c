#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "json.h"
#include "rmtree.h"
#include "root.h"
#include "run.h"
#include "state.h"
#include "strv.h"
#include "terminal.h"
#include "workspace.h"

#define KILL_WAIT_MS	(QSB_KILL_GRACE_MS + 5000)

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool
qsb_tid_valid(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == QSB_TID_LEN;
}

/* Replaces dirfd/name whole (temp + rename).  Not synced: terminal state
 * means nothing after a reboot, and a start should not wait for a disk. */
static int
put(int dirfd, const char *name, const void *buf, size_t len)
{
	char tmp[64];
	int fd;

	if (qsb_tmpname(tmp, sizeof(tmp), ".tmp") < 0 ||
	    (fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return -1;
	if (qsb_write_all(fd, buf, len) < 0 || close(fd) < 0 ||
	    renameat(dirfd, tmp, dirfd, name) < 0) {
		int saved = errno;
		unlinkat(dirfd, tmp, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

static int
terminals_dir(const struct qsb_root *r, struct qsb_err *e)
{
	int fd;

	if ((fd = openat(r->fd, "terminals", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) < 0)
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "cannot open '%s/terminals'", r->path);
	return fd;
}

/* Whether the supervisor still holds the terminal. */
static bool
running_at(int tdir)
{
	int fd;
	bool held;

	if ((fd = openat(tdir, "lock", O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return false;
	held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/* The directory of terminal tid of session sid, or -1. */
static int
open_tdir(const struct qsb_root *r, const char *sid, const char *tid)
{
	char path[64];
	int wfd, fd;

	if ((wfd = qsb_ws_open(r, sid, NULL)) < 0)
		return -1;
	snprintf(path, sizeof(path), "meta/terminals/%s", tid);
	fd = openat(wfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(wfd);
	return fd;
}

/* The session of an index entry. */
static int
index_sid(int tfd, const char *tid, char sid[QSB_ID_MAX + 1])
{
	char *buf = NULL;
	size_t len;

	if (qsb_state_read(tfd, tid, QSB_ID_MAX + 2, &buf, &len, NULL) < 0)
		return -1;
	while (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	if (!qsb_id_valid(buf)) {
		free(buf);
		return -1;
	}
	strlcpy(sid, buf, QSB_ID_MAX + 1);
	free(buf);
	return 0;
}

int
qsb_term_open(const struct qsb_root *r, const char *tid, struct qsb_term *t,
    struct qsb_err *e)
{
	int tfd;

	memset(t, 0, sizeof(*t));
	t->dirfd = -1;
	if (!qsb_tid_valid(tid))
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "'%s' is not a "
		    "terminal id (16 hexadecimal digits)", tid);
	if ((tfd = terminals_dir(r, e)) < 0)
		return -1;
	if (index_sid(tfd, tid, t->sid) < 0 ||
	    (t->dirfd = open_tdir(r, t->sid, tid)) < 0) {
		close(tfd);
		return qsb_err_set(e, QSB_E_FILE_NOT_FOUND, "no terminal "
		    "'%s'", tid);
	}
	close(tfd);
	strlcpy(t->tid, tid, sizeof(t->tid));
	return 0;
}

void
qsb_term_close(struct qsb_term *t)
{
	if (t->dirfd >= 0)
		close(t->dirfd);
	t->dirfd = -1;
}

/* The limit: QSB_MAX_TERMINALS in the environment, else 50. */
static int
max_terminals(struct qsb_err *e)
{
	const char *s = getenv("QSB_MAX_TERMINALS"), *errstr = NULL;
	long long v;

	if (s == NULL || *s == '\0')
		return QSB_MAX_TERMINALS;
	v = strtonum(s, 1, 100000, &errstr);
	if (errstr != NULL)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "QSB_MAX_TERMINALS:"
		    " invalid value '%s' (an integer from 1 to 100000)", s);
	return (int)v;
}

/* Running terminals, machine-wide (under the index lock); forgets index
 * entries whose terminal is gone with its workspace. */
static int
count_running(const struct qsb_root *r, int tfd)
{
	struct dirent *de;
	char sid[QSB_ID_MAX + 1];
	int fd, n = 0, dfd;
	DIR *d;

	if ((fd = dup(tfd)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (!qsb_tid_valid(de->d_name))
			continue;
		if (index_sid(tfd, de->d_name, sid) < 0 ||
		    (dfd = open_tdir(r, sid, de->d_name)) < 0) {
			(void)unlinkat(tfd, de->d_name, 0);
			continue;
		}
		n += running_at(dfd);
		close(dfd);
	}
	closedir(d);
	return n;
}

/* --- the supervisor's output ----------------------------------------------- */

/*
 * What the command prints goes to `output`, with every secret value
 * replaced as it streams by (a value cut between two reads is held back
 * until it can be told apart), and the file kept near the limit: past
 * twice the limit (at least 64 KiB more), the last `limit` bytes, from a
 * character boundary, are copied to a new file that replaces it.
 */
struct sink {
	int		 tdir;
	int		 fd;
	uint64_t	 size, limit, cap;
	bool		 truncated;
	char * const	*secrets;
	size_t		 maxsecret;
	bool		 first[256];	/* first bytes of the secrets */
	char		*hold;		/* a possible start of a secret */
	size_t		 holdlen;
};

static void
compact(struct sink *s)
{
	char buf[65536], tmp[64];
	off_t from, end = (off_t)s->size;
	ssize_t n;
	int fd;
	unsigned char c;

	from = end - (off_t)s->limit;
	/* a character boundary: not a continuation byte */
	while (from < end && pread(s->fd, &c, 1, from) == 1 &&
	    (c & 0xc0) == 0x80)
		from++;
	if (qsb_tmpname(tmp, sizeof(tmp), ".output") < 0 ||
	    (fd = openat(s->tdir, tmp, O_RDWR | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return;
	s->size = 0;
	while (from < end && (n = pread(s->fd, buf, sizeof(buf), from)) > 0) {
		if (qsb_write_all(fd, buf, (size_t)n) < 0)
			break;
		from += n;
		s->size += (uint64_t)n;
	}
	if (!s->truncated) {
		int m = openat(s->tdir, "truncated", O_WRONLY | O_CREAT |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (m >= 0)
			close(m);
		s->truncated = true;
	}
	if (renameat(s->tdir, tmp, s->tdir, "output") < 0) {
		unlinkat(s->tdir, tmp, 0);
		close(fd);
		s->size = (uint64_t)end;
		return;
	}
	close(s->fd);
	s->fd = fd;
}

static void
emit(struct sink *s, const char *buf, size_t len)
{
	if (len == 0 || s->fd < 0)
		return;
	if (qsb_write_all(s->fd, buf, len) < 0)
		return;	/* a full disk loses output, not the command */
	s->size += len;
	if (s->size > s->cap)
		compact(s);
}

/* Longest secret that matches at buf[i..len); 0 if none.  *partial: the
 * rest of buf is the start of a longer one. */
static size_t
match_at(const struct sink *s, const char *buf, size_t len, size_t i,
    bool *partial)
{
	size_t k, sl, best = 0;

	*partial = false;
	if (!s->first[(unsigned char)buf[i]])
		return 0;
	for (k = 0; s->secrets[k]; k++) {
		if ((sl = strlen(s->secrets[k])) == 0)
			continue;
		if (len - i >= sl) {
			if (sl > best && memcmp(buf + i, s->secrets[k], sl) == 0)
				best = sl;
		} else if (memcmp(buf + i, s->secrets[k], len - i) == 0)
			*partial = true;
	}
	return best;
}

static void
feed(struct sink *s, const char *in, size_t n, bool eof)
{
	static const char mark[] = "[REDACTED]";
	char *buf;
	size_t len, i, start, m;
	bool partial;

	if (s->secrets == NULL || s->secrets[0] == NULL) {
		emit(s, in, n);
		return;
	}
	len = s->holdlen + n;
	if ((buf = malloc(len + 1)) == NULL)
		return;
	if (s->holdlen)
		memcpy(buf, s->hold, s->holdlen);
	if (n)
		memcpy(buf + s->holdlen, in, n);
	for (i = start = 0; i < len; ) {
		m = match_at(s, buf, len, i, &partial);
		if (partial && !eof)
			break;		/* could be a secret: wait for more */
		if (m > 0) {
			emit(s, buf + start, i - start);
			emit(s, mark, sizeof(mark) - 1);
			i += m;
			start = i;
			continue;
		}
		i++;
	}
	emit(s, buf + start, i - start);
	free(s->hold);
	s->hold = NULL;
	s->holdlen = len - i;
	if (s->holdlen > 0) {
		if ((s->hold = malloc(s->holdlen)) != NULL)
			memcpy(s->hold, buf + i, s->holdlen);
		else
			s->holdlen = 0;
	}
	free(buf);
}

static void
sink_output(const char *buf, size_t len, void *arg)
{
	feed(arg, buf, len, false);
}

/* --- the supervisor ------------------------------------------------------- */

static void
put_exit(int tdir, const struct qsb_exec_result *res, const struct qsb_err *e)
{
	struct qsb_jw w;

	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "exitCode");
	if (e != NULL)
		qsb_jw_int(&w, 125);
	else if (res->signal != 0)
		qsb_jw_null(&w);
	else
		qsb_jw_int(&w, res->exit_code);
	qsb_jw_key(&w, "signal");
	qsb_jw_str(&w, e == NULL && res->signal ? qsb_signame(res->signal) :
	    NULL);
	qsb_jw_key(&w, "timedOut");
	qsb_jw_bool(&w, e == NULL && res->timed_out);
	if (e != NULL) {
		qsb_jw_key(&w, "error");
		qsb_jw_str(&w, e->msg);
		qsb_jw_key(&w, "code");
		qsb_jw_str(&w, qsb_code_name(e->code));
	} else {
		qsb_jw_key(&w, "duration");
		qsb_jw_int(&w, res->duration_ms);
	}
	qsb_jw_key(&w, "finishedAt");
	qsb_jw_time(&w, qsb_now_ms());
	qsb_jw_obj_end(&w);
	if (qsb_jw_finish(&w) == 0)
		(void)put(tdir, "exit.json", w.buf, w.len);
	qsb_jw_free(&w);
}

/* Closes every descriptor but those kept: the caller's pipes (a shell's
 * $(...), a test harness) must not stay open in a process that lives on. */
static void
close_others(const int *keep, size_t nkeep)
{
	struct dirent *de;
	int fd, self;
	size_t i;
	DIR *d;

	if ((d = opendir("/proc/self/fd")) == NULL) {
		for (fd = 3; fd < 1024; fd++) {
			for (i = 0; i < nkeep && keep[i] != fd; i++)
				;
			if (i == nkeep)
				close(fd);
		}
		return;
	}
	self = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		fd = atoi(de->d_name);
		if (fd < 3 || fd == self)
			continue;
		for (i = 0; i < nkeep && keep[i] != fd; i++)
			;
		if (i == nkeep)
			close(fd);
	}
	closedir(d);
}

/* In the child of create: detach (new session, reparented by a second
 * fork), take the terminal, say so, run, record the exit.  Never returns. */
static void
supervise(struct qsb_run *r, int tdir, int ready, size_t limit)
{
	struct qsb_exec_result res;
	struct qsb_err e;
	struct sink s;
	sigset_t mask;
	char pid[32];
	int keep[8], lfd, null, n, rc;
	pid_t child;

	if (setsid() < 0)
		_exit(1);
	if ((child = fork()) < 0)
		_exit(1);
	if (child > 0)
		_exit(0);
	/* signals to end it wait for the run, which turns them into an
	 * orderly end of the whole tree */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0 ||
	    dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		_exit(1);
	n = 0;
	keep[n++] = r->root->fd;
	keep[n++] = r->root->wsfd;
	keep[n++] = r->root->trashfd;
	keep[n++] = r->root->permfd;
	keep[n++] = r->dirfd;
	keep[n++] = tdir;
	keep[n++] = ready;
	close_others(keep, (size_t)n);
	if ((lfd = openat(tdir, "lock", O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) < 0 || flock(lfd, LOCK_EX) < 0)
		_exit(1);
	if (qsb_run_hold(r, &e) < 0) {
		put_exit(tdir, NULL, &e);
		_exit(1);
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (put(tdir, "pid", pid, strlen(pid)) < 0)
		_exit(1);
	if (write(ready, "k", 1) != 1)
		_exit(1);
	close(ready);

	memset(&s, 0, sizeof(s));
	s.tdir = tdir;
	s.limit = limit;
	s.cap = limit * 2 > limit + 65536 ? limit * 2 : limit + 65536;
	s.secrets = r->plan.secret_values;
	for (n = 0; s.secrets && s.secrets[n]; n++)
		s.first[(unsigned char)s.secrets[n][0]] = s.secrets[n][0] != 0;
	s.fd = openat(tdir, "output", O_WRONLY | O_APPEND | O_NOFOLLOW |
	    O_CLOEXEC);
	r->plan.on_output = sink_output;
	r->plan.on_output_arg = &s;
	rc = qsb_run_exec(r, &res, &e);
	if (rc < 0) {
		char msg[600];
		int m = snprintf(msg, sizeof(msg), "qsb-exec: %s\n", e.msg);
		feed(&s, msg, (size_t)m, false);
	}
	feed(&s, NULL, 0, true);
	if (s.fd >= 0)
		close(s.fd);
	put_exit(tdir, rc < 0 ? NULL : &res, rc < 0 ? &e : NULL);
	if (rc == 0)
		qsb_exec_result_free(&res);
	_exit(0);
}

/* Why a supervisor did not start: what it wrote, if anything. */
static void
start_failure(int tdir, const char *tid, struct qsb_err *e)
{
	struct qsb_json j;
	char *buf = NULL, *msg = NULL, *code = NULL;
	size_t len;
	int c = -1;

	if (qsb_state_read(tdir, "exit.json", 65536, &buf, &len, NULL) == 0 &&
	    qsb_json_parse(&j, buf, len, NULL) == 0) {
		(void)qsb_json_want_str(&j, 0, "error", false, &msg, "", NULL);
		(void)qsb_json_want_str(&j, 0, "code", false, &code, "", NULL);
		qsb_json_free(&j);
	}
	free(buf);
	if (code != NULL)
		c = qsb_code_from_name(code);
	if (msg != NULL)
		qsb_err_set(e, c > 0 ? (enum qsb_code)c :
		    QSB_E_EXECUTION_FAILED, "%s", msg);
	else
		qsb_err_set(e, QSB_E_EXECUTION_FAILED, "the supervisor of "
		    "terminal %s did not start", tid);
	free(msg);
	free(code);
}

static char *
random_tid(char out[QSB_TID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[QSB_TID_LEN / 2];
	size_t i;

	arc4random_buf(b, sizeof(b));
	for (i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[QSB_TID_LEN] = '\0';
	return out;
}

static int
put_info(int tdir, const struct qsb_run *r, const char *tid, size_t limit)
{
	const struct qsb_plan *p = &r->plan;
	struct qsb_jw w;
	size_t i, l;
	char *red;
	int rc;

	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "terminalId");
	qsb_jw_str(&w, tid);
	qsb_jw_key(&w, "sessionId");
	qsb_jw_str(&w, r->ws.id);
	for (i = 0; p->argv[i]; i++) {
		if (i == 0)
			qsb_jw_key(&w, "command");
		else if (i == 1) {
			qsb_jw_key(&w, "args");
			qsb_jw_arr(&w);
		}
		red = p->secret_values[0] == NULL ? NULL :
		    qsb_redact(p->argv[i], strlen(p->argv[i]),
		    p->secret_values, false, &l);
		qsb_jw_str(&w, red ? red : p->argv[i]);
		free(red);
	}
	if (i == 1) {
		qsb_jw_key(&w, "args");
		qsb_jw_arr(&w);
	}
	qsb_jw_arr_end(&w);
	qsb_jw_key(&w, "cwd");
	qsb_jw_str(&w, p->cwd);
	qsb_jw_key(&w, "outputByteLimit");
	qsb_jw_uint(&w, limit);
	qsb_jw_key(&w, "backend");
	qsb_jw_str(&w, qsb_backend_names[p->backend]);
	qsb_jw_key(&w, "mode");
	qsb_jw_str(&w, qsb_mode_names[p->mode]);
	qsb_jw_key(&w, "createdAt");
	qsb_jw_time(&w, qsb_now_ms());
	qsb_jw_obj_end(&w);
	rc = qsb_jw_finish(&w) == 0 ? put(tdir, "terminal.json", w.buf,
	    w.len) : -1;
	qsb_jw_free(&w);
	return rc;
}

int
qsb_term_create(const struct qsb_root *root, const struct qsb_config *cfg,
    const char *id, const struct qsb_exec_req *q, char tid[],
    struct qsb_err *e)
{
	struct qsb_exec_req rq = *q;
	struct qsb_run r;
	char path[64], c = 0;
	int tfd = -1, glock = -1, mt = -1, tdir = -1, ready[2] = { -1, -1 };
	int max, n, rc = -1, fd, tries, st;
	pid_t pid;

	rq.stdio = QSB_STDIO_MERGED;
	rq.stdin_null = true;
	if ((max = max_terminals(e)) < 0)
		return -1;
	if (qsb_run_prepare(&r, root, cfg, id, &rq, e) < 0)
		return -1;
	if ((tfd = terminals_dir(root, e)) < 0 ||
	    (glock = qsb_lock(tfd, ".lock", LOCK_EX, e)) < 0)
		goto out;
	if ((n = count_running(root, tfd)) >= max) {
		qsb_err_set(e, QSB_E_EXECUTION_FAILED, "terminal limit reached:"
		    " %d running (QSB_MAX_TERMINALS is %d); release terminals"
		    " first", n, max);
		goto out;
	}
	if (mkdirat(r.dirfd, "meta/terminals", 0700) < 0 && errno != EEXIST) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "workspace '%s': "
		    "cannot make meta/terminals", id);
		goto out;
	}
	if ((mt = openat(r.dirfd, "meta/terminals", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) < 0) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "workspace '%s': "
		    "meta/terminals", id);
		goto out;
	}
	for (tries = 0; ; tries++) {
		random_tid(tid);
		if (mkdirat(mt, tid, 0700) == 0)
			break;
		if (errno != EEXIST || tries == 8) {
			qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
			    "cannot make terminal %s", tid);
			goto out;
		}
	}
	/* registered before anything runs */
	if ((tdir = openat(mt, tid, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0 || put_info(tdir, &r, tid, rq.output_limit) < 0 ||
	    (fd = openat(tdir, "output", O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 || close(fd) < 0 ||
	    (fd = openat(tdir, "lock", O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 || close(fd) < 0) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "cannot register terminal %s", tid);
		goto undo;
	}
	snprintf(path, sizeof(path), "%s\n", id);
	if (put(tfd, tid, path, strlen(path)) < 0) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "cannot register terminal %s", tid);
		goto undo;
	}
	if (pipe2(ready, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "cannot start the "
		    "supervisor of terminal %s", tid);
		goto undo;
	}
	if (pid == 0) {
		close(ready[0]);
		close(glock);
		close(tfd);
		close(mt);
		supervise(&r, tdir, ready[1], rq.output_limit);
	}
	close(ready[1]);
	ready[1] = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	while (read(ready[0], &c, 1) < 0 && errno == EINTR)
		;
	if (c == 'k') {
		rc = 0;
		goto out;
	}
	start_failure(tdir, tid, e);
undo:
	(void)unlinkat(tfd, tid, 0);
	if (tdir >= 0) {
		close(tdir);
		tdir = -1;
	}
	(void)qsb_rmtree(mt, tid, NULL, NULL);
out:
	if (ready[0] >= 0)
		close(ready[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	if (tdir >= 0)
		close(tdir);
	if (mt >= 0)
		close(mt);
	if (glock >= 0)
		close(glock);
	if (tfd >= 0)
		close(tfd);
	qsb_run_free(&r);
	return rc;
}

/* --- reading a terminal --------------------------------------------------- */

static uint64_t
info_limit(int tdir)
{
	struct qsb_json j;
	char *buf = NULL;
	size_t len;
	long long v = QSB_OUTPUT_LIMIT;

	if (qsb_state_read(tdir, "terminal.json", 1 << 20, &buf, &len,
	    NULL) == 0) {
		if (qsb_json_parse(&j, buf, len, NULL) == 0) {
			(void)qsb_json_i64(&j, qsb_json_get(&j, 0,
			    "outputByteLimit"), &v);
			qsb_json_free(&j);
		}
		free(buf);
	}
	return v < 0 ? 0 : (uint64_t)v;
}

int
qsb_term_output(const struct qsb_term *t, char **bufp, size_t *lenp,
    bool *truncated, struct qsb_err *e)
{
	uint64_t limit = info_limit(t->dirfd);
	struct stat st;
	char *buf = NULL;
	size_t len = 0, from;
	int fd;

	*bufp = NULL;
	*lenp = 0;
	*truncated = fstatat(t->dirfd, "truncated", &st,
	    AT_SYMLINK_NOFOLLOW) == 0;
	if ((fd = openat(t->dirfd, "output", O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "terminal %s: "
		    "no output", t->tid);
	/* the file is a snapshot: a compaction replaces it, never cuts it */
	if (qsb_read_all(fd, (size_t)limit * 2 + (8u << 20), &buf, &len) < 0) {
		close(fd);
		return qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "terminal %s: "
		    "cannot read the output", t->tid);
	}
	close(fd);
	from = 0;
	if (len > limit) {
		*truncated = true;
		from = len - (size_t)limit;
		while (from < len && ((unsigned char)buf[from] & 0xc0) == 0x80)
			from++;
	}
	memmove(buf, buf + from, len - from);
	*lenp = len - from;
	buf[*lenp] = '\0';
	*bufp = buf;
	return 0;
}

static int
read_exit(int tdir, struct qsb_term_exit *x)
{
	struct qsb_json j;
	char *buf = NULL, *s;
	size_t len;
	long long v;
	bool b;
	int k;

	if (qsb_state_read(tdir, "exit.json", 65536, &buf, &len, NULL) < 0)
		return -1;
	if (qsb_json_parse(&j, buf, len, NULL) < 0) {
		free(buf);
		return -1;
	}
	x->done = true;
	x->exit_code = qsb_json_i64(&j, qsb_json_get(&j, 0, "exitCode"),
	    &v) == 0 ? (int)v : -1;
	if ((k = qsb_json_get(&j, 0, "signal")) >= 0 &&
	    j.t[k].type == QSB_JSTR && (s = qsb_json_str(&j, k, NULL))) {
		for (x->signal = 1; x->signal < 65; x->signal++)
			if (strcmp(qsb_signame(x->signal), s) == 0)
				break;
		if (x->signal == 65)
			x->signal = 0;
		free(s);
	}
	x->timed_out = qsb_json_bool(&j, qsb_json_get(&j, 0, "timedOut"),
	    &b) == 0 && b;
	qsb_json_free(&j);
	free(buf);
	return 0;
}

int
qsb_term_status(const struct qsb_term *t, struct qsb_term_exit *x,
    struct qsb_err *e)
{
	struct qsb_term_exit tmp;

	(void)e;
	if (x == NULL)
		x = &tmp;
	memset(x, 0, sizeof(*x));
	x->exit_code = -1;
	if (read_exit(t->dirfd, x) == 0)
		return 0;
	if (running_at(t->dirfd))
		return 0;
	/* the lock is free: the exit status was written before, unless
	 * the supervisor died without a word */
	if (read_exit(t->dirfd, x) == 0)
		return 0;
	x->done = x->lost = true;
	return 0;
}

int
qsb_term_pidfd(const struct qsb_term *t)
{
	char *buf = NULL;
	size_t len;
	long pid;
	int fd;

	if (qsb_state_read(t->dirfd, "pid", 64, &buf, &len, NULL) < 0)
		return -1;
	buf[len] = '\0';
	pid = strtol(buf, NULL, 10);
	free(buf);
	if (pid <= 1 || (fd = (int)syscall(SYS_pidfd_open, (pid_t)pid,
	    0)) < 0)
		return -1;
	/* the pid is the supervisor's only while it holds the lock: once
	 * that is checked, the pidfd cannot name another process */
	if (!running_at(t->dirfd)) {
		close(fd);
		return -1;
	}
	return fd;
}

int
qsb_term_wait(const struct qsb_term *t, int64_t timeout_ms,
    struct qsb_term_exit *x, struct qsb_err *e)
{
	struct pollfd pfd;
	int64_t end = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms, now;
	int fd, r;

	if ((fd = qsb_term_pidfd(t)) >= 0) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		for (;;) {
			now = mono_ms();
			r = poll(&pfd, 1, end < 0 ? -1 : (int)(end > now ?
			    end - now : 0));
			if (r > 0)
				break;
			if (r == 0) {
				close(fd);
				return 1;
			}
			if (errno != EINTR) {
				close(fd);
				return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
				    "poll");
			}
		}
		close(fd);
	}
	return qsb_term_status(t, x, e);
}

int
qsb_term_kill(const struct qsb_term *t, struct qsb_err *e)
{
	struct qsb_term_exit x;
	int fd;

	if ((fd = qsb_term_pidfd(t)) < 0)
		return 0;	/* it has ended */
	if (syscall(SYS_pidfd_send_signal, fd, SIGTERM, NULL, 0) < 0 &&
	    errno != ESRCH) {
		close(fd);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "cannot signal "
		    "the supervisor of terminal %s", t->tid);
	}
	close(fd);
	/* the supervisor ends the tree (SIGTERM, then SIGKILL after the
	 * grace) and records how it ended */
	if (qsb_term_wait(t, KILL_WAIT_MS, &x, e) == 1 &&
	    (fd = qsb_term_pidfd(t)) >= 0) {
		(void)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
		close(fd);
		(void)qsb_term_wait(t, 5000, &x, e);
	}
	return 0;
}

int
qsb_term_release(const struct qsb_root *r, struct qsb_term *t,
    struct qsb_err *e)
{
	char path[64];
	int tfd, wfd, mt;

	if (qsb_term_kill(t, e) < 0)
		return -1;
	if ((tfd = terminals_dir(r, e)) < 0)
		return -1;
	(void)unlinkat(tfd, t->tid, 0);
	close(tfd);
	qsb_term_close(t);
	if ((wfd = qsb_ws_open(r, t->sid, NULL)) < 0)
		return 0;	/* gone with its workspace */
	snprintf(path, sizeof(path), "meta/terminals");
	mt = openat(wfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(wfd);
	if (mt < 0)
		return 0;
	if (qsb_rmtree(mt, t->tid, NULL, e) < 0 && errno != ENOENT) {
		close(mt);
		return -1;
	}
	close(mt);
	return 0;
}

/* Each terminal directory of a session: ids into out. */
static int
session_tids(const struct qsb_root *r, const char *sid, struct qsb_strv *out,
    struct qsb_err *e)
{
	struct dirent *de;
	int wfd, fd;
	DIR *d;

	if ((wfd = qsb_ws_open(r, sid, e)) < 0)
		return -1;
	fd = openat(wfd, "meta/terminals", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	close(wfd);
	if (fd < 0)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL)
		if (qsb_tid_valid(de->d_name))
			qsb_strv_add(out, de->d_name);
	closedir(d);
	return out->nomem ? qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
	    "out of memory") : 0;
}

int
qsb_term_release_session(const struct qsb_root *r, const char *sid, int *n,
    struct qsb_err *e)
{
	struct qsb_strv l = { NULL, 0, 0, false };
	struct qsb_term t;
	size_t i;
	int rc = 0;

	*n = 0;
	if (session_tids(r, sid, &l, e) < 0)
		return -1;
	for (i = 0; i < l.n; i++) {
		memset(&t, 0, sizeof(t));
		strlcpy(t.tid, l.v[i], sizeof(t.tid));
		strlcpy(t.sid, sid, sizeof(t.sid));
		if ((t.dirfd = open_tdir(r, sid, l.v[i])) < 0)
			continue;
		if (qsb_term_release(r, &t, e) < 0)
			rc = -1;
		else
			(*n)++;
	}
	qsb_strv_free(l.v);
	return rc;
}

void
qsb_term_exit_write(struct qsb_jw *w, const struct qsb_term_exit *x)
{
	if (!x->done) {
		qsb_jw_null(w);
		return;
	}
	qsb_jw_obj(w);
	qsb_jw_key(w, "exitCode");
	if (x->exit_code >= 0)
		qsb_jw_int(w, x->exit_code);
	else
		qsb_jw_null(w);
	qsb_jw_key(w, "signal");
	qsb_jw_str(w, x->signal ? qsb_signame(x->signal) : NULL);
	qsb_jw_obj_end(w);
}

int
qsb_term_output_write(struct qsb_jw *w, const struct qsb_term *t,
    struct qsb_err *e)
{
	struct qsb_term_exit x;
	size_t len;
	char *out;
	bool trunc;

	if (qsb_term_output(t, &out, &len, &trunc, e) < 0)
		return -1;
	if (qsb_term_status(t, &x, e) < 0) {
		free(out);
		return -1;
	}
	qsb_jw_obj(w);
	qsb_jw_key(w, "output");
	qsb_jw_strn(w, out, len);
	qsb_jw_key(w, "truncated");
	qsb_jw_bool(w, trunc);
	qsb_jw_key(w, "exitStatus");
	qsb_term_exit_write(w, &x);
	qsb_jw_obj_end(w);
	free(out);
	return 0;
}

static void
list_one(const struct qsb_root *r, const char *sid, const char *tid,
    struct qsb_jw *w)
{
	struct qsb_term t;
	struct qsb_term_exit x;
	struct qsb_json j;
	char *buf = NULL;
	size_t len;
	int k;

	memset(&t, 0, sizeof(t));
	if ((t.dirfd = open_tdir(r, sid, tid)) < 0)
		return;
	strlcpy(t.tid, tid, sizeof(t.tid));
	strlcpy(t.sid, sid, sizeof(t.sid));
	if (qsb_state_read(t.dirfd, "terminal.json", 1 << 20, &buf, &len,
	    NULL) < 0 || qsb_json_parse(&j, buf, len, NULL) < 0) {
		free(buf);
		qsb_term_close(&t);
		return;
	}
	(void)qsb_term_status(&t, &x, NULL);
	qsb_jw_obj(w);
	for (k = qsb_json_first(&j, 0); k >= 0; k = qsb_json_sibling(&j, 0,
	    k)) {
		char *key = qsb_json_str(&j, k, NULL);
		if (key == NULL)
			continue;
		qsb_jw_key(w, key);
		free(key);
		qsb_jw_raw(w, j.s + j.t[k + 1].start - (j.t[k + 1].type ==
		    QSB_JSTR), (size_t)(j.t[k + 1].end - j.t[k + 1].start) +
		    2 * (j.t[k + 1].type == QSB_JSTR));
	}
	qsb_jw_key(w, "running");
	qsb_jw_bool(w, !x.done);
	qsb_jw_key(w, "exitStatus");
	qsb_term_exit_write(w, &x);
	qsb_jw_obj_end(w);
	qsb_json_free(&j);
	free(buf);
	qsb_term_close(&t);
}

struct entry {
	char		sid[QSB_ID_MAX + 1];
	char		tid[QSB_TID_LEN + 1];
	struct timespec	made;
};

static int
by_made(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->made.tv_sec != y->made.tv_sec)
		return x->made.tv_sec < y->made.tv_sec ? -1 : 1;
	if (x->made.tv_nsec != y->made.tv_nsec)
		return x->made.tv_nsec < y->made.tv_nsec ? -1 : 1;
	return strcmp(x->tid, y->tid);
}

/* Adds sid/tid to v, with when it was made (its terminal.json). */
static int
add_entry(const struct qsb_root *r, struct entry **v, size_t *n,
    size_t *cap, const char *sid, const char *tid)
{
	struct entry *nv;
	struct stat st;
	int fd;

	if ((fd = open_tdir(r, sid, tid)) < 0)
		return 0;
	if (fstatat(fd, "terminal.json", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		close(fd);
		return 0;
	}
	close(fd);
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 32;
		if ((nv = reallocarray(*v, *cap, sizeof(**v))) == NULL)
			return -1;
		*v = nv;
	}
	strlcpy((*v)[*n].sid, sid, sizeof((*v)[*n].sid));
	strlcpy((*v)[*n].tid, tid, sizeof((*v)[*n].tid));
	(*v)[*n].made = st.st_mtim;
	(*n)++;
	return 0;
}

int
qsb_term_list(const struct qsb_root *r, const char *sid, struct qsb_jw *w,
    struct qsb_err *e)
{
	struct qsb_strv l = { NULL, 0, 0, false };
	struct entry *v = NULL;
	struct dirent *de;
	char s[QSB_ID_MAX + 1];
	size_t i, n = 0, cap = 0;
	int tfd, fd, rc = 0;
	DIR *d;

	if (sid != NULL) {
		if (session_tids(r, sid, &l, e) < 0)
			return -1;
		for (i = 0; i < l.n && rc == 0; i++)
			rc = add_entry(r, &v, &n, &cap, sid, l.v[i]);
		qsb_strv_free(l.v);
	} else {
		if ((tfd = terminals_dir(r, e)) < 0)
			return -1;
		if ((fd = dup(tfd)) < 0 || (d = fdopendir(fd)) == NULL) {
			if (fd >= 0)
				close(fd);
			close(tfd);
			return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "cannot "
			    "read '%s/terminals'", r->path);
		}
		while (rc == 0 && (de = readdir(d)) != NULL)
			if (qsb_tid_valid(de->d_name) &&
			    index_sid(tfd, de->d_name, s) == 0)
				rc = add_entry(r, &v, &n, &cap, s,
				    de->d_name);
		closedir(d);
		close(tfd);
	}
	if (rc < 0) {
		free(v);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	}
	/* oldest first */
	if (n > 1)
		qsort(v, n, sizeof(*v), by_made);
	qsb_jw_arr(w);
	for (i = 0; i < n; i++)
		list_one(r, v[i].sid, v[i].tid, w);
	qsb_jw_arr_end(w);
	free(v);
	return 0;
}
