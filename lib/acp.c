#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "exec.h"
#include "json.h"
#include "parse.h"
#include "root.h"
#include "state.h"
#include "strv.h"
#include "terminal.h"

/* JSON-RPC 2.0 and ACP error codes */
#define RPC_PARSE	(-32700)
#define RPC_REQUEST	(-32600)
#define RPC_METHOD	(-32601)
#define RPC_PARAMS	(-32602)
#define RPC_INTERNAL	(-32603)
#define ACP_NOT_FOUND	(-32002)

#define MAX_LINE	(16u << 20)
#define MAX_PENDING	256

struct pending {
	char		*id;		/* the request's id, as JSON */
	struct qsb_term	 t;
	int		 pidfd;
};

struct server {
	const struct qsb_root	*root;
	const struct qsb_config	*cfg;
	const char		*session;
	int			 outfd;
	bool			 broken;	/* the output is gone */
	struct pending		 p[MAX_PENDING];
	int			 np;
};

static void
send_doc(struct server *s, struct qsb_jw *w)
{
	if (qsb_jw_finish(w) == 0 && !s->broken &&
	    qsb_write_all(s->outfd, w->buf, w->len) < 0)
		s->broken = true;
	qsb_jw_free(w);
}

static void
begin(struct qsb_jw *w, const char *id)
{
	qsb_jw_init(w, 0);
	qsb_jw_obj(w);
	qsb_jw_key(w, "jsonrpc");
	qsb_jw_str(w, "2.0");
	qsb_jw_key(w, "id");
	if (id != NULL)
		qsb_jw_raw(w, id, strlen(id));
	else
		qsb_jw_null(w);
}

static void
rpc_error(struct server *s, const char *id, int code, const char *msg,
    const char *qcode, const char *sid)
{
	struct qsb_jw w;

	begin(&w, id);
	qsb_jw_key(&w, "error");
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "code");
	qsb_jw_int(&w, code);
	qsb_jw_key(&w, "message");
	qsb_jw_str(&w, msg);
	if (qcode != NULL || sid != NULL) {
		qsb_jw_key(&w, "data");
		qsb_jw_obj(&w);
		if (qcode != NULL) {
			qsb_jw_key(&w, "code");
			qsb_jw_str(&w, qcode);
		}
		if (sid != NULL) {
			qsb_jw_key(&w, "sessionId");
			qsb_jw_str(&w, sid);
		}
		qsb_jw_obj_end(&w);
	}
	qsb_jw_obj_end(&w);
	qsb_jw_obj_end(&w);
	send_doc(s, &w);
}

/* A qsb failure as a JSON-RPC error. */
static void
fail(struct server *s, const char *id, const struct qsb_err *e,
    const char *sid)
{
	int code = RPC_INTERNAL;

	if (id == NULL)
		return;		/* a notification gets no answer */
	if (e->code == QSB_E_CONFIG_INVALID)
		code = RPC_PARAMS;
	else if (e->code == QSB_E_WORKSPACE_NOT_FOUND ||
	    e->code == QSB_E_FILE_NOT_FOUND)
		code = ACP_NOT_FOUND;
	rpc_error(s, id, code, e->msg, qsb_code_name(e->code), sid);
}

static void
exit_result(struct server *s, const char *id, const struct qsb_term_exit *x)
{
	struct qsb_jw w;

	if (id == NULL)
		return;
	begin(&w, id);
	qsb_jw_key(&w, "result");
	qsb_jw_obj(&w);
	qsb_jw_key(&w, "exitCode");
	if (x->exit_code >= 0)
		qsb_jw_int(&w, x->exit_code);
	else
		qsb_jw_null(&w);
	qsb_jw_key(&w, "signal");
	qsb_jw_str(&w, x->signal ? qsb_signame(x->signal) : NULL);
	qsb_jw_obj_end(&w);
	qsb_jw_obj_end(&w);
	send_doc(s, &w);
}

