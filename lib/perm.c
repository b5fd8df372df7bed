#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "event.h"
#include "json.h"
#include "path.h"
#include "perm.h"
#include "rmtree.h"
#include "root.h"
#include "state.h"
#include "workspace.h"

static const char *const status_names[] = { "pending", "approved", "denied",
    NULL };
enum { ST_PENDING, ST_APPROVED, ST_DENIED };

struct req {
	char	 id[QSB_PERM_IDLEN + 1];
	char	*session, *type, *target, *reason;
	char	*requested_at;
	int	 status;
	char	*decided_at, *decided_by, *decision_reason, *scope;
};

static void
req_free(struct req *r)
{
	free(r->session);
	free(r->type);
	free(r->target);
	free(r->reason);
	free(r->requested_at);
	free(r->decided_at);
	free(r->decided_by);
	free(r->decision_reason);
	free(r->scope);
	memset(r, 0, sizeof(*r));
}

bool
qsb_perm_id_valid(const char *s)
{
	size_t i;

	for (i = 0; i < QSB_PERM_IDLEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return false;
	return s[i] == '\0';
}

static int
subdir(int dirfd, const char *name, struct qsb_err *e)
{
	int fd;

	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot create perm/%s", name);
	if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
		    "cannot open perm/%s", name);
	return fd;
}

int
qsb_perm_open(struct qsb_perm *pm, const struct qsb_root *r, struct qsb_err *e)
{
	struct qsb_err sub;
	char *buf = NULL;
	size_t len;
	int rc;

	memset(pm, 0, sizeof(*pm));
	pm->root = r;
	pm->dirfd = pm->reqfd = pm->pendfd = pm->apprfd = pm->sess_fsfd = -1;
	if ((pm->dirfd = dup(r->permfd)) < 0)
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "perm");
	(void)fcntl(pm->dirfd, F_SETFD, FD_CLOEXEC);
	if ((pm->reqfd = subdir(pm->dirfd, "requests", e)) < 0 ||
	    (pm->pendfd = subdir(pm->dirfd, "pending", e)) < 0 ||
	    (pm->apprfd = subdir(pm->dirfd, "approvals", e)) < 0)
		goto fail;
	if (qsb_state_read(pm->dirfd, "policy.json", QSB_STATE_MAX, &buf, &len,
	    &sub) == 0) {
		rc = qsb_policy_parse(buf, len, &pm->pol, &sub);
		free(buf);
		if (rc < 0) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "%s/perm/policy.json: %s", r->path, sub.msg);
			goto fail;
		}
		pm->installed = true;
		return 0;
	}
	if (errno != ENOENT) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "%s/perm/policy.json: %s",
		    r->path, sub.msg);
		goto fail;
	}
	if (qsb_policy_parse(qsb_policy_default, strlen(qsb_policy_default),
	    &pm->pol, e) < 0)
		goto fail;
	return 0;
fail:
	qsb_perm_close(pm);
	return -1;
}

void
qsb_perm_close(struct qsb_perm *pm)
{
	int *fds[] = { &pm->dirfd, &pm->reqfd, &pm->pendfd, &pm->apprfd,
	    &pm->sess_fsfd };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	free(pm->sess_root);
	pm->sess_root = NULL;
	qsb_policy_free(&pm->pol);
}

/* Opens (and caches) session's workspace: its files for workspaceOnly,
 * its mode for the strict write rule. */
