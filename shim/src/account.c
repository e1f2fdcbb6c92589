/* account.c: the open file descriptions of tracked regular files opened for writing (struct desc,
 * shim.h): their table, what was recorded through each (its logical end `acc`), and the safety
 * net: at close, dup2/dup3 over an fd, lseek, exec, fork and exit, a file position beyond `acc` on
 * an exclusive description is recorded as written (flags PCSHIM_VIA_RECOVERED, at the offsets the
 * bytes occupy, pc = that call's path). Also the fds a process image inherits, learnt at start
 * (their accounting starts at their file position; fds sharing one description are grouped).
 * The streams' share of `acc` is stdio_acct.c's. */
#include "shim.h"

#ifndef KCMP_FILE
#define KCMP_FILE 0
#endif

static struct desc g_descs[MAX_DESCS];
static atomic_int g_desc_hint;
static atomic_int g_desc_full;
static atomic_uint g_gen;
static TLS int t_tid;

static int my_tid(void)
{
    if (!t_tid)
        t_tid = (int)sc(SYS_gettid, 0, 0, 0, 0);
    return t_tid;
}

/* ---------- the table ---------- */
struct desc *desc_new(uint32_t flags, int64_t acc)
{
    int start = atomic_load_explicit(&g_desc_hint, memory_order_relaxed);
    for (int k = 0; k < MAX_DESCS; k++) {
        int i = (start + k) % MAX_DESCS;
        struct desc *d = &g_descs[i];
        int zero = 0;
        if (atomic_load_explicit(&d->refs, memory_order_relaxed) != 0 ||
            !atomic_compare_exchange_strong(&d->refs, &zero, 1))
            continue;
        atomic_store(&d->lock, 0);
        atomic_store(&d->flags, flags);
        atomic_store(&d->nslots, 0);
        atomic_store(&d->acc, acc);
        d->gen = 0;
        d->dev = d->ino = d->path = 0;
        memset(d->s, 0, sizeof d->s);
        atomic_store_explicit(&g_desc_hint, i + 1, memory_order_relaxed);
        return d;
    }
    if (!atomic_exchange(&g_desc_full, 1))
        shim_warn("accounting: more than 4096 files open for writing at once; stdio accounting and the safety net "
             "skip the others");
    return NULL;
}

void desc_release(struct desc *d)
{
    if (d)
        atomic_fetch_sub(&d->refs, 1);
}

/* The lock of a description: 1 if taken. A holder with our own tid is this thread, interrupted by
 * the signal handler now running here: never wait for it. `bounded`: give up after a while (exit
 * paths, where another thread may be stopped holding it). */
static int desc_acquire(struct desc *d, int bounded)
{
    int me = my_tid();
    for (long spin = 0;; spin++) {
        int cur = 0;
        if (atomic_compare_exchange_weak_explicit(&d->lock, &cur, me, memory_order_acquire, memory_order_relaxed))
            return 1;
        if (cur == me || (bounded && spin > 2000000))
            return 0;
        if (spin > 1000)
            sched_yield();
    }
}

void desc_lock(struct desc *d) { desc_acquire(d, 0); }
int desc_trylock(struct desc *d) { return desc_acquire(d, 1); }
void desc_unlock(struct desc *d) { atomic_store_explicit(&d->lock, 0, memory_order_release); }

/* The description's exact logical end: its file position plus what its streams hold (-1 if the
 * position cannot be read). */
int64_t desc_end(int fd, struct desc *d)
{
    int64_t pos = sc(SYS_lseek, fd, 0, SEEK_CUR, 0);
    if (pos < 0)
        return -1;
    return pos + (atomic_load_explicit(&d->nslots, memory_order_relaxed) ? desc_pending(d, 1) : 0);
}

static void rec_gap(int fd, const struct desc *d, int64_t from, int64_t to, struct pc_once *pc)
{
    push_record(PCSHIM_OP_WRITE, fd, (uint64_t)from, (uint64_t)(to - from), PCSHIM_VIA_RECOVERED, d->dev, d->ino,
                d->path, 0, pc);
}

/* A write of n bytes through fd's file position just ended at `cur`. On an exclusive description
 * without streams, bytes between the accounted end and this write's start were written unseen
 * (an inline system call, a libc-internal write): recorded now, before the write itself. */
void desc_moved(int fd, struct desc *d, int64_t cur, int64_t n, struct pc_once *pc)
{
    int streams = atomic_load_explicit(&d->nslots, memory_order_relaxed);
    int64_t end = cur + (streams ? desc_pending(d, 1) : 0);
    int64_t old = atomic_exchange(&d->acc, end);
    if (!streams && (atomic_load_explicit(&d->flags, memory_order_relaxed) & D_EXCL) && end - n > old)
        rec_gap(fd, d, old, end - n, pc);
}

/* ---------- the safety net ---------- */
/* An appending description opened here and never shared: the file's end beyond what was recorded
 * through it is reported, not recorded (another process appending to the same file moves the end
 * too, so those bytes cannot be placed as this process's). Once per description. */
static void net_append(int fd, struct desc *d, int pending)
{
    struct stat st;
    if (!desc_trylock(d))
        return;
    if (sc(SYS_fstat, fd, (long)&st, 0, 0) == 0) {
        int64_t end = st.st_size + (pending && atomic_load(&d->nslots) ? desc_pending(d, 1) : 0);
        int64_t acc = atomic_load(&d->acc);
        if (end > acc) {
            warn_unplaced((uint64_t)(end - acc), fd,
                          "the end of this appended file moved past what was recorded through it (unseen "
                          "appends of this process, or another writer's)");
            atomic_store(&d->acc, end);
        }
    }
    desc_unlock(d);
}

