/*
 * The event log, ROOT/events.jsonl (DESIGN.md section 8).  Invariant: every
 * complete line is one JSON object.  Lines are appended with one write(2)
 * under an exclusive flock; if a previous writer died mid-line, the next
 * append first ends that fragment with a newline so its own line parses.
 */
#ifndef QSB_EVENT_H
#define QSB_EVENT_H

#include <stddef.h>

#include "diag.h"
#include "json.h"

struct qsb_root;

/* data is a complete JSON value (for instance from a struct qsb_jw), or
 * NULL for none.  session may be NULL. */
int	 qsb_event(const struct qsb_root *, const char *event,
	    const char *session, const char *data, size_t datalen,
	    struct qsb_err *);

#endif
