/* hooks_process.c: the hooks that make, replace or end processes: fork, vfork, _Fork, clone
 * (streams and the safety net first, a fork record in the parent; the child's fresh logs are
 * lifecycle.c's atfork_child), the exec family (the static-program check, the safety net, exec
 * record, flush, and an environment that keeps the shim in the new image), posix_spawn(p) (the
 * same checks, a spawn record), system and popen (their child shares the inheritable
 * descriptions), exit, _exit, _Exit and quick_exit (exit record, flush). The raw
 * syscall(SYS_clone/clone3) form is in hooks_syscall.c; the constructor, destructor and signal
 * handlers in lifecycle.c. */
#include "shim.h"

/* ---------- fork ---------- */
/* In the parent: a fork record (offset = child pid). The child's logs are atfork_child's. */
void rec_fork(pid_t child)
{
    RECORD_IF(child > 0, add_record(&(struct pcshim_record){.op = PCSHIM_OP_FORK, .fd = -1, .offset = (uint64_t)child},
                                    1));
    if (child > 0 && g_active)
        desc_share_all(0); /* the child shares every description now */
}

/* Before a fork: every stream's bytes and the safety net, while this process alone holds them
 * (the child gets copies of the buffers, already accounted). */
static void before_fork(void) { RECORD_IF(1, stdio_all(), net_all(1)); }

EXPORT pid_t fork(void)
{
    RESOLVE(fork);
    before_fork();
    pid_t r = real_fork();
    rec_fork(r);
    return r;
}

/* ---------- exec ---------- */
/* The path id of a program: its absolute path when it is given with a '/', else the name as
 * given (looked up in PATH). */
static uint64_t program_path(int dirfd, const char *p)
{
    char abs[PATH_MAX];
    uint64_t h = 0;
    if (p && strchr(p, '/') && abs_path(dirfd, p, abs, sizeof abs) == 0)
        h = intern_path(abs);
    else if (p)
        h = intern_path(p);
    return h;
}

/* Before an exec: a statically linked program is warned about; the safety net runs (the stdio
 * buffers die with this image, so what they hold is not counted); the records are flushed. */
static void rec_exec(int dirfd, const char *p, int search)
{
    check_static(dirfd, p, search, NULL);
    net_all(0);
    add_record(&(struct pcshim_record){.op = PCSHIM_OP_EXEC, .fd = -1, .path = program_path(dirfd, p)}, 1);
    flush_all(0);
    end_line(); /* if exec fails, later records still reach the same files */
    live_finish();
}

static void before_exec_at(int dirfd, const char *p, int search) { RECORD_IF(1, rec_exec(dirfd, p, search)); }

static void before_exec(const char *p) { before_exec_at(AT_FDCWD, p, 0); }

static void before_execp(const char *p) { before_exec_at(AT_FDCWD, p, 1); }

/* The environment a new image gets: `envp` itself when it carries the shim's variables and the
 * shim in LD_PRELOAD, else a copy in `out` (room for MAX_ENV + 7 entries) with them put back
 * (`pre` holds a rebuilt LD_PRELOAD entry). Programs that clear their environment before exec
 * (or spawn with a minimal one) stay recorded this way. */
static char *const *fix_env(char *const *envp, char **out, char *pre, size_t pre_cap)
{
    if (!g_active || !g_self[0])
        return envp;
    const char *preload = NULL;
    int dir = 0, method = 0, frames = 0, hints = !g_live, n = 0;
    for (char *const *e = envp; e && *e; e++, n++) {
        if (!strncmp(*e, "LD_PRELOAD=", 11))
            preload = *e;
        else if (!strcmp(*e, g_env_dir))
            dir = 1;
        else if (!strcmp(*e, g_env_method))
            method = 1;
        else if (!strcmp(*e, g_env_frames))
            frames = 1;
        else if (g_live && !strcmp(*e, g_env_hints))
            hints = 1;
    }
    int has_self = preload && strstr(preload + 11, g_self);
    if ((dir && method && frames && hints && has_self) || n > MAX_ENV)
        return envp;
    int m = 0;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "PCSHIM_DIR=", 11) && strncmp(*e, "PCSHIM_METHOD=", 14) &&
            strncmp(*e, "PCSHIM_FRAMES=", 14) && strncmp(*e, "PCSHIM_HINTS=", 13))
            out[m++] = *e;
    out[m++] = g_env_dir;
    out[m++] = g_env_method;
    out[m++] = g_env_frames;
    if (g_live)
        out[m++] = g_env_hints;
    if (has_self) {
        out[m++] = (char *)preload;
    } else {
        size_t at = put_str(pre, 0, pre_cap - 1, "LD_PRELOAD=");
        at = put_str(pre, at, pre_cap - 1, g_self);
        if (preload && preload[11]) {
            at = put_str(pre, at, pre_cap - 1, ":");
            at = put_str(pre, at, pre_cap - 1, preload + 11);
        }
        pre[at] = 0;
        out[m++] = pre;
    }
    out[m] = NULL;
    return out;
}

