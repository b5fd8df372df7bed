#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "json.h"
#include "parse.h"
#include "utf8.h"

/*
 * The strict check.  A recursive descent over the text that accepts exactly
 * RFC 8259 JSON-text; jsmn runs only on text that passed it.
 */
struct chk {
	const unsigned char	*s;
	size_t			 n, i;
	int			 ntok;
	const char		*why;
};

static void
ws(struct chk *c)
{
	while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' ||
	    c->s[c->i] == '\n' || c->s[c->i] == '\r'))
		c->i++;
}

static int
hex4(struct chk *c, unsigned *v)
{
	size_t k;
	unsigned d;

	*v = 0;
	if (c->n - c->i < 4)
		return -1;
	for (k = 0; k < 4; k++) {
		unsigned char h = c->s[c->i + k];
		if (h >= '0' && h <= '9')
			d = h - '0';
		else if (h >= 'a' && h <= 'f')
			d = h - 'a' + 10;
		else if (h >= 'A' && h <= 'F')
			d = h - 'A' + 10;
		else
			return -1;
		*v = (*v << 4) | d;
	}
	c->i += 4;
	return 0;
}

static int
chk_string(struct chk *c)
{
	uint32_t cp;
	unsigned u, u2;
	int k;

	c->i++;			/* opening quote */
	for (;;) {
		if (c->i >= c->n)
			return c->why = "unterminated string", -1;
		unsigned char ch = c->s[c->i];
		if (ch == '"') {
			c->i++;
			return 0;
		}
		if (ch < 0x20)
			return c->why = "control character in string", -1;
		if (ch == '\\') {
			c->i++;
			if (c->i >= c->n)
				return c->why = "unterminated string", -1;
			ch = c->s[c->i++];
			if (strchr("\"\\/bfnrt", ch) != NULL && ch != '\0')
				continue;
			if (ch != 'u')
				return c->why = "invalid escape", -1;
			if (hex4(c, &u) < 0)
				return c->why = "invalid \\u escape", -1;
			if (u >= 0xDC00 && u <= 0xDFFF)
				return c->why = "lone low surrogate", -1;
			if (u >= 0xD800 && u <= 0xDBFF) {
				if (c->n - c->i < 2 || c->s[c->i] != '\\' ||
				    c->s[c->i + 1] != 'u')
					return c->why = "lone high surrogate", -1;
				c->i += 2;
				if (hex4(c, &u2) < 0)
					return c->why = "invalid \\u escape", -1;
				if (u2 < 0xDC00 || u2 > 0xDFFF)
					return c->why = "lone high surrogate", -1;
			}
			continue;
		}
		if (ch < 0x80) {
			c->i++;
			continue;
		}
		k = qsb_utf8_decode(c->s + c->i, c->n - c->i, &cp);
		if (k < 0)
			return c->why = "invalid UTF-8", -1;
		c->i += (size_t)k;
	}
}

static int
digits(struct chk *c)
{
	size_t st = c->i;

	while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9')
		c->i++;
	return c->i > st ? 0 : -1;
}