/* fd's description is being closed, replaced, repositioned or left behind: if it is exclusive,
 * every byte between its accounted end and its file position (plus, when `pending`, what its
 * streams still hold and will write) was written by this process without being recorded. */
void net_check(int fd, struct desc *d, int pending, struct pc_once *pc)
{
    if (!d)
        return;
    uint32_t fl = atomic_load(&d->flags);
    if ((fl & (D_APPEND | D_OWN)) == (D_APPEND | D_OWN)) {
        net_append(fd, d, pending);
        return;
    }
    if (!(fl & D_EXCL) || !desc_trylock(d))
        return;
    int64_t pos = sc(SYS_lseek, fd, 0, SEEK_CUR, 0);
    if (pos >= 0) {
        int64_t end = pos + (pending && atomic_load(&d->nslots) ? desc_pending(d, 1) : 0);
        int64_t acc = atomic_load(&d->acc);
        if (end > acc) {
            rec_gap(fd, d, acc, end, pc);
            atomic_store(&d->acc, end);
        } else if (pending && end < acc) {
            atomic_store(&d->acc, end);
        }
    }
    desc_unlock(d);
}

/* Every tracked description once (exec, fork, exit). */
void net_all(int pending)
{
    struct pc_once pc = {0, 0, 0};
    uint32_t gen = atomic_fetch_add(&g_gen, 1) + 1;
    int hi = atomic_load(&g_fd_hi);
    for (int fd = 0; fd <= hi && fd < MAX_FDS; fd++) {
        struct desc *d = atomic_load_explicit(&g_fds[fd].d, memory_order_relaxed);
        if (!d || atomic_load_explicit(&g_fds[fd].state, memory_order_relaxed) != 1 || d->gen == gen)
            continue;
        d->gen = gen;
        net_check(fd, d, pending, &pc);
    }
}

/* fork, posix_spawn: another process now shares these descriptions (only the inheritable ones
 * for a spawn: close-on-exec fds end at its exec); their file positions no longer tell what this
 * process wrote. */
void desc_share_all(int only_inheritable)
{
    int hi = atomic_load(&g_fd_hi);
    for (int fd = 0; fd <= hi && fd < MAX_FDS; fd++) {
        struct desc *d = atomic_load_explicit(&g_fds[fd].d, memory_order_relaxed);
        if (!d || !(atomic_load(&d->flags) & (D_EXCL | D_OWN)))
            continue;
        if (only_inheritable && (sc(SYS_fcntl, fd, F_GETFD, 0, 0) & FD_CLOEXEC))
            continue;
        atomic_fetch_and(&d->flags, ~(uint32_t)(D_EXCL | D_OWN));
    }
}

/* In a forked child: locks held by threads that do not exist here are free. */
void desc_after_fork_child(void)
{
    t_tid = 0;
    for (int i = 0; i < MAX_DESCS; i++)
        atomic_store(&g_descs[i].lock, 0);
}

/* ---------- inherited fds ---------- */
/* Two fds of one file opened for writing: one description (kcmp; without it, the same flags and
 * position are taken as one, which is what a shell's 2>&1 makes). */
static int same_description(int a, int b)
{
    long pid = (long)g_pid;
    RESOLVE(syscall);
    long r = real_syscall(SYS_kcmp, pid, pid, (long)KCMP_FILE, (long)a, (long)b, 0L);
    if (r >= 0)
        return r == 0;
    return sc(SYS_fcntl, a, F_GETFL, 0, 0) == sc(SYS_fcntl, b, F_GETFL, 0, 0) &&
           sc(SYS_lseek, a, 0, SEEK_CUR, 0) == sc(SYS_lseek, b, 0, SEEK_CUR, 0);
}

/* At start: every fd the image inherited (a shell's redirections, a parent's files), learnt with
 * its file position as the start of its accounting. */
void learn_inherited(void)
{
    int dfd = (int)sc(SYS_openat, AT_FDCWD, (long)"/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dfd < 0)
        return;
    int fds[256], n = 0;
    char buf[4096];
    long got;
    while ((got = sc(SYS_getdents64, dfd, (long)buf, sizeof buf, 0)) > 0) {
        for (long at = 0; at < got;) {
            struct dirent64 *de = (struct dirent64 *)(buf + at);
            at += de->d_reclen;
            if (de->d_name[0] < '0' || de->d_name[0] > '9')
                continue;
            int fd = atoi(de->d_name);
            if (fd != dfd && !is_our_fd(fd) && n < 256)
                fds[n++] = fd;
        }
    }
    sc(SYS_close, dfd, 0, 0, 0);
    for (int i = 0; i < n; i++) {
        struct fdinfo *e = fd_learn(fds[i]);
        struct desc *d = e ? atomic_load(&e->d) : NULL;
        if (!d)
            continue;
        for (int j = 0; j < i; j++) {
            struct desc *o = atomic_load(&g_fds[fds[j]].d);
            if (o && o != d && o->dev == d->dev && o->ino == d->ino && same_description(fds[j], fds[i])) {
                atomic_fetch_add(&o->refs, 1);
                atomic_store(&e->d, o);
                desc_release(d);
                break;
            }
        }
    }
}

/* "W unplaced: <bytes> <path>: <why>", once per fd and reason. */
void warn_unplaced(uint64_t bytes, int fd, const char *why)
{
    char link[64], target[PATH_MAX], line[PATH_MAX + 256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    size_t at = put_str(line, 0, sizeof line - 1, "unplaced: ");
    at = put_dec(line, at, sizeof line - 1, bytes);
    at = put_str(line, at, sizeof line - 1, " ");
    at = put_str(line, at, sizeof line - 1, target);
    at = put_str(line, at, sizeof line - 1, ": ");
    at = put_str(line, at, sizeof line - 1, why);
    line[at] = 0;
    shim_warn(line);
}
