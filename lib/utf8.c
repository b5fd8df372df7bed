#include "utf8.h"

int
qsb_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xBF;
	uint32_t v;
	int len, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0;	/* overlong */
		else if (c == 0xED)
			hi = 0x9F;	/* surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;	/* overlong */
		else if (c == 0xF4)
			hi = 0x8F;	/* above U+10FFFF */
	} else
		return -1;
	for (i = 1; i < len; i++) {
		if ((size_t)i >= n || s[i] < lo || s[i] > hi)
			return -i;
		v = (v << 6) | (s[i] & 0x3F);
		lo = 0x80;
		hi = 0xBF;
	}
	*cp = v;
	return len;
}

int
qsb_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t i = 0;
	int k;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((k = qsb_utf8_decode(p + i, n - i, &cp)) < 0)
			return 0;
		i += (size_t)k;
	}
	return 1;
}

int
qsb_utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

size_t
qsb_utf8_suffix(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	/* Skip at most three continuation bytes at the front: a character is
	 * at most four bytes, so anything further is invalid anyway and is
	 * kept (the JSON writer repairs it). */
	while (i < n && i < 3 && (p[i] & 0xC0) == 0x80)
		i++;
	if (i < n && (p[i] & 0xC0) == 0x80)
		i = 0;
	return n - i;
}