static int
session(struct qsb_perm *pm, const char *id, struct qsb_err *e)
{
	struct qsb_ws w;
	int dirfd;

	if (pm->sess_fsfd >= 0 && strcmp(pm->sess, id) == 0)
		return 0;
	if (pm->sess_fsfd >= 0)
		close(pm->sess_fsfd);
	pm->sess_fsfd = -1;
	free(pm->sess_root);
	pm->sess_root = NULL;
	if ((dirfd = qsb_ws_open(pm->root, id, e)) < 0)
		return -1;
	if (qsb_ws_load_at(pm->root, dirfd, id, &w, e) < 0) {
		close(dirfd);
		return -1;
	}
	pm->sess_fsfd = qsb_ws_open_fs(dirfd, e);
	close(dirfd);
	if (pm->sess_fsfd < 0) {
		qsb_ws_free(&w);
		return -1;
	}
	pm->sess_root = w.root_path;
	w.root_path = NULL;
	pm->sess_mode = w.sb.mode;
	strlcpy(pm->sess, id, sizeof(pm->sess));
	qsb_ws_free(&w);
	return 0;
}

/*
 * Rule 2: whether a file target lies inside rootPath, by the kernel's
 * beneath-resolution of the whole path (symlinks followed).  A walk that
 * would leave rootPath fails (EXDEV, ELOOP): outside.  A walk that stops
 * at a component that does not exist (ENOENT) stayed beneath up to there;
 * the path is then inside (a file or directories about to be made) only
 * if it has no ".." that could climb from the missing part.  Anything
 * else that cannot be resolved is outside: fail closed.
 */
static bool
inside(struct qsb_perm *pm, const char *target)
{
	char rel[PATH_MAX];
	struct qsb_err e;
	const char *c;
	size_t l;
	int fd;

	if (qsb_path_rel(pm->sess_root, target, rel, sizeof(rel), NULL) < 0)
		return false;
	if ((fd = qsb_path_open(pm->sess_fsfd, rel, O_PATH, 0, rel, &e)) >= 0) {
		close(fd);
		return true;
	}
	if (e.code != QSB_E_FILE_NOT_FOUND)
		return false;
	for (c = rel; *c; c += l) {
		c += strspn(c, "/");
		l = strcspn(c, "/");
		if (l == 2 && c[0] == '.' && c[1] == '.')
			return false;
	}
	return true;
}

static void
key_of(const char *session, enum qsb_ptype t, const char *target,
    char out[SHA256_DIGEST_STRING_LENGTH])
{
	SHA2_CTX c;

	SHA256Init(&c);
	SHA256Update(&c, (const uint8_t *)session, strlen(session) + 1);
	SHA256Update(&c, (const uint8_t *)qsb_ptype_names[t],
	    strlen(qsb_ptype_names[t]) + 1);
	SHA256Update(&c, (const uint8_t *)target, strlen(target));
	SHA256End(&c, out);
}

