/*
 * UTF-8 as RFC 3629 defines it: no overlongs, no surrogates, nothing above
 * U+10FFFF.  Repair replaces each maximal invalid subpart with U+FFFD, as
 * the WHATWG decoder (and so JavaScript's TextDecoder) does.
 */
#ifndef QSB_UTF8_H
#define QSB_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes one character at s (n > 0 bytes).  Returns its length (1-4) and
 * stores the code point, or returns -k where k >= 1 is the length of the
 * maximal invalid subpart to replace. */
int	 qsb_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
int	 qsb_utf8_valid(const char *s, size_t n);
/* Encodes cp (<= 0x10FFFF, not a surrogate) into out[4]; returns length. */
int	 qsb_utf8_encode(uint32_t cp, char out[4]);
/* Largest k <= n such that s[n-k..n) starts on a character boundary, i.e.
 * the length of the longest suffix that does not begin mid-character. */
size_t	 qsb_utf8_suffix(const char *s, size_t n);

#endif
