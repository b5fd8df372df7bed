#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"

static const struct {
	const char	*name;
	int		 exit;
} codes[QSB_E_NCODES] = {
	[QSB_OK] =			{ "OK", 0 },
	[QSB_E_USAGE] =			{ "USAGE", 2 },
	[QSB_E_SANDBOX_UNAVAILABLE] =	{ "SANDBOX_UNAVAILABLE", 65 },
	[QSB_E_WORKSPACE_NOT_FOUND] =	{ "WORKSPACE_NOT_FOUND", 66 },
	[QSB_E_WORKSPACE_EXISTS] =	{ "WORKSPACE_EXISTS", 67 },
	[QSB_E_PERMISSION_DENIED] =	{ "PERMISSION_DENIED", 68 },
	[QSB_E_EXECUTION_FAILED] =	{ "EXECUTION_FAILED", 69 },
	[QSB_E_EXECUTION_TIMEOUT] =	{ "EXECUTION_TIMEOUT", 70 },
	[QSB_E_FILE_NOT_FOUND] =	{ "FILE_NOT_FOUND", 71 },
	[QSB_E_FILE_WRITE_FAILED] =	{ "FILE_WRITE_FAILED", 72 },
	[QSB_E_CLEANUP_FAILED] =	{ "CLEANUP_FAILED", 73 },
	[QSB_E_CONFIG_INVALID] =	{ "CONFIG_INVALID", 74 },
};

int
qsb_err_vset(struct qsb_err *e, enum qsb_code code, const char *fmt,
    va_list ap)
{
	if (e == NULL)
		return -1;
	e->code = code;
	if (vsnprintf(e->msg, sizeof(e->msg), fmt, ap) < 0)
		strcpy(e->msg, "(unformattable message)");
	return -1;
}

int
qsb_err_set(struct qsb_err *e, enum qsb_code code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	qsb_err_vset(e, code, fmt, ap);
	va_end(ap);
	return -1;
}

int
qsb_err_sys(struct qsb_err *e, enum qsb_code code, const char *fmt, ...)
{
	int saved = errno;
	size_t n;
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	qsb_err_vset(e, code, fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	if (n < sizeof(e->msg))
		snprintf(e->msg + n, sizeof(e->msg) - n, ": %s",
		    strerror(saved));
	errno = saved;
	return -1;
}

const char *
qsb_code_name(enum qsb_code code)
{
	if ((int)code < 0 || code >= QSB_E_NCODES)
		return "EXECUTION_FAILED";
	return codes[code].name;
}

int
qsb_code_exit(enum qsb_code code)
{
	if ((int)code < 0 || code >= QSB_E_NCODES)
		return 69;
	return codes[code].exit;
}

int
qsb_code_from_name(const char *name)
{
	int i;

	for (i = 0; i < QSB_E_NCODES; i++)
		if (strcmp(codes[i].name, name) == 0)
			return i;
	return -1;
}
