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

#include "cli.h"
#include "config.h"
#include "exec.h"
#include "json.h"
#include "parse.h"
#include "root.h"
#include "run.h"
#include "state.h"
#include "strv.h"
#include "workspace.h"

#define EXIT_OWN	125	/* qsb-exec itself failed */

static const char synopsis[] =
"usage: qsb-exec [OPTIONS] SESSION -- COMMAND [ARG...]\n"
"       qsb-exec --json [OPTIONS]\n";

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
"Exit status: the command's; 128+N if killed by signal N; 124 on timeout;\n"
"125 if qsb-exec failed; 126 if the command cannot run; 127 if not found.\n"
"See qsb-exec(1).\n";

enum {
	O_OUTLIMIT = QSB_OPT_FIRST, O_STDIO, O_MODE,
	O_BACKEND, O_NETWORK, O_NONETWORK, O_LEVEL, O_SECRET, O_JSON,
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

int
main(int argc, char *argv[])
{
	struct qsb_strv env = { NULL, 0, 0, false }, sec = { NULL, 0, 0, false };
	struct qsb_exec_req q;
	struct qsb_err e;
	struct qsb_jw w;
	const char *errstr = NULL;
	uint64_t v;
	bool json = false;
	int opt, status;

	qsb_cli_init("qsb-exec", synopsis);
	qsb_cli.fail_exit = EXIT_OWN;	/* as timeout(1): 125 is ours */
	signal(SIGPIPE, SIG_IGN);
	memset(&q, 0, sizeof(q));
	q.mode = q.backend = q.network = q.level = -1;
	q.output_limit = QSB_OUTPUT_LIMIT;
	q.stdio = QSB_STDIO_PIPE;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":C:e:hm:t:V", opts, NULL)) !=
	    -1) {
		switch (opt) {
		case 'C':
			q.cwd = optarg;
			break;
		case 'e':
			push(&env, optarg);
			break;
		case 'm':
			if (qsb_parse_size(optarg, &q.max_memory) < 0 ||
			    q.max_memory < (1 << 20))
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--max-memory: "
				    "invalid value '%s' (a size of at least "
				    "1m)", optarg);
			break;
		case 't':
			if (qsb_parse_duration(optarg, &q.timeout_ms) < 0 ||
			    q.timeout_ms == 0)
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--timeout: invalid "
				    "value '%s' (a duration such as 30s)",
				    optarg);
			break;
		case O_BACKEND:
			q.backend = qsb_cli_enum("--backend", optarg,
			    qsb_backend_names, "auto, native, bwrap, firejail, "
			    "docker or none");
			break;
		case O_JSON:
			json = true;
			break;
		case O_LEVEL:
			q.level = (int)strtonum(optarg, 0, 3, &errstr);
			if (errstr != NULL)
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--permission-level: "
				    "invalid value '%s' (0 to 3)", optarg);
			break;
		case O_MODE:
			q.mode = qsb_cli_enum("--mode", optarg, qsb_mode_names,
			    "strict, compat or permissive");
			break;
		case O_NETWORK:
			q.network = 1;
			break;
		case O_NONETWORK:
			q.network = 0;
			break;
		case O_OUTLIMIT:
			if (qsb_parse_size(optarg, &v) < 0 ||
			    v > QSB_OUTPUT_LIMIT_MAX)
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--output-limit: "
				    "invalid value '%s' (bytes, at most 1g)",
				    optarg);
			q.output_limit = (size_t)v;
			break;
		case O_SECRET:
			push(&sec, optarg);
			break;
		case O_STDIO:
			q.stdio = qsb_cli_enum("--stdio", optarg,
			    (const char *const[]){ "pipe", "inherit", NULL },
			    "pipe or inherit");
			break;
		default:
			if (qsb_cli_common(opt, argv, help) < 0)
				qsb_cli_badopt(argv, opt);
		}
	}
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
	if (qsb_root_open(&root, qsb_cli.root, &e) < 0 ||
	    qsb_config_load(&root, &cfg, &e) < 0)
		qsb_cli_fail(&e);
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