#define ENV_BUFS                                                            \
    char *env_out[MAX_ENV + 7];                                             \
    char env_pre[2 * PATH_MAX]
#define FIXED(envp) ((char *const *)fix_env(envp, env_out, env_pre, sizeof env_pre))
/* A `java` launcher gets the options that start JFR (jvmargs.c): `argv` is replaced in place. */
#define JVM_ARGV(p, argv)                                                   \
    char *jvm_argv_[jfr_room(argv)];                                        \
    argv = jfr_argv(p, argv, jvm_argv_)

EXPORT int execve(const char *p, char *const argv[], char *const envp[])
{
    RESOLVE(execve);
    ENV_BUFS;
    JVM_ARGV(p, argv);
    before_exec(p);
    return real_execve(p, argv, FIXED(envp));
}

EXPORT int execv(const char *p, char *const argv[])
{
    RESOLVE(execve);
    ENV_BUFS;
    JVM_ARGV(p, argv);
    before_exec(p);
    return real_execve(p, argv, FIXED(environ));
}

EXPORT int execvp(const char *p, char *const argv[])
{
    RESOLVE(execvpe);
    ENV_BUFS;
    JVM_ARGV(p, argv);
    before_execp(p);
    return real_execvpe(p, argv, FIXED(environ));
}

EXPORT int execvpe(const char *p, char *const argv[], char *const envp[])
{
    RESOLVE(execvpe);
    ENV_BUFS;
    JVM_ARGV(p, argv);
    before_execp(p);
    return real_execvpe(p, argv, FIXED(envp));
}

/* execl, execle, execlp: glibc calls execve internally (no PLT), so they are hooked themselves. */
#define COLLECT_ARGS(arg0, ap, argv, with_env, envp_out)                    \
    int argc_ = 1;                                                          \
    va_start(ap, arg0);                                                     \
    while (va_arg(ap, char *))                                              \
        argc_++;                                                            \
    va_end(ap);                                                             \
    if (argc_ > MAX_ENV) {                                                  \
        errno = E2BIG;                                                      \
        return -1;                                                          \
    }                                                                       \
    char *argv[argc_ + 1];                                                  \
    argv[0] = (char *)(arg0);                                               \
    va_start(ap, arg0);                                                     \
    for (int i_ = 1; i_ <= argc_; i_++)                                     \
        argv[i_] = va_arg(ap, char *);                                      \
    if (with_env)                                                           \
        envp_out = va_arg(ap, char *const *);                               \
    va_end(ap)

EXPORT int execl(const char *p, const char *arg, ...)
{
    RESOLVE(execve);
    va_list ap;
    char *const *unused = NULL;
    COLLECT_ARGS(arg, ap, argv, 0, unused);
    (void)unused;
    ENV_BUFS;
    char *const *av = argv;
    JVM_ARGV(p, av);
    before_exec(p);
    return real_execve(p, av, FIXED(environ));
}

EXPORT int execle(const char *p, const char *arg, ...)
{
    RESOLVE(execve);
    va_list ap;
    char *const *envp = NULL;
    COLLECT_ARGS(arg, ap, argv, 1, envp);
    ENV_BUFS;
    char *const *av = argv;
    JVM_ARGV(p, av);
    before_exec(p);
    return real_execve(p, av, FIXED(envp));
}

EXPORT int execlp(const char *p, const char *arg, ...)
{
    RESOLVE(execvpe);
    va_list ap;
    char *const *unused = NULL;
    COLLECT_ARGS(arg, ap, argv, 0, unused);
    (void)unused;
    ENV_BUFS;
    char *const *av = argv;
    JVM_ARGV(p, av);
    before_execp(p);
    return real_execvpe(p, av, FIXED(environ));
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    RESOLVE(fexecve);
    ENV_BUFS;
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    before_exec(n > 0 ? target : NULL);
    return real_fexecve(fd, argv, FIXED(envp));
}

EXPORT int execveat(int dirfd, const char *p, char *const argv[], char *const envp[], int flags)
{
    RESOLVE(execveat);
    if (!real_execveat) {
        errno = ENOSYS;
        return -1;
    }
    ENV_BUFS;
    before_exec_at(dirfd, p, 0);
    return real_execveat(dirfd, p, argv, FIXED(envp), flags);
}

/* ---------- posix_spawn ---------- */
/* posix_spawn(p): glibc's clone+exec runs inside libc (no hook sees it); the child's new image
 * starts its own shim from the (fixed) environment. The parent records a spawn. */