static int
chk_number(struct chk *c)
{
	if (c->s[c->i] == '-')
		c->i++;
	if (c->i >= c->n)
		return c->why = "invalid number", -1;
	if (c->s[c->i] == '0')
		c->i++;
	else if (digits(c) < 0)
		return c->why = "invalid number", -1;
	if (c->i < c->n && c->s[c->i] == '.') {
		c->i++;
		if (digits(c) < 0)
			return c->why = "invalid number", -1;
	}
	if (c->i < c->n && (c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
		c->i++;
		if (c->i < c->n && (c->s[c->i] == '+' || c->s[c->i] == '-'))
			c->i++;
		if (digits(c) < 0)
			return c->why = "invalid number", -1;
	}
	/* "01", "1x": the next byte must end the value */
	if (c->i < c->n && ((c->s[c->i] >= '0' && c->s[c->i] <= '9') ||
	    (c->s[c->i] >= 'a' && c->s[c->i] <= 'z') ||
	    (c->s[c->i] >= 'A' && c->s[c->i] <= 'Z') || c->s[c->i] == '.' ||
	    c->s[c->i] == '-' || c->s[c->i] == '+'))
		return c->why = "invalid number", -1;
	return 0;
}

static int
literal(struct chk *c, const char *lit)
{
	size_t l = strlen(lit);

	if (c->n - c->i < l || memcmp(c->s + c->i, lit, l) != 0)
		return c->why = "invalid literal", -1;
	c->i += l;
	if (c->i < c->n && ((c->s[c->i] >= 'a' && c->s[c->i] <= 'z') ||
	    (c->s[c->i] >= 'A' && c->s[c->i] <= 'Z') ||
	    (c->s[c->i] >= '0' && c->s[c->i] <= '9')))
		return c->why = "invalid literal", -1;
	return 0;
}

static int
chk_value(struct chk *c, int depth)
{
	ws(c);
	if (c->i >= c->n)
		return c->why = "unexpected end of input", -1;
	c->ntok++;
	switch (c->s[c->i]) {
	case '{':
		if (depth >= QSB_JSON_MAXDEPTH)
			return c->why = "nesting too deep", -1;
		c->i++;
		ws(c);
		if (c->i < c->n && c->s[c->i] == '}') {
			c->i++;
			return 0;
		}
		for (;;) {
			ws(c);
			if (c->i >= c->n || c->s[c->i] != '"')
				return c->why = "expected a string key", -1;
			c->ntok++;
			if (chk_string(c) < 0)
				return -1;
			ws(c);
			if (c->i >= c->n || c->s[c->i] != ':')
				return c->why = "expected ':'", -1;
			c->i++;
			if (chk_value(c, depth + 1) < 0)
				return -1;
			ws(c);
			if (c->i < c->n && c->s[c->i] == ',') {
				c->i++;
				continue;
			}
			if (c->i < c->n && c->s[c->i] == '}') {
				c->i++;
				return 0;
			}
			return c->why = "expected ',' or '}'", -1;
		}
	case '[':
		if (depth >= QSB_JSON_MAXDEPTH)
			return c->why = "nesting too deep", -1;
		c->i++;
		ws(c);
		if (c->i < c->n && c->s[c->i] == ']') {
			c->i++;
			return 0;
		}
		for (;;) {
			if (chk_value(c, depth + 1) < 0)
				return -1;
			ws(c);
			if (c->i < c->n && c->s[c->i] == ',') {
				c->i++;
				continue;
			}
			if (c->i < c->n && c->s[c->i] == ']') {
				c->i++;
				return 0;
			}
			return c->why = "expected ',' or ']'", -1;
		}
	case '"':
		return chk_string(c);
	case 't':
		return literal(c, "true");
	case 'f':
		return literal(c, "false");
	case 'n':
		return literal(c, "null");
	default:
		if (c->s[c->i] == '-' || (c->s[c->i] >= '0' &&
		    c->s[c->i] <= '9'))
			return chk_number(c);
		return c->why = "unexpected character", -1;
	}
}

static int
rawkeycmp(const struct qsb_json *j, int a, int b)
{
	const struct qsb_jtok *ta = &j->t[a], *tb = &j->t[b];
	size_t la = (size_t)(ta->end - ta->start), lb = (size_t)(tb->end - tb->start);
	int r;

	r = memcmp(j->s + ta->start, j->s + tb->start, la < lb ? la : lb);
	if (r != 0)
		return r;
	return la < lb ? -1 : la > lb;
}

static const struct qsb_json *sort_j;

static int
keycmp(const void *pa, const void *pb)
{
	return rawkeycmp(sort_j, *(const int *)pa, *(const int *)pb);
}

/* Duplicate keys, compared after unescaping ("a" and "\u0061" collide). */
static int
check_dups(struct qsb_json *j, struct qsb_err *e)
{
	int i, k, m, *keys = NULL, nk, rc = -1;
	struct qsb_jtok *ut = NULL;
	char *u = NULL, *p;
	size_t total = 0, l;

	for (i = 0; i < j->n; i++) {
		if (j->t[i].type != QSB_JOBJ || j->t[i].size < 2)
			continue;
		nk = j->t[i].size;
		free(keys);
		free(ut);
		free(u);
		keys = NULL;
		ut = NULL;
		u = NULL;
		if ((keys = reallocarray(NULL, (size_t)nk, sizeof(*keys))) ==
		    NULL || (ut = reallocarray(NULL, (size_t)nk,
		    sizeof(*ut))) == NULL)
			goto nomem;
		/* Unescaped copies of the keys, in one buffer. */
		total = 0;
		for (m = 0, k = i + 1; m < nk; m++, k = j->t[k + 1].next)
			total += (size_t)(j->t[k].end - j->t[k].start) + 1;
		if ((u = malloc(total + 1)) == NULL)
			goto nomem;
		p = u;
		for (m = 0, k = i + 1; m < nk; m++, k = j->t[k + 1].next) {
			char *s = qsb_json_str(j, k, &l);
			if (s == NULL)
				goto nomem;
			memcpy(p, s, l);
			ut[m].type = QSB_JSTR;
			ut[m].start = (int)(p - u);
			ut[m].end = (int)(p - u + (ptrdiff_t)l);
			p += l;
			free(s);
			keys[m] = m;
		}
		{
			struct qsb_json uj = { u, (size_t)(p - u), ut, nk };
			sort_j = &uj;
			qsort(keys, (size_t)nk, sizeof(*keys), keycmp);
			for (m = 1; m < nk; m++)
				if (rawkeycmp(&uj, keys[m - 1], keys[m]) == 0) {
					qsb_err_set(e, QSB_E_CONFIG_INVALID,
					    "invalid JSON: duplicate key '%.*s'",
					    ut[keys[m]].end - ut[keys[m]].start,
					    u + ut[keys[m]].start);
					goto out;
				}
		}
	}
	rc = 0;
	goto out;
nomem:
	qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "cannot parse JSON");
out:
	free(keys);
	free(ut);
	free(u);
	return rc;
}

