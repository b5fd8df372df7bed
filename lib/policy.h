/*
 * Permission policies (DESIGN.md section 6, qsb-policy(5)): the nine
 * permission types, the policy file, and the pure parts of a decision
 * (safe commands, shell metacharacters, package installs in a command
 * line).  State (requests, approvals) lives in perm.c.
 */
#ifndef QSB_POLICY_H
#define QSB_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"

enum qsb_ptype {
	QSB_P_FILE_READ,
	QSB_P_FILE_WRITE,
	QSB_P_FILE_DELETE,
	QSB_P_COMMAND_EXECUTE,
	QSB_P_NETWORK_ACCESS,
	QSB_P_NETWORK_DOWNLOAD,
	QSB_P_PKG_NPM,
	QSB_P_PKG_PYTHON,
	QSB_P_PKG_SYSTEM,
	QSB_P_NTYPES
};

extern const char *const qsb_ptype_names[];	/* NULL-terminated */
int	 qsb_ptype_lookup(const char *);

struct qsb_perm_policy {
	uint32_t	 auto_approve;		/* bit per enum qsb_ptype */
	uint32_t	 require_confirm;
	uint32_t	 deny_list;
	bool		 workspace_only;
	char		**safe_commands;	/* NULL-terminated */
};

/* Parses and validates a policy (every key required, no other key, every
 * type known; "file:*", "network:*", "package:install:*" and "*" name
 * groups of types).  CONFIG_INVALID names what is wrong. */
int	 qsb_policy_parse(const char *, size_t, struct qsb_perm_policy *,
	    struct qsb_err *);
void	 qsb_policy_free(struct qsb_perm_policy *);
struct qsb_jw;
void	 qsb_policy_write(struct qsb_jw *, const struct qsb_perm_policy *);
/* The built-in default, the same as policies/compat.json. */
extern const char qsb_policy_default[];

/* Whether s holds a character a shell would interpret. */
bool	 qsb_shell_meta(const char *);
/* Rule 3: a command line whose program (argv[0], by name or from a
 * standard system directory) and first words match a safeCommands entry,
 * with no shell metacharacters.  Fills matched (when not NULL) with the
 * entry that matched. */
bool	 qsb_safe_command(const struct qsb_perm_policy *, const char *cmdline,
	    const char **matched);

/* Package installs recognised in a command (argv): npm/pnpm/yarn
 * install|i|add, pip/pip3/uv pip install, apt/apt-get/dnf install, also
 * inside "sh -c '...'" and between && ; | separators.  Calls fn for each
 * package name with its type. */
void	 qsb_package_installs(char *const *argv,
	    void (*fn)(enum qsb_ptype, const char *pkg, void *), void *arg);

#endif
