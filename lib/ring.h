/*
 * Output kept from a command: the newest cap bytes, in a ring that grows
 * (doubling) only up to cap, so memory stays bounded by the output limit
 * however much the command prints.
 */
#ifndef QSB_RING_H
#define QSB_RING_H

#include <stdbool.h>
#include <stddef.h>

struct qsb_ring {
	char	*buf;
	size_t	 cap;		/* the limit */
	size_t	 size;		/* allocated, <= cap */
	size_t	 start, len;
	bool	 dropped;	/* something was cut from the front */
	bool	 nomem;
};

void	 qsb_ring_init(struct qsb_ring *, size_t cap);
void	 qsb_ring_put(struct qsb_ring *, const char *, size_t);
/* The kept bytes in order, starting on a UTF-8 character boundary when
 * something was cut; *truncated says whether anything was cut.  The ring is
 * left empty; the caller frees the result. */
char	*qsb_ring_take(struct qsb_ring *, size_t *len, bool *truncated);
void	 qsb_ring_free(struct qsb_ring *);

#endif
