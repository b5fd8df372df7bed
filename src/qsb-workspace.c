/*
 * qsb-workspace: create, inspect and destroy per-session workspaces; read,
 * write and list files inside them, confined to their rootPath.
 */
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "fileops.h"
#include "json.h"
#include "parse.h"
#include "perm.h"
#include "root.h"
#include "workspace.h"

static const char synopsis[] =
"usage: qsb-workspace [--root DIR] [--pretty] [--json-errors] COMMAND ...\n"
"       qsb-workspace create SESSION [--mode M] [--backend B]\n"
"                     [--network | --no-network] [--memory SIZE] [--cpus N]\n"
"                     [--disk SIZE] [--retention always|timeout|manual]\n"
"                     [--max-age DUR] [--preserve-on-error]\n"
"       qsb-workspace destroy SESSION [--force]\n"
"       qsb-workspace list\n"
"       qsb-workspace info SESSION\n"
"       qsb-workspace read SESSION PATH\n"
"       qsb-workspace write SESSION PATH [--mkdir]\n"
"       qsb-workspace ls SESSION [PATH]\n"
"       qsb-workspace retention SESSION [--mode always|timeout|manual]\n"
"                     [--max-age DUR] [--max-workspaces N] [--max-size SIZE]\n"
"                     [--preserve-on-error | --no-preserve-on-error]\n";

static const char help[] =
"\n"
"Options for every command:\n"
"  --root DIR        state root (default $QSB_ROOT, $XDG_STATE_HOME/qsb,\n"
"                    $HOME/.local/state/qsb)\n"
"  --pretty          indent the JSON output\n"
"  --json-errors     report errors as one JSON object on stderr\n"
"  -h, --help        show this help\n"
"  -V, --version     show the version\n"
"\n"
"create prints the Workspace; list prints Workspace[]; ls prints FileInfo[];\n"
"read copies the file to stdout; write takes the content from stdin.\n"
"See qsb-workspace(1).\n";

enum {
	O_MODE = QSB_OPT_FIRST, O_BACKEND, O_NETWORK,
	O_NONETWORK, O_MEMORY, O_CPUS, O_DISK, O_RETENTION, O_MAXAGE,
	O_PRESERVE, O_NOPRESERVE, O_FORCE, O_MKDIR, O_MAXWS, O_MAXSIZE,
};

static const struct option global_opts[] = {
	QSB_COMMON_OPTS,
	{ NULL, 0, NULL, 0 }
};

static struct qsb_root root;
static struct qsb_config cfg;

static void
open_root(bool with_config)
{
	qsb_cli_open(&root, with_config ? &cfg : NULL);
}

/* The operands after option parsing: exactly min..max of them. */
static void
operands(int argc, char **argv, int min, int max, const char *cmd)
{
	int n = argc - optind;

	if (n < min)
		qsb_cli_usage("%s: missing %s", cmd, n == 0 ? "SESSION" :
		    "PATH");
	if (n > max)
		qsb_cli_usage("%s: unexpected operand '%s'", cmd,
		    argv[optind + max]);
	if (n > 0)
		qsb_cli.session = argv[optind];
}

static void
bad_value(const char *opt, const char *val, const char *want)
{
	qsb_cli_die(QSB_E_CONFIG_INVALID, "%s: invalid value '%s' (%s)", opt,
	    val, want);
}

static uint64_t
size_arg(const char *opt, const char *val, uint64_t min)
{
	uint64_t v;

	if (qsb_parse_size(val, &v) < 0)
		bad_value(opt, val, "expected a size such as 512m or 2g");
	if (v < min)
		bad_value(opt, val, "too small");
	return v;
}

static uint64_t
duration_arg(const char *opt, const char *val)
{
	uint64_t v;

	if (qsb_parse_duration(val, &v) < 0 || v == 0 ||
	    v > ((uint64_t)1 << 53))
		bad_value(opt, val, "expected a duration such as 30m or 7d");
	return v;
}

static void
print_ws(const struct qsb_ws *w)
{
	struct qsb_jw jw;

	qsb_jw_init(&jw, qsb_cli.pretty);
	qsb_ws_write(&jw, w);
	qsb_cli_emit(&jw);
}

