/*
 * qsb-exec: run one command inside the sandbox of a workspace, and print
 * its ExecuteResult; exit with the command's status, as timeout(1) does.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "cli.h"
#include "config.h"
#include "exec.h"
#include "json.h"
#include "parse.h"
#include "root.h"
#include "run.h"
#include "state.h"
#include "strv.h"
#include "terminal.h"
#include "workspace.h"

#define EXIT_OWN	125	/* qsb-exec itself failed */

static const char synopsis[] =
"usage: qsb-exec [OPTIONS] SESSION -- COMMAND [ARG...]\n"
"       qsb-exec --json [OPTIONS]\n"
"       qsb-exec terminal create SESSION [OPTIONS] -- COMMAND [ARG...]\n"
"       qsb-exec terminal output TID\n"
"       qsb-exec terminal wait TID [--timeout DUR]\n"
"       qsb-exec terminal kill TID\n"
"       qsb-exec terminal release TID | --session SESSION\n"
"       qsb-exec terminal list [--session SESSION]\n"
"       qsb-exec acp [--session SESSION]\n";

static const char help[] =
"\n"
"Options:\n"
"  -C, --cwd DIR             working directory inside rootPath (default:\n"
"                            projectsPath)\n"
"  -e, --env NAME=VALUE      set a variable (repeatable)\n"
"  -t, --timeout DUR         kill the command after DUR (500ms, 30s, 5m)\n"
"  -m, --max-memory SIZE     memory limit (never above the workspace's)\n"
"      --output-limit N      bytes of output kept per stream (default 1m;\n"
"                            the end is kept)\n"
"      --stdio pipe|inherit  capture output into the result (default), or\n"
"                            connect the command to this terminal\n"
"      --mode M              strict or compat (never wider than the\n"
"                            workspace)\n"
"      --backend B           auto, native, bwrap or none\n"
"      --network, --no-network\n"
"      --permission-level N  0 read-only, 1 write, 2 write + network,\n"
"                            3 the workspace's configuration (default)\n"
"      --secret NAME         pass $NAME in and redact its value from the\n"
"                            result (repeatable)\n"
"      --json                read requests from stdin, one JSON object per\n"
"                            line; write one result per line\n"
"      --root DIR, --pretty, --json-errors, -h/--help, -V/--version\n"
"\n"
"Terminals: a command left running under a detached supervisor, with the\n"
"ACP terminal lifecycle; create takes the options above (output is kept\n"
"as one stream, --output-limit bytes).  acp serves the ACP terminal/*\n"
"methods as JSON-RPC on stdin and stdout.\n"
"\n"
"Exit status: the command's; 128+N if killed by signal N; 124 on timeout;\n"
"125 if qsb-exec failed; 126 if the command cannot run; 127 if not found.\n"
"See qsb-exec(1).\n";

enum {
	O_OUTLIMIT = QSB_OPT_FIRST, O_STDIO, O_MODE,
	O_BACKEND, O_NETWORK, O_NONETWORK, O_LEVEL, O_SECRET, O_JSON,
	O_SESSION,
};

static const struct option opts[] = {
	QSB_COMMON_OPTS,
	{ "backend",		required_argument, NULL, O_BACKEND },
	{ "cwd",		required_argument, NULL, 'C' },
	{ "env",		required_argument, NULL, 'e' },
	{ "json",		no_argument,	   NULL, O_JSON },
	{ "max-memory",		required_argument, NULL, 'm' },
	{ "mode",		required_argument, NULL, O_MODE },
	{ "network",		no_argument,	   NULL, O_NETWORK },
	{ "no-network",		no_argument,	   NULL, O_NONETWORK },
	{ "output-limit",	required_argument, NULL, O_OUTLIMIT },
	{ "permission-level",	required_argument, NULL, O_LEVEL },
	{ "secret",		required_argument, NULL, O_SECRET },
	{ "stdio",		required_argument, NULL, O_STDIO },
	{ "timeout",		required_argument, NULL, 't' },
	{ NULL, 0, NULL, 0 }
};

static struct qsb_root root;
static struct qsb_config cfg;

