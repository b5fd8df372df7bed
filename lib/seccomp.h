/*
 * The seccomp filter every sandboxed command runs under (native and bwrap
 * backends).  It refuses with EPERM: ptrace and cross-process memory
 * access, every mount API, pivot_root, chroot, setns, new namespaces of any
 * kind through clone/unshare (clone3 fails with ENOSYS so that libc falls
 * back to clone, whose flags can be inspected), keyrings, bpf,
 * perf_event_open, io_uring, kexec, module loading, userfaultfd, handles
 * (open_by_handle_at), clock and reboot calls, TIOCSTI and TIOCLINUX
 * ioctls, and, when network is off, AF_INET/AF_INET6 sockets.  A syscall
 * of another architecture (x32, i386) kills the process.
 */
#ifndef QSB_SECCOMP_H
#define QSB_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/filter.h>

struct qsb_seccomp {
	struct sock_filter	*insns;
	size_t			 n;
};

/* Builds the filter; deny_inet refuses AF_INET and AF_INET6 sockets. */
int	 qsb_seccomp_build(struct qsb_seccomp *, bool deny_inet);
/* Installs it on the calling thread (needs no_new_privs). */
int	 qsb_seccomp_install(const struct qsb_seccomp *);
void	 qsb_seccomp_free(struct qsb_seccomp *);
/* Whether this kernel filters syscalls with seccomp. */
bool	 qsb_seccomp_available(void);
/* The names of the refused syscalls, for qsb-status. */
extern const char *const qsb_seccomp_denied[];

#endif