/* Before: the static-program check and the safety net; after: the descriptions the child
 * inherits (not close-on-exec) are shared with it. */
static void before_spawn(const char *p, int search) { RECORD_IF(1, check_static(AT_FDCWD, p, search, NULL), net_all(1)); }

#define SPAWN_HOOK(name, search)                                            \
    EXPORT int name(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa, \
                    const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) \
    {                                                                       \
        RESOLVE(name);                                                      \
        ENV_BUFS;                                                           \
        JVM_ARGV(p, argv);                                                  \
        before_spawn(p, search);                                            \
        pid_t child = 0;                                                    \
        int r = real_##name(&child, p, fa, attr, argv, FIXED(envp));        \
        if (r == 0 && pid)                                                  \
            *pid = child;                                                   \
        RECORD_IF(r == 0, add_record(&(struct pcshim_record){.op = PCSHIM_OP_SPAWN, .fd = -1, \
                                                             .offset = (uint64_t)child,         \
                                                             .path = program_path(AT_FDCWD, p)}, \
                                     1));                                   \
        if (r == 0 && g_active) {                                           \
            int e_ = errno;                                                 \
            desc_share_all(1);                                              \
            errno = e_;                                                     \
        }                                                                   \
        return r;                                                           \
    }
SPAWN_HOOK(posix_spawn, 0)
SPAWN_HOOK(posix_spawnp, 1)

/* system() and popen() spawn their child inside libc (no hook sees it): the descriptions it
 * inherits are shared with it from then on. */
EXPORT int system(const char *cmd)
{
    RESOLVE(system);
    if (g_active && cmd)
        RECORD_IF(1, net_all(1), desc_share_all(1));
    return real_system(cmd);
}

EXPORT FILE *popen(const char *cmd, const char *mode)
{
    RESOLVE(popen);
    if (g_active)
        RECORD_IF(1, net_all(1), desc_share_all(1));
    return real_popen(cmd, mode);
}

/* ---------- vfork, _Fork, clone ---------- */
/* vfork: the child would share the parent's memory and so the shim's buffers and log files;
 * served as fork, which POSIX allows (a vfork child may only exec or _exit). */
EXPORT pid_t vfork(void) { return fork(); }

/* _Fork runs no atfork handlers: the child starts its logs here. */
EXPORT pid_t _Fork(void)
{
    RESOLVE(_Fork);
    before_fork();
    pid_t r = real__Fork();
    if (r == 0)
        atfork_child();
    else
        rec_fork(r);
    return r;
}

/* clone() without CLONE_VM makes a new process that runs no atfork handler. */
struct clone_tramp {
    int (*fn)(void *);
    void *arg;
};

static int clone_child(void *p)
{
    struct clone_tramp t = *(struct clone_tramp *)p; /* the child's copy of the parent's frame */
    atfork_child();
    int status = t.fn(t.arg);
    if (!t_guard)
        finish(status, 1, 0); /* glibc's clone ends the child with a bare exit system call */
    return status;
}

EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    RESOLVE(clone);
    va_list ap;
    va_start(ap, arg);
    void *ptid = va_arg(ap, void *), *tls = va_arg(ap, void *), *ctid = va_arg(ap, void *);
    va_end(ap);
    if (!g_active || (flags & CLONE_VM))
        return real_clone(fn, stack, flags, arg, ptid, tls, ctid);
    struct clone_tramp t = {fn, arg};
    before_fork();
    int r = real_clone(clone_child, stack, flags, &t, ptid, tls, ctid);
    rec_fork(r);
    return r;
}

/* ---------- exit ---------- */
/* exit runs the atexit handlers, then the destructor (finish), then glibc writes the streams
 * out. _exit and _Exit end at once, stdio buffers unwritten. Both run their exit path even from
 * a signal handler that interrupted the shim (the guard held): locks are only tried there. */
EXPORT void exit(int status)
{
    RESOLVE(exit);
    on_exit_flush(status, 1);
    real_exit(status);
    __builtin_unreachable();
}

EXPORT void _exit(int status)
{
    RESOLVE(_exit);
    finish(status, 1, 0);
    real__exit(status);
    __builtin_unreachable();
}

/* quick_exit runs the at_quick_exit handlers, then ends like _Exit (inside libc). */
EXPORT void quick_exit(int status)
{
    RESOLVE(quick_exit);
    finish(status, 1, 0);
    real_quick_exit(status);
    __builtin_unreachable();
}

EXPORT void _Exit(int status)
{
    RESOLVE(_Exit);
    finish(status, 1, 0);
    real__Exit(status);
    __builtin_unreachable();
}