static void
empty_result(struct server *s, const char *id)
{
	struct qsb_jw w;

	if (id == NULL)
		return;
	begin(&w, id);
	qsb_jw_key(&w, "result");
	qsb_jw_obj(&w);
	qsb_jw_obj_end(&w);
	qsb_jw_obj_end(&w);
	send_doc(s, &w);
}

/* params.sessionId (or the one of --session) and, with want_tid,
 * params.terminalId, opened. */
static int
session_of(struct server *s, const struct qsb_json *j, int params,
    char sid[QSB_ID_MAX + 1], struct qsb_err *e)
{
	char *v = NULL;

	if (qsb_json_want_str(j, params, "sessionId", true, &v, "params",
	    e) < 0)
		return -1;
	if (s->session != NULL)
		strlcpy(sid, s->session, QSB_ID_MAX + 1);
	else if (!qsb_id_valid(v)) {
		qsb_err_set(e, QSB_E_CONFIG_INVALID, "field 'params.sessionId':"
		    " '%.200s' is not a qsb session id ([A-Za-z0-9][A-Za-z0-9._-]"
		    "{0,127}); see qsb-exec acp --session", v);
		free(v);
		return -1;
	} else
		strlcpy(sid, v, QSB_ID_MAX + 1);
	free(v);
	return 0;
}

static int
terminal_of(struct server *s, const struct qsb_json *j, int params,
    const char *sid, struct qsb_term *t, struct qsb_err *e)
{
	char *tid = NULL;

	if (qsb_json_want_str(j, params, "terminalId", true, &tid, "params",
	    e) < 0)
		return -1;
	if (qsb_term_open(s->root, tid, t, e) < 0) {
		if (e->code == QSB_E_CONFIG_INVALID)
			e->code = QSB_E_FILE_NOT_FOUND;	/* just unknown */
		free(tid);
		return -1;
	}
	free(tid);
	if (strcmp(t->sid, sid) != 0) {
		qsb_term_close(t);
		return qsb_err_set(e, QSB_E_FILE_NOT_FOUND, "no terminal '%s' "
		    "in session '%s'", t->tid, sid);
	}
	return 0;
}

/* A command line without args, when it needs a shell. */
static bool
needs_shell(const char *cmd)
{
	return strpbrk(cmd, " \t\n;&|<>()$`\\\"'*?[]#~=%{}") != NULL;
}

