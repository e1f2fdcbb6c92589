/* hooks_files.c: the hooks that name, change or sync files: open, open64, openat, openat64, creat,
 * creat64 (an open record, the fd learnt), close (the safety net first), unlink, unlinkat, rename,
 * renameat, renameat2, truncate(64), ftruncate(64), fallocate(64), fsync, fdatasync,
 * sync_file_range, the fd tracking of dup, dup2, dup3 (the safety net on the fd replaced) and
 * fcntl(64) (F_DUPFD, F_SETFL; F_SET_RW_HINT recorded as a set_hint), and lseek(64). The fd table
 * is fdtable.c's, descriptions and the net account.c's; fopen and fclose are in hooks_stdio.c
 * (fopen ends in after_open, here). */
#include "shim.h"

/* ---------- open, creat, close ---------- */
static void rec_open(int fd, int flags)
{
    fd_forget(fd);
    struct fdinfo *info = fd_opened(fd, flags);
    if (info && g_live)
        live_opened(info->dev, info->ino);
    if (info)
        add_record(&(struct pcshim_record){.op = PCSHIM_OP_OPEN, .fd = fd, .flags = (uint32_t)flags,
                                           .dev = info->dev, .ino = info->ino, .path = info->path},
                   1);
}

void after_open(int fd, int flags) { RECORD_IF(fd >= 0, rec_open(fd, flags)); }

/* fd is about to be closed (close, dup2/dup3 over it): if it is the last fd of its description,
 * the safety net (what its streams still hold will not reach this file: not counted). */
static void net_last(int fd)
{
    int tracked = fd >= 0 && fd < MAX_FDS && atomic_load(&g_fds[fd].state) == FD_TRACKED;
    struct desc *d = tracked ? atomic_load(&g_fds[fd].d) : NULL;
    if (d && atomic_load(&d->refs) == 1) {
        struct pc_once pc = {0, 0, 0};
        net_check(fd, d, 0, &pc);
    }
}

#define OPEN_HOOK(name)                                                     \
    EXPORT int name(const char *p, int flags, ...)                          \
    {                                                                       \
        RESOLVE(name);                                                      \
        mode_t mode = 0;                                                    \
        if (flags & (O_CREAT | __O_TMPFILE)) {                              \
            va_list ap;                                                     \
            va_start(ap, flags);                                            \
            mode = (mode_t)va_arg(ap, int);                                 \
            va_end(ap);                                                     \
        }                                                                   \
        int fd = real_##name(p, flags, mode);                               \
        after_open(fd, flags);                                              \
        return fd;                                                          \
    }
OPEN_HOOK(open)
OPEN_HOOK(open64)

#define OPENAT_HOOK(name)                                                   \
    EXPORT int name(int dirfd, const char *p, int flags, ...)               \
    {                                                                       \
        RESOLVE(name);                                                      \
        mode_t mode = 0;                                                    \
        if (flags & (O_CREAT | __O_TMPFILE)) {                              \
            va_list ap;                                                     \
            va_start(ap, flags);                                            \
            mode = (mode_t)va_arg(ap, int);                                 \
            va_end(ap);                                                     \
        }                                                                   \
        int fd = real_##name(dirfd, p, flags, mode);                        \
        after_open(fd, flags);                                              \
        return fd;                                                          \
    }
OPENAT_HOOK(openat)
OPENAT_HOOK(openat64)

#define CREAT_HOOK(name)                                                    \
    EXPORT int name(const char *p, mode_t mode)                             \
    {                                                                       \
        RESOLVE(name);                                                      \
        int fd = real_##name(p, mode);                                      \
        after_open(fd, O_CREAT | O_WRONLY | O_TRUNC);                       \
        return fd;                                                          \
    }
CREAT_HOOK(creat)
CREAT_HOOK(creat64)

