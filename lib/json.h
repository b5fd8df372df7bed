/*
 * JSON in and out.
 *
 * Parsing: jsmn tokenizes (JSMN_STRICT, JSMN_PARENT_LINKS); before that a
 * strict RFC 8259 check runs over the text, because jsmn alone accepts
 * {"a":1,}, {"a"}, {}{} and [ thanx ].  A document that passes has one
 * root, exact literals, valid numbers, valid escapes and surrogate pairs,
 * valid UTF-8, depth <= QSB_JSON_MAXDEPTH and no duplicate keys.
 *
 * Writing: struct qsb_jw builds compact (or --pretty) JSON in memory; every
 * string is escaped and invalid UTF-8 becomes U+FFFD.
 */
#ifndef QSB_JSON_H
#define QSB_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"

#define QSB_JSON_MAXDEPTH	64

enum qsb_jtype {
	QSB_JNULL,
	QSB_JBOOL,
	QSB_JNUM,
	QSB_JSTR,
	QSB_JARR,
	QSB_JOBJ,
};

struct qsb_jtok {
	enum qsb_jtype	type;
	int		start, end;	/* strings: without the quotes */
	int		size;		/* members (objects), elements (arrays) */
	int		next;		/* index of the token after this subtree */
};

struct qsb_json {
	const char	*s;
	size_t		 len;
	struct qsb_jtok	*t;
	int		 n;
};

int	 qsb_json_parse(struct qsb_json *, const char *, size_t,
	    struct qsb_err *);
void	 qsb_json_free(struct qsb_json *);

/* Value of key in object obj, or -1. */
int	 qsb_json_get(const struct qsb_json *, int obj, const char *key);
/* First child of an array or object (for objects: the first key), or -1. */
int	 qsb_json_first(const struct qsb_json *, int i);
/* The sibling after i inside its container (for object keys pass the key:
 * the next key is returned), or -1 at the end. */
int	 qsb_json_sibling(const struct qsb_json *, int container, int i);
/* Unescaped copy of string token i (NUL-terminated; *lenp gets the length,
 * which differs from strlen when the string holds \u0000). */
char	*qsb_json_str(const struct qsb_json *, int i, size_t *lenp);
bool	 qsb_json_streq(const struct qsb_json *, int i, const char *);
int	 qsb_json_bool(const struct qsb_json *, int i, bool *);
int	 qsb_json_i64(const struct qsb_json *, int i, long long *);
int	 qsb_json_f64(const struct qsb_json *, int i, double *);
const char *qsb_json_typename(enum qsb_jtype);

/*
 * Schema helpers: they fill err with CONFIG_INVALID naming the field as
 * "ctx.key".  Each returns 1 when the key was present and valid, 0 when
 * absent (and not required), -1 on error.
 */
int	 qsb_json_keys_only(const struct qsb_json *, int obj,
	    const char *const *allowed, const char *ctx, struct qsb_err *);
int	 qsb_json_want_str(const struct qsb_json *, int obj, const char *key,
	    bool required, char **out, const char *ctx, struct qsb_err *);
int	 qsb_json_want_bool(const struct qsb_json *, int obj, const char *key,
	    bool required, bool *out, const char *ctx, struct qsb_err *);
int	 qsb_json_want_i64(const struct qsb_json *, int obj, const char *key,
	    bool required, long long min, long long max, long long *out,
	    const char *ctx, struct qsb_err *);
/* An enum: out gets the index in names[] (NULL-terminated). */
int	 qsb_json_want_enum(const struct qsb_json *, int obj, const char *key,
	    bool required, const char *const *names, int *out, const char *ctx,
	    struct qsb_err *);

struct qsb_jw {
	char		*buf;
	size_t		 len, cap;
	int		 pretty;
	int		 depth;
	int		 nomem;
	bool		 need_comma;
	bool		 after_key;
	bool		 empty[QSB_JSON_MAXDEPTH + 1];
};

void	 qsb_jw_init(struct qsb_jw *, int pretty);
void	 qsb_jw_free(struct qsb_jw *);
void	 qsb_jw_obj(struct qsb_jw *);
void	 qsb_jw_obj_end(struct qsb_jw *);
void	 qsb_jw_arr(struct qsb_jw *);
void	 qsb_jw_arr_end(struct qsb_jw *);
void	 qsb_jw_key(struct qsb_jw *, const char *);
void	 qsb_jw_str(struct qsb_jw *, const char *);
void	 qsb_jw_strn(struct qsb_jw *, const char *, size_t);
void	 qsb_jw_int(struct qsb_jw *, long long);
void	 qsb_jw_uint(struct qsb_jw *, unsigned long long);
void	 qsb_jw_double(struct qsb_jw *, double);
void	 qsb_jw_bool(struct qsb_jw *, bool);
void	 qsb_jw_null(struct qsb_jw *);
/* Writes value i of a parsed document (re-serialized in the writer's
 * style); returns the index of the token after it. */
int	 qsb_jw_value(struct qsb_jw *, const struct qsb_json *, int i);
/* A value that is already valid JSON (for instance a parsed subtree). */
void	 qsb_jw_raw(struct qsb_jw *, const char *, size_t);
void	 qsb_jw_time(struct qsb_jw *, int64_t ms);
/* Ends the document with a newline; -1 (ENOMEM) if anything failed. */
int	 qsb_jw_finish(struct qsb_jw *);

/* Appends the JSON string form of s (quoted, escaped, repaired). */
void	 qsb_jw_escape(struct qsb_jw *, const char *, size_t);

#endif
