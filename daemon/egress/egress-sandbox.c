/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <sys/prctl.h>

#include "egress-sandbox.h"
#include "util.h"

int egress_drop_capabilities(void) {
        cap_t caps;
        int r = 0;

        /* The bounding set can only shrink with CAP_SETPCAP; an unprivileged
         * (DynamicUser) proxy has none to drop, and that is fine. */
        if (prctl(PR_CAPBSET_READ, CAP_SETPCAP) == 1) {
                for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++)
                        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
                                return -errno;
        }
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        caps = cap_init();   /* all clear */
        if (!caps)
                return -errno;
        /* The unit's system-call filter refuses capset() (~@privileged):
         * only a proxy started with capabilities (by hand, as root) needs it. */
        cap_t current = cap_get_proc();
        if (!current)
                r = -errno;
        else if (cap_compare(current, caps) != 0 && cap_set_proc(caps) < 0)
                r = -errno;
        cap_free(current);
        cap_free(caps);
        if (r < 0)
                return r;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

static const char *const ALLOWED_SYSCALLS[] = {
        /* memory, threads of libc, time */
        "brk", "mmap", "munmap", "mremap", "madvise", "mprotect", "futex",
        "clock_gettime", "clock_getres", "gettimeofday", "getrandom", "getpid", "gettid",
        "rt_sigreturn", "rt_sigprocmask", "rt_sigaction", "sigaltstack",
        "exit", "exit_group", "restart_syscall", "sched_yield", "prlimit64",
        /* sd-event */
        "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2",
        "timerfd_create", "timerfd_settime", "timerfd_gettime", "signalfd4", "eventfd2", "ppoll", "poll",
        /* sockets and the data path */
        "accept4", "accept", "connect", "getsockopt", "setsockopt", "getsockname", "getpeername",
        "shutdown", "read", "readv", "write", "writev", "recvfrom", "recvmsg", "recvmmsg", "sendto",
        "sendmsg", "sendmmsg", "splice", "pipe2", "close", "fcntl", "dup", "dup3",
        /* c-ares rereads /etc/hosts per query; the journal may pass a memfd */
        "openat", "open", "newfstatat", "fstat", "stat", "statx", "lseek", "uname",
        "memfd_create", "fstatfs", "getuid", "geteuid", "getgid", "getegid",
};

static int allow_by_name(scmp_filter_ctx ctx, const char *const *names, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int nr = seccomp_syscall_resolve_name(names[i]);
                if (nr == __NR_SCMP_ERROR || nr < 0)
                        continue;   /* not on this architecture (e.g. "open" on arm64) */
                int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

int egress_install_seccomp(void) {
        scmp_filter_ctx ctx;
        int r;

        if (getenv(EGRESS_NO_SECCOMP_ENV)) {
                log_warning("%s is set: running WITHOUT the seccomp filter", EGRESS_NO_SECCOMP_ENV);
                return 0;
        }
        ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
        if (!ctx)
                return -ENOMEM;
        /* Every thread: the proxy's other event loops (egress-loops.h) run already. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
        if (r < 0)
                goto finish;
        r = allow_by_name(ctx, ALLOWED_SYSCALLS, ELEMENTSOF(ALLOWED_SYSCALLS));
        if (r < 0)
                goto finish;
        /* New sockets only for the upstream (IPv4, IPv6) and the journal (AF_UNIX). */
        static const int families[] = { AF_INET, AF_INET6, AF_UNIX };
        for (size_t i = 0; i < ELEMENTSOF(families); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) families[i]));
                if (r < 0)
                        goto finish;
        }
        /* ioctl: non-blocking mode, pending bytes, and libc's isatty(). */
        static const unsigned long requests[] = { FIONBIO, FIONREAD, TCGETS };
        for (size_t i = 0; i < ELEMENTSOF(requests); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t) requests[i]));
                if (r < 0)
                        goto finish;
        }
        r = seccomp_load(ctx);
finish:
        seccomp_release(ctx);
        return r;
}