static void
do_create(struct server *s, const char *id, const struct qsb_json *j,
    int params)
{
	struct qsb_strv argv = { NULL, 0, 0, false };
	struct qsb_strv env = { NULL, 0, 0, false };
	struct qsb_exec_req q;
	struct qsb_err e;
	struct qsb_jw w;
	char sid[QSB_ID_MAX + 1], tid[QSB_TID_LEN + 1];
	char *cmd = NULL, *cwd = NULL, *str, *name, *val, *kv;
	long long limit;
	size_t l;
	int k, i;

	memset(&q, 0, sizeof(q));
	q.mode = q.backend = q.network = q.level = -1;
	q.output_limit = QSB_OUTPUT_LIMIT;
	sid[0] = '\0';
	if (session_of(s, j, params, sid, &e) < 0 ||
	    qsb_json_want_str(j, params, "command", true, &cmd, "params",
	    &e) < 0)
		goto bad;
	free(cmd);
	cmd = qsb_json_str(j, qsb_json_get(j, params, "command"), &l);
	if (cmd == NULL || *cmd == '\0' || strlen(cmd) != l) {
		qsb_err_set(&e, QSB_E_CONFIG_INVALID, "field 'params.command': "
		    "expected a command, without NUL");
		goto bad;
	}
	if ((k = qsb_json_get(j, params, "args")) >= 0 &&
	    j->t[k].type != QSB_JNULL) {
		if (j->t[k].type != QSB_JARR) {
			qsb_err_set(&e, QSB_E_CONFIG_INVALID, "field "
			    "'params.args': expected an array of strings");
			goto bad;
		}
		if (j->t[k].size == 0 && needs_shell(cmd)) {
			qsb_strv_add(&argv, "/bin/sh");
			qsb_strv_add(&argv, "-c");
		}
		qsb_strv_add(&argv, cmd);
		for (i = qsb_json_first(j, k); i >= 0;
		    i = qsb_json_sibling(j, k, i)) {
			if (j->t[i].type != QSB_JSTR ||
			    (str = qsb_json_str(j, i, &l)) == NULL ||
			    strlen(str) != l) {
				if (j->t[i].type == QSB_JSTR)
					free(qsb_json_str(j, i, NULL));
				qsb_err_set(&e, QSB_E_CONFIG_INVALID, "field "
				    "'params.args': expected strings without "
				    "NUL");
				goto bad;
			}
			qsb_strv_take(&argv, str);
		}
	} else {
		if (needs_shell(cmd)) {
			qsb_strv_add(&argv, "/bin/sh");
			qsb_strv_add(&argv, "-c");
		}
		qsb_strv_add(&argv, cmd);
	}
	if ((k = qsb_json_get(j, params, "env")) >= 0 &&
	    j->t[k].type != QSB_JNULL) {
		if (j->t[k].type != QSB_JARR) {
			qsb_err_set(&e, QSB_E_CONFIG_INVALID, "field "
			    "'params.env': expected an array of {name, value}");
			goto bad;
		}
		for (i = qsb_json_first(j, k); i >= 0;
		    i = qsb_json_sibling(j, k, i)) {
			name = val = NULL;
			if (j->t[i].type != QSB_JOBJ ||
			    qsb_json_want_str(j, i, "name", true, &name,
			    "params.env", &e) < 0 ||
			    qsb_json_want_str(j, i, "value", true, &val,
			    "params.env", &e) < 0 || *name == '\0' ||
			    strchr(name, '=') != NULL) {
				if (j->t[i].type != QSB_JOBJ || (name != NULL &&
				    val != NULL))
					qsb_err_set(&e, QSB_E_CONFIG_INVALID,
					    "field 'params.env': expected "
					    "{name, value} with a name "
					    "without '='");
				free(name);
				free(val);
				goto bad;
			}
			if (asprintf(&kv, "%s=%s", name, val) < 0)
				kv = NULL;
			qsb_strv_take(&env, kv);
			free(name);
			free(val);
		}
	}
	if ((k = qsb_json_get(j, params, "cwd")) >= 0 &&
	    j->t[k].type != QSB_JNULL &&
	    qsb_json_want_str(j, params, "cwd", false, &cwd, "params",
	    &e) < 0)
		goto bad;
	if ((k = qsb_json_get(j, params, "outputByteLimit")) >= 0 &&
	    j->t[k].type != QSB_JNULL) {
		if (qsb_json_want_i64(j, params, "outputByteLimit", false, 0,
		    (long long)QSB_OUTPUT_LIMIT_MAX, &limit, "params",
		    &e) < 0)
			goto bad;
		q.output_limit = (size_t)limit;
	}
	if (argv.nomem || env.nomem) {
		qsb_err_sys(&e, QSB_E_EXECUTION_FAILED, "out of memory");
		goto bad;
	}
	q.argv = argv.v;
	q.env = env.v;
	q.cwd = cwd;
	q.stdio = QSB_STDIO_MERGED;
	q.stdin_null = true;
	if (qsb_term_create(s->root, s->cfg, sid, &q, tid, &e) < 0)
		goto bad;
	if (id != NULL) {
		begin(&w, id);
		qsb_jw_key(&w, "result");
		qsb_jw_obj(&w);
		qsb_jw_key(&w, "terminalId");
		qsb_jw_str(&w, tid);
		qsb_jw_obj_end(&w);
		qsb_jw_obj_end(&w);
		send_doc(s, &w);
	}
	goto out;
bad:
	fail(s, id, &e, sid[0] ? sid : NULL);
out:
	qsb_strv_free(argv.v);
	qsb_strv_free(env.v);
	free(cmd);
	free(cwd);
}