static int
cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "backend",		required_argument, NULL, O_BACKEND },
		{ "cpus",		required_argument, NULL, O_CPUS },
		{ "disk",		required_argument, NULL, O_DISK },
		{ "max-age",		required_argument, NULL, O_MAXAGE },
		{ "memory",		required_argument, NULL, O_MEMORY },
		{ "mode",		required_argument, NULL, O_MODE },
		{ "network",		no_argument,	   NULL, O_NETWORK },
		{ "no-network",		no_argument,	   NULL, O_NONETWORK },
		{ "preserve-on-error",	no_argument,	   NULL, O_PRESERVE },
		{ "retention",		required_argument, NULL, O_RETENTION },
		{ NULL, 0, NULL, 0 }
	};
	struct qsb_sbconfig sb, fl;
	struct qsb_retention ret;
	struct qsb_ws w;
	struct qsb_err e;
	int opt, backend = -1, retmode = -1, net = -1;
	uint64_t max_age = 0;
	bool preserve = false;

	memset(&fl, 0, sizeof(fl));
	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		switch (opt) {
		case O_BACKEND:
			backend = qsb_cli_enum("--backend", optarg,
			    qsb_backend_names, "expected auto, native, bwrap, "
			    "firejail, docker or none");
			break;
		case O_CPUS:
			if (qsb_parse_decimal(optarg, 0.01, 4096, &fl.cpus) < 0)
				bad_value("--cpus", optarg,
				    "expected a number from 0.01 to 4096");
			fl.has_cpus = true;
			break;
		case O_DISK:
			fl.disk = size_arg("--disk", optarg, 1 << 20);
			fl.has_disk = true;
			break;
		case O_MAXAGE:
			max_age = duration_arg("--max-age", optarg);
			break;
		case O_MEMORY:
			fl.memory = size_arg("--memory", optarg, 1 << 20);
			fl.has_memory = true;
			break;
		case O_MODE:
			fl.mode = qsb_cli_enum("--mode", optarg, qsb_mode_names,
			    "expected strict, compat or permissive");
			fl.has_mode = true;
			break;
		case O_NETWORK:
			net = 1;
			break;
		case O_NONETWORK:
			net = 0;
			break;
		case O_PRESERVE:
			preserve = true;
			break;
		case O_RETENTION:
			retmode = qsb_cli_enum("--retention", optarg,
			    qsb_retmode_names,
			    "expected always, timeout or manual");
			break;
		default:
			qsb_cli_badopt(argv, opt);
		}
	}
	operands(argc, argv, 1, 1, "create");
	if (max_age != 0 && retmode >= 0 && retmode != QSB_RET_TIMEOUT)
		qsb_cli_usage("--max-age applies only to --retention timeout");
	if (!qsb_id_valid(argv[optind]))
		qsb_cli_die(QSB_E_CONFIG_INVALID, "invalid session id '%s': "
		    "expected [A-Za-z0-9][A-Za-z0-9._-]{0,127}", argv[optind]);
	open_root(true);

	/* flags, then config.json's sandbox defaults, then its policy */
	sb = cfg.sandbox;
	if (!sb.has_mode)
		sb.mode = cfg.policy.mode;
	if (fl.has_mode)
		sb.mode = fl.mode;
	if (backend < 0)
		backend = sb.has_type ? sb.type : cfg.policy.backend;
	/* auto records the embedded backend; qsb-exec checks at run time
	 * that the kernel provides what it needs and refuses otherwise */
	sb.type = backend == QSB_BK_AUTO ? QSB_BK_NATIVE : backend;
	if (!sb.has_enabled)
		sb.enabled = cfg.policy.enabled;
	if (net >= 0)
		sb.network = net;
	else if (!sb.has_network)
		sb.network = sb.mode == QSB_MODE_PERMISSIVE;
	if (fl.has_memory) {
		sb.memory = fl.memory;
		sb.has_memory = true;
	}
	if (fl.has_cpus) {
		sb.cpus = fl.cpus;
		sb.has_cpus = true;
	}
	if (fl.has_disk) {
		sb.disk = fl.disk;
		sb.has_disk = true;
	}
	ret = cfg.retention;
	if (retmode >= 0) {
		ret.mode = retmode;
		if (retmode != QSB_RET_TIMEOUT)
			ret.has_max_age = false;
		else if (!ret.has_max_age) {
			ret.max_age = QSB_DEFAULT_MAX_AGE;
			ret.has_max_age = true;
		}
	}
	if (max_age != 0) {
		ret.mode = QSB_RET_TIMEOUT;
		ret.max_age = max_age;
		ret.has_max_age = true;
	}
	if (preserve) {
		ret.preserve_on_error = true;
		ret.has_preserve_on_error = true;
	}
	if (qsb_ws_create(&root, &cfg, argv[optind], &sb, &ret, &w, &e) < 0)
		qsb_cli_fail(&e);
	print_ws(&w);
	qsb_ws_free(&w);
	return 0;
}

