#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "json.h"
#include "parse.h"
#include "root.h"
#include "state.h"
#include "strv.h"

const char *const qsb_backend_names[] = {
	"auto", "native", "bwrap", "firejail", "docker", "none", NULL
};
/* the same order, without auto: index + 1 is the enum value */
const char *const qsb_type_names[] = {
	"native", "bwrap", "firejail", "docker", "none", NULL
};
const char *const qsb_mode_names[] = {
	"strict", "compat", "permissive", NULL
};
const char *const qsb_retmode_names[] = {
	"always", "timeout", "manual", NULL
};
const char *const qsb_fallback_names[] = {
	"startup-only", "session", "manual", NULL
};

const char *const qsb_default_protected[] = {
	"**/.git/hooks", "**/.git/config",
	"home/.bashrc", "home/.bash_profile", "home/.bash_login",
	"home/.bash_logout", "home/.profile", "home/.zshrc", "home/.zshenv",
	"home/.zprofile", "home/.zlogin", "home/.config/fish",
	"**/.claude", "**/.codex", "**/.mcp.json",
	NULL
};

/* relative to the invoking user's HOME unless absolute */
const char *const qsb_default_hidden[] = {
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube",
	".docker/config.json", ".netrc", ".npmrc", ".pypirc",
	".git-credentials", ".config/gh", ".password-store", ".vault-token",
	".local/share/keyrings", ".config/qsb",
	NULL
};

int
qsb_enum_lookup(const char *const *names, const char *s)
{
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

static int
want_size(const struct qsb_json *j, int obj, const char *key, uint64_t *out,
    bool *has, const char *ctx, struct qsb_err *e)
{
	char *s = NULL;
	int r;

	if ((r = qsb_json_want_str(j, obj, key, false, &s, ctx, e)) <= 0)
		return r;
	if (qsb_parse_size(s, out) < 0 || *out == 0) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "field '%s.%s': invalid "
		    "size '%s' (expected a number with k, m, g or t)", ctx,
		    key, s);
		free(s);
		return -1;
	}
	free(s);
	*has = true;
	return 1;
}

int
qsb_sbconfig_parse(const struct qsb_json *j, int obj, struct qsb_sbconfig *c,
    bool partial, const char *ctx, struct qsb_err *e)
{
	static const char *const keys[] = { "type", "platform", "enabled",
	    "workspaceRoot", "memoryLimit", "cpuLimit", "diskQuota",
	    "networkEnabled", "mode", NULL };
	char *s = NULL;
	int r, v;

	if (j->t[obj].type != QSB_JOBJ)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field '%s': expected an object", ctx);
	if (qsb_json_keys_only(j, obj, keys, ctx, e) < 0)
		return -1;
	if ((r = qsb_json_want_enum(j, obj, "type", !partial, qsb_type_names,
	    &v, ctx, e)) < 0)
		return -1;
	if (r > 0) {
		c->type = v + 1;
		c->has_type = true;
	}
	if ((r = qsb_json_want_str(j, obj, "platform", false, &s, ctx, e)) < 0)
		return -1;
	if (r > 0) {
		bool ok = strcmp(s, "linux") == 0;
		free(s);
		if (!ok)
			return qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "field '%s.platform': only 'linux' is supported",
			    ctx);
	}
	if ((r = qsb_json_want_bool(j, obj, "enabled", false, &c->enabled,
	    ctx, e)) < 0)
		return -1;
	c->has_enabled = r > 0;
	if ((r = qsb_json_want_str(j, obj, "workspaceRoot", false, &s, ctx,
	    e)) < 0)
		return -1;
	free(s);	/* informational; recomputed from the root */
	if (want_size(j, obj, "memoryLimit", &c->memory, &c->has_memory, ctx,
	    e) < 0 || want_size(j, obj, "diskQuota", &c->disk, &c->has_disk,
	    ctx, e) < 0)
		return -1;
	if ((v = qsb_json_get(j, obj, "cpuLimit")) >= 0) {
		if (qsb_json_f64(j, v, &c->cpus) < 0 || c->cpus <= 0 ||
		    c->cpus > 4096)
			return qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "field '%s.cpuLimit': expected a number above 0",
			    ctx);
		c->has_cpus = true;
	}
	if ((r = qsb_json_want_bool(j, obj, "networkEnabled", false,
	    &c->network, ctx, e)) < 0)
		return -1;
	c->has_network = r > 0;
	if ((r = qsb_json_want_enum(j, obj, "mode", false, qsb_mode_names,
	    &c->mode, ctx, e)) < 0)
		return -1;
	c->has_mode = r > 0;
	return 0;
}

int
qsb_retention_check(const struct qsb_retention *p, struct qsb_err *e)
{
	if (p->has_max_age && p->max_age == 0)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "maxAge must be above 0");
	if (p->has_max_workspaces && p->max_workspaces < 1)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "maxWorkspaces must be at least 1");
	return 0;
}