static void
do_output(struct server *s, const char *id, const struct qsb_term *t)
{
	struct qsb_err e;
	struct qsb_jw w;

	begin(&w, id);
	qsb_jw_key(&w, "result");
	if (qsb_term_output_write(&w, t, &e) < 0) {
		qsb_jw_free(&w);
		fail(s, id, &e, t->sid);
		return;
	}
	qsb_jw_obj_end(&w);
	if (id != NULL)
		send_doc(s, &w);
	else
		qsb_jw_free(&w);
}

/* Answered now if it has ended, else when its supervisor does. */
static void
do_wait(struct server *s, const char *id, struct qsb_term *t)
{
	struct qsb_term_exit x;
	struct qsb_err e;
	struct pending *p;
	int fd;

	if ((fd = qsb_term_pidfd(t)) < 0) {
		if (qsb_term_status(t, &x, &e) < 0)
			fail(s, id, &e, t->sid);
		else
			exit_result(s, id, &x);
		return;
	}
	if (s->np == MAX_PENDING || id == NULL) {
		close(fd);
		if (id != NULL)
			rpc_error(s, id, RPC_INTERNAL, "too many waits at "
			    "once", "EXECUTION_FAILED", t->sid);
		return;
	}
	p = &s->p[s->np++];
	p->id = strdup(id);
	p->t = *t;
	p->pidfd = fd;
	t->dirfd = -1;		/* the pending wait has it now */
}

static void
request(struct server *s, const char *line, size_t len)
{
	static const char *const methods[] = { "terminal/create",
	    "terminal/output", "terminal/wait_for_exit", "terminal/kill",
	    "terminal/release", NULL };
	struct qsb_json j;
	struct qsb_term t;
	struct qsb_err e;
	char sid[QSB_ID_MAX + 1] = "", *id = NULL, *method = NULL;
	int k, params, m;

	if (qsb_json_parse(&j, line, len, &e) < 0) {
		rpc_error(s, NULL, RPC_PARSE, e.msg, NULL, NULL);
		return;
	}
	if (j.t[0].type != QSB_JOBJ) {
		rpc_error(s, NULL, RPC_REQUEST, "a request is an object", NULL,
		    NULL);
		goto out;
	}
	if ((k = qsb_json_get(&j, 0, "id")) >= 0) {
		const struct qsb_jtok *it = &j.t[k];
		if (it->type != QSB_JSTR && it->type != QSB_JNUM &&
		    it->type != QSB_JNULL) {
			rpc_error(s, NULL, RPC_REQUEST, "field 'id': a string, "
			    "a number or null", NULL, NULL);
			goto out;
		}
		if (it->type == QSB_JSTR)
			id = strndup(j.s + it->start - 1,
			    (size_t)(it->end - it->start) + 2);
		else
			id = strndup(j.s + it->start,
			    (size_t)(it->end - it->start));
	}
	if ((k = qsb_json_get(&j, 0, "jsonrpc")) < 0 ||
	    !qsb_json_streq(&j, k, "2.0")) {
		rpc_error(s, id ? id : "null", RPC_REQUEST, "field 'jsonrpc' "
		    "must be \"2.0\"", NULL, NULL);
		goto out;
	}
	if (qsb_json_want_str(&j, 0, "method", true, &method, "", &e) < 0) {
		rpc_error(s, id ? id : "null", RPC_REQUEST, e.msg, NULL, NULL);
		goto out;
	}
	for (m = 0; methods[m] && strcmp(methods[m], method) != 0; m++)
		;
	if (methods[m] == NULL) {
		if (id != NULL)
			rpc_error(s, id, RPC_METHOD, "method not found: only "
			    "the ACP terminal/* methods are served here", NULL,
			    NULL);
		goto out;
	}
	if ((params = qsb_json_get(&j, 0, "params")) < 0 ||
	    j.t[params].type != QSB_JOBJ) {
		if (id != NULL)
			rpc_error(s, id, RPC_PARAMS, "field 'params': expected "
			    "an object", NULL, NULL);
		goto out;
	}
	if (m == 0) {
		do_create(s, id, &j, params);
		goto out;
	}
	if (session_of(s, &j, params, sid, &e) < 0 ||
	    terminal_of(s, &j, params, sid, &t, &e) < 0) {
		fail(s, id, &e, sid[0] ? sid : NULL);
		goto out;
	}
	switch (m) {
	case 1:
		do_output(s, id, &t);
		break;
	case 2:
		do_wait(s, id, &t);
		break;
	case 3:
		if (qsb_term_kill(&t, &e) < 0)
			fail(s, id, &e, sid);
		else
			empty_result(s, id);
		break;
	case 4:
		if (qsb_term_release(s->root, &t, &e) < 0)
			fail(s, id, &e, sid);
		else
			empty_result(s, id);
		break;
	}
	qsb_term_close(&t);
out:
	qsb_json_free(&j);
	free(id);
	free(method);
}