EXPORT int close(int fd)
{
    RESOLVE(close);
    if (t_unwinding)
        return unw_close(fd); /* libunwind closing its pipe or a file it read */
    if (g_active && is_our_fd(fd))
        return 0; /* the shim's own log files survive programs that close every fd */
    int rec = 0;
    if (enter()) {
        int e = errno;
        net_last(fd);
        rec_fd(PCSHIM_OP_CLOSE, fd, 0, 0, 0, 0);
        errno = e;
        rec = 1;
    }
    fd_forget(fd);
    int r = real_close(fd);
    if (rec)
        leave();
    return r;
}

/* ---------- close_range, closefrom ---------- */
/* close_range(first, last, flags) as the kernel does it, but around the shim's own files (its
 * logs and libunwind's pipe, logfd.c's our_fds): the
 * tracked fds in the range are closed as close() does (safety net, close record), then the
 * range is closed in the pieces between the shim's fds, which stay open (daemons, Python's
 * os.closerange, systemd close every fd above 2). CLOSE_RANGE_CLOEXEC closes nothing: passed
 * through (the shim's fds are close-on-exec already). Also reached from syscall(). */
long close_fds(unsigned first, unsigned last, unsigned flags)
{
    if (!g_active || (flags & CLOSE_RANGE_CLOEXEC) || first > last)
        return sc(SYS_close_range, first, last, flags, 0);
    int hi = atomic_load(&g_fd_hi);
    if (enter()) {
        int e = errno;
        for (long fd = first; fd <= (long)last && fd <= hi && fd < MAX_FDS; fd++) {
            if (is_our_fd((int)fd) || atomic_load(&g_fds[fd].state) != FD_TRACKED)
                continue;
            net_last((int)fd);
            rec_fd(PCSHIM_OP_CLOSE, (int)fd, 0, 0, 0, 0);
            fd_forget((int)fd);
        }
        errno = e;
        leave();
    }
    int ours[OUR_FDS_MAX], n = 0;
    unsigned keep[OUR_FDS_MAX];
    for (int i = 0, k = our_fds(ours); i < k; i++)
        if ((unsigned)ours[i] >= first && (unsigned)ours[i] <= last)
            keep[n++] = (unsigned)ours[i];
    for (int i = 1; i < n; i++) /* sort the (few) fds kept */
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            unsigned t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    /* the pieces [first, keep0-1], [keep0+1, keep1-1], ..., [keepN+1, last], empty ones skipped */
    long r = 0;
    unsigned long from = first;
    for (int i = 0; i <= n; i++) {
        unsigned long end = i < n ? (unsigned long)keep[i] - 1 : last; /* keep[i] >= first >= 0 */
        if (i < n && keep[i] == from) {
            from = (unsigned long)keep[i] + 1;
            continue;
        }
        if (from <= end && from <= ~0U) {
            long ri = sc(SYS_close_range, (long)from, (long)end, flags, 0);
            if (ri < 0 && r == 0)
                r = ri;
        }
        if (i < n)
            from = (unsigned long)keep[i] + 1;
    }
    return r;
}

/* ---------- pipe2, read: libunwind's pipe kept at high numbers (logfd.c) ---------- */
EXPORT int pipe2(int fds[2], int flags)
{
    int r = (int)sc(SYS_pipe2, (long)fds, flags, 0, 0);
    if (r == 0 && t_unwinding)
        unw_pipe_adopt(fds);
    return r;
}

EXPORT int pipe(int fds[2]) { return pipe2(fds, 0); }

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    if (__builtin_expect(t_unwinding, 0) && unw_stale(fd)) {
        errno = EBADF;
        return -1;
    }
    return (ssize_t)sc(SYS_read, fd, (long)buf, (long)n, 0);
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    return (int)close_fds(first, last, (unsigned)flags);
}

EXPORT void closefrom(int lowfd)
{
    close_fds(lowfd < 0 ? 0 : (unsigned)lowfd, ~0U, 0);
}

