/*
 * Error codes of DESIGN.md section 9 and the small error record that every
 * library function fills on failure.  The library never prints; the mains
 * turn a struct qsb_err into one diagnostic line and an exit status.
 */
#ifndef QSB_DIAG_H
#define QSB_DIAG_H

#include <stdarg.h>

enum qsb_code {
	QSB_OK = 0,
	QSB_E_USAGE,
	QSB_E_SANDBOX_UNAVAILABLE,
	QSB_E_WORKSPACE_NOT_FOUND,
	QSB_E_WORKSPACE_EXISTS,
	QSB_E_PERMISSION_DENIED,
	QSB_E_EXECUTION_FAILED,
	QSB_E_EXECUTION_TIMEOUT,
	QSB_E_FILE_NOT_FOUND,
	QSB_E_FILE_WRITE_FAILED,
	QSB_E_CLEANUP_FAILED,
	QSB_E_CONFIG_INVALID,
	QSB_E_NCODES
};

/* exit statuses of section 9 */
#define QSB_EXIT_DENIED		1
#define QSB_EXIT_USAGE		2
#define QSB_EXIT_PENDING	3

struct qsb_err {
	enum qsb_code	code;
	char		msg[1024];
};

/* Sets e (which may be NULL) and returns -1, so callers write
 * "return qsb_err_set(e, ...)". */
int		 qsb_err_set(struct qsb_err *e, enum qsb_code code,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int		 qsb_err_vset(struct qsb_err *e, enum qsb_code code,
		    const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* Like qsb_err_set, with ": strerror(errno)" appended; errno is kept. */
int		 qsb_err_sys(struct qsb_err *e, enum qsb_code code,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char	*qsb_code_name(enum qsb_code code);
int		 qsb_code_exit(enum qsb_code code);
int		 qsb_code_from_name(const char *name);

#endif