static void
finish_wait(struct server *s, int i)
{
	struct qsb_term_exit x;
	struct qsb_err e;
	struct pending *p = &s->p[i];

	if (qsb_term_status(&p->t, &x, &e) < 0)
		fail(s, p->id, &e, p->t.sid);
	else
		exit_result(s, p->id, &x);
	close(p->pidfd);
	qsb_term_close(&p->t);
	free(p->id);
	s->p[i] = s->p[--s->np];
}

int
qsb_acp_serve(const struct qsb_root *root, const struct qsb_config *cfg,
    const char *session, int infd, int outfd)
{
	static struct server s;
	struct pollfd pfd[MAX_PENDING + 1];
	char *buf = NULL, *nl;
	size_t len = 0, cap = 0, start;
	bool eof = false;
	ssize_t n;
	int i, np;

	memset(&s, 0, sizeof(s));
	s.root = root;
	s.cfg = cfg;
	s.session = session;
	s.outfd = outfd;
	while (!s.broken && (!eof || s.np > 0)) {
		pfd[0].fd = eof ? -1 : infd;
		pfd[0].events = POLLIN;
		for (i = 0; i < s.np; i++) {
			pfd[i + 1].fd = s.p[i].pidfd;
			pfd[i + 1].events = POLLIN;
		}
		np = s.np;
		if (poll(pfd, (nfds_t)np + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		/* ends first, from the last, so that indices hold */
		for (i = np - 1; i >= 0; i--)
			if (pfd[i + 1].revents)
				finish_wait(&s, i);
		if (eof || !(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 131072;
			if (cap > MAX_LINE + 131072 ||
			    (nl = realloc(buf, cap)) == NULL)
				break;
			buf = nl;
		}
		if ((n = read(infd, buf + len, cap - len)) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			eof = true;
		} else if (n == 0)
			eof = true;
		else
			len += (size_t)n;
		/* every complete line; at the end, the last one too */
		for (start = 0; start < len; ) {
			nl = memchr(buf + start, '\n', len - start);
			if (nl == NULL && !eof)
				break;
			size_t l = (nl ? (size_t)(nl - buf) : len) - start;
			size_t e0 = l;
			while (e0 > 0 && (buf[start + e0 - 1] == '\r' ||
			    buf[start + e0 - 1] == ' '))
				e0--;
			if (e0 > 0)
				request(&s, buf + start, e0);
			start += l + (nl != NULL);
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		if (len > MAX_LINE) {
			rpc_error(&s, NULL, RPC_PARSE, "a message longer than "
			    "16 MiB", NULL, NULL);
			len = 0;
		}
	}
	while (s.np > 0) {
		struct pending *p = &s.p[--s.np];
		close(p->pidfd);
		qsb_term_close(&p->t);
		free(p->id);
	}
	free(buf);
	return s.broken ? 125 : 0;
}
