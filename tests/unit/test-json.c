/* JSON: what the strict check accepts and rejects, round-trips through the
 * writer, escaping and UTF-8 repair, accessors and schema helpers. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "t.h"

static const char *const valid[] = {
	"{}", "[]", "0", "-0", "1.5e10", "-12.25E-3", "\"\"", "true",
	"false", "null", " \t\r\n{\"a\" : [1, 2, {\"b\": null}]} \n",
	"\"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
	"\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
	"{\"a\":1,\"b\":{\"a\":2}}",	/* same key at different levels */
	"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	NULL
};

static const char *const invalid[] = {
	/* the four jsmn accepts (STYLE.md) */
	"{\"a\":1,}", "{\"a\"}", "{}{}", "[ thanx ]",
	"", " ", "[1,]", "[,1]", "{,}", "{\"a\" 1}", "{\"a\":}", "{1:2}",
	"{'a':1}", "[01]", "[1.]", "[.5]", "[1e]", "[+1]", "[-]", "[0x10]",
	"[NaN]", "[Infinity]", "[tru]", "[truex]", "[nul]", "[True]",
	"\"abc", "\"a\tb\"", "\"a\nb\"", "\"\\x41\"", "\"\\u12\"",
	"\"\\u12G4\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
	"\"\\ud800x\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
	"\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "[1] x", "[1]]", "{\"a\":1}}",
	"{\"a\":1,\"a\":2}", "{\"a\":1,\"\\u0061\":2}", "[}", "{]",
	"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	"[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	"\xef\xbb\xbf{}",	/* a BOM is not JSON */
	NULL
};

static char *
roundtrip(const char *in, int pretty)
{
	struct qsb_json j;
	struct qsb_jw w;
	struct qsb_err e;
	char *out;

	if (qsb_json_parse(&j, in, strlen(in), &e) < 0)
		return NULL;
	qsb_jw_init(&w, pretty);
	(void)qsb_jw_value(&w, &j, 0);
	qsb_json_free(&j);
	if (qsb_jw_finish(&w) < 0)
		return NULL;
	w.buf[w.len - 1] = '\0';	/* drop the newline */
	out = strdup(w.buf);
	qsb_jw_free(&w);
	return out;
}

static char *
escaped(const char *s, size_t n)
{
	struct qsb_jw w;
	char *out;

	qsb_jw_init(&w, 0);
	qsb_jw_strn(&w, s, n);
	qsb_jw_finish(&w);
	w.buf[w.len - 1] = '\0';
	out = strdup(w.buf);
	qsb_jw_free(&w);
	return out;
}

int
main(void)
{
	struct qsb_json j;
	struct qsb_err e;
	struct qsb_jw w;
	char *s, big[4096];
	size_t i, l;
	long long v;
	double d;
	bool b;
	int k;

	for (i = 0; valid[i]; i++) {
		int r = qsb_json_parse(&j, valid[i], strlen(valid[i]), &e);
		ok(r == 0, "valid %zu: %.40s", i, valid[i]);
		if (r != 0)
			printf("#   %s\n", e.msg);
		qsb_json_free(&j);
	}
	for (i = 0; invalid[i]; i++) {
		int r = qsb_json_parse(&j, invalid[i], strlen(invalid[i]), &e);
		ok(r < 0 && e.code == QSB_E_CONFIG_INVALID,
		    "invalid %zu rejected: %.40s (%s)", i, invalid[i],
		    r < 0 ? e.msg : "accepted");
		if (r == 0)
			qsb_json_free(&j);
	}
	/* NUL inside the text is not JSON whitespace */
	ok(qsb_json_parse(&j, "{}\0", 3, &e) < 0, "embedded NUL rejected");
	ok(qsb_json_parse(&j, "\"a\0b\"", 5, &e) < 0, "raw NUL in string");

	s = roundtrip("{ \"b\" : [ 1 , -2.5e3 , true , null ] , \"a\" : "
	    "\"x\\u0041\\ud83d\\ude00\" }", 0);
	is_str(s, "{\"b\":[1,-2.5e3,true,null],\"a\":\"xA\xf0\x9f\x98\x80\"}",
	    "round-trip compact");
	free(s);
	s = roundtrip("{\"a\":[1,{}],\"b\":[]}", 1);
	is_str(s, "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}",
	    "round-trip pretty");
	free(s);
	s = roundtrip("\"\\u0000\\u001f\\\"\\\\\\/\"", 0);
	is_str(s, "\"\\u0000\\u001f\\\"\\\\/\"", "control characters");
	free(s);

	/* every output of the writer parses again */
	for (i = 0; valid[i]; i++) {
		s = roundtrip(valid[i], i % 2);
		ok(s != NULL && qsb_json_parse(&j, s, strlen(s), &e) == 0,
		    "writer output of valid %zu parses", i);
		if (s)
			qsb_json_free(&j);
		free(s);
	}

	/* UTF-8 repair: each maximal invalid subpart becomes one U+FFFD */
	s = escaped("a\xff" "b", 3);
	is_str(s, "\"a\xef\xbf\xbd" "b\"", "lone 0xFF");
	free(s);
	s = escaped("\xe2\x82" "x", 3);
	is_str(s, "\"\xef\xbf\xbdx\"", "truncated 3-byte sequence: one U+FFFD");
	free(s);
	s = escaped("\xc0\xaf", 2);
	is_str(s, "\"\xef\xbf\xbd\xef\xbf\xbd\"", "overlong: two U+FFFD");
	free(s);
	s = escaped("\xed\xa0\x80", 3);
	is_str(s, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
	    "encoded surrogate: three U+FFFD");
	free(s);
	s = escaped("\xf0\x9f\x98", 3);
	is_str(s, "\"\xef\xbf\xbd\"", "truncated emoji at the end");
	free(s);
	s = escaped("nul\0byte", 8);
	is_str(s, "\"nul\\u0000byte\"", "NUL escaped");
	free(s);
	s = escaped("\x7f\xc2\x80", 3);
	is_str(s, "\"\x7f\xc2\x80\"", "DEL and U+0080 kept");
	free(s);
	/* every byte string, escaped, is valid JSON */
	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)((i * 7919 + 13) & 0xff);
	s = escaped(big, sizeof(big));
	ok(qsb_json_parse(&j, s, strlen(s), &e) == 0,
	    "4096 pseudo-random bytes escape to valid JSON");
	qsb_json_free(&j);
	free(s);

	/* accessors */
	s = "{\"n\":42,\"neg\":-7,\"f\":0.5,\"big\":1e400,\"t\":true,"
	    "\"s\":\"h\\u00e9\",\"z\":\"a\\u0000b\",\"arr\":[1,2,3],"
	    "\"o\":{\"x\":1}}";
	ok(qsb_json_parse(&j, s, strlen(s), &e) == 0, "accessor fixture");
	ok(qsb_json_i64(&j, qsb_json_get(&j, 0, "n"), &v) == 0 && v == 42,
	    "i64");
	ok(qsb_json_i64(&j, qsb_json_get(&j, 0, "neg"), &v) == 0 && v == -7,
	    "negative i64");
	ok(qsb_json_i64(&j, qsb_json_get(&j, 0, "f"), &v) < 0,
	    "0.5 is not an integer");
	ok(qsb_json_f64(&j, qsb_json_get(&j, 0, "f"), &d) == 0 && d == 0.5,
	    "f64");
	ok(qsb_json_f64(&j, qsb_json_get(&j, 0, "big"), &d) < 0,
	    "1e400 overflows");
	ok(qsb_json_bool(&j, qsb_json_get(&j, 0, "t"), &b) == 0 && b,
	    "bool");
	s = qsb_json_str(&j, qsb_json_get(&j, 0, "s"), &l);
	is_str(s, "h\xc3\xa9", "unescaped string");
	free(s);
	s = qsb_json_str(&j, qsb_json_get(&j, 0, "z"), &l);
	ok(s && l == 3 && s[1] == '\0', "\\u0000 kept, length 3");
	free(s);
	k = qsb_json_get(&j, 0, "arr");
	ok(j.t[k].size == 3 && qsb_json_get(&j, 0, "o") == j.t[k].next + 1,
	    "subtree skipping");
	ok(qsb_json_get(&j, 0, "x") < 0, "nested key not found at top");
	ok(qsb_json_get(&j, qsb_json_get(&j, 0, "o"), "x") >= 0,
	    "nested key found");
	{
		static const char *const keys[] = { "n", "neg", NULL };
		ok(qsb_json_keys_only(&j, 0, keys, "ctx", &e) < 0 &&
		    strstr(e.msg, "unknown field 'ctx.f'") != NULL,
		    "unknown field named: %s", e.msg);
	}
	ok(qsb_json_want_str(&j, 0, "n", true, &s, "c", &e) < 0 &&
	    strstr(e.msg, "'c.n': expected a string, got number") != NULL,
	    "wrong type named: %s", e.msg);
	ok(qsb_json_want_str(&j, 0, "z", true, &s, "c", &e) < 0,
	    "NUL in a string field refused");
	ok(qsb_json_want_i64(&j, 0, "missing", true, 0, 1, &v, "c", &e) < 0 &&
	    strstr(e.msg, "'c.missing' is missing") != NULL, "missing field");
	ok(qsb_json_want_i64(&j, 0, "n", true, 0, 10, &v, "c", &e) < 0,
	    "range checked");
	qsb_json_free(&j);

	/* pretty output of an empty object and nested empties */
	qsb_jw_init(&w, 1);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "e");
	qsb_jw_arr(&w);
	qsb_jw_arr_end(&w);
	qsb_jw_key(&w, "d");
	qsb_jw_double(&w, 0.1);
	qsb_jw_obj_end(&w);
	qsb_jw_finish(&w);
	is_str(w.buf, "{\n  \"e\": [],\n  \"d\": 0.1\n}\n", "pretty empties");
	qsb_jw_free(&w);

	return t_done();
}
