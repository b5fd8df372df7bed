#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse.h"

static int
lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Reads decimal digits into *v; -1 if none or on overflow. */
static int
number(const char **sp, uint64_t *v)
{
	const char *s = *sp;

	*v = 0;
	if (*s < '0' || *s > '9')
		return errno = EINVAL, -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (*v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return errno = ERANGE, -1;
		*v = *v * 10 + (uint64_t)(*s - '0');
	}
	*sp = s;
	return 0;
}

int
qsb_parse_size(const char *s, uint64_t *out)
{
	uint64_t v, mul = 1;
	int shift = 0;

	if (s == NULL || number(&s, &v) < 0)
		return -1;
	switch (lower(*s)) {
	case 'k': shift = 10; break;
	case 'm': shift = 20; break;
	case 'g': shift = 30; break;
	case 't': shift = 40; break;
	case 'b':
		if (s[1] == '\0')
			s++;
		break;
	case '\0': break;
	default: return errno = EINVAL, -1;
	}
	if (shift) {
		s++;
		if (lower(*s) == 'i' && lower(s[1]) == 'b')
			s += 2;
		else if (lower(*s) == 'b')
			s++;
	}
	if (*s != '\0')
		return errno = EINVAL, -1;
	mul = (uint64_t)1 << shift;
	if (v > UINT64_MAX / mul)
		return errno = ERANGE, -1;
	*out = v * mul;
	return 0;
}

void
qsb_fmt_size(uint64_t v, char buf[QSB_SIZE_BUFSZ])
{
	static const char units[] = "kmgt";
	int u = -1;

	while (u < 3 && v != 0 && (v & 1023) == 0) {
		v >>= 10;
		u++;
	}
	if (u < 0)
		snprintf(buf, QSB_SIZE_BUFSZ, "%llu", (unsigned long long)v);
	else
		snprintf(buf, QSB_SIZE_BUFSZ, "%llu%c", (unsigned long long)v,
		    units[u]);
}

int
qsb_parse_duration(const char *s, uint64_t *ms)
{
	uint64_t v, mul, total = 0;

	if (s == NULL || *s == '\0')
		return errno = EINVAL, -1;
	if (number(&s, &v) < 0)
		return -1;
	if (*s == '\0') {
		if (v > UINT64_MAX / 1000)
			return errno = ERANGE, -1;
		*ms = v * 1000;
		return 0;
	}
	for (;;) {
		if (s[0] == 'm' && s[1] == 's') {
			mul = 1;
			s += 2;
		} else {
			switch (*s) {
			case 's': mul = 1000; break;
			case 'm': mul = 60000; break;
			case 'h': mul = 3600000; break;
			case 'd': mul = 86400000; break;
			case 'w': mul = 604800000; break;
			default: return errno = EINVAL, -1;
			}
			s++;
		}
		if (v > UINT64_MAX / mul || v * mul > UINT64_MAX - total)
			return errno = ERANGE, -1;
		total += v * mul;
		if (*s == '\0')
			break;
		if (number(&s, &v) < 0)
			return -1;
	}
	*ms = total;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void
civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	*y = (int64_t)yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y += *m <= 2;
}

static int
fixed(const char **sp, int n, unsigned *v)
{
	const char *s = *sp;
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (unsigned)(s[i] - '0');
	}
	*sp = s + n;
	return 0;
}

static unsigned
mdays(unsigned y, unsigned m)
{
	static const unsigned dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30,
	    31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

int
qsb_parse_time(const char *s, int64_t *ms)
{
	unsigned y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, oh, om;
	int64_t off = 0;
	int digits = 0, sign;

	if (s == NULL || fixed(&s, 4, &y) < 0 || *s++ != '-' ||
	    fixed(&s, 2, &mo) < 0 || *s++ != '-' || fixed(&s, 2, &d) < 0)
		return errno = EINVAL, -1;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays(y, mo))
		return errno = EINVAL, -1;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		s++;
		if (fixed(&s, 2, &h) < 0 || *s++ != ':' ||
		    fixed(&s, 2, &mi) < 0)
			return errno = EINVAL, -1;
		if (*s == ':') {
			s++;
			if (fixed(&s, 2, &sec) < 0)
				return errno = EINVAL, -1;
			if (*s == '.' || *s == ',') {
				s++;
				if (*s < '0' || *s > '9')
					return errno = EINVAL, -1;
				for (; *s >= '0' && *s <= '9'; s++, digits++)
					if (digits < 3)
						frac = frac * 10 +
						    (unsigned)(*s - '0');
				for (; digits < 3; digits++)
					frac *= 10;
			}
		}
		if (h > 23 || mi > 59 || sec > 60)
			return errno = EINVAL, -1;
		if (*s == 'Z' || *s == 'z')
			s++;
		else if (*s == '+' || *s == '-') {
			sign = *s++ == '-' ? -1 : 1;
			if (fixed(&s, 2, &oh) < 0)
				return errno = EINVAL, -1;
			if (*s == ':')
				s++;
			if (fixed(&s, 2, &om) < 0 || oh > 23 || om > 59)
				return errno = EINVAL, -1;
			off = sign * (int64_t)(oh * 60 + om) * 60000;
		} else
			return errno = EINVAL, -1;	/* local time: ambiguous */
	}
	if (*s != '\0')
		return errno = EINVAL, -1;
	if (sec == 60)
		sec = 59;	/* a leap second reads as its last ms */
	*ms = days_from_civil(y, mo, d) * 86400000 +
	    ((int64_t)h * 3600 + mi * 60 + sec) * 1000 + frac - off;
	return 0;
}

void
qsb_time_fmt(int64_t ms, char buf[QSB_TIME_BUFSZ])
{
	int64_t days, rem, y;
	unsigned m, d;

	days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
	rem = ms - days * 86400000;
	civil_from_days(days, &y, &m, &d);
	snprintf(buf, QSB_TIME_BUFSZ, "%04lld-%02u-%02uT%02u:%02u:%02u.%03uZ",
	    (long long)y, m, d, (unsigned)(rem / 3600000),
	    (unsigned)(rem / 60000 % 60), (unsigned)(rem / 1000 % 60),
	    (unsigned)(rem % 1000));
}

int64_t
qsb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool
qsb_id_valid(const char *s)
{
	size_t i;

	if (s == NULL || !isalnum((unsigned char)s[0]) || !isascii(s[0]))
		return false;
	for (i = 1; s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i >= QSB_ID_MAX)
			return false;
		if (!isascii(c) || !(isalnum(c) || c == '.' || c == '_' ||
		    c == '-'))
			return false;
	}
	return true;
}

int
qsb_parse_decimal(const char *s, double min, double max, double *out)
{
	char *end;
	double v;
	const char *p;

	if (s == NULL || *s == '\0')
		return errno = EINVAL, -1;
	for (p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.'))
			return errno = EINVAL, -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < min || v > max)
		return errno = ERANGE, -1;
	*out = v;
	return 0;
}