/* ---------- unlink, rename ---------- */
EXPORT int unlink(const char *p)
{
    RESOLVE(unlink);
    struct stat st;
    int ok = g_active && !t_guard && lstat(p, &st) == 0 && S_ISREG(st.st_mode);
    int r = real_unlink(p);
    RECORD_IF(r == 0 && ok, rec_path(PCSHIM_OP_UNLINK, AT_FDCWD, p, 0, &st));
    return r;
}

EXPORT int unlinkat(int dirfd, const char *p, int flags)
{
    RESOLVE(unlinkat);
    struct stat st;
    int ok = g_active && !t_guard && fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    int r = real_unlinkat(dirfd, p, flags);
    RECORD_IF(r == 0 && ok, rec_path(PCSHIM_OP_UNLINK, dirfd, p, 0, &st));
    return r;
}

static void rec_rename(int odir, const char *o, int ndir, const char *n, const struct stat *st)
{
    char abs[PATH_MAX];
    if (abs_path(ndir, n, abs, sizeof abs) != 0)
        return;
    uint64_t to = intern_path(abs);
    rec_path(PCSHIM_OP_RENAME, odir, o, to, st);
}

#define RENAME_BODY(call, odir, o, ndir, n)                                 \
    struct stat st;                                                         \
    int ok = g_active && !t_guard && fstatat(odir, o, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode); \
    int r = call;                                                           \
    RECORD_IF(r == 0 && ok, rec_rename(odir, o, ndir, n, &st));             \
    return r;

EXPORT int rename(const char *o, const char *n)
{
    RESOLVE(rename);
    RENAME_BODY(real_rename(o, n), AT_FDCWD, o, AT_FDCWD, n)
}

EXPORT int renameat(int od, const char *o, int nd, const char *n)
{
    RESOLVE(renameat);
    RENAME_BODY(real_renameat(od, o, nd, n), od, o, nd, n)
}

EXPORT int renameat2(int od, const char *o, int nd, const char *n, unsigned int fl)
{
    RESOLVE(renameat2);
    RENAME_BODY(real_renameat2(od, o, nd, n, fl), od, o, nd, n)
}

/* ---------- truncate, fallocate, fsync, fdatasync, sync_file_range ---------- */
static void rec_truncate(const char *p, off_t len)
{
    struct stat st;
    char abs[PATH_MAX];
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && abs_path(AT_FDCWD, p, abs, sizeof abs) == 0)
        add_record(&(struct pcshim_record){.op = PCSHIM_OP_TRUNCATE, .fd = -1, .offset = (uint64_t)len,
                                           .dev = st.st_dev, .ino = st.st_ino, .path = intern_path(abs)},
                   1);
}

#define TRUNCATE_HOOK(name)                                                 \
    EXPORT int name(const char *p, off_t len)                               \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r = real_##name(p, len);                                        \
        RECORD_IF(r == 0, rec_truncate(p, len));                            \
        return r;                                                           \
    }
TRUNCATE_HOOK(truncate)
TRUNCATE_HOOK(truncate64)

#define FTRUNCATE_HOOK(name)                                                \
    EXPORT int name(int fd, off_t len)                                      \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r = real_##name(fd, len);                                       \
        RECORD_IF(r == 0, rec_fd(PCSHIM_OP_TRUNCATE, fd, (uint64_t)len, 0, 0, 1)); \
        return r;                                                           \
    }
FTRUNCATE_HOOK(ftruncate)
FTRUNCATE_HOOK(ftruncate64)

#define FALLOCATE_HOOK(name)                                                \
    EXPORT int name(int fd, int mode, off_t off, off_t len)                 \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r = real_##name(fd, mode, off, len);                            \
        RECORD_IF(r == 0, rec_fd((mode & 0x02) ? PCSHIM_OP_PUNCH_HOLE : PCSHIM_OP_FALLOCATE, fd, \
                                    (uint64_t)off, (uint64_t)len, (uint32_t)mode, 1)); \
        return r;                                                           \
    }
