/* account.c: the open file descriptions of tracked regular files opened for writing (struct desc,
 * shim.h): their table, what was recorded through each (its logical end `acc`), and the safety
 * net: at close, dup2/dup3 over an fd, lseek, exec, fork and exit, a file position beyond `acc` on
 * an exclusive description is recorded as written (flags PCSHIM_VIA_RECOVERED, at the offsets the
 * bytes occupy, pc = that call's path). The fds referring to them, and the walks over every
 * description (net_all, desc_share_all, the inherited fds), are fdtable.c's. The streams' share
 * of `acc` is stdio_acct.c's. */
#include "shim.h"

static struct desc g_descs[MAX_DESCS];
static atomic_int g_desc_hint;
static atomic_int g_desc_full;
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
    push_record(&(struct pcshim_record){.op = PCSHIM_OP_WRITE, .fd = fd, .offset = (uint64_t)from,
                                        .len = (uint64_t)(to - from), .flags = PCSHIM_VIA_RECOVERED, .dev = d->dev,
                                        .ino = d->ino, .path = d->path},
                pc);
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

/* In a forked child: locks held by threads that do not exist here are free. */
void desc_after_fork_child(void)
{
    t_tid = 0;
    for (int i = 0; i < MAX_DESCS; i++)
        atomic_store(&g_descs[i].lock, 0);
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
