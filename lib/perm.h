/*
 * Permission decisions and their durable state, under ROOT/perm/:
 *
 *   lock                  flock held by every change
 *   policy.json           the installed policy (else the built-in default)
 *   requests/ID.json      one PermissionRequest per file, with its decision
 *   pending/KEY           the id of the pending request for KEY
 *   approvals/KEY/ID.json cached approvals (once or always)
 *
 * KEY is the SHA-256 of session, type and target.  Invariants: every file
 * is replaced whole (temporary file, fsync, rename, fsync of the
 * directory); a "once" approval is consumed by renaming it away, so of two
 * checks racing for it exactly one gets it; requests are created under the
 * lock, so a pending request exists at most once per KEY.
 */
#ifndef QSB_PERM_H
#define QSB_PERM_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"
#include "parse.h"
#include "policy.h"

struct qsb_root;

#define QSB_PERM_IDLEN	16

struct qsb_perm {
	const struct qsb_root	*root;
	int			 dirfd, reqfd, pendfd, apprfd;
	struct qsb_perm_policy	 pol;
	bool			 installed;	/* policy.json, not the default */
	/* the last session resolved for workspaceOnly */
	char			 sess[QSB_ID_MAX + 1];
	int			 sess_fsfd;
	char			*sess_root;
	int			 sess_mode;
};

enum { QSB_PERM_ALLOWED = 0, QSB_PERM_DENIED = 1, QSB_PERM_PENDING = 3 };

struct qsb_perm_result {
	int	status;			/* QSB_PERM_* (the exit status) */
	char	reason[512];
	char	id[QSB_PERM_IDLEN + 1];	/* a pending request, or "" */
};

int	 qsb_perm_open(struct qsb_perm *, const struct qsb_root *,
	    struct qsb_err *);
void	 qsb_perm_close(struct qsb_perm *);

/* Runs the decision order of DESIGN.md section 6 for (session, type,
 * target); reason (may be NULL) goes into a request this creates.  Errors:
 * an invalid or missing session, a state failure. */
int	 qsb_perm_check(struct qsb_perm *, const char *session,
	    enum qsb_ptype, const char *target, const char *reason,
	    struct qsb_perm_result *, struct qsb_err *);
/* For the programs that act: 0 when allowed; else PERMISSION_DENIED with
 * the reason and, for a pending request, its id and how to approve it. */
int	 qsb_perm_gate(struct qsb_perm *, const char *session,
	    enum qsb_ptype, const char *target, struct qsb_err *);
/* Waits (inotify, no polling) until request id is decided or timeout_ms
 * passes (-1: forever); res gets the outcome (PENDING on timeout). */
int	 qsb_perm_wait(struct qsb_perm *, const char *id, int64_t timeout_ms,
	    struct qsb_perm_result *, struct qsb_err *);

struct qsb_jw;
/* Decides request id: approve (by "user" or "system", always or once) or
 * deny; writes the resulting Permission / PermissionRequest to w. */
int	 qsb_perm_approve(struct qsb_perm *, const char *id, const char *by,
	    bool always, const char *reason, struct qsb_jw *,
	    struct qsb_err *);
int	 qsb_perm_deny(struct qsb_perm *, const char *id, const char *reason,
	    struct qsb_jw *, struct qsb_err *);
/* PermissionRequest[] of the pending requests (of session, if not NULL),
 * oldest first. */
int	 qsb_perm_pending(struct qsb_perm *, const char *session,
	    struct qsb_jw *, struct qsb_err *);
/* Removes cached approvals (of session, if not NULL); *n gets how many. */
int	 qsb_perm_clear(struct qsb_perm *, const char *session, int *n,
	    struct qsb_err *);
/* Validates and installs a policy; the previous one stays on error. */
int	 qsb_perm_policy_set(struct qsb_perm *, const char *, size_t,
	    struct qsb_err *);
/* Whether id looks like a request id. */
bool	 qsb_perm_id_valid(const char *);

#endif