static void
new_id(char id[QSB_PERM_IDLEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint64_t v = ((uint64_t)arc4random() << 32) | arc4random();
	int i;

	for (i = 0; i < QSB_PERM_IDLEN; i++, v >>= 4)
		id[i] = hex[v & 0xf];
	id[QSB_PERM_IDLEN] = '\0';
}

static void
now_iso(char buf[QSB_TIME_BUFSZ])
{
	qsb_time_fmt(qsb_now_ms(), buf);
}

static void
req_write(struct qsb_jw *w, const struct req *r)
{
	qsb_jw_obj(w);
	qsb_jw_key(w, "id");
	qsb_jw_str(w, r->id);
	qsb_jw_key(w, "sessionId");
	qsb_jw_str(w, r->session);
	qsb_jw_key(w, "type");
	qsb_jw_str(w, r->type);
	qsb_jw_key(w, "target");
	qsb_jw_str(w, r->target);
	if (r->reason) {
		qsb_jw_key(w, "reason");
		qsb_jw_str(w, r->reason);
	}
	qsb_jw_key(w, "requestedAt");
	qsb_jw_str(w, r->requested_at);
	qsb_jw_key(w, "status");
	qsb_jw_str(w, status_names[r->status]);
	if (r->status != ST_PENDING) {
		qsb_jw_key(w, "decidedAt");
		qsb_jw_str(w, r->decided_at);
		qsb_jw_key(w, "decidedBy");
		qsb_jw_str(w, r->decided_by);
		if (r->decision_reason) {
			qsb_jw_key(w, "decisionReason");
			qsb_jw_str(w, r->decision_reason);
		}
		if (r->scope) {
			qsb_jw_key(w, "scope");
			qsb_jw_str(w, r->scope);
		}
	}
	qsb_jw_obj_end(w);
}

static int
save_json(int dirfd, const char *name, struct qsb_jw *w, struct qsb_err *e)
{
	int rc;

	if (qsb_jw_finish(w) < 0) {
		qsb_jw_free(w);
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	}
	rc = qsb_state_write(dirfd, name, w->buf, w->len, 0600, e);
	qsb_jw_free(w);
	return rc;
}

static int
req_save(struct qsb_perm *pm, const struct req *r, struct qsb_err *e)
{
	struct qsb_jw w;
	char name[QSB_PERM_IDLEN + 8];

	snprintf(name, sizeof(name), "%s.json", r->id);
	qsb_jw_init(&w, 0);
	req_write(&w, r);
	return save_json(pm->reqfd, name, &w, e);
}

static int
req_load(struct qsb_perm *pm, const char *id, struct req *r, struct qsb_err *e)
{
	static const char *const keys[] = { "id", "sessionId", "type", "target",
	    "reason", "requestedAt", "status", "decidedAt", "decidedBy",
	    "decisionReason", "scope", NULL };
	struct qsb_json j;
	struct qsb_err sub;
	char name[QSB_PERM_IDLEN + 8], *buf = NULL;
	size_t len;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	if (!qsb_perm_id_valid(id))
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "'%s' is not a request id", id);
	snprintf(name, sizeof(name), "%s.json", id);
	if (qsb_state_read(pm->reqfd, name, QSB_STATE_MAX, &buf, &len,
	    &sub) < 0)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    errno == ENOENT ? "no request '%s'" : "request '%s': %s",
		    id, sub.msg);
	if (qsb_json_parse(&j, buf, len, &sub) < 0) {
		free(buf);
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "request '%s': %s",
		    id, sub.msg);
	}
	strlcpy(r->id, id, sizeof(r->id));
	if (j.t[0].type != QSB_JOBJ ||
	    qsb_json_keys_only(&j, 0, keys, "", &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "sessionId", true, &r->session, "",
	    &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "type", true, &r->type, "", &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "target", true, &r->target, "", &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "reason", false, &r->reason, "", &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "requestedAt", true, &r->requested_at, "",
	    &sub) < 0 ||
	    qsb_json_want_enum(&j, 0, "status", true, status_names, &r->status,
	    "", &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "decidedAt", false, &r->decided_at, "",
	    &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "decidedBy", false, &r->decided_by, "",
	    &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "decisionReason", false,
	    &r->decision_reason, "", &sub) < 0 ||
	    qsb_json_want_str(&j, 0, "scope", false, &r->scope, "", &sub) < 0 ||
	    qsb_ptype_lookup(r->type) < 0) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "request '%s': %s", id,
		    j.t[0].type != QSB_JOBJ ? "not an object" : sub.msg);
		req_free(r);
		goto out;
	}
	rc = 0;
out:
	qsb_json_free(&j);
	free(buf);
	return rc;
}

static void
log_event(struct qsb_perm *pm, const char *event, const char *session,
    struct qsb_jw *w)
{
	if (qsb_jw_finish(w) == 0)
		(void)qsb_event(pm->root, event, session, w->buf, w->len, NULL);
	qsb_jw_free(w);
}

/* Rule 5: a cached approval; a "once" one is consumed here, by renaming
 * it away (of two checks racing for it, one rename wins). */