int
qsb_json_parse(struct qsb_json *j, const char *s, size_t len,
    struct qsb_err *e)
{
	struct chk c = { (const unsigned char *)s, len, 0, 0, NULL };
	jsmn_parser p;
	jsmntok_t *jt = NULL;
	int n, i;

	memset(j, 0, sizeof(*j));
	if (len > INT_MAX / 2)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "invalid JSON: document too large");
	if (chk_value(&c, 0) == 0) {
		ws(&c);
		if (c.i != c.n) {
			c.why = "trailing data after the value";
		}
	}
	if (c.why != NULL)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "invalid JSON at byte %zu: %s", c.i, c.why);

	jsmn_init(&p);
	if ((jt = reallocarray(NULL, (size_t)c.ntok + 1, sizeof(*jt))) == NULL)
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "cannot parse JSON");
	if (c.ntok == 1 && s[c.i = strspn(s, " \t\r\n")] != '"' &&
	    s[c.i] != '{' && s[c.i] != '[') {
		/* a bare number or literal: strict jsmn wants a delimiter
		 * after a primitive, and the text has none */
		jt[0].type = JSMN_PRIMITIVE;
		jt[0].start = (int)c.i;
		for (c.i = len; c.i > 0 && strchr(" \t\r\n", s[c.i - 1]); )
			c.i--;
		jt[0].end = (int)c.i;
		jt[0].size = 0;
		jt[0].parent = -1;
		n = 1;
	} else
		n = jsmn_parse(&p, s, len, jt, (unsigned)c.ntok + 1);
	if (n != c.ntok) {
		free(jt);
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "invalid JSON: tokenizer disagrees (%d)", n);
	}
	if ((j->t = reallocarray(NULL, (size_t)n, sizeof(*j->t))) == NULL) {
		free(jt);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED,
		    "cannot parse JSON");
	}
	for (i = 0; i < n; i++) {
		struct qsb_jtok *t = &j->t[i];
		t->start = jt[i].start;
		t->end = jt[i].end;
		t->size = jt[i].size;
		t->next = i + 1;
		switch (jt[i].type) {
		case JSMN_OBJECT:
			t->type = QSB_JOBJ;
			break;
		case JSMN_ARRAY:
			t->type = QSB_JARR;
			break;
		case JSMN_STRING:
			t->type = QSB_JSTR;
			break;
		default:
			t->type = s[t->start] == 'n' ? QSB_JNULL :
			    (s[t->start] == 't' || s[t->start] == 'f') ?
			    QSB_JBOOL : QSB_JNUM;
			break;
		}
	}
	/* next = index after the subtree: every ancestor ends no earlier
	 * than its last descendant, so walk the parent links backwards. */
	for (i = n - 1; i >= 0; i--) {
		int par = jt[i].parent;
		if (par >= 0 && j->t[i].next > j->t[par].next)
			j->t[par].next = j->t[i].next;
	}
	free(jt);
	j->s = s;
	j->len = len;
	j->n = n;
	if (check_dups(j, e) < 0) {
		qsb_json_free(j);
		return -1;
	}
	return 0;
}

