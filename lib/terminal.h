/*
 * Terminals (DESIGN.md section 5.4): a command run in the sandbox of a
 * workspace by a detached supervisor, so that it outlives the process that
 * started it, with the ACP terminal lifecycle (create, output, wait, kill,
 * release).
 *
 * State:
 *   ROOT/terminals/TID            the index: the session id of terminal TID
 *   ROOT/terminals/.lock          held while terminals are counted and made
 *   ROOT/ws/SID/meta/terminals/TID/
 *     terminal.json               what was started, when, its limits
 *     lock                        held (LOCK_EX) by the supervisor for its
 *                                 whole life: held = running
 *     pid                         the supervisor's pid
 *     output                      what the command printed (stdout and
 *                                 stderr as one stream), at most about
 *                                 twice the output limit: older bytes are
 *                                 dropped from the start
 *     truncated                   present once bytes were dropped
 *     exit.json                   {exitCode, signal, ...}, written before
 *                                 the lock is released
 * A terminal is registered (terminal.json, index) before its command is
 * spawned, so a command that exits at once is still found.  The supervisor
 * also holds the workspace's meta/active (shared): cleanup leaves the
 * workspace alone, and destroy without --force refuses.
 */
#ifndef QSB_TERMINAL_H
#define QSB_TERMINAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "exec.h"
#include "parse.h"

#define QSB_MAX_TERMINALS	50
#define QSB_TID_LEN		16

struct qsb_root;
struct qsb_config;
struct qsb_jw;

struct qsb_term {
	char	 tid[QSB_TID_LEN + 1];
	char	 sid[QSB_ID_MAX + 1];
	int	 dirfd;		/* the terminal's directory */
};

/* ACP's TerminalExitStatus, and how qsb knows it. */
struct qsb_term_exit {
	bool	 done;		/* false: still running */
	int	 exit_code;	/* -1: null (a signal) */
	int	 signal;	/* 0: none */
	bool	 timed_out;
	bool	 lost;		/* the supervisor died without saying */
};

bool	 qsb_tid_valid(const char *);
/* Runs req in workspace id as a terminal: plans, gates, counts (the
 * limit is QSB_MAX_TERMINALS or $QSB_MAX_TERMINALS), registers, starts
 * the supervisor and returns once it holds the terminal. */
int	 qsb_term_create(const struct qsb_root *, const struct qsb_config *,
	    const char *id, const struct qsb_exec_req *, char tid[],
	    struct qsb_err *);
/* Finds a terminal by id (FILE_NOT_FOUND when there is none). */
int	 qsb_term_open(const struct qsb_root *, const char *tid,
	    struct qsb_term *, struct qsb_err *);
void	 qsb_term_close(struct qsb_term *);
/* The output kept (the last outputByteLimit bytes, cut at a character
 * boundary) and whether older output was dropped. */
int	 qsb_term_output(const struct qsb_term *, char **buf, size_t *len,
	    bool *truncated, struct qsb_err *);
/* The exit status if it has ended (x->done false if not). */
int	 qsb_term_status(const struct qsb_term *, struct qsb_term_exit *,
	    struct qsb_err *);
/* Waits for the end (timeout_ms < 0: for ever); 1 on timeout.  Blocks on
 * the supervisor's pidfd: no polling. */
int	 qsb_term_wait(const struct qsb_term *, int64_t timeout_ms,
	    struct qsb_term_exit *, struct qsb_err *);
/* The supervisor's pidfd while it runs, or -1 (for an event loop). */
int	 qsb_term_pidfd(const struct qsb_term *);
/* Ends the command (SIGTERM to its tree, SIGKILL after a grace) and waits
 * for its exit status; the output stays readable. */
int	 qsb_term_kill(const struct qsb_term *, struct qsb_err *);
/* Kills if need be, then forgets the terminal. */
int	 qsb_term_release(const struct qsb_root *, struct qsb_term *,
	    struct qsb_err *);
/* Every terminal of a session; *n gets how many. */
int	 qsb_term_release_session(const struct qsb_root *, const char *sid,
	    int *n, struct qsb_err *);
/* [{terminalId, sessionId, command, args, cwd, outputByteLimit,
 *   createdAt, running, exitStatus}], all or one session's. */
int	 qsb_term_list(const struct qsb_root *, const char *sid,
	    struct qsb_jw *, struct qsb_err *);
/* ACP's TerminalOutputResponse: {output, truncated, exitStatus}. */
int	 qsb_term_output_write(struct qsb_jw *, const struct qsb_term *,
	    struct qsb_err *);
/* {exitCode, signal} as ACP has it; null for a running terminal. */
void	 qsb_term_exit_write(struct qsb_jw *, const struct qsb_term_exit *);

#endif