/* qsb_strv_add, and out of memory is the end */
static void
push(struct qsb_strv *l, const char *s)
{
	qsb_strv_add(l, s);
	if (l->nomem)
		qsb_cli_die(QSB_E_EXECUTION_FAILED, "out of memory");
}

/*
 * One run: plan, hold the workspace busy, run, record, report.  Returns
 * the exit status; on qsb-exec's own failure fills e and returns -1.
 */
static int
run_one(const char *id, struct qsb_exec_req *q, struct qsb_jw *out,
    struct qsb_err *e)
{
	struct qsb_run r;
	struct qsb_exec_result res;
	int status;

	if (qsb_run_prepare(&r, &root, &cfg, id, q, e) < 0)
		return -1;
	if (qsb_run_hold(&r, e) < 0 || qsb_run_exec(&r, &res, e) < 0) {
		qsb_run_free(&r);
		return -1;
	}
	status = res.exit_code;
	if (r.plan.stdio == QSB_STDIO_PIPE)
		qsb_exec_result_write(out, &r.plan, &res, true);
	qsb_exec_result_free(&res);
	qsb_run_free(&r);
	return status;
}

/* --- --json: requests on stdin ----------------------------------------- */

static int
json_options(const struct qsb_json *j, int o, struct qsb_exec_req *q,
    struct qsb_strv *env, struct qsb_strv *sec, char **cwd, struct qsb_err *e)
{
	static const char *const keys[] = { "cwd", "env", "timeout",
	    "maxMemory", "stdio", "permissionLevel", "outputLimit", "mode",
	    "backend", "network", "secrets", NULL };
	char *s = NULL, *kv;
	long long v;
	bool b;
	int k, r, i;

	if (j->t[o].type != QSB_JOBJ)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field 'options': expected an object");
	if (qsb_json_keys_only(j, o, keys, "options", e) < 0 ||
	    qsb_json_want_str(j, o, "cwd", false, cwd, "options", e) < 0)
		return -1;
	if ((k = qsb_json_get(j, o, "env")) >= 0) {
		if (j->t[k].type != QSB_JOBJ)
			return qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "field 'options.env': expected an object");
		for (i = qsb_json_first(j, k); i >= 0;
		    i = qsb_json_sibling(j, k, i)) {
			char *name = qsb_json_str(j, i, NULL), *val;
			if (j->t[i + 1].type != QSB_JSTR) {
				qsb_err_set(e, QSB_E_CONFIG_INVALID, "field "
				    "'options.env.%s': expected a string",
				    name ? name : "?");
				free(name);
				return -1;
			}
			val = qsb_json_str(j, i + 1, NULL);
			if (name == NULL || val == NULL ||
			    asprintf(&kv, "%s=%s", name, val) < 0) {
				free(name);
				free(val);
				return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
				    "out of memory");
			}
			push(env, kv);
			free(kv);
			free(name);
			free(val);
		}
	}
	if ((r = qsb_json_want_i64(j, o, "timeout", false, 0, 1LL << 53, &v,
	    "options", e)) < 0)
		return -1;
	if (r > 0)
		q->timeout_ms = (uint64_t)v;
	if ((r = qsb_json_want_str(j, o, "maxMemory", false, &s, "options",
	    e)) < 0)
		return -1;
	if (r > 0) {
		if (qsb_parse_size(s, &q->max_memory) < 0 ||
		    q->max_memory < (1 << 20)) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID, "field "
			    "'options.maxMemory': invalid size '%s'", s);
			free(s);
			return -1;
		}
		free(s);
		s = NULL;
	}
	if ((r = qsb_json_want_str(j, o, "stdio", false, &s, "options", e)) < 0)
		return -1;
	if (r > 0) {
		bool ok = strcmp(s, "pipe") == 0;
		free(s);
		s = NULL;
		if (!ok)
			return qsb_err_set(e, QSB_E_CONFIG_INVALID, "field "
			    "'options.stdio': only \"pipe\" with --json");
	}
	if ((r = qsb_json_want_i64(j, o, "permissionLevel", false, 0, 3, &v,
	    "options", e)) < 0)
		return -1;
	if (r > 0)
		q->level = (int)v;
	if ((r = qsb_json_want_i64(j, o, "outputLimit", false, 0,
	    (long long)QSB_OUTPUT_LIMIT_MAX, &v, "options", e)) < 0)
		return -1;
	if (r > 0)
		q->output_limit = (size_t)v;
	if (qsb_json_want_enum(j, o, "mode", false, qsb_mode_names, &q->mode,
	    "options", e) < 0 ||
	    qsb_json_want_enum(j, o, "backend", false, qsb_backend_names,
	    &q->backend, "options", e) < 0)
		return -1;
	if ((r = qsb_json_want_bool(j, o, "network", false, &b, "options",
	    e)) < 0)
		return -1;
	if (r > 0)
		q->network = b;
	if ((k = qsb_json_get(j, o, "secrets")) >= 0) {
		if (j->t[k].type != QSB_JARR)
			return qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "field 'options.secrets': expected an array");
		for (i = qsb_json_first(j, k); i >= 0;
		    i = qsb_json_sibling(j, k, i)) {
			if (j->t[i].type != QSB_JSTR ||
			    (s = qsb_json_str(j, i, NULL)) == NULL)
				return qsb_err_set(e, QSB_E_CONFIG_INVALID,
				    "field 'options.secrets': expected "
				    "strings");
			push(sec, s);
			free(s);
			s = NULL;
		}
	}
	return 0;
}

