/*
 * What this machine can do for sandboxing, probed each time (never assumed):
 * the backends (present, version, path, usable, why not) and the kernel's
 * facilities (user namespaces, Landlock, seccomp, cgroups).
 */
#ifndef QSB_STATUS_H
#define QSB_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "diag.h"

struct qsb_root;
struct qsb_jw;

struct qsb_backend_info {
	int	 type;			/* enum qsb_backend */
	bool	 present;
	bool	 usable;
	bool	 degraded;
	char	 path[256];
	char	 version[64];
	char	 why[512];
};

struct qsb_caps {
	struct qsb_backend_info	 b[QSB_BK_NONE + 1];	/* by enum qsb_backend */
	bool			 userns;
	char			 userns_why[256];
	long			 max_userns;		/* -1: unknown */
	int			 apparmor_restrict;	/* -1: no such sysctl */
	int			 landlock_abi;
	char			 landlock_why[128];
	bool			 seccomp;
};

/* versions: also run each present tool's --version (a fork each). */
void	 qsb_caps_probe(struct qsb_caps *, bool versions);
/* The backend qsb-exec would use for want (auto: the strongest usable;
 * another one unusable: the strongest usable if fallback allows, as
 * qsb-exec does), whether it is usable, degraded, and why. */
int	 qsb_caps_resolve(const struct qsb_caps *, int want, int fallback,
	    bool *usable, bool *degraded, char *why, size_t whysz);
void	 qsb_caps_write(struct qsb_jw *, const struct qsb_caps *,
	    const struct qsb_config *);

/* Compares a backend's availability with what was found last time
 * (ROOT/status.json) and logs sandbox:unavailable or sandbox:recovered
 * when it changed. */
void	 qsb_availability_note(const struct qsb_root *, const char *backend,
	    bool usable, const char *why);

#endif
