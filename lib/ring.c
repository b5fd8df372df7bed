#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "utf8.h"

void
qsb_ring_init(struct qsb_ring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap;
}

/* Makes the ring linear (start == 0) in a buffer of at least want bytes. */
static int
grow(struct qsb_ring *r, size_t want)
{
	size_t nsize = r->size ? r->size : 4096;
	char *nb;

	while (nsize < want)
		nsize *= 2;
	if (nsize > r->cap)
		nsize = r->cap;
	if ((nb = malloc(nsize)) == NULL)
		return -1;
	if (r->len > 0) {
		size_t first = r->size - r->start;
		if (first > r->len)
			first = r->len;
		memcpy(nb, r->buf + r->start, first);
		memcpy(nb + first, r->buf, r->len - first);
	}
	free(r->buf);
	r->buf = nb;
	r->size = nsize;
	r->start = 0;
	return 0;
}

void
qsb_ring_put(struct qsb_ring *r, const char *p, size_t n)
{
	size_t end, first;

	if (n == 0 || r->cap == 0) {
		if (n > 0)
			r->dropped = true;
		return;
	}
	if (n >= r->cap) {
		/* only the last cap bytes of p survive */
		if (r->size < r->cap && grow(r, r->cap) < 0) {
			r->nomem = true;
			return;
		}
		if (r->len > 0 || n > r->cap)
			r->dropped = true;
		memcpy(r->buf, p + (n - r->cap), r->cap);
		r->start = 0;
		r->len = r->cap;
		return;
	}
	if (r->len + n > r->size && r->size < r->cap &&
	    grow(r, r->len + n) < 0) {
		r->nomem = true;
		return;
	}
	if (r->len + n > r->size) {
		/* full at cap: drop the oldest bytes */
		size_t drop = r->len + n - r->size;
		r->start = (r->start + drop) % r->size;
		r->len -= drop;
		r->dropped = true;
	}
	end = (r->start + r->len) % r->size;
	first = r->size - end;
	if (first > n)
		first = n;
	memcpy(r->buf + end, p, first);
	memcpy(r->buf, p + first, n - first);
	r->len += n;
}

char *
qsb_ring_take(struct qsb_ring *r, size_t *lenp, bool *truncated)
{
	size_t keep, first;
	char *out;

	if ((out = malloc(r->len + 1)) == NULL)
		return NULL;
	if (r->len > 0) {
		first = r->size - r->start;
		if (first > r->len)
			first = r->len;
		memcpy(out, r->buf + r->start, first);
		memcpy(out + first, r->buf, r->len - first);
	}
	keep = r->len;
	if (r->dropped) {
		/* the cut may have split a character: start at the next
		 * boundary */
		keep = qsb_utf8_suffix(out, r->len);
		memmove(out, out + (r->len - keep), keep);
	}
	out[keep] = '\0';
	*lenp = keep;
	*truncated = r->dropped || r->nomem;
	r->start = r->len = 0;
	return out;
}

void
qsb_ring_free(struct qsb_ring *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}
