/* hooks_syscall.c: glibc's syscall(), for the raw calls the shim cares about: write and pwrite64
 * (flags PCSHIM_VIA_SYSCALL), io_submit (rec_iocbs, hooks_aio.c), io_uring_setup (counted,
 * lifecycle.c's uring_used), close_range (around the shim's files, hooks_files.c) and the fork-like
 * clone/clone3; everything else passes through. The
 * shim's own system calls use sc() (util.c), which bypasses this hook. */
#include "shim.h"

/* ---------- syscall(): the raw calls the shim cares about ---------- */
EXPORT long syscall(long n, ...)
{
    RESOLVE(syscall);
    va_list ap;
    va_start(ap, n);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e5 = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    switch (n) {
    case SYS_io_submit: {
        int rec = enter();
        long r = real_syscall(n, a, b, c, d, e5, f);
        if (rec) {
            int e = errno;
            if (r > 0)
                rec_iocbs((struct iocb **)c, r);
            errno = e;
            leave();
        }
        return r;
    }
    case SYS_io_uring_setup: {
        long r = real_syscall(n, a, b, c, d, e5, f);
        if (r >= 0)
            uring_used();
        return r;
    }
    case SYS_write:
    case SYS_pwrite64: {
        struct pc_once pc = {0, 0, 0};
        LIVE_BEFORE((int)a, &pc);
        long r = real_syscall(n, a, b, c, d, e5, f);
        RECORD_IF(r > 0 && g_record, rec_write_pc((int)a, n == SYS_pwrite64 ? d : -1, r, PCSHIM_VIA_SYSCALL, &pc));
        return r;
    }
    case SYS_close_range:
        return close_fds((unsigned)a, (unsigned)b, (unsigned)c);
    case SYS_clone:
    case SYS_clone3: {
        /* A new process (no CLONE_VM) returning here in the child: start its logs. A child on
         * a new stack cannot return through C code, so only the fork-like form matters. */
        unsigned long fl = n == SYS_clone ? (unsigned long)a : a ? *(const unsigned long *)a : 0;
        long r = real_syscall(n, a, b, c, d, e5, f);
        if (g_active && !(fl & CLONE_VM)) {
            if (r == 0)
                atfork_child();
            else
                rec_fork((pid_t)r);
        }
        return r;
    }
    default:
        return real_syscall(n, a, b, c, d, e5, f);
    }
}