static bool
cached(struct qsb_perm *pm, const char *key, char *why, size_t whysz)
{
	struct qsb_json j;
	struct dirent *de;
	char *buf, tmp[64];
	size_t len;
	int kfd, got = 0;
	DIR *d;

	if ((kfd = openat(pm->apprfd, key, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) < 0)
		return false;
	if ((d = fdopendir(kfd)) == NULL) {
		close(kfd);
		return false;
	}
	while (!got && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strlen(de->d_name) !=
		    QSB_PERM_IDLEN + 5)
			continue;
		if (qsb_state_read(dirfd(d), de->d_name, QSB_STATE_MAX, &buf,
		    &len, NULL) < 0)
			continue;
		if (qsb_json_parse(&j, buf, len, NULL) < 0) {
			free(buf);
			continue;
		}
		bool always = qsb_json_streq(&j, qsb_json_get(&j, 0, "scope"),
		    "always");
		char *by = qsb_json_str(&j, qsb_json_get(&j, 0, "approvedBy"),
		    NULL);
		char *at = qsb_json_str(&j, qsb_json_get(&j, 0, "timestamp"),
		    NULL);
		qsb_json_free(&j);
		free(buf);
		if (!always) {
			if (qsb_tmpname(tmp, sizeof(tmp), ".consumed") < 0 ||
			    renameat(dirfd(d), de->d_name, dirfd(d), tmp) < 0) {
				free(by);
				free(at);
				continue;	/* another check took it */
			}
			(void)unlinkat(dirfd(d), tmp, 0);
		}
		snprintf(why, whysz, "approved %s by %s at %s (request %.16s)",
		    always ? "always" : "once", by ? by : "?", at ? at : "?",
		    de->d_name);
		free(by);
		free(at);
		got = 1;
	}
	closedir(d);
	return got;
}

/* Rule 6: the pending request for key, made under the lock unless one
 * exists. */
static int
pend(struct qsb_perm *pm, const char *key, const char *session,
    enum qsb_ptype t, const char *target, const char *reason,
    struct qsb_perm_result *res, struct qsb_err *e)
{
	struct qsb_jw w;
	struct req r, old;
	char ts[QSB_TIME_BUFSZ], *buf = NULL;
	size_t len;
	int lfd, rc = -1;

	if ((lfd = qsb_lock(pm->dirfd, "lock", LOCK_EX, e)) < 0)
		return -1;
	if (qsb_state_read(pm->pendfd, key, 64, &buf, &len, NULL) == 0) {
		while (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (req_load(pm, buf, &old, NULL) == 0) {
			bool still = old.status == ST_PENDING;
			req_free(&old);
			if (still) {
				strlcpy(res->id, buf, sizeof(res->id));
				free(buf);
				rc = 0;
				goto out;
			}
		}
		free(buf);
	}
	memset(&r, 0, sizeof(r));
	new_id(r.id);
	now_iso(ts);
	r.session = (char *)session;
	r.type = (char *)qsb_ptype_names[t];
	r.target = (char *)target;
	r.reason = (char *)reason;
	r.requested_at = ts;
	r.status = ST_PENDING;
	if (req_save(pm, &r, e) < 0 ||
	    qsb_state_write(pm->pendfd, key, r.id, QSB_PERM_IDLEN, 0600, e) < 0)
		goto out;
	strlcpy(res->id, r.id, sizeof(res->id));
	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "request");
	req_write(&w, &r);
	qsb_jw_obj_end(&w);
	log_event(pm, "permission:requested", session, &w);
	rc = 0;
out:
	close(lfd);
	return rc;
}

int
qsb_perm_check(struct qsb_perm *pm, const char *sess, enum qsb_ptype t,
    const char *target, const char *reason, struct qsb_perm_result *res,
    struct qsb_err *e)
{
	char key[SHA256_DIGEST_STRING_LENGTH];
	const char *name = qsb_ptype_names[t], *entry;
	uint32_t bit = 1u << t;
	struct qsb_jw w;