void
qsb_json_free(struct qsb_json *j)
{
	if (j == NULL)
		return;
	free(j->t);
	j->t = NULL;
	j->n = 0;
}

int
qsb_json_first(const struct qsb_json *j, int i)
{
	if (i < 0 || i >= j->n || (j->t[i].type != QSB_JOBJ &&
	    j->t[i].type != QSB_JARR) || j->t[i].size == 0)
		return -1;
	return i + 1;
}

int
qsb_json_sibling(const struct qsb_json *j, int container, int i)
{
	int nx;

	if (j->t[container].type == QSB_JOBJ)
		nx = j->t[i + 1].next;
	else
		nx = j->t[i].next;
	return nx < j->t[container].next ? nx : -1;
}

static bool
keyeq(const struct qsb_json *j, int k, const char *key)
{
	const struct qsb_jtok *t = &j->t[k];
	size_t l = strlen(key);
	bool eq;
	char *u;

	if (memchr(j->s + t->start, '\\', (size_t)(t->end - t->start)) == NULL)
		return (size_t)(t->end - t->start) == l &&
		    memcmp(j->s + t->start, key, l) == 0;
	if ((u = qsb_json_str(j, k, &l)) == NULL)
		return false;
	eq = l == strlen(key) && memcmp(u, key, l) == 0;
	free(u);
	return eq;
}

int
qsb_json_get(const struct qsb_json *j, int obj, const char *key)
{
	int k;

	if (obj < 0 || obj >= j->n || j->t[obj].type != QSB_JOBJ)
		return -1;
	for (k = qsb_json_first(j, obj); k >= 0;
	    k = qsb_json_sibling(j, obj, k))
		if (keyeq(j, k, key))
			return k + 1;
	return -1;
}

static unsigned
hexval(const char *p)
{
	unsigned v = 0;
	int k;

	for (k = 0; k < 4; k++) {
		char h = p[k];
		v <<= 4;
		if (h >= '0' && h <= '9')
			v |= (unsigned)(h - '0');
		else if (h >= 'a' && h <= 'f')
			v |= (unsigned)(h - 'a' + 10);
		else
			v |= (unsigned)(h - 'A' + 10);
	}
	return v;
}

char *
qsb_json_str(const struct qsb_json *j, int i, size_t *lenp)
{
	const struct qsb_jtok *t;
	const char *p, *end;
	char *out, *o;

	if (i < 0 || i >= j->n || j->t[i].type != QSB_JSTR) {
		errno = EINVAL;
		return NULL;
	}
	t = &j->t[i];
	p = j->s + t->start;
	end = j->s + t->end;
	if ((out = malloc((size_t)(end - p) + 1)) == NULL)
		return NULL;
	for (o = out; p < end; ) {
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		p++;
		switch (*p++) {
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			uint32_t cp = hexval(p);
			p += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				cp = 0x10000 + ((cp - 0xD800) << 10) +
				    (hexval(p + 2) - 0xDC00);
				p += 6;
			}
			o += qsb_utf8_encode(cp, o);
			break;
		}
		default: *o++ = p[-1]; break;	/* " \ / */
		}
	}
	*o = '\0';
	if (lenp != NULL)
		*lenp = (size_t)(o - out);
	return out;
}

bool
qsb_json_streq(const struct qsb_json *j, int i, const char *lit)
{
	if (i < 0 || i >= j->n || j->t[i].type != QSB_JSTR)
		return false;
	return keyeq(j, i, lit);
}

int
qsb_json_bool(const struct qsb_json *j, int i, bool *b)
{
	if (i < 0 || i >= j->n || j->t[i].type != QSB_JBOOL)
		return -1;
	*b = j->s[j->t[i].start] == 't';
	return 0;
}