static void
emit_error_line(const struct qsb_err *e, const char *session)
{
	struct qsb_jw w;

	qsb_jw_init(&w, 0);
	qsb_cli_err_json(&w, e, session);
	qsb_cli_emit(&w);
	fflush(stdout);
}

/* One request line: {"sessionId","command","args"?,"options"?}.  Without
 * "args", command is a shell command line (sh -c). */
static int
json_request(const char *line, size_t len, const struct qsb_exec_req *base)
{
	static const char *const keys[] = { "sessionId", "command", "args",
	    "options", NULL };
	struct qsb_strv argv = { NULL, 0, 0, false }, env = { NULL, 0, 0, false }, sec = { NULL, 0, 0, false };
	struct qsb_exec_req q = *base;
	struct qsb_json j;
	struct qsb_err e;
	struct qsb_jw w;
	char *id = NULL, *cmd = NULL, *cwd = NULL, *s;
	int k, i, rc = -1, status;

	if (qsb_json_parse(&j, line, len, &e) < 0) {
		emit_error_line(&e, NULL);
		return -1;
	}
	if (j.t[0].type != QSB_JOBJ) {
		qsb_err_set(&e, QSB_E_CONFIG_INVALID, "expected an object");
		goto bad;
	}
	if (qsb_json_keys_only(&j, 0, keys, "", &e) < 0 ||
	    qsb_json_want_str(&j, 0, "sessionId", true, &id, "", &e) < 0 ||
	    qsb_json_want_str(&j, 0, "command", true, &cmd, "", &e) < 0)
		goto bad;
	if (*cmd == '\0') {
		qsb_err_set(&e, QSB_E_CONFIG_INVALID, "field 'command' is empty");
		goto bad;
	}
	if ((k = qsb_json_get(&j, 0, "args")) >= 0) {
		if (j.t[k].type != QSB_JARR) {
			qsb_err_set(&e, QSB_E_CONFIG_INVALID,
			    "field 'args': expected an array of strings");
			goto bad;
		}
		push(&argv, cmd);
		for (i = qsb_json_first(&j, k); i >= 0;
		    i = qsb_json_sibling(&j, k, i)) {
			size_t l;
			if (j.t[i].type != QSB_JSTR ||
			    (s = qsb_json_str(&j, i, &l)) == NULL ||
			    strlen(s) != l) {
				qsb_err_set(&e, QSB_E_CONFIG_INVALID,
				    "field 'args': expected strings without "
				    "NUL");
				goto bad;
			}
			push(&argv, s);
			free(s);
		}
	} else {
		push(&argv, "/bin/sh");
		push(&argv, "-c");
		push(&argv, cmd);
	}
	if ((k = qsb_json_get(&j, 0, "options")) >= 0 &&
	    json_options(&j, k, &q, &env, &sec, &cwd, &e) < 0)
		goto bad;
	q.argv = argv.v;
	q.env = env.v;
	q.secrets = sec.v;
	q.cwd = cwd ? cwd : base->cwd;
	qsb_jw_init(&w, qsb_cli.pretty);
	if ((status = run_one(id, &q, &w, &e)) < 0) {
		qsb_jw_free(&w);
		goto bad;
	}
	qsb_cli_emit(&w);
	fflush(stdout);
	rc = 0;
	goto out;
bad:
	emit_error_line(&e, id);
out:
	qsb_json_free(&j);
	qsb_strv_free(argv.v);
	qsb_strv_free(env.v);
	qsb_strv_free(sec.v);
	free(id);
	free(cmd);
	free(cwd);
	return rc;
}

