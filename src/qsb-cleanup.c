/*
 * qsb-cleanup: apply the workspaces' retention policies and the global
 * caps; reclaim space safely.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "config.h"
#include "json.h"
#include "parse.h"
#include "root.h"

static const char synopsis[] =
"usage: qsb-cleanup [--dry-run] [--all] [--session SESSION]\n"
"                   [--max-workspaces N] [--max-size SIZE]\n"
"                   [--root DIR] [--pretty] [--json-errors]\n";

static const char help[] =
"\n"
"  --dry-run             say what would be deleted; delete nothing\n"
"  --all                 every workspace that is not manual, whatever its age\n"
"  --session SESSION     only this workspace\n"
"  --max-workspaces N    evict the least recently accessed beyond N\n"
"  --max-size SIZE       evict the least recently accessed beyond SIZE in all\n"
"  --root DIR, --pretty, --json-errors, -h/--help, -V/--version\n"
"\n"
"Never a manual workspace, one in use, or one kept by preserveOnError.\n"
"Prints a CleanupResult.  See qsb-cleanup(1).\n";

enum { O_DRY = QSB_OPT_FIRST, O_ALL, O_SESSION, O_MAXWS,
    O_MAXSIZE };

int
main(int argc, char *argv[])
{
	static const struct option opts[] = {
		QSB_COMMON_OPTS,
		{ "all",		no_argument,	   NULL, O_ALL },
		{ "dry-run",		no_argument,	   NULL, O_DRY },
		{ "max-size",		required_argument, NULL, O_MAXSIZE },
		{ "max-workspaces",	required_argument, NULL, O_MAXWS },
		{ "session",		required_argument, NULL, O_SESSION },
		{ NULL, 0, NULL, 0 }
	};
	struct qsb_cleanup_opts o;
	struct qsb_cleanup_result res;
	struct qsb_config cfg;
	struct qsb_root root;
	struct qsb_err e;
	struct qsb_jw w;
	const char *errstr = NULL;
	int opt, status;

	qsb_cli_init("qsb-cleanup", synopsis);
	memset(&o, 0, sizeof(o));
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		switch (opt) {
		case O_ALL:
			o.all = true;
			break;
		case O_DRY:
			o.dry_run = true;
			break;
		case O_MAXSIZE:
			if (qsb_parse_size(optarg, &o.max_size) < 0 ||
			    o.max_size == 0)
				qsb_cli_die(QSB_E_CONFIG_INVALID, "--max-size: "
				    "invalid value '%s' (a size such as 50g)",
				    optarg);
			break;
		case O_MAXWS:
			o.max_workspaces = strtonum(optarg, 1, 1000000000,
			    &errstr);
			if (errstr != NULL)
				qsb_cli_die(QSB_E_CONFIG_INVALID,
				    "--max-workspaces: invalid value '%s' (an "
				    "integer from 1)", optarg);
			break;
		case O_SESSION:
			if (!qsb_id_valid(optarg))
				qsb_cli_die(QSB_E_CONFIG_INVALID, "invalid "
				    "session id '%s'", optarg);
			o.session = qsb_cli.session = optarg;
			break;
		default:
			if (qsb_cli_common(opt, argv, help) < 0)
				qsb_cli_badopt(argv, opt);
		}
	}
	if (optind < argc)
		qsb_cli_usage("unexpected operand '%s'", argv[optind]);
	if (o.session != NULL && (o.max_workspaces || o.max_size))
		qsb_cli_usage("--session does not go with the global caps");
	qsb_cli_open(&root, &cfg);
	if (qsb_cleanup(&root, &cfg, &o, &res, &e) < 0)
		qsb_cli_fail(&e);
	qsb_jw_init(&w, qsb_cli.pretty);
	qsb_cleanup_write(&w, &res);
	qsb_cli_emit(&w);
	/* errors are in the result; the status says there were some */
	status = res.errors[0] != NULL ? qsb_code_exit(QSB_E_CLEANUP_FAILED) : 0;
	qsb_cleanup_free(&res);
	qsb_config_free(&cfg);
	qsb_root_close(&root);
	qsb_cli_exit(status);
}
