/*
 * Running one command in the sandbox of a workspace.
 *
 * qsb_exec_plan() turns a request into a plan: it checks every override
 * against the workspace (nothing may widen it), picks the backend, builds
 * the environment, finds the protected and hidden paths.  qsb_exec_run()
 * launches the plan through its backend and supervises it: one poll loop
 * for output, the timeout, signals and the exit; the whole process tree is
 * killed on timeout or interruption (SIGTERM, then SIGKILL after
 * QSB_KILL_GRACE_MS).  A sandbox that cannot be set up up completely fails
 * the run; it never runs the command with less confinement than planned.
 */
#ifndef QSB_EXEC_H
#define QSB_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "diag.h"

#define QSB_KILL_GRACE_MS	2000
#define QSB_OUTPUT_LIMIT	(1024 * 1024)
#define QSB_OUTPUT_LIMIT_MAX	(1024ULL * 1024 * 1024)

/* pipe: stdout and stderr captured apart; inherit: qsb-exec's own;
 * merged: one pipe for both, as a terminal has (for on_output) */
enum qsb_stdio { QSB_STDIO_PIPE, QSB_STDIO_INHERIT, QSB_STDIO_MERGED };

struct qsb_root;
struct qsb_ws;
struct qsb_jw;

/* What the caller asks for; -1 in an int field: the workspace's value. */
struct qsb_exec_req {
	char		**argv;		/* NULL-terminated */
	char		**env;		/* NAME=VALUE, NULL-terminated, or NULL */
	char		**secrets;	/* names, NULL-terminated, or NULL */
	const char	 *cwd;
	uint64_t	  timeout_ms;	/* 0: none */
	uint64_t	  max_memory;	/* 0: the workspace's */
	size_t		  output_limit;
	int		  stdio;
	int		  mode;
	int		  backend;
	int		  network;
	int		  level;	/* --permission-level, -1: 3 */
	bool		  stdin_null;	/* the command's stdin is /dev/null */
};

struct qsb_plan {
	const struct qsb_ws	*ws;
	const struct qsb_config	*cfg;
	const char		*state_root;	/* ROOT */
	int			 backend;	/* concrete */
	int			 wanted;	/* asked for (may be auto) */
	bool			 picking;	/* wanted is set: a
						 * SANDBOX_UNAVAILABLE is
						 * the backend's */
	int			 mode;
	bool			 network;
	bool			 writable;	/* level 0: false */
	int			 level;
	bool			 clamped;
	uint64_t		 memory;	/* 0: none */
	bool			 memory_cgroup;	/* set by qsb_exec_run */
	double			 cpus;		/* 0: none */
	uint64_t		 fsize;		/* RLIMIT_FSIZE, 0: none */
	uint64_t		 timeout_ms;
	size_t			 output_limit;
	int			 stdio;
	bool			 stdin_null;
	char			*cwd;
	char			**argv;
	char			**envp;
	char			**secret_values;
	char			**protected;	/* relative to rootPath */
	char			**hidden;	/* absolute host paths */
	uid_t			 uid;		/* the sandbox user */
	gid_t			 gid;
	bool			 as_root;	/* invoked by root: drop to uid */
	bool			 degraded;
	bool			 landlock_only;	/* native without namespaces */
	char			 reason[512];
	/* called once with the exit status as soon as it is known, while
	 * the sandbox is still being torn down (the caller's bookkeeping
	 * overlaps with it) */
	void			(*on_status)(const struct qsb_plan *, int code,
				    void *);
	void			*on_status_arg;
	/* when set, what the command prints goes here as it comes instead
	 * of into the result (the result's stdout and stderr stay empty) */
	void			(*on_output)(const char *, size_t, void *);
	void			*on_output_arg;
};

struct qsb_exec_result {
	char		*out, *err;
	size_t		 outlen, errlen;
	bool		 out_truncated, err_truncated;
	int		 exit_code;
	int		 signal;	/* 0: none */
	bool		 timed_out;
	bool		 interrupted;	/* qsb-exec got SIGINT/TERM/HUP */
	int64_t		 duration_ms;
	const char	*limit_memory;	/* "cgroup-v1", "rlimit-as", NULL */
	const char	*limit_cpu;
	bool		 degraded;
	char		 reason[512];
};

/* Builds the plan; errors are qsb-exec's own (exit 125). */
int	 qsb_exec_plan(const struct qsb_root *, const struct qsb_config *,
	    const struct qsb_ws *, const struct qsb_exec_req *,
	    struct qsb_plan *, struct qsb_err *);
void	 qsb_plan_free(struct qsb_plan *);
/* Runs the plan.  0: the command ran (whatever its status) or could not be
 * executed (126/127 in the result); -1: the sandbox failed (err). */
int	 qsb_exec_run(struct qsb_plan *, struct qsb_exec_result *,
	    struct qsb_err *);
void	 qsb_exec_result_free(struct qsb_exec_result *);
/* The ExecuteResult object (without stdout and stderr for the log). */
void	 qsb_exec_result_write(struct qsb_jw *, const struct qsb_plan *,
	    const struct qsb_exec_result *, bool with_output);