static int
json_loop(const struct qsb_exec_req *base)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int failed = 0;

	while ((n = getline(&line, &cap, stdin)) > 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (n == 0)
			continue;
		if (json_request(line, (size_t)n, base) < 0)
			failed = 1;
	}
	free(line);
	return failed ? EXIT_OWN : 0;
}

/* The options of a run (qsb-exec itself, terminal create). */
static void
parse_opts(int argc, char **argv, struct qsb_exec_req *q,
    struct qsb_strv *env, struct qsb_strv *sec, bool *json)
{
	const char *errstr = NULL;
	uint64_t v;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":C:e:hm:t:V", opts, NULL)) !=
	    -1) {
		switch (opt) {
		case 'C':
			q->cwd = optarg;
			break;
		case 'e':
			push(env, optarg);
			break;
		case 'm':
			if (qsb_parse_size(optarg, &q->max_memory) < 0 ||
			    q->max_memory < (1 << 20))
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--max-memory: "
				    "invalid value '%s' (a size of at least "
				    "1m)", optarg);
			break;
		case 't':
			if (qsb_parse_duration(optarg, &q->timeout_ms) < 0 ||
			    q->timeout_ms == 0)
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--timeout: invalid "
				    "value '%s' (a duration such as 30s)",
				    optarg);
			break;
		case O_BACKEND:
			q->backend = qsb_cli_enum("--backend", optarg,
			    qsb_backend_names, "auto, native, bwrap, firejail, "
			    "docker or none");
			break;
		case O_JSON:
			*json = true;
			break;
		case O_LEVEL:
			q->level = (int)strtonum(optarg, 0, 3, &errstr);
			if (errstr != NULL)
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--permission-level: "
				    "invalid value '%s' (0 to 3)", optarg);
			break;
		case O_MODE:
			q->mode = qsb_cli_enum("--mode", optarg, qsb_mode_names,
			    "strict, compat or permissive");
			break;
		case O_NETWORK:
			q->network = 1;
			break;
		case O_NONETWORK:
			q->network = 0;
			break;
		case O_OUTLIMIT:
			if (qsb_parse_size(optarg, &v) < 0 ||
			    v > QSB_OUTPUT_LIMIT_MAX)
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--output-limit: "
				    "invalid value '%s' (bytes, at most 1g)",
				    optarg);
			q->output_limit = (size_t)v;
			break;
		case O_SECRET:
			push(sec, optarg);
			break;
		case O_STDIO:
			q->stdio = qsb_cli_enum("--stdio", optarg,
			    (const char *const[]){ "pipe", "inherit", NULL },
			    "pipe or inherit");
			break;
		default:
			if (qsb_cli_common(opt, argv, help) < 0)
				qsb_cli_badopt(argv, opt);
		}
	}
}

/* --- terminals ------------------------------------------------------------ */

static bool opened;

static void
open_root(void)
{
	qsb_cli_open(&root, &cfg);
	opened = true;
}

static const char *const term_cmds[] = { "create", "output", "wait", "kill",
    "release", "list", NULL };

/* The index of "terminal" (followed by one of its commands or an option)
 * or "acp" (followed by nothing or an option) after the common options;
 * 0 when this is a run: a session may be called terminal or acp. */