static int
cmd_destroy(int argc, char **argv)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "force", no_argument, NULL, O_FORCE },
		{ NULL, 0, NULL, 0 }
	};
	struct qsb_ws_destroyed res;
	struct qsb_jw jw;
	struct qsb_err e;
	bool force = false;
	int opt;

	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		if (opt == O_FORCE)
			force = true;
		else
			qsb_cli_badopt(argv, opt);
	}
	operands(argc, argv, 1, 1, "destroy");
	open_root(false);
	if (qsb_ws_destroy(&root, argv[optind], force ? QSB_DESTROY_FORCE : 0,
	    &res, &e) < 0)
		qsb_cli_fail(&e);
	qsb_jw_init(&jw, qsb_cli.pretty);
	qsb_jw_obj(&jw);
	qsb_jw_key(&jw, "success");
	qsb_jw_bool(&jw, true);
	qsb_jw_key(&jw, "id");
	qsb_jw_str(&jw, argv[optind]);
	qsb_jw_key(&jw, "freedSpace");
	qsb_jw_uint(&jw, res.freed);
	qsb_jw_key(&jw, "killedTerminals");
	qsb_jw_int(&jw, res.killed);
	qsb_jw_obj_end(&jw);
	qsb_cli_emit(&jw);
	return 0;
}

static void
list_bad(const char *id, const struct qsb_err *e, void *arg)
{
	(void)id;
	*(int *)arg = 1;
	qsb_cli_diag(e);
}

static void
simple_opts(int argc, char **argv)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1)
		if (qsb_cli_common(opt, argv, help) < 0)
			qsb_cli_badopt(argv, opt);
}

static int
cmd_list(int argc, char **argv)
{
	struct qsb_ws *v;
	struct qsb_jw jw;
	struct qsb_err e;
	size_t n, i;
	int bad = 0;

	simple_opts(argc, argv);
	operands(argc, argv, 0, 0, "list");
	open_root(false);
	if (qsb_ws_list(&root, &v, &n, list_bad, &bad, &e) < 0)
		qsb_cli_fail(&e);
	qsb_jw_init(&jw, qsb_cli.pretty);
	qsb_jw_arr(&jw);
	for (i = 0; i < n; i++) {
		qsb_ws_write(&jw, &v[i]);
		qsb_cli_drain(&jw);
	}
	qsb_jw_arr_end(&jw);
	qsb_cli_emit(&jw);
	qsb_ws_list_free(v, n);
	return bad ? qsb_code_exit(QSB_E_CONFIG_INVALID) : 0;
}

static int
cmd_info(int argc, char **argv)
{
	struct qsb_ws w;
	struct qsb_err e;

	simple_opts(argc, argv);
	operands(argc, argv, 1, 1, "info");
	open_root(false);
	if (qsb_ws_load(&root, argv[optind], &w, &e) < 0)
		qsb_cli_fail(&e);
	print_ws(&w);
	qsb_ws_free(&w);
	return 0;
}

/* Opens the workspace's fs/ and loads its record. */
static int
open_files(const char *id, struct qsb_ws *w)
{
	struct qsb_err e;
	int dirfd, fsfd;

	if ((dirfd = qsb_ws_open(&root, id, &e)) < 0 ||
	    qsb_ws_load_at(&root, dirfd, id, w, &e) < 0 ||
	    (fsfd = qsb_ws_open_fs(dirfd, &e)) < 0)
		qsb_cli_fail(&e);
	close(dirfd);
	return fsfd;
}

/* The permission policy has its say (qsb-perm(1)): denied or pending is
 * PERMISSION_DENIED. */
