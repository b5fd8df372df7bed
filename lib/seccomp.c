#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/audit.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "seccomp.h"

#if defined(__x86_64__)
#define QSB_AUDIT_ARCH	AUDIT_ARCH_X86_64
#define QSB_X32_BIT	0x40000000u
#elif defined(__aarch64__)
#define QSB_AUDIT_ARCH	AUDIT_ARCH_AARCH64
#else
#error "qsb's seccomp filter knows x86_64 and aarch64 only"
#endif

#ifndef TIOCLINUX
#define TIOCLINUX	0x541C
#endif

#define NS_FLAGS	(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | \
			 CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
			 CLONE_NEWCGROUP | 0x00000080 /* CLONE_NEWTIME */)

#define ARG_LO(i)	(offsetof(struct seccomp_data, args) + 8 * (i))

struct deny {
	int		 nr;
	const char	*name;
};

#define D(s)	{ SYS_##s, #s }
static const struct deny denied[] = {
	D(ptrace), D(process_vm_readv), D(process_vm_writev),
	D(mount), D(umount2), D(pivot_root), D(chroot), D(setns),
#ifdef SYS_move_mount
	D(move_mount), D(open_tree), D(fsopen), D(fsconfig), D(fsmount),
	D(fspick),
#endif
#ifdef SYS_mount_setattr
	D(mount_setattr),
#endif
	D(keyctl), D(add_key), D(request_key), D(bpf), D(perf_event_open),
#ifdef SYS_io_uring_setup
	D(io_uring_setup), D(io_uring_enter), D(io_uring_register),
#endif
	D(kexec_load),
#ifdef SYS_kexec_file_load
	D(kexec_file_load),
#endif
	D(init_module), D(finit_module), D(delete_module),
	D(userfaultfd), D(acct), D(swapon), D(swapoff), D(reboot),
	D(syslog), D(quotactl), D(open_by_handle_at), D(name_to_handle_at),
	D(vhangup), D(settimeofday), D(clock_settime), D(clock_adjtime),
	D(adjtimex),
#ifdef SYS_pidfd_getfd
	D(pidfd_getfd),
#endif
#ifdef SYS_iopl
	D(iopl), D(ioperm),
#endif
#ifdef SYS_uselib
	D(uselib),
#endif
#ifdef SYS_lookup_dcookie
	D(lookup_dcookie),
#endif
	D(fanotify_init),
};
#undef D

const char *const qsb_seccomp_denied[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
	"pivot_root", "chroot", "setns", "move_mount", "open_tree", "fsopen",
	"fsconfig", "fsmount", "fspick", "mount_setattr", "keyctl", "add_key",
	"request_key", "bpf", "perf_event_open", "io_uring_setup",
	"io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "userfaultfd", "acct",
	"swapon", "swapoff", "reboot", "syslog", "quotactl",
	"open_by_handle_at", "name_to_handle_at", "vhangup", "settimeofday",
	"clock_settime", "clock_adjtime", "adjtimex", "pidfd_getfd", "iopl",
	"ioperm", "fanotify_init",
	"clone/unshare with namespace flags", "clone3 (ENOSYS)",
	"ioctl TIOCSTI", "ioctl TIOCLINUX",
	NULL
};

struct prog {
	struct sock_filter	*v;
	size_t			 n, cap;
	int			 nomem;
};

static void
emit(struct prog *p, struct sock_filter f)
{
	struct sock_filter *nv;

	if (p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 128;
		if ((nv = reallocarray(p->v, ncap, sizeof(*nv))) == NULL) {
			p->nomem = 1;
			return;
		}
		p->v = nv;
		p->cap = ncap;
	}
	p->v[p->n++] = f;
}

#define STMT(c, k)		((struct sock_filter)BPF_STMT((c), (k)))
#define JUMP(c, k, t, f)	((struct sock_filter)BPF_JUMP((c), (k), (t), (f)))
#define RET_ERRNO(e)		STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define RET_ALLOW		STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define LOAD_NR			STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))

/* if nr == sys: run body (which must end in a return), else skip it */
static void
guard(struct prog *p, int sys, size_t bodylen)
{
	emit(p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)sys, 0,
	    (unsigned char)bodylen));
}

int
qsb_seccomp_build(struct qsb_seccomp *out, bool deny_inet)
{
	struct prog p = { NULL, 0, 0, 0 };
	size_t i;

	emit(&p, STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, arch)));
	emit(&p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, QSB_AUDIT_ARCH, 1, 0));
	emit(&p, STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	emit(&p, LOAD_NR);
#ifdef QSB_X32_BIT
	emit(&p, JUMP(BPF_JMP | BPF_JGE | BPF_K, QSB_X32_BIT, 0, 1));
	emit(&p, STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
	for (i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		guard(&p, denied[i].nr, 1);
		emit(&p, RET_ERRNO(EPERM));
	}
	/* clone3 passes its flags in memory the filter cannot read */
	guard(&p, SYS_clone3, 1);
	emit(&p, RET_ERRNO(ENOSYS));
	/* clone(flags, ...) and unshare(flags): no new namespaces */
	guard(&p, SYS_clone, 4);
	emit(&p, STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
	emit(&p, JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1));
	emit(&p, RET_ERRNO(EPERM));
	emit(&p, RET_ALLOW);
	guard(&p, SYS_unshare, 4);
	emit(&p, STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
	emit(&p, JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1));
	emit(&p, RET_ERRNO(EPERM));
	emit(&p, RET_ALLOW);
	/* ioctl(fd, cmd): cmd is an unsigned int, so its low word is all
	 * the kernel looks at */
	guard(&p, SYS_ioctl, 5);
	emit(&p, STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)));
	emit(&p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 2, 0));
	emit(&p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 1, 0));
	emit(&p, RET_ALLOW);
	emit(&p, RET_ERRNO(EPERM));
	if (deny_inet) {
		guard(&p, SYS_socket, 5);
		emit(&p, STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
		emit(&p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0));
		emit(&p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0));
		emit(&p, RET_ALLOW);
		emit(&p, RET_ERRNO(EACCES));
	}
	emit(&p, RET_ALLOW);
	if (p.nomem) {
		free(p.v);
		return errno = ENOMEM, -1;
	}
	out->insns = p.v;
	out->n = p.n;
	return 0;
}

int
qsb_seccomp_install(const struct qsb_seccomp *f)
{
	struct sock_fprog prog;

	prog.len = (unsigned short)f->n;
	prog.filter = f->insns;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

void
qsb_seccomp_free(struct qsb_seccomp *f)
{
	free(f->insns);
	f->insns = NULL;
	f->n = 0;
}

bool
qsb_seccomp_available(void)
{
	unsigned action = SECCOMP_RET_ERRNO;

	return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 &&
	    syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}
