#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "landlock.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset	444
#define SYS_landlock_add_rule		445
#define SYS_landlock_restrict_self	446
#endif

#define RULESET_VERSION		(1U << 0)
#define RULE_PATH_BENEATH	1

struct ruleset_attr {
	uint64_t	handled_access_fs;
	uint64_t	handled_access_net;	/* ABI 4 */
	uint64_t	scoped;			/* ABI 6 */
};

struct path_beneath {
	uint64_t	allowed_access;
	int32_t		parent_fd;
} __attribute__((packed));

int
qsb_ll_abi(const char **why)
{
	long v;

	v = syscall(SYS_landlock_create_ruleset, NULL, 0, RULESET_VERSION);
	if (v > 0)
		return (int)v;
	if (why != NULL)
		*why = errno == EOPNOTSUPP ? "Landlock is disabled at boot "
		    "(not in the lsm= list)" : errno == ENOSYS ?
		    "the kernel has no Landlock" : "Landlock is unavailable";
	return 0;
}

static uint64_t
fs_rights(int abi)
{
	uint64_t r = QSB_LL_READ | QSB_LL_WRITE;

	if (abi < 2)
		r &= ~QSB_LL_REFER;
	if (abi < 3)
		r &= ~QSB_LL_TRUNCATE;
	return r;
}

int
qsb_ll_new(struct qsb_ll *ll, bool restrict_tcp, struct qsb_err *e)
{
	struct ruleset_attr attr;
	size_t size;
	const char *why = NULL;

	memset(ll, 0, sizeof(*ll));
	ll->fd = -1;
	if ((ll->abi = qsb_ll_abi(&why)) == 0)
		return qsb_err_set(e, QSB_E_SANDBOX_UNAVAILABLE, "%s", why);
	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = ll->handled = fs_rights(ll->abi);
	size = sizeof(attr.handled_access_fs);
	if (ll->abi >= 4) {
		size = offsetof(struct ruleset_attr, scoped);
		if (restrict_tcp)
			attr.handled_access_net = QSB_LL_NET_BIND_TCP |
			    QSB_LL_NET_CONNECT_TCP;
	}
	if (ll->abi >= 6) {
		size = sizeof(attr);
		attr.scoped = QSB_LL_SCOPE_ABSTRACT | QSB_LL_SCOPE_SIGNAL;
	}
	ll->fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ll->fd < 0)
		return qsb_err_sys(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "cannot create a Landlock ruleset");
	return 0;
}

int
qsb_ll_allow_fd(struct qsb_ll *ll, int fd, uint64_t access, struct qsb_err *e)
{
	struct path_beneath pb;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return qsb_err_sys(e, QSB_E_SANDBOX_UNAVAILABLE, "landlock");
	access &= ll->handled;
	if (!S_ISDIR(st.st_mode))
		access &= QSB_LL_FILE;
	if (access == 0)
		return 0;
	pb.allowed_access = access;
	pb.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, ll->fd, RULE_PATH_BENEATH, &pb,
	    0) < 0)
		return qsb_err_sys(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "cannot add a Landlock rule");
	return 0;
}

int
qsb_ll_allow(struct qsb_ll *ll, const char *path, uint64_t access,
    struct qsb_err *e)
{
	int fd, rc;

	if ((fd = open(path, O_PATH | O_CLOEXEC)) < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
			return 0;
		return qsb_err_sys(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "landlock: '%s'", path);
	}
	rc = qsb_ll_allow_fd(ll, fd, access, e);
	close(fd);
	return rc;
}

int
qsb_ll_enforce(struct qsb_ll *ll, struct qsb_err *e)
{
	if (syscall(SYS_landlock_restrict_self, ll->fd, 0) < 0)
		return qsb_err_sys(e, QSB_E_SANDBOX_UNAVAILABLE,
		    "cannot enforce the Landlock ruleset");
	return 0;
}

void
qsb_ll_close(struct qsb_ll *ll)
{
	if (ll->fd >= 0)
		close(ll->fd);
	ll->fd = -1;
}
