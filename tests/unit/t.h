/* A minimal TAP producer for the library's unit tests. */
#ifndef QSB_T_H
#define QSB_T_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int t_n, t_failed;

__attribute__((format(printf, 4, 5)))
static int
t_ok(int cond, const char *file, int line, const char *fmt, ...)
{
	char name[512], *p;
	va_list ap;

	t_n++;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	for (p = name; *p; p++)		/* one TAP line, whatever the name */
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	printf("%s %d - %s\n", cond ? "ok" : "not ok", t_n, name);
	if (!cond) {
		t_failed++;
		printf("#   at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...)	t_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!ok(g_ != NULL && strcmp(g_, w_) == 0, __VA_ARGS__)) \
		printf("#   got:  '%s'\n#   want: '%s'\n", g_ ? g_ : "(null)", w_); \
} while (0)

static int
t_done(void)
{
	printf("1..%d\n", t_n);
	return t_failed != 0;
}

#endif
