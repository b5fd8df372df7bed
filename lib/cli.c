#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "root.h"
#include "state.h"

#ifndef QSB_VERSION
#define QSB_VERSION "0.0.0"
#endif

struct qsb_cli qsb_cli = { "qsb", "", false, 0, NULL, NULL, 0 };

void
qsb_cli_init(const char *prog, const char *synopsis)
{
	struct stat st;
	int fd;

	qsb_cli.prog = prog;
	qsb_cli.synopsis = synopsis;
	for (fd = 0; fd < 3; fd++)
		if (fstat(fd, &st) < 0 && errno == EBADF &&
		    open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
			_exit(125);	/* fail safe: no place for output */
}

void
qsb_cli_diag(const struct qsb_err *e)
{
	struct qsb_jw w;
	const char *p;

	if (!qsb_cli.json_errors) {
		fprintf(stderr, "%s: %s: ", qsb_cli.prog,
		    qsb_code_name(e->code));
		/* one line, whatever the message quotes */
		for (p = e->msg; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				fprintf(stderr, "\\x%02x", (unsigned char)*p);
			else
				fputc(*p, stderr);
		fputc('\n', stderr);
		fflush(stderr);
		return;
	}
	qsb_jw_init(&w, 0);
	qsb_cli_err_json(&w, e, qsb_cli.session);
	if (qsb_jw_finish(&w) == 0)
		(void)qsb_write_all(STDERR_FILENO, w.buf, w.len);
	else
		fprintf(stderr, "%s: %s: %s\n", qsb_cli.prog,
		    qsb_code_name(e->code), e->msg);
	qsb_jw_free(&w);
}

void
qsb_cli_err_json(struct qsb_jw *w, const struct qsb_err *e,
    const char *session)
{
	qsb_jw_obj(w);
	qsb_jw_key(w, "error");
	qsb_jw_obj(w);
	qsb_jw_key(w, "code");
	qsb_jw_str(w, qsb_code_name(e->code));
	qsb_jw_key(w, "message");
	qsb_jw_str(w, e->msg);
	qsb_jw_key(w, "sessionId");
	qsb_jw_str(w, session);
	qsb_jw_obj_end(w);
	qsb_jw_obj_end(w);
}

void
qsb_cli_fail(const struct qsb_err *e)
{
	qsb_cli_diag(e);
	fflush(stdout);
	exit(qsb_cli.fail_exit ? qsb_cli.fail_exit : qsb_code_exit(e->code));
}

int
qsb_cli_enum(const char *opt, const char *val, const char *const *names,
    const char *want)
{
	size_t i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], val) == 0)
			return (int)i;
	qsb_cli_die(QSB_E_CONFIG_INVALID, "%s: invalid value '%s' (%s)", opt,
	    val, want);
}

void
qsb_cli_die(enum qsb_code code, const char *fmt, ...)
{
	struct qsb_err e;
	va_list ap;

	va_start(ap, fmt);
	qsb_err_vset(&e, code, fmt, ap);
	va_end(ap);
	qsb_cli_fail(&e);
}

void
qsb_cli_usage(const char *fmt, ...)
{
	struct qsb_err e;
	va_list ap;

	va_start(ap, fmt);
	qsb_err_vset(&e, QSB_E_USAGE, fmt, ap);
	va_end(ap);
	qsb_cli_diag(&e);
	if (!qsb_cli.json_errors)
		fprintf(stderr, "%sTry '%s --help'.\n", qsb_cli.synopsis,
		    qsb_cli.prog);
	exit(QSB_EXIT_USAGE);
}

void
qsb_cli_help(const char *text)
{
	fputs(qsb_cli.synopsis, stdout);
	fputs(text, stdout);
	qsb_cli_exit(0);
}

void
qsb_cli_version(void)
{
	printf("%s %s\n", qsb_cli.prog, QSB_VERSION);
	qsb_cli_exit(0);
}

void
qsb_cli_emit(struct qsb_jw *w)
{
	if (qsb_jw_finish(w) < 0) {
		qsb_jw_free(w);
		qsb_cli_die(QSB_E_EXECUTION_FAILED, "out of memory");
	}
	fwrite(w->buf, 1, w->len, stdout);
	qsb_jw_free(w);
}

void
qsb_cli_open(struct qsb_root *r, struct qsb_config *cfg)
{
	struct qsb_err e;

	if (qsb_root_open(r, qsb_cli.root, &e) < 0)
		qsb_cli_fail(&e);
	if (cfg != NULL && qsb_config_load(r, cfg, &e) < 0) {
		qsb_root_close(r);
		qsb_cli_fail(&e);
	}
}

int
qsb_cli_common(int opt, char **argv, const char *help)
{
	switch (opt) {
	case 'h':
		qsb_cli_help(help);
		break;
	case 'V':
		qsb_cli_version();
		break;
	case QSB_OPT_JSONERR:
		qsb_cli.json_errors = true;
		return 0;
	case QSB_OPT_PRETTY:
		qsb_cli.pretty = 1;
		return 0;
	case QSB_OPT_ROOT:
		qsb_cli.root = optarg;
		return 0;
	case ':':
	case '?':
		qsb_cli_badopt(argv, opt);
	}
	return -1;
}

void
qsb_cli_drain(struct qsb_jw *w)
{
	if (w->nomem || w->len < 65536)
		return;
	fwrite(w->buf, 1, w->len, stdout);
	w->len = 0;
}

void
qsb_cli_exit(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		struct qsb_err e;
		qsb_err_sys(&e, QSB_E_FILE_WRITE_FAILED,
		    "cannot write to standard output");
		qsb_cli_diag(&e);
		exit(status ? status : qsb_code_exit(e.code));
	}
	exit(status);
}

void
qsb_cli_badopt(char **argv, int opt)
{
	const char *arg = argv[optind - 1];

	if (opt == ':')
		qsb_cli_usage("option '%s' needs a value", arg);
	if (optopt != 0 && optopt != '?')
		qsb_cli_usage("unknown option '-%c'", optopt);
	qsb_cli_usage("unknown option '%s'", arg);
}
