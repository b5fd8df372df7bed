/*
 * qsb-perm: decide, request, approve and deny permissions against a
 * policy, so that a person or a script can gate what an agent does.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "parse.h"
#include "perm.h"
#include "policy.h"
#include "root.h"
#include "state.h"

static const char synopsis[] =
"usage: qsb-perm [--root DIR] [--pretty] [--json-errors] COMMAND ...\n"
"       qsb-perm check SESSION TYPE TARGET\n"
"       qsb-perm check --batch\n"
"       qsb-perm request SESSION TYPE TARGET [--reason R] [--wait [DUR]]\n"
"       qsb-perm approve ID... [--by user|system] [--always] [--reason R]\n"
"       qsb-perm deny ID... [--reason R]\n"
"       qsb-perm pending [--session SESSION]\n"
"       qsb-perm clear-cache [--session SESSION]\n"
"       qsb-perm policy [show | set FILE|-]\n";

static const char help[] =
"\n"
"TYPE: file:read file:write file:delete command:execute network:access\n"
"      network:download package:install:npm package:install:python\n"
"      package:install:system\n"
"\n"
"check and request exit 0 when allowed, 1 when denied, 3 when pending (a\n"
"request was made; its id is in the result).  Options for every command:\n"
"--root DIR, --pretty, --json-errors, -h/--help, -V/--version.\n"
"See qsb-perm(1) and qsb-policy(5).\n";

enum {
	O_BATCH = QSB_OPT_FIRST, O_REASON, O_WAIT, O_BY,
	O_ALWAYS, O_SESSION,
};

static struct qsb_root root;
static struct qsb_perm pm;
static bool opened;

static void
open_store(void)
{
	struct qsb_err e;

	if (qsb_root_open(&root, qsb_cli.root, &e) < 0 ||
	    qsb_perm_open(&pm, &root, &e) < 0)
		qsb_cli_fail(&e);
	opened = true;
}

static enum qsb_ptype
type_arg(const char *s)
{
	int t = qsb_ptype_lookup(s);

	if (t < 0)
		qsb_cli_die(QSB_E_CONFIG_INVALID, "unknown permission type "
		    "'%s' (file:read, file:write, file:delete, command:execute, "
		    "network:access, network:download, package:install:npm, "
		    "package:install:python, package:install:system)", s);
	return (enum qsb_ptype)t;
}

static void
result_write(struct qsb_jw *w, const struct qsb_perm_result *r)
{
	qsb_jw_obj(w);
	qsb_jw_key(w, "allowed");
	qsb_jw_bool(w, r->status == QSB_PERM_ALLOWED);
	qsb_jw_key(w, "reason");
	qsb_jw_str(w, r->reason);
	if (r->id[0]) {
		qsb_jw_key(w, "requestId");
		qsb_jw_str(w, r->id);
	}
	qsb_jw_key(w, "status");
	qsb_jw_str(w, r->status == QSB_PERM_ALLOWED ? "allowed" :
	    r->status == QSB_PERM_DENIED ? "denied" : "pending");
	qsb_jw_obj_end(w);
}

/* check --batch: one JSON object per line in, one result per line out,
 * written (and flushed) as each line is decided. */
static int
batch(void)
{
	static const char *const keys[] = { "sessionId", "type", "target",
	    "reason", NULL };
	struct qsb_perm_result r;
	struct qsb_json j;
	struct qsb_err e;
	struct qsb_jw w;
	char *line = NULL, *sess, *type, *target, *reason;
	size_t cap = 0;
	ssize_t n;
	int t, status = 0, bad;

	while ((n = getline(&line, &cap, stdin)) > 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (n == 0)
			continue;
		sess = type = target = reason = NULL;
		bad = 1;
		if (qsb_json_parse(&j, line, (size_t)n, &e) == 0) {
			if (j.t[0].type != QSB_JOBJ)
				qsb_err_set(&e, QSB_E_CONFIG_INVALID,
				    "expected an object");
			else if (qsb_json_keys_only(&j, 0, keys, "", &e) == 0 &&
			    qsb_json_want_str(&j, 0, "sessionId", true, &sess,
			    "", &e) >= 0 &&
			    qsb_json_want_str(&j, 0, "type", true, &type, "",
			    &e) >= 0 &&
			    qsb_json_want_str(&j, 0, "target", true, &target,
			    "", &e) >= 0 &&
			    qsb_json_want_str(&j, 0, "reason", false, &reason,
			    "", &e) >= 0) {
				if ((t = qsb_ptype_lookup(type)) < 0)
					qsb_err_set(&e, QSB_E_CONFIG_INVALID,
					    "field 'type': unknown permission "
					    "type '%s'", type);
				else if (qsb_perm_check(&pm, sess,
				    (enum qsb_ptype)t, target, reason, &r,
				    &e) == 0)
					bad = 0;
			}
			qsb_json_free(&j);
		}
		qsb_jw_init(&w, qsb_cli.pretty);
		if (bad) {
			qsb_cli_err_json(&w, &e, sess);
			if (status == 0)
				status = qsb_code_exit(e.code);
		} else
			result_write(&w, &r);
		qsb_cli_emit(&w);
		fflush(stdout);
		free(sess);
		free(type);
		free(target);
		free(reason);
	}
	free(line);
	return status;
}