/* Replaces every secret value in buf with [REDACTED] (and a secret's tail
 * at the very start when the front was cut); returns a new buffer. */
char	*qsb_redact(const char *buf, size_t len, char *const *secrets,
	    bool cut_front, size_t *outlen);
const char *qsb_signame(int sig);
/* The pid namespace (inode) of a process, 0 if unknown. */
ino_t	 qsb_pidns_of(pid_t);
/* Whether an unprivileged user namespace can be made here. */
bool	 qsb_userns_works(char *why, size_t whysz);
/* "cmd arg 'a b'": the command line as a shell would need it. */
char	*qsb_cmdline(char *const *argv);

/*
 * Backends.  launch() starts the sandbox and fills struct qsb_proc; the
 * common supervisor in exec.c does the rest.
 */
struct qsb_proc {
	pid_t	 pid;		/* our direct child */
	int	 pidfd;
	int	 outfd, errfd;	/* read ends, -1 with --stdio inherit */
	int	 reportfd;	/* records from inside, see exec.c */
	int	 syncfd;	/* write end: the child waits for one byte */
	pid_t	 init;		/* the sandbox's pid 1 on the host, 0 */
	ino_t	 pidns;		/* its pid namespace, 0: none */
	bool	 reaper;	/* we are the subreaper of the tree (none) */
	int	 (*status)(struct qsb_proc *, int wstatus, int *code,
		    int *sig);
	void	*priv;
};

struct qsb_backend_ops {
	const char	*name;
	/* 1: usable; 0: not (why says so); degraded: usable with less */
	int		(*probe)(const struct qsb_plan *, bool *degraded,
			    char *why, size_t whysz);
	/* may mark the plan degraded when it finds less than probed */
	int		(*launch)(struct qsb_plan *, struct qsb_proc *,
			    struct qsb_err *);
};

extern const struct qsb_backend_ops qsb_backend_native;
extern const struct qsb_backend_ops qsb_backend_bwrap;
extern const struct qsb_backend_ops qsb_backend_none;
const struct qsb_backend_ops *qsb_backend_get(int type);

/*
 * Records a sandbox writes on reportfd: one write(2) each, so they arrive
 * whole.  SETUP: the sandbox could not be built (the run fails closed);
 * EXEC: execve failed with errno; STATUS: how the command ended.
 */
enum { QSB_REP_SETUP = 1, QSB_REP_EXEC, QSB_REP_STATUS, QSB_REP_INIT };
struct qsb_report {
	int	type;
	int	a, b;		/* EXEC: errno; STATUS: exited?, value;
				 * INIT: host pid of the sandbox's init */
	char	msg[240];
};
/* Pipes for a launch (out, err: with --stdio pipe; rep: reports; sync:
 * the go byte), handing the parent's ends to pr, or closing them all. */
int	 qsb_launch_common(const struct qsb_plan *, struct qsb_proc *,
	    int *out, int *err, int *rep, int *sync, struct qsb_err *);
void	 qsb_launch_parent(struct qsb_proc *, pid_t, int *out, int *err,
	    int *rep, int *sync);
void	 qsb_launch_undo(int *out, int *err, int *rep, int *sync);
/* In the launched child: dies with qsb-exec (parent), keeps only its ends
 * of the pipes, waits for the go byte, sets up stdio; returns the report
 * descriptor (or exits 125). */
int	 qsb_launch_child(const struct qsb_plan *, pid_t parent, int *out,
	    int *err, int *rep, int *sync);
/* As root the command runs as the sandbox user, who cannot walk to the
 * qsb root (0700, ours): in a private mount namespace the qsb root is
 * covered by a tmpfs holding only the path to this workspace, bound there.
 * Used by the backends that run on the host's view (bwrap, none). */
int	 qsb_root_view(const struct qsb_plan *, char *msg, size_t msgsz);
/* Writes a record (async-signal-safe). */
void	 qsb_report(int fd, int type, int a, int b, const char *msg);
/* For backends: the command's part, run in the final child right before
 * execve.  BARE: new session, cwd, rlimits, the sandbox user when root,
 * every other descriptor closed; LANDLOCK adds: no capabilities,
 * no_new_privs, Landlock rules for the host's view, seccomp; NAMESPACED:
 * the same with Landlock rules for the assembled root.  Never returns. */
enum { QSB_CHILD_BARE, QSB_CHILD_LANDLOCK, QSB_CHILD_NAMESPACED };
__attribute__((noreturn))
void	 qsb_exec_child(const struct qsb_plan *, int reportfd, int how);
/* Default dispositions and an empty mask, for a child about to exec. */
void	 qsb_child_signals(void);
/* Prepares fds 0-2 of a launched child: the pipes, or what qsb-exec has
 * (stdin: /dev/null when stdin_null). */
int	 qsb_child_stdio(const struct qsb_plan *, int outw, int errw);

#endif
