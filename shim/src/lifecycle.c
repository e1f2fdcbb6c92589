/* lifecycle.c: the process image's life: the real-function pointers (declared in shim.h) and their
 * resolution, the constructor (settings from the environment, identity, log files, the inherited
 * fds, libunwind, signal handlers, the fork handler, the first module table), the exit path
 * (streams, safety net, exit record, flush, final checks and warnings, the E line),
 * SIGTERM/SIGINT/SIGHUP/SIGABRT, and the fresh logs of a forked child. The
 * hooks that lead here (exit, _exit, _Exit, _Fork, clone, syscall(SYS_clone)) are in
 * hooks_process.c and hooks_syscall.c. */
#include "shim.h"

/* ---------- real functions ---------- */
#define DEF_REAL(ret, name, ...) ret (*real_##name)(__VA_ARGS__);
PCSHIM_REALS(DEF_REAL)

/* ---------- state ---------- */
int g_active;
int g_record;
static int g_exit_recorded;
atomic_int g_finished;
char g_dir[PATH_MAX];
pthread_key_t g_key;
char g_exe[PATH_MAX];
static atomic_int g_uring_warned;
/* exec/spawn: the environment entries every descendant needs ("NAME=value") */
char g_self[PATH_MAX];
char g_env_dir[PATH_MAX + 16], g_env_method[32], g_env_frames[32];

/* ---------- init / exit ---------- */
/* exit(): every stream's bytes (glibc writes them out after the atexit handlers), the safety
 * net, the exit record, a flush. Runs even when the guard is held (exit from a signal handler
 * that interrupted the shim): every lock on this path is only tried. */
void on_exit_flush(int status, int record)
{
    if (!g_active || atomic_load(&g_finished))
        return;
    int was = t_guard;
    t_guard = 1;
    pending_end();
    if (record) {
        stdio_all();
        net_all(1);
        g_exit_recorded = 1;
        add_record(&(struct pcshim_record){.op = PCSHIM_OP_EXIT, .fd = -1, .offset = (uint64_t)(uint32_t)status}, 0);
    }
    flush_all(0);
    t_guard = was;
}

/* Once per process image: this process set up an io_uring (the converter counts these lines). */
void uring_used(void)
{
    if (!g_active || atomic_exchange(&g_uring_warned, 1))
        return;
    int was = t_guard;
    t_guard = 1;
    shim_warn("io_uring: this process set up an io_uring; the I/O it submits through the ring is not recorded");
    t_guard = was;
}

/* io_uring rings still open at exit, set up by a path no hook saw (inline system calls). Raw
 * system calls and fixed buffers: this may run in a signal handler. */
static void final_checks(void)
{
    int dfd = (int)sc(SYS_openat, AT_FDCWD, (long)"/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dfd < 0)
        return;
    char buf[4096];
    long got;
    int rings = 0;
    while ((got = sc(SYS_getdents64, dfd, (long)buf, sizeof buf, 0)) > 0) {
        for (long at = 0; at < got;) {
            struct dirent64 *de = (struct dirent64 *)(buf + at);
            at += de->d_reclen;
            char link[300], target[128];
            size_t k = put_str(link, 0, sizeof link - 1, "/proc/self/fd/");
            k = put_str(link, k, sizeof link - 1, de->d_name);
            link[k] = 0;
            long n = sc(SYS_readlinkat, AT_FDCWD, (long)link, (long)target, sizeof target - 1);
            if (n > 0) {
                target[n] = 0;
                if (strstr(target, "io_uring"))
                    rings++;
            }
        }
    }
    sc(SYS_close, dfd, 0, 0, 0);
    if (rings)
        uring_used();
}

void end_line(void)
{
    char line[64];
    size_t at = put_str(line, 0, sizeof line, "E ");
    at = put_dec(line, at, sizeof line, atomic_load(&g_records));
    line[at++] = '\n';
    txt_line(line, at);
}

/* The end of the process image: the streams' bytes (when glibc will still write them out:
 * `streams`), the safety net, the exit record if none yet, the warnings of what stays unseen, a
 * last flush that keeps every buffer locked (a thread still running records nothing after the E
 * line), the E line. Runs once; even from a signal handler that interrupted the shim. */
void finish(int status, int record, int streams)
{
    if (!g_active || atomic_load(&g_finished))
        return;
    int was = t_guard;
    t_guard = 1;
    pending_end();
    if (streams)
        stdio_all();
    net_all(streams);
    if (!g_exit_recorded) {
        /* flags = 1: return from main (exit inside libc is not interposable), status unknown */
        add_record(&(struct pcshim_record){.op = PCSHIM_OP_EXIT, .fd = -1,
                                           .offset = record ? (uint64_t)(uint32_t)status : 0,
                                           .flags = record ? 0 : 1},
                   0);
        g_exit_recorded = 1;
    }
    mmap_final_warnings();
    final_checks();
    atomic_store(&g_finished, 1);
    flush_all(1);
    end_line();
    live_finish();
    t_guard = was;
}

static struct sigaction g_old_term, g_old_int, g_old_hup, g_old_abrt;

/* A fatal signal whose disposition was the default: what is recorded reaches the log and the E
 * line is written, then the signal is raised again with the default disposition (the status is
 * unchanged). abort() does not write stdio buffers out: they are not counted. */
static void on_signal(int sig)
{
    int saved = errno;
    if (g_active && !atomic_load(&g_finished)) {
        int was = t_guard;
        t_guard = 1;
        pending_end(); /* assert's message, written just before its abort */
        net_all(0);
        shim_warn(sig == SIGTERM ? "terminated by SIGTERM" : sig == SIGABRT ? "aborted (SIGABRT)" : "terminated by a signal");
        mmap_final_warnings();
        atomic_store(&g_finished, 1);
        flush_all(1);
        end_line();
        live_finish();
        t_guard = was;
    }
    signal(sig, SIG_DFL);
    errno = saved;
    raise(sig);
}

static void install_signal(int sig, struct sigaction *old)
{
    if (sigaction(sig, NULL, old) != 0 || old->sa_handler != SIG_DFL)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, NULL);
}