static int
cmd_check(int argc, char **argv, bool request)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "batch",  no_argument,	NULL, O_BATCH },
		{ "reason", required_argument,	NULL, O_REASON },
		{ "wait",   optional_argument,	NULL, O_WAIT },
		{ NULL, 0, NULL, 0 }
	};
	struct qsb_perm_result r;
	struct qsb_err e;
	struct qsb_jw w;
	const char *reason = NULL, *waitarg = NULL;
	const char *name = request ? "request" : "check";
	bool isbatch = false, wait = false;
	uint64_t dur = 0;
	int opt, n;

	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		if (opt == O_BATCH && !request)
			isbatch = true;
		else if (opt == O_REASON && request)
			reason = optarg;
		else if (opt == O_WAIT && request) {
			wait = true;
			waitarg = optarg;
		} else
			qsb_cli_badopt(argv, opt);
	}
	n = argc - optind;
	if (isbatch) {
		if (n > 0)
			qsb_cli_usage("check --batch: unexpected operand '%s'",
			    argv[optind]);
		open_store();
		return batch();
	}
	/* --wait DUR: the duration may follow as a fourth operand */
	if (wait && waitarg == NULL && n == 4)
		waitarg = argv[optind + 3];
	else if (n > 3)
		qsb_cli_usage("%s: unexpected operand '%s'", name,
		    argv[optind + 3]);
	if (n < 3)
		qsb_cli_usage("%s: missing %s", name, n == 0 ? "SESSION" :
		    n == 1 ? "TYPE" : "TARGET");
	qsb_cli.session = argv[optind];
	if (waitarg != NULL && (qsb_parse_duration(waitarg, &dur) < 0 ||
	    dur > ((uint64_t)1 << 53)))
		qsb_cli_die(QSB_E_CONFIG_INVALID, "--wait: invalid duration "
		    "'%s'", waitarg);
	enum qsb_ptype t = type_arg(argv[optind + 1]);
	open_store();
	if (qsb_perm_check(&pm, argv[optind], t, argv[optind + 2], reason, &r,
	    &e) < 0)
		qsb_cli_fail(&e);
	if (wait && r.status == QSB_PERM_PENDING) {
		char id[QSB_PERM_IDLEN + 1];
		strlcpy(id, r.id, sizeof(id));
		if (qsb_perm_wait(&pm, id, waitarg ? (int64_t)dur : -1, &r,
		    &e) < 0)
			qsb_cli_fail(&e);
	}
	qsb_jw_init(&w, qsb_cli.pretty);
	result_write(&w, &r);
	qsb_cli_emit(&w);
	return r.status;
}

static int
cmd_decide(int argc, char **argv, bool approve)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "always", no_argument,	NULL, O_ALWAYS },
		{ "by",	    required_argument,	NULL, O_BY },
		{ "reason", required_argument,	NULL, O_REASON },
		{ NULL, 0, NULL, 0 }
	};
	struct qsb_err e, first;
	struct qsb_jw w;
	const char *by = "user", *reason = NULL;
	bool always = false;
	int opt, i, done = 0;

	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		if (opt == O_REASON)
			reason = optarg;
		else if (opt == O_ALWAYS && approve)
			always = true;
		else if (opt == O_BY && approve)
			by = optarg;
		else
			qsb_cli_badopt(argv, opt);
	}
	if (optind >= argc)
		qsb_cli_usage("%s: missing ID", approve ? "approve" : "deny");
	if (strcmp(by, "user") != 0 && strcmp(by, "system") != 0)
		qsb_cli_die(QSB_E_CONFIG_INVALID, "--by: invalid value '%s' "
		    "(user or system)", by);
	for (i = optind; i < argc; i++)
		if (!qsb_perm_id_valid(argv[i]))
			qsb_cli_die(QSB_E_CONFIG_INVALID, "'%s' is not a "
			    "request id (16 hexadecimal digits)", argv[i]);
	open_store();
	memset(&first, 0, sizeof(first));
	qsb_jw_init(&w, qsb_cli.pretty);
	qsb_jw_arr(&w);
	for (i = optind; i < argc; i++) {
		int rc = approve ?
		    qsb_perm_approve(&pm, argv[i], by, always, reason, &w, &e) :
		    qsb_perm_deny(&pm, argv[i], reason, &w, &e);
		if (rc < 0) {
			qsb_cli_diag(&e);
			if (first.code == QSB_OK)
				first = e;
		} else
			done++;
	}
	qsb_jw_arr_end(&w);
	/* what was done, if anything: a failure alone prints nothing */
	if (done > 0)
		qsb_cli_emit(&w);
	else
		qsb_jw_free(&w);
	return first.code == QSB_OK ? 0 : qsb_code_exit(first.code);
}

