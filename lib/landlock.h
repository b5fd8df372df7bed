/*
 * Landlock rulesets.  The system headers may predate the running kernel, so
 * the rights of ABI 3 to 6 are defined here; a right the kernel does not
 * know is dropped from the ruleset (best effort within the ABI), and
 * qsb_ll_abi() tells the caller which ABI it got.
 */
#ifndef QSB_LANDLOCK_H
#define QSB_LANDLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"

#define QSB_LL_EXECUTE		(1ULL << 0)
#define QSB_LL_WRITE_FILE	(1ULL << 1)
#define QSB_LL_READ_FILE	(1ULL << 2)
#define QSB_LL_READ_DIR		(1ULL << 3)
#define QSB_LL_REMOVE_DIR	(1ULL << 4)
#define QSB_LL_REMOVE_FILE	(1ULL << 5)
#define QSB_LL_MAKE_CHAR	(1ULL << 6)
#define QSB_LL_MAKE_DIR		(1ULL << 7)
#define QSB_LL_MAKE_REG		(1ULL << 8)
#define QSB_LL_MAKE_SOCK	(1ULL << 9)
#define QSB_LL_MAKE_FIFO	(1ULL << 10)
#define QSB_LL_MAKE_BLOCK	(1ULL << 11)
#define QSB_LL_MAKE_SYM		(1ULL << 12)
#define QSB_LL_REFER		(1ULL << 13)	/* ABI 2 */
#define QSB_LL_TRUNCATE		(1ULL << 14)	/* ABI 3 */

#define QSB_LL_NET_BIND_TCP	(1ULL << 0)	/* ABI 4 */
#define QSB_LL_NET_CONNECT_TCP	(1ULL << 1)
#define QSB_LL_SCOPE_ABSTRACT	(1ULL << 0)	/* ABI 6 */
#define QSB_LL_SCOPE_SIGNAL	(1ULL << 1)

#define QSB_LL_READ	(QSB_LL_EXECUTE | QSB_LL_READ_FILE | QSB_LL_READ_DIR)
#define QSB_LL_WRITE	(QSB_LL_WRITE_FILE | QSB_LL_REMOVE_DIR | \
			 QSB_LL_REMOVE_FILE | QSB_LL_MAKE_CHAR | \
			 QSB_LL_MAKE_DIR | QSB_LL_MAKE_REG | \
			 QSB_LL_MAKE_SOCK | QSB_LL_MAKE_FIFO | \
			 QSB_LL_MAKE_BLOCK | QSB_LL_MAKE_SYM | QSB_LL_REFER | \
			 QSB_LL_TRUNCATE)
/* rights that apply to a file (not a directory) */
#define QSB_LL_FILE	(QSB_LL_EXECUTE | QSB_LL_WRITE_FILE | \
			 QSB_LL_READ_FILE | QSB_LL_TRUNCATE)

/* The kernel's Landlock ABI version, or 0 when Landlock is unavailable
 * (*why, if not NULL, says why). */
int	 qsb_ll_abi(const char **why);

struct qsb_ll {
	int		 fd;
	int		 abi;
	uint64_t	 handled;
};

/* A ruleset that handles every filesystem right of the ABI, TCP bind and
 * connect when restrict_tcp, and the signal and abstract-socket scopes. */
int	 qsb_ll_new(struct qsb_ll *, bool restrict_tcp, struct qsb_err *);
/* Allows access beneath path (ignored if path does not exist). */
int	 qsb_ll_allow(struct qsb_ll *, const char *path, uint64_t access,
	    struct qsb_err *);
int	 qsb_ll_allow_fd(struct qsb_ll *, int fd, uint64_t access,
	    struct qsb_err *);
/* Enforces the ruleset on the calling thread (needs no_new_privs). */
int	 qsb_ll_enforce(struct qsb_ll *, struct qsb_err *);
void	 qsb_ll_close(struct qsb_ll *);

#endif
