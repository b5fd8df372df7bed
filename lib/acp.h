/*
 * qsb-exec acp: the ACP terminal methods (terminal/create, terminal/output,
 * terminal/wait_for_exit, terminal/kill, terminal/release) served as
 * JSON-RPC 2.0 over a byte stream, one message per line, as ACP's stdio
 * transport frames them.  Requests are answered in order, except
 * wait_for_exit, which is answered when its terminal ends: a kill or an
 * output sent meanwhile is not held up behind it.
 */
#ifndef QSB_ACP_H
#define QSB_ACP_H

struct qsb_root;
struct qsb_config;

/* Serves until infd ends and every pending wait is answered.  session, if
 * not NULL, replaces the ACP sessionId of every request (the workspace).
 * Returns the exit status: 0, or 125 if the output could not be written. */
int	 qsb_acp_serve(const struct qsb_root *, const struct qsb_config *,
	    const char *session, int infd, int outfd);

#endif
