/*
 * Enumerations of the JSON shapes (DESIGN.md section 3) and ROOT/config.json:
 *
 *   { "policy":  SandboxPolicy,
 *     "sandbox": partial SandboxConfig (defaults for new workspaces),
 *     "retention": partial RetentionPolicy (default for new workspaces),
 *     "protectedPaths": [glob...], "hiddenPaths": [path...],
 *     "sandboxUid": N, "sandboxGid": N, "dockerImage": "..." }
 *
 * Every key is optional; an unknown key or a wrong type is CONFIG_INVALID.
 */
#ifndef QSB_CONFIG_H
#define QSB_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "diag.h"

enum qsb_backend {
	QSB_BK_AUTO,
	QSB_BK_NATIVE,
	QSB_BK_BWRAP,
	QSB_BK_FIREJAIL,
	QSB_BK_DOCKER,
	QSB_BK_NONE,
};

enum qsb_mode {
	QSB_MODE_STRICT,
	QSB_MODE_COMPAT,
	QSB_MODE_PERMISSIVE,
};

enum qsb_retmode {
	QSB_RET_ALWAYS,
	QSB_RET_TIMEOUT,
	QSB_RET_MANUAL,
};

enum qsb_fallback {
	QSB_FB_STARTUP_ONLY,
	QSB_FB_SESSION,
	QSB_FB_MANUAL,
};

extern const char *const qsb_backend_names[];	/* auto native bwrap ... */
extern const char *const qsb_type_names[];	/* native bwrap ... (no auto) */
extern const char *const qsb_mode_names[];
extern const char *const qsb_retmode_names[];
extern const char *const qsb_fallback_names[];

int	 qsb_enum_lookup(const char *const *names, const char *s);

/* A SandboxConfig; for config.json defaults, the has_ flags mark what was
 * given. */
struct qsb_sbconfig {
	int		 type;		/* enum qsb_backend, never AUTO once
					 * stored in a workspace */
	bool		 enabled;
	bool		 has_type, has_enabled;
	uint64_t	 memory;
	bool		 has_memory;
	double		 cpus;
	bool		 has_cpus;
	uint64_t	 disk;
	bool		 has_disk;
	bool		 network;
	bool		 has_network;
	int		 mode;
	bool		 has_mode;
};

struct qsb_retention {
	int		 mode;
	bool		 has_mode;
	uint64_t	 max_age;	/* ms */
	bool		 has_max_age;
	long long	 max_workspaces;
	bool		 has_max_workspaces;
	uint64_t	 max_size;
	bool		 has_max_size;
	bool		 preserve_on_error;
	bool		 has_preserve_on_error;
};

struct qsb_policy {
	bool		 enabled;
	int		 mode;
	int		 backend;
	int		 fallback;
};

struct qsb_config {
	struct qsb_policy	 policy;
	struct qsb_sbconfig	 sandbox;
	struct qsb_retention	 retention;
	char			**protected_paths;	/* NULL-terminated */
	char			**hidden_paths;
	uid_t			 sandbox_uid;
	gid_t			 sandbox_gid;
	char			*docker_image;
	bool			 present;	/* config.json exists */
};

#define QSB_DEFAULT_MAX_AGE	(7ULL * 24 * 3600 * 1000)
#define QSB_NOBODY		65534

struct qsb_root;
struct qsb_json;

/* Built-in defaults merged with ROOT/config.json when present. */
int	 qsb_config_load(const struct qsb_root *, struct qsb_config *,
	    struct qsb_err *);
void	 qsb_config_free(struct qsb_config *);

/* Parsers shared with the Workspace record: obj is a JSON object. */
int	 qsb_sbconfig_parse(const struct qsb_json *, int obj,
	    struct qsb_sbconfig *, bool partial, const char *ctx,
	    struct qsb_err *);
int	 qsb_retention_parse(const struct qsb_json *, int obj,
	    struct qsb_retention *, bool partial, const char *ctx,
	    struct qsb_err *);
struct qsb_jw;
void	 qsb_retention_write(struct qsb_jw *, const struct qsb_retention *);
/* Checks a retention policy for internal consistency. */
int	 qsb_retention_check(const struct qsb_retention *, struct qsb_err *);

/* Built-in lists. */
extern const char *const qsb_default_protected[];
extern const char *const qsb_default_hidden[];

#endif
