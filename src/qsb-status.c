/*
 * qsb-status: whether and how well this machine can sandbox, the event
 * log, and the machine-wide SandboxPolicy.
 */
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "json.h"
#include "parse.h"
#include "rmtree.h"
#include "root.h"
#include "state.h"
#include "status.h"
#include "workspace.h"

static const char synopsis[] =
"usage: qsb-status [--capabilities] [--root DIR] [--pretty] [--json-errors]\n"
"       qsb-status --check [--backend B]\n"
"       qsb-status events [--follow] [--since TIME] [--session SESSION]\n"
"       qsb-status policy [show | set FILE|- | [--enabled BOOL] [--mode M]\n"
"                         [--backend B] [--auto-fallback F]]\n";

static const char help[] =
"\n"
"  --capabilities      add each backend and the kernel facilities\n"
"  --check             print nothing; exit 0 if the configured (or named)\n"
"                      backend is usable, 65 if not\n"
"  --backend B         with --check: native, bwrap, firejail, docker, none\n"
"  events --follow     keep printing lines as they are appended\n"
"  events --since T    from T (ISO 8601 date, or a duration ago: 10m)\n"
"  events --session S  only the events of session S\n"
"  policy set FILE|-   merge a (partial) SandboxPolicy into config.json\n"
"Options for every command: --root DIR, --pretty, --json-errors,\n"
"-h/--help, -V/--version.  See qsb-status(1).\n";

enum {
	O_CAPS = QSB_OPT_FIRST, O_CHECK, O_BACKEND,
	O_FOLLOW, O_SINCE, O_SESSION, O_ENABLED, O_MODE, O_FALLBACK,
};

static struct qsb_root root;
static struct qsb_config cfg;
static bool opened;

static void
open_root(void)
{
	qsb_cli_open(&root, &cfg);
	opened = true;
}

/* --- the status --------------------------------------------------------- */