static int
subcommand(int argc, char **argv)
{
	int k = 1, i;

	while (k < argc) {
		if (strcmp(argv[k], "--root") == 0)
			k += 2;
		else if (strncmp(argv[k], "--root=", 7) == 0 ||
		    strcmp(argv[k], "--pretty") == 0 ||
		    strcmp(argv[k], "--json-errors") == 0)
			k++;
		else
			break;
	}
	if (k >= argc)
		return 0;
	if (strcmp(argv[k], "terminal") == 0 && k + 1 < argc) {
		for (i = 0; term_cmds[i]; i++)
			if (strcmp(argv[k + 1], term_cmds[i]) == 0)
				return k;
		if (argv[k + 1][0] == '-' && strcmp(argv[k + 1], "--") != 0)
			return k;
	}
	if (strcmp(argv[k], "acp") == 0 && (k + 1 == argc ||
	    (argv[k + 1][0] == '-' && strcmp(argv[k + 1], "--") != 0)))
		return k;
	return 0;
}

/* The common options before the subcommand, argv[1 .. k). */
static void
common_opts(int k, char **argv)
{
	static const struct option copts[] = {
		QSB_COMMON_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	char *sub[64];
	int opt, i;

	if (k > 63)
		qsb_cli_usage("too many options");
	for (i = 0; i < k; i++)
		sub[i] = argv[i];
	sub[k] = NULL;
	opterr = 0;
	optind = 0;
	while ((opt = getopt_long(k, sub, ":hV", copts, NULL)) != -1)
		if (qsb_cli_common(opt, sub, help) < 0)
			qsb_cli_badopt(sub, opt);
	optind = 0;
}

/* The options of terminal commands other than create. */
static void
term_opts(int argc, char **argv, const char *cmd, const char **session,
    int64_t *timeout)
{
	static const struct option topts[] = {
		QSB_COMMON_OPTS,
		{ "session",	required_argument, NULL, O_SESSION },
		{ "timeout",	required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t v;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ht:V", topts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		if (opt == O_SESSION && session != NULL) {
			if (!qsb_id_valid(optarg))
				qsb_cli_die(QSB_E_CONFIG_INVALID, "invalid "
				    "session id '%s'", optarg);
			*session = qsb_cli.session = optarg;
		} else if (opt == 't' && timeout != NULL) {
			if (qsb_parse_duration(optarg, &v) < 0 ||
			    v > ((uint64_t)1 << 40))
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--timeout: "
				    "invalid value '%s' (a duration such as 30s)",
				    optarg);
			*timeout = (int64_t)v;
		} else if (opt == O_SESSION || opt == 't')
			qsb_cli_usage("terminal %s: unknown option '%s'", cmd,
			    argv[optind - 1]);
		else
			qsb_cli_badopt(argv, opt);
	}
}

/* The one operand TID of output, wait, kill and release. */
static const char *
tid_operand(int argc, char **argv, const char *cmd)
{
	if (optind >= argc)
		qsb_cli_usage("terminal %s: missing TID", cmd);
	if (optind + 1 < argc)
		qsb_cli_usage("terminal %s: unexpected operand '%s'", cmd,
		    argv[optind + 1]);
	if (!qsb_tid_valid(argv[optind]))
		qsb_cli_die(QSB_E_CONFIG_INVALID, "'%s' is not a terminal id "
		    "(16 hexadecimal digits)", argv[optind]);
	return argv[optind];
}

static void
open_term(const char *tid, struct qsb_term *t)
{
	struct qsb_err e;

	open_root();
	if (qsb_term_open(&root, tid, t, &e) < 0)
		qsb_cli_fail(&e);
	qsb_cli.session = t->sid;
}

/* The status qsb-exec itself would have exited with. */
static int
exit_status_of(const struct qsb_term_exit *x)
{
	if (x->lost)
		return EXIT_OWN;
	if (x->timed_out)
		return 124;
	return x->signal ? 128 + x->signal : x->exit_code;
}

