/*
 * NULL-terminated vectors of strings (argv, environments, path lists) that
 * own their strings.  An allocation failure is remembered in nomem and
 * checked once at the end.
 */
#ifndef QSB_STRV_H
#define QSB_STRV_H

#include <stdbool.h>
#include <stddef.h>

struct qsb_strv {
	char	**v;		/* NULL-terminated once anything was added */
	size_t	  n, cap;
	bool	  nomem;
};

/* Adds a copy of s. */
void	 qsb_strv_add(struct qsb_strv *, const char *s);
/* Adds s itself (NULL counts as an allocation failure). */
void	 qsb_strv_take(struct qsb_strv *, char *s);
/* The vector, NULL-terminated even when empty (NULL on ENOMEM). */
char	**qsb_strv_done(struct qsb_strv *);
void	 qsb_strv_free(char **);
/* A new string, as printf would write it (NULL on ENOMEM). */
char	*qsb_fmt(const char *, ...) __attribute__((format(printf, 1, 2)));

#endif
