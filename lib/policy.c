#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "policy.h"
#include "strv.h"

const char *const qsb_ptype_names[] = {
	"file:read", "file:write", "file:delete", "command:execute",
	"network:access", "network:download", "package:install:npm",
	"package:install:python", "package:install:system", NULL
};

/* The built-in default: policies/compat.json, byte for byte (a test
 * compares them). */
const char qsb_policy_default[] =
"{\n"
"  \"autoApprove\": [\"file:read\", \"file:write\", \"file:delete\", \"command:execute\"],\n"
"  \"requireConfirm\": [\"network:access\", \"network:download\", \"package:install:npm\", \"package:install:python\"],\n"
"  \"denyList\": [\"package:install:system\"],\n"
"  \"workspaceOnly\": true,\n"
"  \"safeCommands\": [\"ls\", \"cat\", \"pwd\", \"echo\", \"head\", \"tail\", \"wc\", \"grep\", \"find\", \"diff\", \"git status\", \"git diff\", \"git log\"]\n"
"}\n";

int
qsb_ptype_lookup(const char *s)
{
	int i;

	for (i = 0; qsb_ptype_names[i]; i++)
		if (strcmp(qsb_ptype_names[i], s) == 0)
			return i;
	return -1;
}

/* A type, or a group: "*", "file:*", "network:*", "package:install:*". */
static int
type_mask(const char *s, uint32_t *mask)
{
	size_t l = strlen(s);
	int i;

	if ((i = qsb_ptype_lookup(s)) >= 0) {
		*mask = 1u << i;
		return 0;
	}
	if (strcmp(s, "*") == 0) {
		*mask = (1u << QSB_P_NTYPES) - 1;
		return 0;
	}
	if (l < 3 || strcmp(s + l - 2, ":*") != 0)
		return -1;
	*mask = 0;
	for (i = 0; qsb_ptype_names[i]; i++)
		if (strncmp(qsb_ptype_names[i], s, l - 1) == 0)
			*mask |= 1u << i;
	return *mask ? 0 : -1;
}

static int
type_list(const struct qsb_json *j, const char *key, uint32_t *out,
    struct qsb_err *e)
{
	uint32_t m;
	char *s;
	int v, k;

	*out = 0;
	if ((v = qsb_json_get(j, 0, key)) < 0)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field '%s' is missing", key);
	if (j->t[v].type != QSB_JARR)
		return qsb_err_set(e, QSB_E_CONFIG_INVALID,
		    "field '%s': expected an array of permission types", key);
	for (k = qsb_json_first(j, v); k >= 0; k = qsb_json_sibling(j, v, k)) {
		if (j->t[k].type != QSB_JSTR ||
		    (s = qsb_json_str(j, k, NULL)) == NULL)
			return qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "field '%s': expected strings", key);
		if (type_mask(s, &m) < 0) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID, "field '%s': "
			    "unknown permission type '%s'", key, s);
			free(s);
			return -1;
		}
		free(s);
		*out |= m;
	}
	return 0;
}

int
qsb_policy_parse(const char *buf, size_t len, struct qsb_perm_policy *pol,
    struct qsb_err *e)
{
	static const char *const keys[] = { "autoApprove", "requireConfirm",
	    "denyList", "workspaceOnly", "safeCommands", NULL };
	struct qsb_strv safe = { NULL, 0, 0, false };
	struct qsb_json j;
	char *s;
	int v, k, rc = -1;

	memset(pol, 0, sizeof(*pol));
	if (qsb_json_parse(&j, buf, len, e) < 0)
		return -1;
	if (j.t[0].type != QSB_JOBJ) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "expected an object");
		goto out;
	}
	if (qsb_json_keys_only(&j, 0, keys, "", e) < 0 ||
	    type_list(&j, "autoApprove", &pol->auto_approve, e) < 0 ||
	    type_list(&j, "requireConfirm", &pol->require_confirm, e) < 0 ||
	    type_list(&j, "denyList", &pol->deny_list, e) < 0 ||
	    qsb_json_want_bool(&j, 0, "workspaceOnly", true,
	    &pol->workspace_only, "", e) < 0)
		goto out;
	if ((v = qsb_json_get(&j, 0, "safeCommands")) < 0 ||
	    j.t[v].type != QSB_JARR) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "field 'safeCommands': "
		    "expected an array of command names");
		goto out;
	}
	for (k = qsb_json_first(&j, v); k >= 0;
	    k = qsb_json_sibling(&j, v, k)) {
		if (j.t[k].type != QSB_JSTR ||
		    (s = qsb_json_str(&j, k, NULL)) == NULL) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID,
			    "field 'safeCommands': expected strings");
			goto out;
		}
		/* words of plain characters: "ls", "git status" */
		if (*s == '\0' || *s == ' ' || qsb_shell_meta(s) ||
		    strchr(s, '/') != NULL || strstr(s, "  ") != NULL ||
		    s[strlen(s) - 1] == ' ' || strchr(s, '\t') != NULL) {
			qsb_err_set(e, QSB_E_CONFIG_INVALID, "field "
			    "'safeCommands': '%s' is not a command name with "
			    "optional words", s);
			free(s);
			goto out;
		}
		qsb_strv_take(&safe, s);
	}
	if ((pol->safe_commands = qsb_strv_done(&safe)) == NULL) {
		qsb_err_sys(e, QSB_E_EXECUTION_FAILED, "out of memory");
		goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		qsb_strv_free(safe.v);
	qsb_json_free(&j);
	return rc;
}