/* Workspaces (complete ones: not .new.*), and how many are in use. */
static void
count_workspaces(long *all, long *running)
{
	struct dirent *de;
	DIR *d;
	int fd, wfd;

	*all = *running = 0;
	if ((fd = openat(root.wsfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (!qsb_id_valid(de->d_name) || (de->d_type != DT_DIR &&
		    de->d_type != DT_UNKNOWN))
			continue;
		if ((wfd = openat(dirfd(d), de->d_name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			continue;
		(*all)++;
		if (qsb_ws_busy(wfd))
			(*running)++;
		close(wfd);
	}
	closedir(d);
}

static int
status_cmd(bool caps_wanted, bool check, int check_backend)
{
	struct qsb_caps c;
	struct sysinfo si;
	struct qsb_jw w;
	struct qsb_err e;
	char why[1400];
	bool usable, degraded;
	long all, running;
	uint64_t du = 0;
	int type, want;

	open_root();
	qsb_caps_probe(&c, caps_wanted);
	if (check && check_backend >= 0) {
		/* the named backend itself, no fallback */
		type = qsb_caps_resolve(&c, check_backend, QSB_FB_MANUAL,
		    &usable, &degraded, why, sizeof(why));
		return usable ? 0 : qsb_code_exit(QSB_E_SANDBOX_UNAVAILABLE);
	}
	want = cfg.policy.backend;
	type = qsb_caps_resolve(&c, want, cfg.policy.fallback, &usable,
	    &degraded, why, sizeof(why));
	if (!cfg.policy.enabled) {
		usable = false;
		snprintf(why, sizeof(why), "sandboxing is disabled by the "
		    "policy (enabled: false)");
	}
	qsb_availability_note(&root, qsb_backend_names[want], usable, why);
	if (check)
		return usable ? 0 : qsb_code_exit(QSB_E_SANDBOX_UNAVAILABLE);

	count_workspaces(&all, &running);
	if (qsb_du(AT_FDCWD, root.path, &du, &e) < 0)
		qsb_cli_fail(&e);
	qsb_jw_init(&w, qsb_cli.pretty);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "available");
	qsb_jw_bool(&w, usable);
	qsb_jw_key(&w, "type");
	qsb_jw_str(&w, qsb_backend_names[type]);
	qsb_jw_key(&w, "backend");
	qsb_jw_str(&w, qsb_backend_names[want]);
	qsb_jw_key(&w, "platform");
	qsb_jw_str(&w, "linux");
	qsb_jw_key(&w, "activeWorkspaces");
	qsb_jw_int(&w, all);
	qsb_jw_key(&w, "runningWorkspaces");
	qsb_jw_int(&w, running);
	qsb_jw_key(&w, "degraded");
	qsb_jw_bool(&w, degraded);
	qsb_jw_key(&w, "reason");
	qsb_jw_str(&w, why[0] ? why : NULL);
	qsb_jw_key(&w, "enabled");
	qsb_jw_bool(&w, cfg.policy.enabled);
	qsb_jw_key(&w, "mode");
	qsb_jw_str(&w, qsb_mode_names[cfg.policy.mode]);
	if (sysinfo(&si) == 0) {
		qsb_jw_key(&w, "totalMemory");
		qsb_jw_uint(&w, (unsigned long long)si.totalram * si.mem_unit);
	}
	qsb_jw_key(&w, "diskUsage");
	qsb_jw_uint(&w, du);
	qsb_jw_key(&w, "root");
	qsb_jw_str(&w, root.path);
	if (caps_wanted) {
		qsb_jw_key(&w, "capabilities");
		qsb_caps_write(&w, &c, &cfg);
	}
	qsb_jw_obj_end(&w);
	qsb_cli_emit(&w);
	return 0;
}

/* --- the event log ------------------------------------------------------ */

struct evfilter {
	const char	*session;
	bool		 has_since;
	int64_t		 since;
};

/* Writes all of buf to stdout; a reader that went away ends the program
 * quietly, as it does for tail -f. */
static void
out(const char *buf, size_t len)
{
	if (qsb_write_all(STDOUT_FILENO, buf, len) < 0) {
		if (errno == EPIPE)
			qsb_cli_exit(0);
		qsb_cli_die(QSB_E_FILE_WRITE_FAILED, "cannot write the "
		    "events: %s", strerror(errno));
	}
}

/* Whether a complete line is an event that passes the filter; a line that
 * is not one JSON object (a writer died mid-line) is left out. */
static bool
wanted(const char *line, size_t len, const struct evfilter *f)
{
	struct qsb_json j;
	int64_t t;
	char *s;
	int k;
	bool ok = false;

	if (qsb_json_parse(&j, line, len, NULL) < 0)
		return false;
	if (j.t[0].type != QSB_JOBJ)
		goto done;
	if (f->session != NULL && ((k = qsb_json_get(&j, 0, "sessionId")) < 0
	    || !qsb_json_streq(&j, k, f->session)))
		goto done;
	if (f->has_since) {
		if ((k = qsb_json_get(&j, 0, "time")) < 0 ||
		    j.t[k].type != QSB_JSTR ||
		    (s = qsb_json_str(&j, k, NULL)) == NULL)
			goto done;
		ok = qsb_parse_time(s, &t) == 0 && t >= f->since;
		free(s);
		goto done;
	}
	ok = true;
done:
	qsb_json_free(&j);
	return ok;
}

struct tail {
	int		 fd;
	dev_t		 dev;
	ino_t		 ino;
	off_t		 off;
	char		*buf;		/* a line not yet complete */
	size_t		 len, cap;
};

static void
tail_open(struct tail *t)
{
	struct stat st;

	if ((t->fd = openat(root.fd, "events.jsonl", O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0) {
		if (errno != ENOENT)
			qsb_cli_die(QSB_E_FILE_NOT_FOUND, "cannot open "
			    "%s/events.jsonl: %s", root.path, strerror(errno));
		return;
	}
	if (fstat(t->fd, &st) == 0) {
		t->dev = st.st_dev;
		t->ino = st.st_ino;
	}
	t->off = 0;
	t->len = 0;
}

/* Prints the complete lines appended since the last call. */
static void
tail_read(struct tail *t, const struct evfilter *f)
{
	char chunk[65536];
	size_t i, start;
	ssize_t n;
	struct stat st;

	if (t->fd < 0)
		return;
	if (fstat(t->fd, &st) == 0 && st.st_size < t->off) {
		t->off = 0;	/* truncated: from the start */
		t->len = 0;
	}
	while ((n = pread(t->fd, chunk, sizeof(chunk), t->off)) > 0) {
		t->off += n;
		if (t->len + (size_t)n > t->cap) {
			size_t cap = t->cap ? t->cap : 65536;
			while (cap < t->len + (size_t)n)
				cap *= 2;
			if ((t->buf = realloc(t->buf, cap)) == NULL)
				qsb_cli_die(QSB_E_EXECUTION_FAILED,
				    "out of memory");
			t->cap = cap;
		}
		memcpy(t->buf + t->len, chunk, (size_t)n);
		t->len += (size_t)n;
		for (i = start = 0; i < t->len; i++) {
			if (t->buf[i] != '\n')
				continue;
			if (i > start && wanted(t->buf + start, i - start, f))
				out(t->buf + start, i - start + 1);
			start = i + 1;
		}
		memmove(t->buf, t->buf + start, t->len - start);
		t->len -= start;
	}
	if (n < 0)
		qsb_cli_die(QSB_E_FILE_NOT_FOUND, "cannot read "
		    "%s/events.jsonl: %s", root.path, strerror(errno));
}

/* Whether events.jsonl is now another file than the one open. */
static bool
tail_replaced(const struct tail *t)
{
	struct stat st;

	if (fstatat(root.fd, "events.jsonl", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return t->fd < 0 || st.st_dev != t->dev || st.st_ino != t->ino;
}

static int
cmd_events(int argc, char **argv)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "follow",  no_argument,	NULL, O_FOLLOW },
		{ "session", required_argument, NULL, O_SESSION },
		{ "since",   required_argument, NULL, O_SINCE },
		{ NULL, 0, NULL, 0 }
	};
	struct evfilter f;
	struct tail t;
	struct pollfd pfd[2];
	char ev[sizeof(struct inotify_event) + NAME_MAX + 1]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	uint64_t ago;
	bool follow = false;
	int opt, in = -1;

	memset(&f, 0, sizeof(f));
	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		switch (opt) {
		case O_FOLLOW:
			follow = true;
			break;
		case O_SESSION:
			if (!qsb_id_valid(optarg))
				qsb_cli_die(QSB_E_CONFIG_INVALID, "invalid "
				    "session id '%s'", optarg);
			f.session = qsb_cli.session = optarg;
			break;
		case O_SINCE:
			f.has_since = true;
			if (qsb_parse_time(optarg, &f.since) == 0)
				break;
			if (qsb_parse_duration(optarg, &ago) == 0 &&
			    ago <= (uint64_t)qsb_now_ms()) {
				f.since = qsb_now_ms() - (int64_t)ago;
				break;
			}
			qsb_cli_die(QSB_E_CONFIG_INVALID, "--since: invalid "
			    "value '%s' (an ISO 8601 date such as "
			    "2026-11-30T14:00:00Z, or a duration such as 10m)",
			    optarg);
		default:
			qsb_cli_badopt(argv, opt);
		}
	}
	if (optind < argc)
		qsb_cli_usage("events: unexpected operand '%s'", argv[optind]);
	open_root();
	/* a reader that goes away is the normal end of a follow */
	signal(SIGPIPE, SIG_IGN);
	memset(&t, 0, sizeof(t));
	tail_open(&t);
	tail_read(&t, &f);
	if (!follow)
		goto done;
	if ((in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) >= 0 &&
	    inotify_add_watch(in, root.path, IN_MODIFY | IN_CREATE |
	    IN_MOVED_TO | IN_ONLYDIR) < 0) {
		close(in);
		in = -1;
	}
	for (;;) {
		pfd[0].fd = in;
		pfd[0].events = POLLIN;
		pfd[1].fd = STDOUT_FILENO;
		pfd[1].events = 0;	/* POLLERR: the reader is gone */
		/* inotify wakes us; the timeout covers its absence and
		 * notices a reader that left while nothing was written */
		if (poll(pfd, 2, in >= 0 ? 1000 : 200) < 0 && errno != EINTR)
			qsb_cli_die(QSB_E_EXECUTION_FAILED, "poll: %s",
			    strerror(errno));
		if (pfd[1].revents & (POLLERR | POLLHUP | POLLNVAL))
			break;
		if (in >= 0 && (pfd[0].revents & POLLIN))
			while (read(in, ev, sizeof(ev)) > 0)
				;	/* which file does not matter */
		if (tail_replaced(&t)) {
			tail_read(&t, &f);	/* the rest of the old one */
			if (t.fd >= 0)
				close(t.fd);
			tail_open(&t);
		}
		tail_read(&t, &f);
	}
done:
	if (in >= 0)
		close(in);
	if (t.fd >= 0)
		close(t.fd);
	free(t.buf);
	return 0;
}

/* --- the policy --------------------------------------------------------- */

static void
policy_write(struct qsb_jw *w, const struct qsb_policy *p)
{
	qsb_jw_obj(w);
	qsb_jw_key(w, "enabled");
	qsb_jw_bool(w, p->enabled);
	qsb_jw_key(w, "mode");
	qsb_jw_str(w, qsb_mode_names[p->mode]);
	qsb_jw_key(w, "backend");
	qsb_jw_str(w, qsb_backend_names[p->backend]);
	qsb_jw_key(w, "autoFallback");
	qsb_jw_str(w, qsb_fallback_names[p->fallback]);
	qsb_jw_obj_end(w);
}

/* A partial SandboxPolicy (JSON) over p. */
static void
policy_merge(const char *buf, size_t len, const char *src,
    struct qsb_policy *p)
{
	static const char *const keys[] = { "enabled", "mode", "backend",
	    "autoFallback", "windowsMode", NULL };
	struct qsb_json j;
	struct qsb_err e;
	char *s = NULL;

	if (qsb_json_parse(&j, buf, len, &e) < 0)
		qsb_cli_die(QSB_E_CONFIG_INVALID, "%s: %s", src, e.msg);
	if (j.t[0].type != QSB_JOBJ)
		qsb_cli_die(QSB_E_CONFIG_INVALID, "%s: expected a "
		    "SandboxPolicy object", src);
	if (qsb_json_keys_only(&j, 0, keys, "", &e) < 0 ||
	    qsb_json_want_bool(&j, 0, "enabled", false, &p->enabled, "",
	    &e) < 0 ||
	    qsb_json_want_enum(&j, 0, "mode", false, qsb_mode_names,
	    &p->mode, "", &e) < 0 ||
	    qsb_json_want_enum(&j, 0, "backend", false, qsb_backend_names,
	    &p->backend, "", &e) < 0 ||
	    qsb_json_want_enum(&j, 0, "autoFallback", false,
	    qsb_fallback_names, &p->fallback, "", &e) < 0 ||
	    qsb_json_want_str(&j, 0, "windowsMode", false, &s, "", &e) < 0)
		qsb_cli_die(QSB_E_CONFIG_INVALID, "%s: %s", src, e.msg);
	free(s);	/* the seed's Windows setting: nothing on Linux */
	qsb_json_free(&j);
}

struct policy_change {
	const char	*json, *src;	/* a partial SandboxPolicy, or NULL */
	size_t		 len;
	int		 enabled, mode, backend, fallback;	/* -1: as is */
};

/* Applies the change to the policy in force, read again under the lock,
 * and rewrites ROOT/config.json with it, every other key as it was. */
static void
policy_save(const struct policy_change *c, struct qsb_policy *p)
{
	struct qsb_json j;
	struct qsb_jw w;
	struct qsb_err e;
	struct qsb_config now;
	char *buf = NULL;
	size_t len;
	bool have = false, put = false;
	int lfd, k;

	if ((lfd = qsb_lock(root.fd, "config.lock", LOCK_EX, &e)) < 0)
		qsb_cli_fail(&e);
	/* what is there now, under the lock: no change is lost */
	if (qsb_config_load(&root, &now, &e) < 0)
		qsb_cli_fail(&e);
	*p = now.policy;
	qsb_config_free(&now);
	if (c->json != NULL)
		policy_merge(c->json, c->len, c->src, p);
	if (c->enabled >= 0)
		p->enabled = c->enabled;
	if (c->mode >= 0)
		p->mode = c->mode;
	if (c->backend >= 0)
		p->backend = c->backend;
	if (c->fallback >= 0)
		p->fallback = c->fallback;
	memset(&j, 0, sizeof(j));
	if (qsb_state_read(root.fd, "config.json", QSB_STATE_MAX, &buf, &len,
	    &e) == 0) {
		if (qsb_json_parse(&j, buf, len, &e) < 0)
			qsb_cli_fail(&e);
		have = true;
	} else if (errno != ENOENT)
		qsb_cli_fail(&e);
	qsb_jw_init(&w, 1);
	qsb_jw_obj(&w);
	if (have)
		for (k = qsb_json_first(&j, 0); k >= 0;
		    k = qsb_json_sibling(&j, 0, k)) {
			char *key = qsb_json_str(&j, k, NULL);
			if (key == NULL)
				qsb_cli_die(QSB_E_EXECUTION_FAILED,
				    "out of memory");
			qsb_jw_key(&w, key);
			if (strcmp(key, "policy") == 0) {
				policy_write(&w, p);
				put = true;
			} else
				(void)qsb_jw_value(&w, &j, k + 1);
			free(key);
		}
	if (!put) {
		qsb_jw_key(&w, "policy");
		policy_write(&w, p);
	}
	qsb_jw_obj_end(&w);
	if (qsb_jw_finish(&w) < 0)
		qsb_cli_die(QSB_E_EXECUTION_FAILED, "out of memory");
	if (qsb_state_write(root.fd, "config.json", w.buf, w.len, 0600,
	    &e) < 0)
		qsb_cli_fail(&e);
	qsb_jw_free(&w);
	if (have)
		qsb_json_free(&j);
	free(buf);
	close(lfd);
}

static int
cmd_policy(int argc, char **argv)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "auto-fallback", required_argument, NULL, O_FALLBACK },
		{ "backend",	   required_argument, NULL, O_BACKEND },
		{ "enabled",	   required_argument, NULL, O_ENABLED },
		{ "mode",	   required_argument, NULL, O_MODE },
		{ NULL, 0, NULL, 0 }
	};
	static const char *const bools[] = { "false", "true", NULL };
	int enabled = -1, mode = -1, backend = -1, fallback = -1;
	struct qsb_policy p;
	struct qsb_jw w;
	char *buf = NULL;
	size_t len = 0;
	int opt, n, fd;
	bool set;

	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		switch (opt) {
		case O_ENABLED:
			enabled = qsb_cli_enum("--enabled", optarg, bools,
			    "true or false");
			break;
		case O_MODE:
			mode = qsb_cli_enum("--mode", optarg, qsb_mode_names,
			    "strict, compat or permissive");
			break;
		case O_BACKEND:
			backend = qsb_cli_enum("--backend", optarg,
			    qsb_backend_names, "auto, native, bwrap, firejail, "
			    "docker or none");
			break;
		case O_FALLBACK:
			fallback = qsb_cli_enum("--auto-fallback", optarg,
			    qsb_fallback_names, "startup-only, session or "
			    "manual");
			break;
		default:
			qsb_cli_badopt(argv, opt);
		}
	}
	n = argc - optind;
	set = enabled >= 0 || mode >= 0 || backend >= 0 || fallback >= 0;
	if (n > 0 && strcmp(argv[optind], "show") != 0 &&
	    strcmp(argv[optind], "set") != 0)
		qsb_cli_usage("policy: unknown action '%s' (show or set)",
		    argv[optind]);
	if (n > 0 && strcmp(argv[optind], "show") == 0 && (n > 1 || set))
		qsb_cli_usage("policy show takes no operand or option");
	if (n > 0 && strcmp(argv[optind], "set") == 0) {
		if (n != 2)
			qsb_cli_usage("policy set: %s", n < 2 ? "missing FILE" :
			    "unexpected operand");
		if (set)
			qsb_cli_usage("policy set FILE does not go with the "
			    "--enabled, --mode, --backend and --auto-fallback "
			    "options");
		if (strcmp(argv[optind + 1], "-") == 0)
			fd = STDIN_FILENO;
		else if ((fd = open(argv[optind + 1], O_RDONLY |
		    O_CLOEXEC)) < 0)
			qsb_cli_die(QSB_E_FILE_NOT_FOUND, "cannot open '%s': "
			    "%s", argv[optind + 1], strerror(errno));
		if (qsb_read_all(fd, QSB_STATE_MAX, &buf, &len) < 0)
			qsb_cli_die(QSB_E_CONFIG_INVALID, "cannot read '%s': "
			    "%s", argv[optind + 1], strerror(errno));
		if (fd != STDIN_FILENO)
			close(fd);
	}
	if (buf != NULL) {
		/* bad input is refused before the root is even opened */
		struct qsb_policy check = { true, 0, 0, 0 };
		policy_merge(buf, len, strcmp(argv[optind + 1], "-") == 0 ?
		    "standard input" : argv[optind + 1], &check);
	}
	open_root();
	p = cfg.policy;
	if (set || buf != NULL) {
		struct policy_change c = { buf, NULL, len, enabled, mode,
		    backend, fallback };
		if (buf != NULL)
			c.src = strcmp(argv[optind + 1], "-") == 0 ?
			    "standard input" : argv[optind + 1];
		policy_save(&c, &p);
	}
	free(buf);
	qsb_jw_init(&w, qsb_cli.pretty);
	policy_write(&w, &p);
	qsb_cli_emit(&w);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option global_opts[] = {
		QSB_COMMON_OPTS,
		{ "backend",	  required_argument, NULL, O_BACKEND },
		{ "capabilities", no_argument,	     NULL, O_CAPS },
		{ "check",	  no_argument,	     NULL, O_CHECK },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd;
	bool caps = false, check = false;
	int opt, status, backend = -1;

	qsb_cli_init("qsb-status", synopsis);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:hV", global_opts, NULL)) !=
	    -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		switch (opt) {
		case O_BACKEND:
			backend = qsb_cli_enum("--backend", optarg,
			    qsb_backend_names, "auto, native, bwrap, firejail, "
			    "docker or none");
			break;
		case O_CAPS:
			caps = true;
			break;
		case O_CHECK:
			check = true;
			break;
		default:
			qsb_cli_badopt(argv, opt);
		}
	}
	if (optind >= argc) {
		if (backend >= 0 && !check)
			qsb_cli_usage("--backend goes with --check");
		if (check && caps)
			qsb_cli_usage("--check prints nothing: it does not go "
			    "with --capabilities");
		status = status_cmd(caps, check, backend);
		goto out;
	}
	if (caps || check || backend >= 0)
		qsb_cli_usage("--capabilities, --check and --backend go "
		    "without a command");
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0;
	if (strcmp(cmd, "events") == 0)
		status = cmd_events(argc, argv);
	else if (strcmp(cmd, "policy") == 0)
		status = cmd_policy(argc, argv);
	else
		qsb_cli_usage("unknown command '%s'", cmd);
out:
	if (opened) {
		qsb_config_free(&cfg);
		qsb_root_close(&root);
	}
	qsb_cli_exit(status);
}