FALLOCATE_HOOK(fallocate)
FALLOCATE_HOOK(fallocate64)

EXPORT int fsync(int fd)
{
    RESOLVE(fsync);
    int r = real_fsync(fd);
    RECORD_IF(r == 0, rec_fd(PCSHIM_OP_FSYNC, fd, 0, 0, 0, 1));
    return r;
}

EXPORT int fdatasync(int fd)
{
    RESOLVE(fdatasync);
    int r = real_fdatasync(fd);
    RECORD_IF(r == 0, rec_fd(PCSHIM_OP_FDATASYNC, fd, 0, 0, 0, 1));
    return r;
}

EXPORT int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
    RESOLVE(sync_file_range);
    int r = real_sync_file_range(fd, off, n, flags);
    RECORD_IF(r == 0, rec_fd(PCSHIM_OP_SYNC_RANGE, fd, (uint64_t)off, (uint64_t)n, flags, 1));
    return r;
}

/* ---------- dup, fcntl: fd tracking only (fd_copy: `to` now refers to from's description) ---------- */
/* Before the program takes fd number `fd` (dup2/dup3 target): move a log file (or the live log)
 * out of the way. */
static void vacate(int fd)
{
    if (!g_active || !is_our_fd(fd))
        return;
    int moved = (int)sc(SYS_fcntl, fd, F_DUPFD_CLOEXEC, fd + 1, 0);
    if (moved < 0)
        return;
    if (fd == g_bin)
        g_bin = moved;
    else if (fd == g_txt)
        g_txt = moved;
    else
        g_livelog = moved; /* live.c's log */
}

EXPORT int dup(int fd)
{
    RESOLVE(dup);
    int r = real_dup(fd);
    if (r >= 0)
        fd_copy(fd, r);
    return r;
}

/* dup2/dup3 over a tracked fd close it first. */
static void before_dup_over(int fd, int to)
{
    if (fd != to && to >= 0 && to < MAX_FDS && atomic_load(&g_fds[to].d))
        RECORD_IF(1, net_last(to));
}

EXPORT int dup2(int fd, int to)
{
    RESOLVE(dup2);
    vacate(to);
    before_dup_over(fd, to);
    int r = real_dup2(fd, to);
    if (r >= 0 && fd != to)
        fd_copy(fd, r);
    return r;
}

EXPORT int dup3(int fd, int to, int flags)
{
    RESOLVE(dup3);
    vacate(to);
    before_dup_over(fd, to);
    int r = real_dup3(fd, to, flags);
    if (r >= 0)
        fd_copy(fd, r);
    return r;
}

/* After a successful fcntl: dups are tracked, a write-lifetime hint is recorded (offset = the
 * hint), O_APPEND set or cleared changes what the description's position means, and O_DIRECT
 * set or cleared whether its writes bypass the page cache. */
static void after_fcntl(int fd, int cmd, void *arg, int r)
{
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
        fd_copy(fd, r);
    } else if (cmd == F_SET_RW_HINT && arg) {
        /* the program's own hint wins: live hints leave the inode alone from now on */
        RECORD_IF(1, if (g_live) live_owned(fd); rec_fd(PCSHIM_OP_SET_HINT, fd, *(const uint64_t *)arg, 0, 0, 1));
    } else if (cmd == F_SETFL && fd >= 0 && fd < MAX_FDS) {
        struct desc *d = atomic_load(&g_fds[fd].d);
        if (d) {
            uint32_t fl = atomic_load(&d->flags);
            fl = ((uintptr_t)arg & O_APPEND) ? (fl | D_APPEND) & ~(uint32_t)D_EXCL : fl & ~(uint32_t)D_APPEND;
            fl = ((uintptr_t)arg & O_DIRECT) ? fl | D_DIRECT : fl & ~(uint32_t)D_DIRECT;
            atomic_store(&d->flags, fl);
        }
    }
}