	memset(res, 0, sizeof(*res));
	if (!qsb_id_valid(sess))
		return qsb_err_set(e, QSB_E_CONFIG_INVALID, "invalid session "
		    "id '%s': expected [A-Za-z0-9][A-Za-z0-9._-]{0,127}", sess);
	if (strlen(target) > 65536)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "target too long (%zu bytes)", strlen(target));
	if (session(pm, sess, e) < 0)
		return -1;
	if (pm->pol.deny_list & bit) {
		res->status = QSB_PERM_DENIED;
		snprintf(res->reason, sizeof(res->reason),
		    "denied: %s is in the policy's denyList", name);
		goto denied;
	}
	if (pm->pol.workspace_only && t <= QSB_P_FILE_DELETE &&
	    !inside(pm, target)) {
		res->status = QSB_PERM_DENIED;
		snprintf(res->reason, sizeof(res->reason), "denied: '%s' is "
		    "not inside the workspace (workspaceOnly)", target);
		goto denied;
	}
	if (t == QSB_P_COMMAND_EXECUTE &&
	    qsb_safe_command(&pm->pol, target, &entry)) {
		res->status = QSB_PERM_ALLOWED;
		snprintf(res->reason, sizeof(res->reason),
		    "allowed: safe command '%s' (safeCommands)", entry);
		return 0;
	}
	if (pm->pol.auto_approve & bit) {
		res->status = QSB_PERM_ALLOWED;
		snprintf(res->reason, sizeof(res->reason),
		    "allowed: %s is in the policy's autoApprove", name);
		return 0;
	}
	key_of(sess, t, target, key);
	if (cached(pm, key, res->reason + 9, sizeof(res->reason) - 9)) {
		memcpy(res->reason, "allowed: ", 9);
		res->status = QSB_PERM_ALLOWED;
		return 0;
	}
	if (pend(pm, key, sess, t, target, reason, res, e) < 0)
		return -1;
	res->status = QSB_PERM_PENDING;
	snprintf(res->reason, sizeof(res->reason), "pending: %s %s "
	    "confirmation; request %s", name, pm->pol.require_confirm & bit ?
	    "requires" : "is in no list of the policy and so requires",
	    res->id);
	return 0;
denied:
	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "requestId");
	qsb_jw_null(&w);
	qsb_jw_key(&w, "type");
	qsb_jw_str(&w, name);
	qsb_jw_key(&w, "target");
	qsb_jw_str(&w, target);
	qsb_jw_key(&w, "reason");
	qsb_jw_str(&w, res->reason);
	qsb_jw_obj_end(&w);
	log_event(pm, "permission:denied", sess, &w);
	return 0;
}

int
qsb_perm_gate(struct qsb_perm *pm, const char *session, enum qsb_ptype t,
    const char *target, struct qsb_err *e)
{
	struct qsb_perm_result r;

	if (qsb_perm_check(pm, session, t, target, NULL, &r, e) < 0)
		return -1;
	if (r.status == QSB_PERM_ALLOWED)
		return 0;
	if (r.status == QSB_PERM_DENIED)
		return qsb_err_set(e, QSB_E_PERMISSION_DENIED, "%s %s: %s",
		    qsb_ptype_names[t], target, r.reason);
	return qsb_err_set(e, QSB_E_PERMISSION_DENIED, "%s %s: %s "
	    "(qsb-perm approve %s)", qsb_ptype_names[t], target, r.reason,
	    r.id);
}

static void
outcome(const struct req *r, struct qsb_perm_result *res)
{
	res->status = r->status == ST_APPROVED ? QSB_PERM_ALLOWED :
	    r->status == ST_DENIED ? QSB_PERM_DENIED : QSB_PERM_PENDING;
	strlcpy(res->id, r->id, sizeof(res->id));
	if (r->status == ST_PENDING)
		snprintf(res->reason, sizeof(res->reason), "pending: request "
		    "%s awaits a decision", r->id);
	else
		snprintf(res->reason, sizeof(res->reason), "%s by %s at %s%s%s",
		    r->status == ST_APPROVED ? "approved" : "denied",
		    r->decided_by ? r->decided_by : "?",
		    r->decided_at ? r->decided_at : "?",
		    r->decision_reason ? ": " : "",
		    r->decision_reason ? r->decision_reason : "");
}