int
qsb_json_i64(const struct qsb_json *j, int i, long long *v)
{
	char buf[32], *end;
	size_t l;

	if (i < 0 || i >= j->n || j->t[i].type != QSB_JNUM)
		return -1;
	l = (size_t)(j->t[i].end - j->t[i].start);
	if (l >= sizeof(buf) || memchr(j->s + j->t[i].start, '.', l) ||
	    memchr(j->s + j->t[i].start, 'e', l) ||
	    memchr(j->s + j->t[i].start, 'E', l))
		return -1;
	memcpy(buf, j->s + j->t[i].start, l);
	buf[l] = '\0';
	errno = 0;
	*v = strtoll(buf, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	return 0;
}

int
qsb_json_f64(const struct qsb_json *j, int i, double *v)
{
	char buf[64], *end;
	size_t l;

	if (i < 0 || i >= j->n || j->t[i].type != QSB_JNUM)
		return -1;
	l = (size_t)(j->t[i].end - j->t[i].start);
	if (l >= sizeof(buf))
		return -1;
	memcpy(buf, j->s + j->t[i].start, l);
	buf[l] = '\0';
	errno = 0;
	*v = strtod(buf, &end);
	if (errno != 0 || *end != '\0' || !isfinite(*v))
		return -1;
	return 0;
}

const char *
qsb_json_typename(enum qsb_jtype t)
{
	static const char *const names[] = {
		"null", "boolean", "number", "string", "array", "object"
	};
	return names[t];
}

static int
wrongtype(const struct qsb_json *j, int v, const char *ctx, const char *key,
    const char *want, struct qsb_err *e)
{
	return qsb_err_set(e, QSB_E_CONFIG_INVALID,
	    "field '%s%s%s': expected %s, got %s", ctx ? ctx : "",
	    ctx && *ctx ? "." : "", key, want,
	    qsb_json_typename(j->t[v].type));
}

static int
lookup(const struct qsb_json *j, int obj, const char *key, bool required,
    const char *ctx, struct qsb_err *e)
{
	int v = qsb_json_get(j, obj, key);

	if (v < 0 && required)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field '%s%s%s' is missing", ctx ? ctx : "",
		    ctx && *ctx ? "." : "", key), -2;
	return v;
}

int
qsb_json_keys_only(const struct qsb_json *j, int obj,
    const char *const *allowed, const char *ctx, struct qsb_err *e)
{
	int k, a;
	char *name;

	for (k = qsb_json_first(j, obj); k >= 0;
	    k = qsb_json_sibling(j, obj, k)) {
		for (a = 0; allowed[a] != NULL; a++)
			if (keyeq(j, k, allowed[a]))
				break;
		if (allowed[a] != NULL)
			continue;
		name = qsb_json_str(j, k, NULL);
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "unknown field '%s%s%s'",
		    ctx ? ctx : "", ctx && *ctx ? "." : "",
		    name ? name : "?");
		free(name);
		return -1;
	}
	return 0;
}

int
qsb_json_want_str(const struct qsb_json *j, int obj, const char *key,
    bool required, char **out, const char *ctx, struct qsb_err *e)
{
	size_t l;
	int v;

	if ((v = lookup(j, obj, key, required, ctx, e)) < 0)
		return v == -2 ? -1 : 0;
	if (j->t[v].type != QSB_JSTR)
		return wrongtype(j, v, ctx, key, "a string", e);
	if ((*out = qsb_json_str(j, v, &l)) == NULL)
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	if (strlen(*out) != l) {
		free(*out);
		*out = NULL;
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field '%s%s%s': NUL character not allowed",
		    ctx ? ctx : "", ctx && *ctx ? "." : "", key);
	}
	return 1;
}

int
qsb_json_want_bool(const struct qsb_json *j, int obj, const char *key,
    bool required, bool *out, const char *ctx, struct qsb_err *e)
{
	int v;

	if ((v = lookup(j, obj, key, required, ctx, e)) < 0)
		return v == -2 ? -1 : 0;
	if (qsb_json_bool(j, v, out) < 0)
		return wrongtype(j, v, ctx, key, "a boolean", e);
	return 1;
}

int
qsb_json_want_i64(const struct qsb_json *j, int obj, const char *key,
    bool required, long long min, long long max, long long *out,
    const char *ctx, struct qsb_err *e)
{
	int v;

	if ((v = lookup(j, obj, key, required, ctx, e)) < 0)
		return v == -2 ? -1 : 0;
	if (j->t[v].type != QSB_JNUM)
		return wrongtype(j, v, ctx, key, "an integer", e);
	if (qsb_json_i64(j, v, out) < 0 || *out < min || *out > max)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field '%s%s%s': expected an integer from %lld to %lld",
		    ctx ? ctx : "", ctx && *ctx ? "." : "", key, min, max);
	return 1;
}