static void
gate(const char *id, enum qsb_ptype t, const char *path)
{
	struct qsb_perm pm;
	struct qsb_err e;

	if (qsb_perm_open(&pm, &root, &e) < 0 ||
	    qsb_perm_gate(&pm, id, t, path, &e) < 0)
		qsb_cli_fail(&e);
	qsb_perm_close(&pm);
}

static void
touch(const char *id)
{
	struct qsb_err e;

	/* best effort: the operation itself has succeeded */
	if (qsb_ws_touch(&root, id, &e) < 0 &&
	    e.code != QSB_E_WORKSPACE_NOT_FOUND)
		qsb_cli_diag(&e);
}

static int
cmd_read(int argc, char **argv)
{
	struct qsb_ws w;
	struct qsb_err e;
	int fsfd;

	simple_opts(argc, argv);
	operands(argc, argv, 2, 2, "read");
	open_root(false);
	fsfd = open_files(argv[optind], &w);
	gate(argv[optind], QSB_P_FILE_READ, argv[optind + 1]);
	if (qsb_file_read(fsfd, w.root_path, argv[optind + 1], STDOUT_FILENO,
	    &e) < 0)
		qsb_cli_fail(&e);
	close(fsfd);
	touch(argv[optind]);
	qsb_ws_free(&w);
	return 0;
}

static int
cmd_write(int argc, char **argv)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "mkdir", no_argument, NULL, O_MKDIR },
		{ NULL, 0, NULL, 0 }
	};
	char rel[PATH_MAX];
	const char *name;
	struct qsb_ws w;
	struct qsb_jw jw;
	struct qsb_err e;
	struct stat st;
	uint64_t left;
	bool mk = false;
	int opt, fsfd;

	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		if (opt == O_MKDIR)
			mk = true;
		else
			qsb_cli_badopt(argv, opt);
	}
	operands(argc, argv, 2, 2, "write");
	open_root(false);
	fsfd = open_files(argv[optind], &w);
	gate(argv[optind], QSB_P_FILE_WRITE, argv[optind + 1]);
	if (qsb_ws_quota(&w, &left, &e) < 0)
		qsb_cli_fail(&e);
	if (qsb_file_write(fsfd, w.root_path, argv[optind + 1], STDIN_FILENO,
	    mk, &st, rel, &e) < 0)
		qsb_cli_fail(&e);
	close(fsfd);
	name = strrchr(rel, '/');
	qsb_jw_init(&jw, qsb_cli.pretty);
	qsb_fileinfo_write(&jw, name ? name + 1 : rel, rel, &st);
	qsb_cli_emit(&jw);
	touch(argv[optind]);
	qsb_ws_free(&w);
	return 0;
}

static int
cmd_ls(int argc, char **argv)
{
	struct qsb_ws w;
	struct qsb_jw jw;
	struct qsb_err e;
	int fsfd;

	simple_opts(argc, argv);
	operands(argc, argv, 1, 2, "ls");
	open_root(false);
	fsfd = open_files(argv[optind], &w);
	qsb_jw_init(&jw, qsb_cli.pretty);
	if (qsb_file_list(fsfd, w.root_path, optind + 1 < argc ?
	    argv[optind + 1] : ".", &jw, &e) < 0) {
		qsb_jw_free(&jw);
		qsb_cli_fail(&e);
	}
	qsb_cli_emit(&jw);
	close(fsfd);
	qsb_ws_free(&w);
	return 0;
}