void
qsb_policy_free(struct qsb_perm_policy *pol)
{
	qsb_strv_free(pol->safe_commands);
	pol->safe_commands = NULL;
}

static void
write_types(struct qsb_jw *w, const char *key, uint32_t mask)
{
	int i;

	qsb_jw_key(w, key);
	qsb_jw_arr(w);
	for (i = 0; i < QSB_P_NTYPES; i++)
		if (mask & (1u << i))
			qsb_jw_str(w, qsb_ptype_names[i]);
	qsb_jw_arr_end(w);
}

void
qsb_policy_write(struct qsb_jw *w, const struct qsb_perm_policy *pol)
{
	size_t i;

	qsb_jw_obj(w);
	write_types(w, "autoApprove", pol->auto_approve);
	write_types(w, "requireConfirm", pol->require_confirm);
	write_types(w, "denyList", pol->deny_list);
	qsb_jw_key(w, "workspaceOnly");
	qsb_jw_bool(w, pol->workspace_only);
	qsb_jw_key(w, "safeCommands");
	qsb_jw_arr(w);
	for (i = 0; pol->safe_commands && pol->safe_commands[i]; i++)
		qsb_jw_str(w, pol->safe_commands[i]);
	qsb_jw_arr_end(w);
	qsb_jw_obj_end(w);
}

bool
qsb_shell_meta(const char *s)
{
	for (; *s; s++)
		if (strchr("|&;<>()$`\\\"'*?[]#~{}!\n\r", *s) != NULL ||
		    ((unsigned char)*s < 0x20 && *s != '\t'))
			return true;
	return false;
}

/* The standard system directories a safe program may be named from. */
static bool
system_path(const char *prog, size_t dirlen)
{
	static const char *const dirs[] = { "/bin", "/usr/bin",
	    "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", NULL };
	size_t i;

	for (i = 0; dirs[i]; i++)
		if (strlen(dirs[i]) == dirlen &&
		    strncmp(prog, dirs[i], dirlen) == 0)
			return true;
	return false;
}

/* The next word of s (separated by blanks): *len gets its length. */
static const char *
word(const char *s, size_t *len)
{
	while (*s == ' ' || *s == '\t')
		s++;
	*len = strcspn(s, " \t");
	return *len ? s : NULL;
}

bool
qsb_safe_command(const struct qsb_perm_policy *pol, const char *cmdline,
    const char **matched)
{
	const char *prog, *slash, *w, *e, *rest;
	size_t pl, wl, el, i;

	if (matched)
		*matched = NULL;
	if (qsb_shell_meta(cmdline) || (prog = word(cmdline, &pl)) == NULL)
		return false;
	rest = prog + pl;
	/* a program named by a path must come from a system directory */
	slash = memrchr(prog, '/', pl);
	if (slash != NULL) {
		if (!system_path(prog, (size_t)(slash - prog)))
			return false;
		pl -= (size_t)(slash + 1 - prog);
		prog = slash + 1;
	}
	for (i = 0; pol->safe_commands && pol->safe_commands[i]; i++) {
		const char *entry = pol->safe_commands[i], *r = rest;
		if ((e = word(entry, &el)) == NULL || el != pl ||
		    strncmp(e, prog, pl) != 0)
			continue;
		/* every further word of the entry must follow, in order */
		for (e += el; (e = word(e, &el)) != NULL; e += el) {
			if ((w = word(r, &wl)) == NULL || wl != el ||
			    strncmp(w, e, el) != 0)
				break;
			r = w + wl;
		}
		if (e == NULL) {
			if (matched)
				*matched = entry;
			return true;
		}
	}
	return false;
}

/* --- package installs ------------------------------------------------- */

static const char *
base(const char *s)
{
	const char *b = strrchr(s, '/');

	return b ? b + 1 : s;
}

/* Options whose value is the next word, so that it is no package name. */
static bool
takes_value(const char *opt)
{
	static const char *const opts[] = { "--registry", "--prefix",
	    "--cache", "-r", "--requirement", "-c", "--constraint", "-i",
	    "--index-url", "--extra-index-url", "-t", "--target", "-f",
	    "--find-links", "--root", "-o", "--option", "--tag", "-C",
	    "--cwd", "--filter", "-w", "--workspace", NULL };
	size_t i;

	for (i = 0; opts[i]; i++)
		if (strcmp(opt, opts[i]) == 0)
			return true;
	return false;
}