int
qsb_retention_parse(const struct qsb_json *j, int obj,
    struct qsb_retention *p, bool partial, const char *ctx, struct qsb_err *e)
{
	static const char *const keys[] = { "mode", "maxAge", "maxWorkspaces",
	    "maxSize", "preserveOnError", NULL };
	long long v;
	int r;

	if (j->t[obj].type != QSB_JOBJ)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field '%s': expected an object", ctx);
	if (qsb_json_keys_only(j, obj, keys, ctx, e) < 0)
		return -1;
	if ((r = qsb_json_want_enum(j, obj, "mode", !partial,
	    qsb_retmode_names, &p->mode, ctx, e)) < 0)
		return -1;
	p->has_mode = r > 0;
	if ((r = qsb_json_want_i64(j, obj, "maxAge", false, 1,
	    (long long)1 << 53, &v, ctx, e)) < 0)
		return -1;
	if (r > 0) {
		p->max_age = (uint64_t)v;
		p->has_max_age = true;
	}
	if ((r = qsb_json_want_i64(j, obj, "maxWorkspaces", false, 1,
	    1000000000, &p->max_workspaces, ctx, e)) < 0)
		return -1;
	p->has_max_workspaces = r > 0;
	if (want_size(j, obj, "maxSize", &p->max_size, &p->has_max_size, ctx,
	    e) < 0)
		return -1;
	if ((r = qsb_json_want_bool(j, obj, "preserveOnError", false,
	    &p->preserve_on_error, ctx, e)) < 0)
		return -1;
	p->has_preserve_on_error = r > 0;
	return 0;
}

void
qsb_retention_write(struct qsb_jw *w, const struct qsb_retention *p)
{
	char buf[QSB_SIZE_BUFSZ];

	qsb_jw_obj(w);
	qsb_jw_key(w, "mode");
	qsb_jw_str(w, qsb_retmode_names[p->mode]);
	if (p->has_max_age) {
		qsb_jw_key(w, "maxAge");
		qsb_jw_uint(w, p->max_age);
	}
	if (p->has_max_workspaces) {
		qsb_jw_key(w, "maxWorkspaces");
		qsb_jw_int(w, p->max_workspaces);
	}
	if (p->has_max_size) {
		qsb_fmt_size(p->max_size, buf);
		qsb_jw_key(w, "maxSize");
		qsb_jw_str(w, buf);
	}
	if (p->has_preserve_on_error) {
		qsb_jw_key(w, "preserveOnError");
		qsb_jw_bool(w, p->preserve_on_error);
	}
	qsb_jw_obj_end(w);
}

static int
strlist(const struct qsb_json *j, int obj, const char *key, char ***out,
    struct qsb_err *e)
{
	int v, k, n = 0;
	char **list;

	if ((v = qsb_json_get(j, obj, key)) < 0)
		return 0;
	if (j->t[v].type != QSB_JARR)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field '%s': expected an array of strings", key);
	if ((list = calloc((size_t)j->t[v].size + 1, sizeof(*list))) == NULL)
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	for (k = qsb_json_first(j, v); k >= 0; k = qsb_json_sibling(j, v, k)) {
		size_t l;
		if (j->t[k].type != QSB_JSTR ||
		    (list[n] = qsb_json_str(j, k, &l)) == NULL ||
		    strlen(list[n]) != l || l == 0) {
			for (k = 0; list[k]; k++)
				free(list[k]);
			free(list);
			return qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "field '%s[%d]': expected a non-empty string",
			    key, n);
		}
		n++;
	}
	*out = list;
	return 1;
}

static char **
dup_list(const char *const *src)
{
	struct qsb_strv l = { NULL, 0, 0, false };

	for (; *src; src++)
		qsb_strv_add(&l, *src);
	return qsb_strv_done(&l);
}

static int
parse_policy(const struct qsb_json *j, int obj, struct qsb_policy *p,
    struct qsb_err *e)
{
	static const char *const keys[] = { "enabled", "mode", "backend",
	    "autoFallback", "windowsMode", NULL };
	char *s = NULL;

	if (j->t[obj].type != QSB_JOBJ)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field 'policy': expected an object");
	if (qsb_json_keys_only(j, obj, keys, "policy", e) < 0 ||
	    qsb_json_want_bool(j, obj, "enabled", false, &p->enabled,
	    "policy", e) < 0 ||
	    qsb_json_want_enum(j, obj, "mode", false, qsb_mode_names,
	    &p->mode, "policy", e) < 0 ||
	    qsb_json_want_enum(j, obj, "backend", false, qsb_backend_names,
	    &p->backend, "policy", e) < 0 ||
	    qsb_json_want_enum(j, obj, "autoFallback", false,
	    qsb_fallback_names, &p->fallback, "policy", e) < 0 ||
	    qsb_json_want_str(j, obj, "windowsMode", false, &s, "policy",
	    e) < 0)
		return -1;
	free(s);	/* accepted for the seed's clients; Linux ignores it */
	return 0;
}