/* After an fcntl(F_SET_RW_HINT) the kernel refused (not with EFAULT: the argument is readable,
 * the kernel read its 8 bytes): record the level the program meant (flag PCSHIM_HINT_REFUSED),
 * and one "W hint refused: <errno> <kind> <program>" line. Linux reads a u64; a program passing a
 * 4-byte enum (RocksDB 7.x) leaves the upper half to whatever follows it on its stack, so the low
 * 32 bits are the level it meant when they are one ("low32"). No level: PCSHIM_HINT_INVALID with
 * the raw value in len; map ignores it. The program's inode is not made its own for live hints. */
static void refused_hint(int fd, const void *arg, int err)
{
    if (!arg || err == EFAULT)
        return;
    struct fdinfo *e = fd_get(fd);
    if (!e)
        return;
    uint64_t raw;
    memcpy(&raw, arg, sizeof raw);
    uint64_t low = raw & 0xffffffffu, level = 0;
    uint32_t fl = PCSHIM_HINT_REFUSED;
    const char *kind = "level";
    if (raw <= PCSHIM_HINTS_MAX_HINT) {
        level = raw;
    } else if (low <= PCSHIM_HINTS_MAX_HINT) {
        level = low;
        kind = "low32";
    } else {
        fl |= PCSHIM_HINT_INVALID;
        kind = "invalid";
    }
    add_record(&(struct pcshim_record){.op = PCSHIM_OP_SET_HINT, .fd = fd, .offset = level, .len = raw,
                                       .flags = fl, .aux = (uint64_t)err, .dev = e->dev, .ino = e->ino,
                                       .path = e->path},
               1);
    char msg[PATH_MAX + 64];
    snprintf(msg, sizeof msg, "hint refused: %d %s %s", err, kind, g_exe[0] ? g_exe : "?");
    shim_warn(msg);
}

#define FCNTL_HOOK(name)                                                    \
    EXPORT int name(int fd, int cmd, ...)                                   \
    {                                                                       \
        RESOLVE(name);                                                      \
        va_list ap;                                                         \
        va_start(ap, cmd);                                                  \
        void *arg = va_arg(ap, void *);                                     \
        va_end(ap);                                                         \
        int r = real_##name(fd, cmd, arg);                                  \
        if (r >= 0) {                                                       \
            after_fcntl(fd, cmd, arg, r);                                   \
        } else if (cmd == F_SET_RW_HINT) {                                  \
            int err_ = errno;                                               \
            RECORD_IF(1, refused_hint(fd, arg, err_));                      \
            errno = err_;                                                   \
        }                                                                   \
        return r;                                                           \
    }
FCNTL_HOOK(fcntl)
FCNTL_HOOK(fcntl64)

/* ---------- lseek: the description's accounting follows the new position ---------- */
/* On an exclusive description the safety net runs first (a position beyond what was recorded is
 * about to be left behind); lseek(fd, 0, SEEK_CUR) moves nothing and costs nothing more. */
#define LSEEK_HOOK(name)                                                    \
    EXPORT off_t name(int fd, off_t off, int whence)                        \
    {                                                                       \
        RESOLVE(name);                                                      \
        struct desc *d = g_active && !t_guard && fd >= 0 && fd < MAX_FDS && !(off == 0 && whence == SEEK_CUR) \
                             ? atomic_load_explicit(&g_fds[fd].d, memory_order_relaxed) \
                             : NULL;                                        \
        if (d && (atomic_load(&d->flags) & D_EXCL))                         \
            RECORD_IF(1, struct pc_once pc_ = {0, 0, 0}; net_check(fd, d, 1, &pc_)); \
        off_t r = real_##name(fd, off, whence);                             \
        if (d && r >= 0)                                                    \
            atomic_store(&d->acc, (int64_t)r + (atomic_load(&d->nslots) ? desc_pending(d, 1) : 0)); \
        return r;                                                           \
    }
LSEEK_HOOK(lseek)
LSEEK_HOOK(lseek64)