static int
cmd_list(int argc, char **argv, bool clear)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "session", required_argument, NULL, O_SESSION },
		{ NULL, 0, NULL, 0 }
	};
	const char *session = NULL;
	struct qsb_err e;
	struct qsb_jw w;
	int opt, n;

	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		if (opt == O_SESSION)
			session = optarg;
		else
			qsb_cli_badopt(argv, opt);
	}
	if (optind < argc)
		qsb_cli_usage("unexpected operand '%s'", argv[optind]);
	if (session != NULL && !qsb_id_valid(session))
		qsb_cli_die(QSB_E_CONFIG_INVALID, "invalid session id '%s'",
		    session);
	qsb_cli.session = session;
	open_store();
	qsb_jw_init(&w, qsb_cli.pretty);
	if (clear) {
		if (qsb_perm_clear(&pm, session, &n, &e) < 0)
			qsb_cli_fail(&e);
		qsb_jw_obj(&w);
		qsb_jw_key(&w, "cleared");
		qsb_jw_int(&w, n);
		qsb_jw_obj_end(&w);
	} else if (qsb_perm_pending(&pm, session, &w, &e) < 0)
		qsb_cli_fail(&e);
	qsb_cli_emit(&w);
	return 0;
}

static int
cmd_policy(int argc, char **argv)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct qsb_err e;
	struct qsb_jw w;
	char *buf = NULL;
	size_t len;
	int opt, fd, n;

	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1)
		if (qsb_cli_common(opt, argv, help) < 0)
			qsb_cli_badopt(argv, opt);
	n = argc - optind;
	if (n == 0 || (n == 1 && strcmp(argv[optind], "show") == 0)) {
		open_store();
		qsb_jw_init(&w, qsb_cli.pretty);
		qsb_policy_write(&w, &pm.pol);
		qsb_cli_emit(&w);
		return 0;
	}
	if (strcmp(argv[optind], "set") != 0)
		qsb_cli_usage("policy: unknown action '%s' (show or set)",
		    argv[optind]);
	if (n != 2)
		qsb_cli_usage("policy set: %s", n < 2 ? "missing FILE" :
		    "unexpected operand");
	if (strcmp(argv[optind + 1], "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(argv[optind + 1], O_RDONLY | O_CLOEXEC)) < 0)
		qsb_cli_die(QSB_E_FILE_NOT_FOUND, "cannot open '%s': %s",
		    argv[optind + 1], strerror(errno));
	if (qsb_read_all(fd, QSB_STATE_MAX, &buf, &len) < 0)
		qsb_cli_die(QSB_E_CONFIG_INVALID, "cannot read '%s': %s",
		    argv[optind + 1], strerror(errno));
	if (fd != STDIN_FILENO)
		close(fd);
	open_store();
	if (qsb_perm_policy_set(&pm, buf, len, &e) < 0) {
		free(buf);
		qsb_cli_fail(&e);
	}
	free(buf);
	qsb_jw_init(&w, qsb_cli.pretty);
	qsb_policy_write(&w, &pm.pol);
	qsb_cli_emit(&w);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option global_opts[] = {
		QSB_COMMON_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd;
	int opt, status;

	qsb_cli_init("qsb-perm", synopsis);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:hV", global_opts, NULL)) != -1)
		if (qsb_cli_common(opt, argv, help) < 0)
			qsb_cli_badopt(argv, opt);
	if (optind >= argc)
		qsb_cli_usage("missing COMMAND");
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0;
	if (strcmp(cmd, "check") == 0)
		status = cmd_check(argc, argv, false);
	else if (strcmp(cmd, "request") == 0)
		status = cmd_check(argc, argv, true);
	else if (strcmp(cmd, "approve") == 0)
		status = cmd_decide(argc, argv, true);
	else if (strcmp(cmd, "deny") == 0)
		status = cmd_decide(argc, argv, false);
	else if (strcmp(cmd, "pending") == 0)
		status = cmd_list(argc, argv, false);
	else if (strcmp(cmd, "clear-cache") == 0)
		status = cmd_list(argc, argv, true);
	else if (strcmp(cmd, "policy") == 0)
		status = cmd_policy(argc, argv);
	else
		qsb_cli_usage("unknown command '%s'", cmd);
	if (opened) {
		qsb_perm_close(&pm);
		qsb_root_close(&root);
	}
	qsb_cli_exit(status);
}