int
qsb_json_want_enum(const struct qsb_json *j, int obj, const char *key,
    bool required, const char *const *names, int *out, const char *ctx,
    struct qsb_err *e)
{
	char list[256] = "";
	int v, k;

	if ((v = lookup(j, obj, key, required, ctx, e)) < 0)
		return v == -2 ? -1 : 0;
	if (j->t[v].type != QSB_JSTR)
		return wrongtype(j, v, ctx, key, "a string", e);
	for (k = 0; names[k] != NULL; k++)
		if (qsb_json_streq(j, v, names[k])) {
			*out = k;
			return 1;
		}
	for (k = 0; names[k] != NULL; k++) {
		if (k > 0)
			strlcat(list, "|", sizeof(list));
		strlcat(list, names[k], sizeof(list));
	}
	return qsb_err_set(e, QSB_E_CONFIG_INVALID,
	    "field '%s%s%s': expected one of %s", ctx ? ctx : "",
	    ctx && *ctx ? "." : "", key, list);
}

/*
 * The writer.
 */
void
qsb_jw_init(struct qsb_jw *w, int pretty)
{
	memset(w, 0, sizeof(*w));
	w->pretty = pretty;
}

void
qsb_jw_free(struct qsb_jw *w)
{
	if (w == NULL)
		return;
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

static void
put(struct qsb_jw *w, const char *s, size_t n)
{
	size_t ncap;
	char *nb;

	if (w->nomem)
		return;
	if (n > SIZE_MAX - w->len - 1) {
		w->nomem = 1;
		return;
	}
	if (w->len + n + 1 > w->cap) {
		ncap = w->cap ? w->cap : 256;
		while (ncap < w->len + n + 1)
			ncap = ncap > SIZE_MAX / 2 ? w->len + n + 1 : ncap * 2;
		if ((nb = realloc(w->buf, ncap)) == NULL) {
			w->nomem = 1;
			return;
		}
		w->buf = nb;
		w->cap = ncap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void
putc_(struct qsb_jw *w, char c)
{
	put(w, &c, 1);
}

static void
indent(struct qsb_jw *w)
{
	int i;

	putc_(w, '\n');
	for (i = 0; i < w->depth; i++)
		put(w, "  ", 2);
}

/* Separator and indentation before a value or a key. */
static void
before(struct qsb_jw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->need_comma)
		putc_(w, ',');
	if (w->pretty && w->depth > 0)
		indent(w);
	if (w->depth > 0)
		w->empty[w->depth] = false;
}

static void
open_(struct qsb_jw *w, char c)
{
	before(w);
	putc_(w, c);
	if (w->depth < QSB_JSON_MAXDEPTH)
		w->depth++;
	else
		w->nomem = 1;	/* caller bug: refuse to emit garbage */
	w->empty[w->depth] = true;
	w->need_comma = false;
}

static void
close_(struct qsb_jw *w, char c)
{
	bool was_empty = w->empty[w->depth];

	if (w->depth > 0)
		w->depth--;
	if (w->pretty && !was_empty)
		indent(w);
	putc_(w, c);
	w->need_comma = true;
}

void qsb_jw_obj(struct qsb_jw *w) { open_(w, '{'); }
void qsb_jw_obj_end(struct qsb_jw *w) { close_(w, '}'); }
void qsb_jw_arr(struct qsb_jw *w) { open_(w, '['); }
void qsb_jw_arr_end(struct qsb_jw *w) { close_(w, ']'); }

void
qsb_jw_escape(struct qsb_jw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run;
	uint32_t cp;
	char esc[7];
	int k;

	putc_(w, '"');
	while (i < n) {
		/* copy the longest run of bytes that need nothing */
		for (run = i; run < n && p[run] >= 0x20 && p[run] < 0x80 &&
		    p[run] != '"' && p[run] != '\\'; run++)
			;
		if (run > i) {
			put(w, s + i, run - i);
			i = run;
			continue;
		}
		if (p[i] >= 0x80) {
			k = qsb_utf8_decode(p + i, n - i, &cp);
			if (k > 0) {
				put(w, s + i, (size_t)k);
				i += (size_t)k;
			} else {
				put(w, "\xEF\xBF\xBD", 3);
				i += (size_t)-k;
			}
			continue;
		}
		switch (p[i]) {
		case '"': put(w, "\\\"", 2); break;
		case '\\': put(w, "\\\\", 2); break;
		case '\b': put(w, "\\b", 2); break;
		case '\f': put(w, "\\f", 2); break;
		case '\n': put(w, "\\n", 2); break;
		case '\r': put(w, "\\r", 2); break;
		case '\t': put(w, "\\t", 2); break;
		default:
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[p[i] >> 4];
			esc[5] = hex[p[i] & 0xF];
			put(w, esc, 6);
			break;
		}
		i++;
	}
	putc_(w, '"');
}

void
qsb_jw_key(struct qsb_jw *w, const char *k)
{
	before(w);
	qsb_jw_escape(w, k, strlen(k));
	put(w, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
	w->after_key = true;
	w->need_comma = false;
}

static void
value_done(struct qsb_jw *w)
{
	w->need_comma = true;
}

void
qsb_jw_strn(struct qsb_jw *w, const char *s, size_t n)
{
	before(w);
	qsb_jw_escape(w, s, n);
	value_done(w);
}

void
qsb_jw_str(struct qsb_jw *w, const char *s)
{
	if (s == NULL)
		qsb_jw_null(w);
	else
		qsb_jw_strn(w, s, strlen(s));
}

void
qsb_jw_int(struct qsb_jw *w, long long v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%lld", v);

	before(w);
	put(w, buf, (size_t)n);
	value_done(w);
}

void
qsb_jw_uint(struct qsb_jw *w, unsigned long long v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%llu", v);

	before(w);
	put(w, buf, (size_t)n);
	value_done(w);
}

void
qsb_jw_double(struct qsb_jw *w, double v)
{
	char buf[64];
	int n;

	if (!isfinite(v)) {
		qsb_jw_null(w);
		return;
	}
	/* shortest of %.15g and %.17g that reads back exactly */
	n = snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		n = snprintf(buf, sizeof(buf), "%.17g", v);
	before(w);
	put(w, buf, (size_t)n);
	value_done(w);
}

void
qsb_jw_bool(struct qsb_jw *w, bool b)
{
	before(w);
	put(w, b ? "true" : "false", b ? 4 : 5);
	value_done(w);
}

void
qsb_jw_null(struct qsb_jw *w)
{
	before(w);
	put(w, "null", 4);
	value_done(w);
}

void
qsb_jw_raw(struct qsb_jw *w, const char *s, size_t n)
{
	before(w);
	put(w, s, n);
	value_done(w);
}

void
qsb_jw_time(struct qsb_jw *w, int64_t ms)
{
	char buf[QSB_TIME_BUFSZ];

	qsb_time_fmt(ms, buf);
	qsb_jw_str(w, buf);
}

int
qsb_jw_finish(struct qsb_jw *w)
{
	putc_(w, '\n');
	if (w->nomem) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int
qsb_jw_value(struct qsb_jw *w, const struct qsb_json *j, int i)
{
	const struct qsb_jtok *t = &j->t[i];
	char *s;
	size_t len;
	int k;

	switch (t->type) {
	case QSB_JOBJ:
		qsb_jw_obj(w);
		for (k = qsb_json_first(j, i); k >= 0;
		    k = qsb_json_sibling(j, i, k)) {
			s = qsb_json_str(j, k, NULL);
			qsb_jw_key(w, s ? s : "");
			free(s);
			(void)qsb_jw_value(w, j, k + 1);
		}
		qsb_jw_obj_end(w);
		break;
	case QSB_JARR:
		qsb_jw_arr(w);
		for (k = qsb_json_first(j, i); k >= 0;
		    k = qsb_json_sibling(j, i, k))
			(void)qsb_jw_value(w, j, k);
		qsb_jw_arr_end(w);
		break;
	case QSB_JSTR:
		if ((s = qsb_json_str(j, i, &len)) == NULL)
			w->nomem = 1;
		else
			qsb_jw_strn(w, s, len);
		free(s);
		break;
	default:	/* numbers and literals as written */
		qsb_jw_raw(w, j->s + t->start, (size_t)(t->end - t->start));
	}
	return t->next;
}