int
qsb_perm_wait(struct qsb_perm *pm, const char *id, int64_t timeout_ms,
    struct qsb_perm_result *res, struct qsb_err *e)
{
	char path[PATH_MAX], buf[4096];
	struct pollfd pfd;
	struct req r;
	int64_t deadline = timeout_ms < 0 ? -1 : qsb_now_ms() + timeout_ms;
	int ifd, n, rc = -1;

	if ((ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0)
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "inotify");
	snprintf(path, sizeof(path), "%s/perm/requests", pm->root->path);
	/* decisions replace the record by rename */
	if (inotify_add_watch(ifd, path, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "inotify: '%s'", path);
		goto out;
	}
	for (;;) {
		/* after the watch is set, so that no decision slips by */
		if (req_load(pm, id, &r, e) < 0)
			goto out;
		outcome(&r, res);
		req_free(&r);
		if (res->status != QSB_PERM_PENDING)
			break;
		int wait = -1;
		if (deadline >= 0) {
			int64_t left = deadline - qsb_now_ms();
			if (left <= 0)
				break;
			wait = left > INT32_MAX ? INT32_MAX : (int)left;
		}
		pfd.fd = ifd;
		pfd.events = POLLIN;
		if ((n = poll(&pfd, 1, wait)) < 0 && errno != EINTR) {
			qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "poll");
			goto out;
		}
		while (read(ifd, buf, sizeof(buf)) > 0)
			;	/* any change: look again */
	}
	rc = 0;
out:
	close(ifd);
	return rc;
}

static int
session_mode(struct qsb_perm *pm, const char *id, struct qsb_err *e)
{
	return session(pm, id, e) < 0 ? -1 : pm->sess_mode;
}

/* The mode that decides the strict write rule: the workspace's. */
static bool
strict_writes(struct qsb_perm *pm, const char *session, enum qsb_ptype t)
{
	struct qsb_err e;

	if (t != QSB_P_FILE_WRITE && t != QSB_P_FILE_DELETE)
		return false;
	return qsb_id_valid(session) && pm->root != NULL &&
	    session_mode(pm, session, &e) == QSB_MODE_STRICT;
}

