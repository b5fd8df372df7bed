/*
 * Values from the command line and config files: sizes ("512m", powers of
 * 1024), durations ("500ms", "30s", "1h30m"; a bare number is seconds, as
 * for timeout(1)), ISO 8601 dates, and session ids.
 */
#ifndef QSB_PARSE_H
#define QSB_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QSB_TIME_BUFSZ	64
#define QSB_SIZE_BUFSZ	32
#define QSB_ID_MAX	128

/* "1234", "10k", "512m", "2G", "1t" (case-insensitive, optional "b" or
 * "ib" after the unit).  0 on success, -1 (errno EINVAL or ERANGE). */
int	 qsb_parse_size(const char *, uint64_t *);
/* Canonical form: the largest unit that divides exactly ("512m"). */
void	 qsb_fmt_size(uint64_t, char buf[QSB_SIZE_BUFSZ]);
/* "500ms", "30s", "5m", "2h", "7d", "1w", combined ("1h30m"); a bare
 * integer is seconds.  Result in milliseconds. */
int	 qsb_parse_duration(const char *, uint64_t *ms);
/* ISO 8601: "2026-11-30", "2026-11-30T14:00:00Z", with optional
 * fractional seconds and a "+HH:MM" offset.  Result: ms since the epoch. */
int	 qsb_parse_time(const char *, int64_t *ms);
/* "2026-11-30T14:00:00.000Z" */
void	 qsb_time_fmt(int64_t ms, char buf[QSB_TIME_BUFSZ]);
int64_t	 qsb_now_ms(void);
/* [A-Za-z0-9][A-Za-z0-9._-]{0,127} */
bool	 qsb_id_valid(const char *);
/* A positive decimal such as "2" or "0.5" within [min, max]. */
int	 qsb_parse_decimal(const char *, double min, double max, double *);

#endif