static int
cmd_terminal(int argc, char **argv, struct qsb_exec_req *q)
{
	struct qsb_strv env = { NULL, 0, 0, false }, sec = { NULL, 0, 0, false };
	struct qsb_term t;
	struct qsb_term_exit x;
	struct qsb_err e;
	struct qsb_jw w;
	const char *cmd = argc > 0 ? argv[0] : "", *session = NULL, *tid;
	char id[QSB_TID_LEN + 1];
	int64_t timeout = -1;
	bool json = false;
	int n, status = 0;

	if (argc < 1 || argv[0][0] == '-') {
		/* terminal --help */
		term_opts(argc + 1, argv - 1, "", NULL, NULL);
		qsb_cli_usage("terminal: missing command (create, output, "
		    "wait, kill, release, list)");
	}
	optind = 1;
	qsb_jw_init(&w, qsb_cli.pretty);
	if (strcmp(cmd, "create") == 0) {
		parse_opts(argc, argv, q, &env, &sec, &json);
		if (json)
			qsb_cli_usage("terminal create: --json does not go "
			    "with it");
		if (q->stdio != QSB_STDIO_PIPE)
			qsb_cli_usage("terminal create: the output is kept "
			    "for terminal output; --stdio does not go with it");
		if (optind >= argc)
			qsb_cli_usage("terminal create: missing SESSION");
		qsb_cli.session = argv[optind];
		if (optind + 1 >= argc)
			qsb_cli_usage("terminal create: missing COMMAND");
		q->env = env.v;
		q->secrets = sec.v;
		q->argv = argv + optind + 1;
		open_root();
		if (qsb_term_create(&root, &cfg, argv[optind], q, id, &e) < 0)
			qsb_cli_fail(&e);
		qsb_jw_obj(&w);
		qsb_jw_key(&w, "terminalId");
		qsb_jw_str(&w, id);
		qsb_jw_obj_end(&w);
		qsb_strv_free(env.v);
		qsb_strv_free(sec.v);
	} else if (strcmp(cmd, "output") == 0) {
		term_opts(argc, argv, cmd, NULL, NULL);
		open_term(tid_operand(argc, argv, cmd), &t);
		if (qsb_term_output_write(&w, &t, &e) < 0)
			qsb_cli_fail(&e);
		qsb_term_close(&t);
	} else if (strcmp(cmd, "wait") == 0) {
		term_opts(argc, argv, cmd, NULL, &timeout);
		open_term(tid_operand(argc, argv, cmd), &t);
		if ((n = qsb_term_wait(&t, timeout, &x, &e)) < 0)
			qsb_cli_fail(&e);
		qsb_term_close(&t);
		if (n == 1) {
			/* as timeout(1): the command runs on */
			qsb_jw_free(&w);
			return 124;
		}
		qsb_term_exit_write(&w, &x);
		status = exit_status_of(&x);
	} else if (strcmp(cmd, "kill") == 0) {
		term_opts(argc, argv, cmd, NULL, NULL);
		open_term(tid_operand(argc, argv, cmd), &t);
		if (qsb_term_kill(&t, &e) < 0 ||
		    qsb_term_status(&t, &x, &e) < 0)
			qsb_cli_fail(&e);
		qsb_jw_obj(&w);
		qsb_jw_key(&w, "terminalId");
		qsb_jw_str(&w, t.tid);
		qsb_jw_key(&w, "exitStatus");
		qsb_term_exit_write(&w, &x);
		qsb_jw_obj_end(&w);
		qsb_term_close(&t);
	} else if (strcmp(cmd, "release") == 0) {
		term_opts(argc, argv, cmd, &session, NULL);
		if (session != NULL) {
			if (optind < argc)
				qsb_cli_usage("terminal release: a TID or "
				    "--session, not both");
			open_root();
			if (qsb_term_release_session(&root, session, &n,
			    &e) < 0)
				qsb_cli_fail(&e);
		} else {
			tid = tid_operand(argc, argv, cmd);
			open_term(tid, &t);
			if (qsb_term_release(&root, &t, &e) < 0)
				qsb_cli_fail(&e);
			n = 1;
		}
		qsb_jw_obj(&w);
		qsb_jw_key(&w, "released");
		qsb_jw_int(&w, n);
		qsb_jw_obj_end(&w);
	} else if (strcmp(cmd, "list") == 0) {
		term_opts(argc, argv, cmd, &session, NULL);
		if (optind < argc)
			qsb_cli_usage("terminal list: unexpected operand '%s'",
			    argv[optind]);
		open_root();
		if (qsb_term_list(&root, session, &w, &e) < 0)
			qsb_cli_fail(&e);
	} else
		qsb_cli_usage("terminal: unknown command '%s' (create, output, "
		    "wait, kill, release, list)", cmd);
	qsb_cli_emit(&w);
	return status;
}

