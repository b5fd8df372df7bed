/*
 * What every main does the same way: the diagnostic line of DESIGN.md
 * section 9 ("PROGRAM: CODE: message", or one JSON object with
 * --json-errors), usage errors with the synopsis, and checked output.
 * This is the only part of the library that prints or exits.
 */
#ifndef QSB_CLI_H
#define QSB_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "json.h"

struct qsb_cli {
	const char	*prog;
	const char	*synopsis;	/* the man page's SYNOPSIS */
	bool		 json_errors;
	int		 pretty;
	const char	*root;		/* --root */
	const char	*session;	/* for sessionId in JSON errors */
	int		 fail_exit;	/* non-zero: the status of every failure
					 * (qsb-exec: 125) instead of the code's */
};

extern struct qsb_cli qsb_cli;

/* The options every command of every program takes: their getopt_long
 * values, the table entries, and their handling. */
enum {
	QSB_OPT_ROOT = 256,
	QSB_OPT_PRETTY,
	QSB_OPT_JSONERR,
	QSB_OPT_FIRST		/* a program's own options start here */
};
#define QSB_COMMON_OPTS \
	{ "help",	 no_argument,	    NULL, 'h' }, \
	{ "json-errors", no_argument,	    NULL, QSB_OPT_JSONERR }, \
	{ "pretty",	 no_argument,	    NULL, QSB_OPT_PRETTY }, \
	{ "root",	 required_argument, NULL, QSB_OPT_ROOT }, \
	{ "version",	 no_argument,	    NULL, 'V' }
/* Handles opt if it is one of those (-h and -V print and exit; a bad
 * option is a usage error): 0, or -1 when opt is the program's own. */
int	 qsb_cli_common(int opt, char **argv, const char *help);

/* Sets the program name and makes sure fds 0, 1 and 2 are open. */
void	 qsb_cli_init(const char *prog, const char *synopsis);
/* Prints the diagnostic for e (no exit). */
void	 qsb_cli_diag(const struct qsb_err *);
/* Prints the diagnostic and exits with the code's status. */
__attribute__((noreturn)) void qsb_cli_fail(const struct qsb_err *);
/* Like qsb_cli_fail with a message built here. */
__attribute__((noreturn, format(printf, 2, 3)))
void	 qsb_cli_die(enum qsb_code, const char *fmt, ...);
/* {"error":{"code":...,"message":...,"sessionId":...}} */
void	 qsb_cli_err_json(struct qsb_jw *, const struct qsb_err *,
	    const char *session);
/* The index of val in names (NULL-terminated), or CONFIG_INVALID naming
 * the option and what it wants. */
int	 qsb_cli_enum(const char *opt, const char *val,
	    const char *const *names, const char *want);
/* USAGE: message, the synopsis and a hint; exit 2. */
__attribute__((noreturn, format(printf, 1, 2)))
void	 qsb_cli_usage(const char *fmt, ...);
void	 qsb_cli_help(const char *text);
void	 qsb_cli_version(void);
/* Writes a finished JSON document to stdout. */
void	 qsb_cli_emit(struct qsb_jw *);
struct qsb_root;
struct qsb_config;
/* Opens the root (--root or the default) and, when cfg is not NULL, loads
 * its config.json; a failure is the program's end. */
void	 qsb_cli_open(struct qsb_root *, struct qsb_config *cfg);
/* Writes out what a long document has so far (from 64 KiB on), so that a
 * listing of thousands streams instead of piling up. */
void	 qsb_cli_drain(struct qsb_jw *);
/* Flushes stdout and exits with status; a failed write is
 * FILE_WRITE_FAILED. */
__attribute__((noreturn)) void qsb_cli_exit(int status);
/* The getopt_long message for a bad option in argv. */
__attribute__((noreturn)) void qsb_cli_badopt(char **argv, int opt);

#endif