int
qsb_perm_approve(struct qsb_perm *pm, const char *id, const char *by,
    bool always, const char *reason, struct qsb_jw *out, struct qsb_err *e)
{
	char key[SHA256_DIGEST_STRING_LENGTH], ts[QSB_TIME_BUFSZ];
	char name[QSB_PERM_IDLEN + 8];
	struct qsb_jw w;
	struct req r;
	enum qsb_ptype t;
	int lfd, kfd = -1, rc = -1;

	if ((lfd = qsb_lock(pm->dirfd, "lock", LOCK_EX, e)) < 0)
		return -1;
	if (req_load(pm, id, &r, e) < 0)
		goto out;
	if (r.status == ST_DENIED) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "request %s was denied "
		    "at %s; it cannot be approved", id, r.decided_at);
		goto outr;
	}
	t = (enum qsb_ptype)qsb_ptype_lookup(r.type);
	if (r.status == ST_PENDING) {
		/* strict workspaces: a write is approved once at a time */
		if (always && strict_writes(pm, r.session, t))
			always = false;
		now_iso(ts);
		r.status = ST_APPROVED;
		r.decided_at = strdup(ts);
		r.decided_by = strdup(by);
		r.decision_reason = reason ? strdup(reason) : NULL;
		r.scope = strdup(always ? "always" : "once");
		key_of(r.session, t, r.target, key);
		if (mkdirat(pm->apprfd, key, 0700) < 0 && errno != EEXIST) {
			qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot record the approval");
			goto outr;
		}
		if ((kfd = openat(pm->apprfd, key, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) < 0) {
			qsb_err_sys(e, QSB_E_FILE_WRITE_FAILED,
			    "cannot record the approval");
			goto outr;
		}
	}
	/* the Permission */
	qsb_jw_init(&w, 0);
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "type");
	qsb_jw_str(&w, r.type);
	qsb_jw_key(&w, "target");
	qsb_jw_str(&w, r.target);
	qsb_jw_key(&w, "sessionId");
	qsb_jw_str(&w, r.session);
	qsb_jw_key(&w, "approvedBy");
	qsb_jw_str(&w, r.decided_by);
	qsb_jw_key(&w, "timestamp");
	qsb_jw_str(&w, r.decided_at);
	if (r.decision_reason) {
		qsb_jw_key(&w, "reason");
		qsb_jw_str(&w, r.decision_reason);
	}
	qsb_jw_key(&w, "scope");
	qsb_jw_str(&w, r.scope);
	qsb_jw_key(&w, "requestId");
	qsb_jw_str(&w, r.id);
	qsb_jw_obj_end(&w);
	if (qsb_jw_finish(&w) < 0) {
		qsb_jw_free(&w);
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
		goto outr;
	}
	if (kfd >= 0) {
		/* the approval first, then the request: a crash between
		 * leaves an approval that the next check uses, never a
		 * decided request without its approval */
		snprintf(name, sizeof(name), "%s.json", r.id);
		if (qsb_state_write(kfd, name, w.buf, w.len, 0600, e) < 0 ||
		    req_save(pm, &r, e) < 0) {
			qsb_jw_free(&w);
			goto outr;
		}
		(void)unlinkat(pm->pendfd, key, 0);
		struct qsb_jw ev;
		qsb_jw_init(&ev, 0);
		qsb_jw_obj(&ev);
		qsb_jw_key(&ev, "permission");
		qsb_jw_raw(&ev, w.buf, w.len);
		qsb_jw_obj_end(&ev);
		log_event(pm, "permission:approved", r.session, &ev);
	}
	qsb_jw_raw(out, w.buf, w.len - 1);
	qsb_jw_free(&w);
	rc = 0;
outr:
	req_free(&r);
out:
	if (kfd >= 0)
		close(kfd);
	close(lfd);
	return rc;
}

int
qsb_perm_deny(struct qsb_perm *pm, const char *id, const char *reason,
    struct qsb_jw *out, struct qsb_err *e)
{
	char key[SHA256_DIGEST_STRING_LENGTH], ts[QSB_TIME_BUFSZ];
	struct qsb_jw w;
	struct req r;
	int lfd, rc = -1;

	if ((lfd = qsb_lock(pm->dirfd, "lock", LOCK_EX, e)) < 0)
		return -1;
	if (req_load(pm, id, &r, e) < 0)
		goto out;
	if (r.status == ST_APPROVED) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "request %s was approved "
		    "at %s; it cannot be denied (qsb-perm clear-cache "
		    "withdraws approvals)", id, r.decided_at);
		goto outr;
	}
	if (r.status == ST_PENDING) {
		now_iso(ts);
		r.status = ST_DENIED;
		r.decided_at = strdup(ts);
		r.decided_by = strdup("user");
		r.decision_reason = reason ? strdup(reason) : NULL;
		if (req_save(pm, &r, e) < 0)
			goto outr;
		key_of(r.session, (enum qsb_ptype)qsb_ptype_lookup(r.type),
		    r.target, key);
		(void)unlinkat(pm->pendfd, key, 0);
		qsb_jw_init(&w, 0);
		qsb_jw_obj(&w);
		qsb_jw_key(&w, "requestId");
		qsb_jw_str(&w, r.id);
		qsb_jw_key(&w, "reason");
		qsb_jw_str(&w, reason);
		qsb_jw_obj_end(&w);
		log_event(pm, "permission:denied", r.session, &w);
	}
	req_write(out, &r);
	rc = 0;
outr:
	req_free(&r);
