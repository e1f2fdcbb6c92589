/* fdtable.c: the fd -> (dev, ino, path, description) table of the tracked regular files (struct
 * fdinfo, shim.h), learnt when an fd is opened or first met, copied by dup2/dup3, forgotten at
 * close; and the walks over it: the safety net over every description (exec, fork, exit), the
 * descriptions shared with a new process, the fds a process image inherits. The descriptions
 * themselves are account.c's. */
#include "shim.h"

#ifndef KCMP_FILE
#define KCMP_FILE 0
#endif

struct fdinfo g_fds[MAX_FDS];
atomic_int g_fd_hi; /* the highest fd ever tracked: bounds the walks over the table */
static atomic_uint g_gen; /* the mark of the last walk over every description (net_all) */

static void raise_fd_hi(int fd)
{
    int hi = atomic_load(&g_fd_hi);
    while (fd > hi && !atomic_compare_exchange_weak(&g_fd_hi, &hi, fd))
        ;
}

/* ---------- the table ---------- */
/* Learn what fd is (regular file: its dev, ino, path; opened for writing: its description, see
 * account.c). `oflags` are the open flags when the shim saw the open, -1 for an fd found in use
 * (inherited, or made by a call no hook sees): its description is then not exclusive and its
 * accounting starts at the file position. Returns the entry if tracked. */
static struct fdinfo *fd_learn_as(int fd, int oflags)
{
    if (fd < 0 || fd >= MAX_FDS || is_our_fd(fd))
        return NULL;
    struct fdinfo *e = &g_fds[fd];
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        atomic_store(&e->state, FD_IGNORED);
        return NULL;
    }
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->path = n > 0 ? intern_path(target) : 0;
    int fl = oflags >= 0 ? oflags : (int)sc(SYS_fcntl, fd, F_GETFL, 0, 0);
    struct desc *d = NULL;
    if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY) {
        uint32_t df = D_WRITE | ((fl & O_APPEND) ? D_APPEND : 0) | ((fl & O_ACCMODE) == O_RDWR ? D_RDWR : 0) |
                      ((fl & O_DIRECT) ? D_DIRECT : 0);
        int64_t acc = 0;
        if (oflags < 0) {
            acc = sc(SYS_lseek, fd, 0, SEEK_CUR, 0);
        } else if (fl & O_APPEND) {
            acc = st.st_size; /* where appended bytes go (an estimate: others may append) */
            df |= D_OWN;
        } else if ((fl & O_ACCMODE) == O_WRONLY) {
            df |= D_EXCL | D_OWN;
        } else {
            df |= D_OWN;
        }
        d = desc_new(df, acc < 0 ? 0 : acc);
        if (d) {
            d->dev = e->dev;
            d->ino = e->ino;
            d->path = e->path;
        }
    }
    struct desc *old = atomic_exchange(&e->d, d);
    if (old)
        desc_release(old);
    raise_fd_hi(fd);
    atomic_store(&e->state, FD_TRACKED);
    return e;
}

struct fdinfo *fd_learn(int fd) { return fd_learn_as(fd, -1); }

struct fdinfo *fd_opened(int fd, int oflags) { return fd_learn_as(fd, oflags); }

/* PCSHIM_VIA_DIRECT when the fd's description has O_DIRECT now, else 0. */
uint32_t fd_direct_via(const struct fdinfo *e)
{
    struct desc *d = atomic_load_explicit(&e->d, memory_order_relaxed);
    return d && (atomic_load_explicit(&d->flags, memory_order_relaxed) & D_DIRECT) ? PCSHIM_VIA_DIRECT : 0;
}

struct fdinfo *fd_get(int fd)
{
    if (fd < 0 || fd >= MAX_FDS)
        return NULL;
    uint8_t s = atomic_load(&g_fds[fd].state);
    if (s == FD_TRACKED)
        return &g_fds[fd];
    if (s == FD_IGNORED)
        return NULL;
    return fd_learn(fd);
}

void fd_forget(int fd)
{
    if (fd < 0 || fd >= MAX_FDS)
        return;
    atomic_store(&g_fds[fd].state, FD_UNKNOWN);
    struct desc *d = atomic_exchange(&g_fds[fd].d, NULL);
    if (d)
        desc_release(d);
}

/* dup2/dup3/F_DUPFD made `to` a copy of `from`: the same file and description (or, `from` not
 * tracked, nothing known of `to`). */
void fd_copy(int from, int to)
{
    if (to < 0 || to >= MAX_FDS)
        return;
    if (from >= 0 && from < MAX_FDS && atomic_load(&g_fds[from].state) == FD_TRACKED) {
        fd_forget(to);
        g_fds[to].dev = g_fds[from].dev;
        g_fds[to].ino = g_fds[from].ino;
        g_fds[to].path = g_fds[from].path;
        struct desc *d = atomic_load(&g_fds[from].d);
        if (d)
            atomic_fetch_add(&d->refs, 1);
        atomic_store(&g_fds[to].d, d);
        raise_fd_hi(to);
        atomic_store(&g_fds[to].state, FD_TRACKED);
    } else {
        fd_forget(to);
    }
}

/* ---------- walks over every description ---------- */
/* Every tracked description once (exec, fork, exit). */
void net_all(int pending)
{
    struct pc_once pc = {0, 0, 0};
    uint32_t gen = atomic_fetch_add(&g_gen, 1) + 1;
    int hi = atomic_load(&g_fd_hi);
    for (int fd = 0; fd <= hi && fd < MAX_FDS; fd++) {
        struct desc *d = atomic_load_explicit(&g_fds[fd].d, memory_order_relaxed);
        if (!d || atomic_load_explicit(&g_fds[fd].state, memory_order_relaxed) != FD_TRACKED || d->gen == gen)
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