static void
simple_command(char **w, size_t n,
    void (*fn)(enum qsb_ptype, const char *, void *), void *arg)
{
	enum qsb_ptype t;
	size_t i = 0, first;
	const char *p;
	bool any = false;

	/* VAR=value prefixes and wrappers */
	while (i < n && ((strchr(w[i], '=') != NULL && w[i][0] != '-') ||
	    strcmp(base(w[i]), "sudo") == 0 || strcmp(base(w[i]), "env") == 0 ||
	    strcmp(w[i], "exec") == 0 || strcmp(w[i], "command") == 0 ||
	    strcmp(w[i], "nice") == 0 || strcmp(w[i], "time") == 0))
		i++;
	if (i >= n)
		return;
	p = base(w[i]);
	if ((strcmp(p, "npm") == 0 || strcmp(p, "pnpm") == 0 ||
	    strcmp(p, "yarn") == 0) && i + 1 < n &&
	    (strcmp(w[i + 1], "install") == 0 || strcmp(w[i + 1], "i") == 0 ||
	    strcmp(w[i + 1], "add") == 0)) {
		t = QSB_P_PKG_NPM;
		first = i + 2;
	} else if ((strcmp(p, "pip") == 0 || strcmp(p, "pip3") == 0) &&
	    i + 1 < n && strcmp(w[i + 1], "install") == 0) {
		t = QSB_P_PKG_PYTHON;
		first = i + 2;
	} else if (strcmp(p, "uv") == 0 && i + 2 < n &&
	    strcmp(w[i + 1], "pip") == 0 && strcmp(w[i + 2], "install") == 0) {
		t = QSB_P_PKG_PYTHON;
		first = i + 3;
	} else if (strncmp(p, "python", 6) == 0 && i + 3 < n &&
	    strcmp(w[i + 1], "-m") == 0 && strcmp(w[i + 2], "pip") == 0 &&
	    strcmp(w[i + 3], "install") == 0) {
		t = QSB_P_PKG_PYTHON;
		first = i + 4;
	} else if ((strcmp(p, "apt") == 0 || strcmp(p, "apt-get") == 0 ||
	    strcmp(p, "dnf") == 0) && i + 1 < n) {
		/* options may come before the verb: apt-get -y install x */
		for (first = i + 1; first < n && w[first][0] == '-'; first++)
			;
		if (first >= n || strcmp(w[first], "install") != 0)
			return;
		t = QSB_P_PKG_SYSTEM;
		first++;
	} else
		return;
	for (i = first; i < n; i++) {
		if (w[i][0] == '-') {
			if (takes_value(w[i]) && i + 1 < n)
				i++;
			continue;
		}
		fn(t, w[i], arg);
		any = true;
	}
	/* "npm install" alone installs what package.json names */
	if (!any)
		fn(t, t == QSB_P_PKG_NPM ? "package.json" : t ==
		    QSB_P_PKG_PYTHON ? "requirements" : "(none named)", arg);
}

/* Splits a shell command line into simple commands and words, roughly:
 * separators && || ; | and newlines end a command; quotes are removed
 * from the edges of words. */
static void
script(const char *s, void (*fn)(enum qsb_ptype, const char *, void *),
    void *arg)
{
	struct qsb_strv words = { NULL, 0, 0, false };
	char *copy, *p, *q;
	size_t n;

	if ((copy = strdup(s)) == NULL)
		return;
	for (p = copy; ; ) {
		q = p + strcspn(p, "&;|\n");
		char c = *q;
		*q = '\0';
		for (char *t = strtok(p, " \t"); t; t = strtok(NULL, " \t")) {
			n = strlen(t);
			while (n > 0 && (t[n - 1] == '"' || t[n - 1] == '\'' ||
			    t[n - 1] == ')'))
				t[--n] = '\0';
			while (*t == '"' || *t == '\'' || *t == '(')
				t++;
			if (*t)
				qsb_strv_add(&words, t);
		}
		if (words.n > 0 && !words.nomem)
			simple_command(words.v, words.n, fn, arg);
		qsb_strv_free(words.v);
		memset(&words, 0, sizeof(words));
		if (c == '\0')
			break;
		p = q + 1;
	}
	free(copy);
}

void
qsb_package_installs(char *const *argv,
    void (*fn)(enum qsb_ptype, const char *, void *), void *arg)
{
	size_t n;
	const char *p;

	if (argv == NULL || argv[0] == NULL)
		return;
	for (n = 0; argv[n]; n++)
		;
	p = base(argv[0]);
	if ((strcmp(p, "sh") == 0 || strcmp(p, "bash") == 0 ||
	    strcmp(p, "dash") == 0 || strcmp(p, "zsh") == 0) && n >= 3 &&
	    strcmp(argv[1], "-c") == 0) {
		script(argv[2], fn, arg);
		return;
	}
	simple_command((char **)argv, n, fn, arg);
}
