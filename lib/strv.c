#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

void
qsb_strv_take(struct qsb_strv *s, char *owned)
{
	char **nv;

	if (owned == NULL) {
		s->nomem = true;
		return;
	}
	if (s->n + 1 >= s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		if ((nv = reallocarray(s->v, ncap, sizeof(*nv))) == NULL) {
			free(owned);
			s->nomem = true;
			return;
		}
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = owned;
	s->v[s->n] = NULL;
}

void
qsb_strv_add(struct qsb_strv *s, const char *str)
{
	qsb_strv_take(s, strdup(str));
}

char **
qsb_strv_done(struct qsb_strv *s)
{
	if (s->v == NULL && (s->v = calloc(1, sizeof(char *))) == NULL)
		s->nomem = true;
	if (s->nomem) {
		qsb_strv_free(s->v);
		s->v = NULL;
	}
	return s->v;
}

void
qsb_strv_free(char **v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

char *
qsb_fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}