int
qsb_config_load(const struct qsb_root *r, struct qsb_config *c,
    struct qsb_err *e)
{
	static const char *const keys[] = { "policy", "sandbox", "retention",
	    "protectedPaths", "hiddenPaths", "sandboxUid", "sandboxGid",
	    "dockerImage", NULL };
	struct qsb_json j;
	struct qsb_err sub;
	char *buf = NULL;
	size_t len;
	long long v;
	int k, rc = -1, got;

	memset(c, 0, sizeof(*c));
	c->policy.enabled = true;
	c->policy.mode = QSB_MODE_COMPAT;
	c->policy.backend = QSB_BK_AUTO;
	c->policy.fallback = QSB_FB_MANUAL;
	c->retention.mode = QSB_RET_TIMEOUT;
	c->retention.has_mode = true;
	c->retention.max_age = QSB_DEFAULT_MAX_AGE;
	c->retention.has_max_age = true;
	c->sandbox_uid = QSB_NOBODY;
	c->sandbox_gid = QSB_NOBODY;

	if (qsb_state_read(r->fd, "config.json", QSB_STATE_MAX, &buf, &len,
	    &sub) < 0) {
		if (errno != ENOENT) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID, "%s/config.json: %s",
			    r->path, sub.msg);
			return -1;
		}
		goto defaults;
	}
	c->present = true;
	memset(&j, 0, sizeof(j));
	if (qsb_json_parse(&j, buf, len, &sub) < 0) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "%s/config.json: %s",
		    r->path, sub.msg);
		goto out;
	}
	if (j.t[0].type != QSB_JOBJ) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "%s/config.json: expected an object", r->path);
		goto outj;
	}
	if (qsb_json_keys_only(&j, 0, keys, "", &sub) < 0)
		goto bad;
	if ((k = qsb_json_get(&j, 0, "policy")) >= 0 &&
	    parse_policy(&j, k, &c->policy, &sub) < 0)
		goto bad;
	if ((k = qsb_json_get(&j, 0, "sandbox")) >= 0 &&
	    qsb_sbconfig_parse(&j, k, &c->sandbox, true, "sandbox", &sub) < 0)
		goto bad;
	if ((k = qsb_json_get(&j, 0, "retention")) >= 0) {
		struct qsb_retention ret;
		memset(&ret, 0, sizeof(ret));
		if (qsb_retention_parse(&j, k, &ret, true, "retention",
		    &sub) < 0)
			goto bad;
		if (ret.has_mode) {
			c->retention.mode = ret.mode;
			if (ret.mode != QSB_RET_TIMEOUT)
				c->retention.has_max_age = false;
		}
		if (ret.has_max_age) {
			c->retention.max_age = ret.max_age;
			c->retention.has_max_age = true;
		}
		c->retention.max_workspaces = ret.max_workspaces;
		c->retention.has_max_workspaces = ret.has_max_workspaces;
		c->retention.max_size = ret.max_size;
		c->retention.has_max_size = ret.has_max_size;
		c->retention.preserve_on_error = ret.preserve_on_error;
		c->retention.has_preserve_on_error = ret.has_preserve_on_error;
	}
	if (strlist(&j, 0, "protectedPaths", &c->protected_paths, &sub) < 0 ||
	    strlist(&j, 0, "hiddenPaths", &c->hidden_paths, &sub) < 0)
		goto bad;
	if ((got = qsb_json_want_i64(&j, 0, "sandboxUid", false, 1, 4294967294LL,
	    &v, "", &sub)) < 0)
		goto bad;
	if (got > 0) {
		c->sandbox_uid = (uid_t)v;
		c->sandbox_gid = (gid_t)v;
	}
	if ((got = qsb_json_want_i64(&j, 0, "sandboxGid", false, 1,
	    4294967294LL, &v, "", &sub)) < 0)
		goto bad;
	if (got > 0)
		c->sandbox_gid = (gid_t)v;
	if (qsb_json_want_str(&j, 0, "dockerImage", false, &c->docker_image,
	    "", &sub) < 0)
		goto bad;
	qsb_json_free(&j);
	free(buf);
	buf = NULL;
defaults:
	if (c->protected_paths == NULL &&
	    (c->protected_paths = dup_list(qsb_default_protected)) == NULL)
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	if (c->hidden_paths == NULL &&
	    (c->hidden_paths = dup_list(qsb_default_hidden)) == NULL)
		return qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
	return 0;
bad:
	qsb_err_set(e, QSB_E_CONFIG_INVALID, "%s/config.json: %s", r->path,
	    sub.msg);
outj:
	qsb_json_free(&j);
out:
	free(buf);
	qsb_config_free(c);
	return rc;
}

void
qsb_config_free(struct qsb_config *c)
{
	if (c == NULL)
		return;
	qsb_strv_free(c->protected_paths);
	qsb_strv_free(c->hidden_paths);
	free(c->docker_image);
	c->protected_paths = c->hidden_paths = NULL;
	c->docker_image = NULL;
}