/* A thread that recorded ends: its buffer is flushed (logs.c), its walk caches unmapped
 * (stackwalk.c). */
static void thread_end(void *p)
{
    thread_gone(p);
    walk_caches_free();
}

void atfork_child(void)
{
    if (!g_active)
        return;
    /* The parent's unflushed records were copied into this thread's buffer: they are not ours. */
    for (int i = 0; i < MAX_THREADS; i++)
        atomic_store(&g_threads[i], NULL);
    if (t_buf) {
        t_buf->used = 0;
        atomic_store(&t_buf->lock, 0);
        t_buf->tid = (uint32_t)sc(SYS_gettid, 0, 0, 0, 0);
        atomic_store(&g_threads[0], t_buf);
    }
    atomic_store(&g_finished, 0);
    g_exit_recorded = 0;
    desc_after_fork_child();
    desc_share_all(0); /* the parent shares every description */
    atomic_store(&g_uring_warned, 0);
    live_after_fork();
    if (g_record) {
        log_close(&g_bin, LOG_BIN);
        log_close(&g_txt, LOG_TXT);
        open_logs();
    } else {
        g_pid = (uint32_t)getpid();
    }
}

static void resolve_all(void)
{
    RESOLVE(write); RESOLVE(pwrite); RESOLVE(pwrite64); RESOLVE(writev); RESOLVE(pwritev);
    RESOLVE(pwritev64); RESOLVE(pwritev2); RESOLVE(open); RESOLVE(open64); RESOLVE(openat);
    RESOLVE(openat64); RESOLVE(creat); RESOLVE(creat64); RESOLVE(close); RESOLVE(unlink);
    RESOLVE(unlinkat); RESOLVE(rename); RESOLVE(renameat); RESOLVE(renameat2); RESOLVE(truncate);
    RESOLVE(truncate64); RESOLVE(ftruncate); RESOLVE(ftruncate64); RESOLVE(fallocate);
    RESOLVE(fallocate64); RESOLVE(fsync); RESOLVE(fdatasync); RESOLVE(sync_file_range); RESOLVE(dup);
    RESOLVE(dup2); RESOLVE(dup3); RESOLVE(fcntl); RESOLVE(fcntl64); RESOLVE(fork); RESOLVE(execve);
    RESOLVE(execv); RESOLVE(execvp); RESOLVE(execvpe); RESOLVE(exit); RESOLVE(_exit); RESOLVE(_Exit);
    RESOLVE(dlopen); RESOLVE(dlclose); RESOLVE(fwrite); RESOLVE(fputs); RESOLVE(fputc); RESOLVE(putc);
    RESOLVE(vfprintf); RESOLVE(fclose); RESOLVE(fopen); RESOLVE(fopen64); RESOLVE(mmap); RESOLVE(mmap64);
    RESOLVE(munmap); RESOLVE(mremap); RESOLVE(msync); RESOLVE(syscall); RESOLVE(copy_file_range);
    RESOLVE(sendfile); RESOLVE(sendfile64); RESOLVE(splice); RESOLVE(posix_spawn); RESOLVE(posix_spawnp);
    RESOLVE(_Fork); RESOLVE(clone); RESOLVE(fexecve); RESOLVE(execveat);
}

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < lo + ph->p_memsz) {
            g_self_lo = lo;
            g_self_hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

__attribute__((constructor)) static void pcshim_init(void)
{
    int saved = errno;
    t_guard = 1;
    resolve_all();
    const char *dir = getenv("PCSHIM_DIR");
    const char *hints = getenv("PCSHIM_HINTS");
    g_record = dir && dir[0];
    g_pid = (uint32_t)getpid();
    /* live hints: a table that cannot be used leaves the program running without them (the
     * caller checked the table; the live log then lacks this process's L line) */
    if (hints && hints[0])
        live_load(hints);
    if (!g_record && !g_live) {
        t_guard = 0;
        errno = saved;
        return;
    }
    snprintf(g_dir, sizeof g_dir, "%s", g_record ? dir : "");
    const char *m = getenv("PCSHIM_METHOD");
    if (m && !strcmp(m, "fp"))
        g_method = M_FP;
    else if (m && !strcmp(m, "scan"))
        g_method = M_SCAN;
    else if (m && !strcmp(m, "unwind"))
        g_method = M_UNWIND;
    else
        g_method = M_AUTO;
    const char *f = getenv("PCSHIM_FRAMES");
    if (f) {
        int v = atoi(f);
        g_frames = v < 1 ? 1 : v > MAX_FRAMES ? MAX_FRAMES : v;
    }
    static const char *const method_names[] = {"fp", "scan", "unwind", "auto"};
    snprintf(g_env_dir, sizeof g_env_dir, "PCSHIM_DIR=%s", g_dir);
    snprintf(g_env_method, sizeof g_env_method, "PCSHIM_METHOD=%s", method_names[g_method]);
    snprintf(g_env_frames, sizeof g_env_frames, "PCSHIM_FRAMES=%d", g_frames);
    Dl_info self;
    if (dladdr((void *)&pcshim_init, &self) && self.dli_fname && self.dli_fname[0] == '/')
        snprintf(g_self, sizeof g_self, "%s", self.dli_fname);
    ssize_t n = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
    g_exe[n > 0 ? n : 0] = 0;
    dl_iterate_phdr(self_cb, (void *)(uintptr_t)&pcshim_init);
    pthread_key_create(&g_key, thread_end);
    if (g_record) {
        open_logs();
        jfr_init();
    }
    learn_inherited();
    if (g_method == M_UNWIND || g_method == M_AUTO) {
        /* libunwind opens its address-validation pipe during its set-up: at the shim's high fds */
        t_unwinding = 1;
        void *h = real_dlopen ? real_dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h) {
            *(void **)(&g_unw_backtrace) = dlsym(h, "unw_backtrace");
            /* libunwind's default global cache takes a lock per walk; a per-thread cache does not */
            int (*set_policy)(void *, int);
            *(void **)(&set_policy) = dlsym(h, "_ULx86_64_set_caching_policy");
            void **space = dlsym(h, "_ULx86_64_local_addr_space");
            if (set_policy && space)
                set_policy(*space, 2 /* UNW_CACHE_PER_THREAD */);
        }
        if (!g_unw_backtrace) {
            shim_warn("unwind: libunwind.so.8 not found; using the frame-pointer walk instead");
        } else {
            void *warm[4];
            g_unw_backtrace(warm, 4);
        }
        t_unwinding = 0;
    }
    install_signal(SIGTERM, &g_old_term);
    install_signal(SIGINT, &g_old_int);
    install_signal(SIGHUP, &g_old_hup);
    install_signal(SIGABRT, &g_old_abrt);
    pthread_atfork(NULL, NULL, atfork_child);
    segs();
    g_active = 1;
    t_guard = 0;
    errno = saved;
}

__attribute__((destructor)) static void pcshim_fini(void)
{
    int saved = errno;
    finish(0, 0, 1);
    errno = saved;
}
