/* Sizes, durations, ISO dates, session ids, UTF-8 primitives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "t.h"
#include "utf8.h"

int
main(void)
{
	static const struct { const char *in; uint64_t want; } sizes[] = {
		{ "0", 0 }, { "1234", 1234 }, { "10k", 10240 },
		{ "512m", 536870912ULL }, { "512M", 536870912ULL },
		{ "2g", 2147483648ULL }, { "1t", 1099511627776ULL },
		{ "3kb", 3072 }, { "3KiB", 3072 }, { "7b", 7 },
		{ "16777215t", 16777215ULL << 40 },
	};
	static const char *const badsizes[] = {
		"", "k", "-1", "1.5g", "1 g", "1gg", "1x", "12kbx", " 1",
		"16777216t", "99999999999999999999", "1e3", NULL
	};
	static const struct { const char *in; uint64_t want; } durs[] = {
		{ "500ms", 500 }, { "30s", 30000 }, { "5m", 300000 },
		{ "2h", 7200000 }, { "7d", 604800000 }, { "1w", 604800000 },
		{ "1h30m", 5400000 }, { "1m500ms", 60500 }, { "10", 10000 },
		{ "0s", 0 },
	};
	static const char *const baddurs[] = {
		"", "s", "5x", "-5s", "1.5s", "5 s", "5sec", "ms5",
		"99999999999999999999s", "9999999999999999w", NULL
	};
	static const struct { const char *in; int64_t want; } times[] = {
		{ "1970-01-01T00:00:00.000Z", 0 },
		{ "2026-11-30T14:00:00.000Z", 1796047200000LL },
		{ "2026-11-30", 1795996800000LL },
		{ "2026-11-30T14:00Z", 1796047200000LL },
		{ "2026-11-30T15:00:00+01:00", 1796047200000LL },
		{ "2026-11-30T13:30:00-0030", 1796047200000LL },
		{ "2024-02-29T12:00:00.5Z", 1709208000500LL },
		{ "1969-12-31T23:59:59.999Z", -1 },
		{ "2000-03-01T00:00:00.123456Z", 951868800123LL },
	};
	static const char *const badtimes[] = {
		"", "2026", "2026-13-01", "2026-02-29", "2023-02-29T00:00Z",
		"2026-11-31", "2026-11-30T24:00Z", "2026-11-30T12:60Z",
		"2026-11-30T12:00", "2026-11-30T12:00:00", "2026-11-30X",
		"26-11-30", "2026-11-30T12:00:00.Z", "2026/11/30", NULL
	};
	static const char *const goodids[] = {
		"a", "s1", "A.b_c-d", "0", "session-123", "x..y", NULL
	};
	static const char *const badids[] = {
		"", ".x", "../x", "a/b", "a b", "-a", "_a", "a\n", "é",
		"a\xff", "a:b", NULL
	};
	char buf[QSB_TIME_BUFSZ], sb[QSB_SIZE_BUFSZ], id[256], enc[4];
	uint64_t u;
	int64_t t;
	uint32_t cp;
	double d;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ok(qsb_parse_size(sizes[i].in, &u) == 0 && u == sizes[i].want,
		    "size '%s'", sizes[i].in);
	for (i = 0; badsizes[i]; i++)
		ok(qsb_parse_size(badsizes[i], &u) < 0, "bad size '%s'",
		    badsizes[i]);
	qsb_fmt_size(536870912ULL, sb);
	is_str(sb, "512m", "format 512m");
	qsb_fmt_size(3 * 1024 + 1, sb);
	is_str(sb, "3073", "format bytes");
	qsb_fmt_size(2ULL << 40, sb);
	is_str(sb, "2t", "format 2t");
	qsb_fmt_size(1ULL << 50, sb);
	is_str(sb, "1024t", "format stops at t");

	for (i = 0; i < sizeof(durs) / sizeof(durs[0]); i++)
		ok(qsb_parse_duration(durs[i].in, &u) == 0 &&
		    u == durs[i].want, "duration '%s'", durs[i].in);
	for (i = 0; baddurs[i]; i++)
		ok(qsb_parse_duration(baddurs[i], &u) < 0, "bad duration '%s'",
		    baddurs[i]);

	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++)
		ok(qsb_parse_time(times[i].in, &t) == 0 && t == times[i].want,
		    "time '%s'", times[i].in);
	for (i = 0; badtimes[i]; i++)
		ok(qsb_parse_time(badtimes[i], &t) < 0, "bad time '%s'",
		    badtimes[i]);
	qsb_time_fmt(1796047200000LL, buf);
	is_str(buf, "2026-11-30T14:00:00.000Z", "format time");
	qsb_time_fmt(-1, buf);
	is_str(buf, "1969-12-31T23:59:59.999Z", "format before the epoch");
	qsb_time_fmt(951782400007LL, buf);
	is_str(buf, "2000-02-29T00:00:00.007Z", "format leap day");
	for (t = -86400000LL * 800; t < 86400000LL * 366 * 400;
	    t += 86400000LL * 97 + 3600007) {
		int64_t back;
		qsb_time_fmt(t, buf);
		if (qsb_parse_time(buf, &back) != 0 || back != t)
			break;
	}
	ok(t >= 86400000LL * 366 * 400, "format/parse round-trip over 400 "
	    "years");

	for (i = 0; goodids[i]; i++)
		ok(qsb_id_valid(goodids[i]), "id '%s' valid", goodids[i]);
	for (i = 0; badids[i]; i++)
		ok(!qsb_id_valid(badids[i]), "id '%s' invalid", badids[i]);
	memset(id, 'a', 128);
	id[128] = '\0';
	ok(qsb_id_valid(id), "128 characters valid");
	id[128] = 'a';
	id[129] = '\0';
	ok(!qsb_id_valid(id), "129 characters invalid");
	memset(id, 'a', 200);
	id[200] = '\0';
	ok(!qsb_id_valid(id), "200 characters invalid");
	ok(!qsb_id_valid(NULL), "NULL invalid");

	ok(qsb_parse_decimal("0.5", 0.01, 8, &d) == 0 && d == 0.5,
	    "decimal 0.5");
	ok(qsb_parse_decimal("2", 0.01, 8, &d) == 0 && d == 2, "decimal 2");
	ok(qsb_parse_decimal("0", 0.01, 8, &d) < 0, "decimal below min");
	ok(qsb_parse_decimal("1e3", 0.01, 8000, &d) < 0, "no exponent");
	ok(qsb_parse_decimal("-1", -5, 8, &d) < 0, "no sign");
	ok(qsb_parse_decimal("nan", 0, 8, &d) < 0, "no nan");

	/* UTF-8 */
	ok(qsb_utf8_valid("h\xc3\xa9\xf0\x9f\x98\x80", 7), "valid UTF-8");
	ok(!qsb_utf8_valid("\xc3", 1), "truncated");
	ok(!qsb_utf8_valid("\xc1\xbf", 2), "overlong 2-byte");
	ok(!qsb_utf8_valid("\xe0\x9f\xbf", 3), "overlong 3-byte");
	ok(!qsb_utf8_valid("\xf0\x8f\xbf\xbf", 4), "overlong 4-byte");
	ok(!qsb_utf8_valid("\xed\xbf\xbf", 3), "surrogate");
	ok(!qsb_utf8_valid("\xf4\x90\x80\x80", 4), "above U+10FFFF");
	ok(qsb_utf8_valid("\xf4\x8f\xbf\xbf", 4), "U+10FFFF");
	ok(qsb_utf8_decode((const unsigned char *)"\xe2\x82\x41", 3, &cp) ==
	    -2, "maximal subpart of E2 82 41 is 2 bytes");
	ok(qsb_utf8_decode((const unsigned char *)"\xf0\x80", 2, &cp) == -1,
	    "maximal subpart of F0 80 is 1 byte");
	for (cp = 0; cp <= 0x10FFFF; cp += (cp < 0x800 ? 1 : 61)) {
		uint32_t back;
		int n;
		if (cp >= 0xD800 && cp <= 0xDFFF)
			continue;
		n = qsb_utf8_encode(cp, enc);
		if (qsb_utf8_decode((unsigned char *)enc, (size_t)n, &back) !=
		    n || back != cp)
			break;
	}
	ok(cp > 0x10FFFF, "encode/decode round-trip");
	ok(qsb_utf8_suffix("\xa9" "abc", 4) == 3, "suffix skips a "
	    "continuation byte");
	ok(qsb_utf8_suffix("\x82\xac" "x", 3) == 1, "suffix skips two");
	ok(qsb_utf8_suffix("abc", 3) == 3, "suffix of ASCII");
	ok(qsb_utf8_suffix("\x80\x80\x80\x80" "a", 5) == 5,
	    "four continuation bytes: invalid, kept");
	return t_done();
}