out:
	close(lfd);
	return rc;
}

static int
reqcmp(const void *a, const void *b)
{
	const struct req *x = a, *y = b;
	int c = strcmp(x->requested_at, y->requested_at);

	return c ? c : strcmp(x->id, y->id);
}

int
qsb_perm_pending(struct qsb_perm *pm, const char *session, struct qsb_jw *w,
    struct qsb_err *e)
{
	struct req *v = NULL, *nv;
	struct dirent *de;
	size_t n = 0, cap = 0, i, len;
	char *buf;
	int fd;
	DIR *d;

	if ((fd = openat(pm->pendfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "perm/pending");
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (qsb_state_read(dirfd(d), de->d_name, 64, &buf, &len,
		    NULL) < 0)
			continue;
		while (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			if ((nv = reallocarray(v, cap, sizeof(*v))) == NULL) {
				free(buf);
				break;
			}
			v = nv;
		}
		if (req_load(pm, buf, &v[n], NULL) == 0) {
			if (v[n].status == ST_PENDING && (session == NULL ||
			    strcmp(v[n].session, session) == 0))
				n++;
			else
				req_free(&v[n]);
		}
		free(buf);
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), reqcmp);
	qsb_jw_arr(w);
	for (i = 0; i < n; i++) {
		req_write(w, &v[i]);
		req_free(&v[i]);
	}
	qsb_jw_arr_end(w);
	free(v);
	return 0;
}

int
qsb_perm_clear(struct qsb_perm *pm, const char *session, int *np,
    struct qsb_err *e)
{
	struct dirent *de, *fe;
	struct qsb_json j;
	size_t len;
	char *buf;
	int fd, kfd, lfd;
	DIR *d, *kd;

	*np = 0;
	if ((lfd = qsb_lock(pm->dirfd, "lock", LOCK_EX, e)) < 0)
		return -1;
	if ((fd = openat(pm->apprfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		close(lfd);
		return qsb_err_sys(e, QSB_E_FILE_NOT_FOUND, "perm/approvals");
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((kfd = openat(dirfd(d), de->d_name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		    (kd = fdopendir(kfd)) == NULL) {
			if (kfd >= 0)
				close(kfd);
			continue;
		}
		while ((fe = readdir(kd)) != NULL) {
			if (fe->d_name[0] == '.')
				continue;
			if (session != NULL) {
				bool mine = false;
				if (qsb_state_read(dirfd(kd), fe->d_name,
				    QSB_STATE_MAX, &buf, &len, NULL) == 0) {
					if (qsb_json_parse(&j, buf, len,
					    NULL) == 0) {
						mine = qsb_json_streq(&j,
						    qsb_json_get(&j, 0,
						    "sessionId"), session);
						qsb_json_free(&j);
					}
					free(buf);
				}
				if (!mine)
					continue;
			}
			if (unlinkat(dirfd(kd), fe->d_name, 0) == 0)
				(*np)++;
		}
		closedir(kd);
		(void)unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
	close(lfd);
	return 0;
}

int
qsb_perm_policy_set(struct qsb_perm *pm, const char *buf, size_t len,
    struct qsb_err *e)
{
	struct qsb_perm_policy pol;
	struct qsb_jw w;
	int lfd, rc;

	/* validate first: a bad policy changes nothing */
	if (qsb_policy_parse(buf, len, &pol, e) < 0)
		return -1;
	if ((lfd = qsb_lock(pm->dirfd, "lock", LOCK_EX, e)) < 0) {
		qsb_policy_free(&pol);
		return -1;
	}
	qsb_jw_init(&w, 1);
	qsb_policy_write(&w, &pol);
	rc = save_json(pm->dirfd, "policy.json", &w, e);
	close(lfd);
	if (rc == 0) {
		qsb_policy_free(&pm->pol);
		pm->pol = pol;
		pm->installed = true;
	} else
		qsb_policy_free(&pol);
	return rc;
}