static int
cmd_acp(int argc, char **argv)
{
	static const struct option aopts[] = {
		QSB_COMMON_OPTS,
		{ "session",	required_argument, NULL, O_SESSION },
		{ NULL, 0, NULL, 0 }
	};
	const char *session = NULL;
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":hV", aopts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		if (opt == O_SESSION) {
			if (!qsb_id_valid(optarg))
				qsb_cli_die(QSB_E_CONFIG_INVALID, "invalid "
				    "session id '%s'", optarg);
			session = optarg;
		} else
			qsb_cli_badopt(argv, opt);
	}
	if (optind < argc)
		qsb_cli_usage("acp: unexpected operand '%s'", argv[optind]);
	open_root();
	return qsb_acp_serve(&root, &cfg, session, STDIN_FILENO,
	    STDOUT_FILENO);
}

int
main(int argc, char *argv[])
{
	struct qsb_strv env = { NULL, 0, 0, false }, sec = { NULL, 0, 0, false };
	struct qsb_exec_req q;
	struct qsb_err e;
	struct qsb_jw w;
	bool json = false;
	int status, k;

	qsb_cli_init("qsb-exec", synopsis);
	qsb_cli.fail_exit = EXIT_OWN;	/* as timeout(1): 125 is ours */
	signal(SIGPIPE, SIG_IGN);
	memset(&q, 0, sizeof(q));
	q.mode = q.backend = q.network = q.level = -1;
	q.output_limit = QSB_OUTPUT_LIMIT;
	q.stdio = QSB_STDIO_PIPE;
	/* qsb-exec terminal ..., qsb-exec acp: after any common options */
	if ((k = subcommand(argc, argv)) > 0) {
		common_opts(k, argv);
		if (strcmp(argv[k], "acp") == 0)
			status = cmd_acp(argc - k, argv + k);
		else
			status = cmd_terminal(argc - k - 1, argv + k + 1, &q);
		if (opened) {
			qsb_config_free(&cfg);
			qsb_root_close(&root);
		}
		qsb_cli_exit(status);
	}
	parse_opts(argc, argv, &q, &env, &sec, &json);
	q.env = env.v;
	q.secrets = sec.v;
	if (json) {
		if (optind < argc)
			qsb_cli_usage("--json takes no operands");
		if (q.stdio == QSB_STDIO_INHERIT)
			qsb_cli_usage("--json writes results: --stdio inherit "
			    "does not go with it");
		q.stdin_null = true;
	} else {
		if (optind >= argc)
			qsb_cli_usage("missing SESSION");
		qsb_cli.session = argv[optind];
		if (optind + 1 >= argc)
			qsb_cli_usage("missing COMMAND");
		if (q.stdio == QSB_STDIO_INHERIT && sec.n > 0)
			qsb_cli_usage("--secret redacts the result; with "
			    "--stdio inherit there is none");
		q.argv = argv + optind + 1;
	}
	qsb_cli_open(&root, &cfg);
	if (json)
		status = json_loop(&q);
	else {
		qsb_jw_init(&w, qsb_cli.pretty);
		if ((status = run_one(argv[optind], &q, &w, &e)) < 0) {
			qsb_jw_free(&w);
			qsb_cli_fail(&e);
		}
		if (q.stdio == QSB_STDIO_PIPE)
			qsb_cli_emit(&w);
		else
			qsb_jw_free(&w);
	}
	qsb_strv_free(env.v);
	qsb_strv_free(sec.v);
	qsb_config_free(&cfg);
	qsb_root_close(&root);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		qsb_err_sys(&e, QSB_E_FILE_WRITE_FAILED,
		    "cannot write to standard output");
		qsb_cli_fail(&e);
	}
	return status;
}