static int
cmd_retention(int argc, char **argv)
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "max-age",		  required_argument, NULL, O_MAXAGE },
		{ "max-size",		  required_argument, NULL, O_MAXSIZE },
		{ "max-workspaces",	  required_argument, NULL, O_MAXWS },
		{ "mode",		  required_argument, NULL, O_MODE },
		{ "no-preserve-on-error", no_argument,	     NULL, O_NOPRESERVE },
		{ "preserve-on-error",	  no_argument,	     NULL, O_PRESERVE },
		{ NULL, 0, NULL, 0 }
	};
	struct qsb_retention set;
	struct qsb_ws w;
	struct qsb_jw jw;
	struct qsb_err e;
	const char *errstr = NULL;
	int opt, dirfd, lfd;
	bool change = false;

	memset(&set, 0, sizeof(set));
	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		if (qsb_cli_common(opt, argv, help) == 0)
			continue;
		change = true;
		switch (opt) {
		case O_MAXAGE:
			set.max_age = duration_arg("--max-age", optarg);
			set.has_max_age = true;
			break;
		case O_MAXSIZE:
			set.max_size = size_arg("--max-size", optarg, 1);
			set.has_max_size = true;
			break;
		case O_MAXWS:
			set.max_workspaces = strtonum(optarg, 1, 1000000000,
			    &errstr);
			if (errstr != NULL)
				bad_value("--max-workspaces", optarg,
				    "expected an integer from 1");
			set.has_max_workspaces = true;
			break;
		case O_MODE:
			set.mode = qsb_cli_enum("--mode", optarg,
			    qsb_retmode_names,
			    "expected always, timeout or manual");
			set.has_mode = true;
			break;
		case O_NOPRESERVE:
		case O_PRESERVE:
			set.preserve_on_error = opt == O_PRESERVE;
			set.has_preserve_on_error = true;
			break;
		default:
			qsb_cli_badopt(argv, opt);
		}
	}
	operands(argc, argv, 1, 1, "retention");
	if (set.has_max_age && set.has_mode && set.mode != QSB_RET_TIMEOUT)
		qsb_cli_usage("--max-age applies only to --mode timeout");
	open_root(false);
	if (!change) {
		if (qsb_ws_load(&root, argv[optind], &w, &e) < 0)
			qsb_cli_fail(&e);
	} else {
		if ((lfd = qsb_ws_lock(&root, argv[optind], &dirfd, &e)) < 0 ||
		    qsb_ws_load_at(&root, dirfd, argv[optind], &w, &e) < 0)
			qsb_cli_fail(&e);
		if (set.has_mode) {
			w.ret.mode = set.mode;
			if (set.mode == QSB_RET_TIMEOUT && !w.ret.has_max_age) {
				w.ret.max_age = QSB_DEFAULT_MAX_AGE;
				w.ret.has_max_age = true;
			}
		}
		if (set.has_max_age) {
			w.ret.max_age = set.max_age;
			w.ret.has_max_age = true;
			if (!set.has_mode)
				w.ret.mode = QSB_RET_TIMEOUT;
		}
		if (set.has_max_size) {
			w.ret.max_size = set.max_size;
			w.ret.has_max_size = true;
		}
		if (set.has_max_workspaces) {
			w.ret.max_workspaces = set.max_workspaces;
			w.ret.has_max_workspaces = true;
		}
		if (set.has_preserve_on_error) {
			w.ret.preserve_on_error = set.preserve_on_error;
			w.ret.has_preserve_on_error = true;
		}
		if (qsb_ws_save(dirfd, &w, &e) < 0)
			qsb_cli_fail(&e);
		close(lfd);
		close(dirfd);
	}
	qsb_jw_init(&jw, qsb_cli.pretty);
	qsb_retention_write(&jw, &w.ret);
	qsb_cli_emit(&jw);
	qsb_ws_free(&w);
	return 0;
}

static const struct {
	const char	*name;
	int		(*fn)(int, char **);
} cmds[] = {
	{ "create",	cmd_create },
	{ "destroy",	cmd_destroy },
	{ "info",	cmd_info },
	{ "list",	cmd_list },
	{ "ls",		cmd_ls },
	{ "read",	cmd_read },
	{ "retention",	cmd_retention },
	{ "write",	cmd_write },
};

int
main(int argc, char *argv[])
{
	size_t i;
	int opt, status;

	qsb_cli_init("qsb-workspace", synopsis);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:hV", global_opts, NULL)) != -1)
		if (qsb_cli_common(opt, argv, help) < 0)
			qsb_cli_badopt(argv, opt);
	if (optind >= argc)
		qsb_cli_usage("missing COMMAND");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[optind], cmds[i].name) == 0)
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0]))
		qsb_cli_usage("unknown command '%s'", argv[optind]);
	argc -= optind;
	argv += optind;
	optind = 0;	/* reinitialize getopt for the command's options */
	status = cmds[i].fn(argc, argv);
	qsb_root_close(&root);
	qsb_config_free(&cfg);
	qsb_cli_exit(status);
}
