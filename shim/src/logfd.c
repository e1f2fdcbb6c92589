/* logfd.c: the shim's own output files (the .bin and .txt logs, the live log) stay its own. They
 * are opened at fds >= OUR_FD_FLOOR; before each buffer or line is written the fd is checked to
 * still be the file the shim opened (its dev and inode), and reopened, again at a high number,
 * when the program closed it behind the shim's back (a raw close_range system call, as Go or
 * systemd make) or took its number for a file of its own — so the shim never writes into a
 * descriptor the program owns. The check costs one fstat per flushed buffer (256 records) or text
 * line, not per write. A log write the file-size limit refuses (RLIMIT_FSIZE: EFBIG) does not
 * deliver SIGXFSZ to the program: the signal is held off during the write and the one the write
 * raised is taken back; that log then stops (the converter reports the loss).
 *
 * libunwind validates addresses by writing them into a pipe it opens once and keeps (in its own
 * static state). Its pipe2 is adopted here: both ends moved to high numbers and protected like the
 * logs. When the program closes them with a raw close_range and its own files take those
 * numbers, they are marked stale (seen when an fd-creating hook or a log check meets the
 * number): libunwind's read, write and close on a stale number then fail with EBADF without
 * touching the program's file, and libunwind opens a new pipe (adopted again). */
#include "shim.h"

struct logid {
    uint64_t dev, ino;
    int full; /* the file-size limit refused a write: nothing more is written to it */
    char path[PATH_MAX + 64];
};
static struct logid g_ids[LOG_SLOTS];
TLS int t_unwinding;

/* libunwind's pipe: read end, write end. */
static struct {
    int fd, stale;
    uint64_t dev, ino;
} g_unw[2] = {{-1, 0, 0, 0}, {-1, 0, 0, 0}};

/* dup fd to the lowest free number >= floor (close-on-exec), closing fd; fd if that fails. */
static int move_high(int fd, int floor)
{
    if (fd < 0)
        return fd;
    int hi = (int)sc(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor, 0);
    if (hi >= 0) {
        sc(SYS_close, fd, 0, 0, 0);
        return hi;
    }
    return fd;
}

static int same_file(int fd, const struct logid *id)
{
    struct stat st;
    return fd >= 0 && sc(SYS_fstat, fd, (long)&st, 0, 0) == 0 && (uint64_t)st.st_dev == id->dev &&
           (uint64_t)st.st_ino == id->ino;
}

static int open_at_floor(struct logid *id, int floor)
{
    int fd = move_high((int)sc(SYS_openat, AT_FDCWD, (long)id->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                              0644),
                       floor);
    struct stat st;
    if (fd >= 0 && sc(SYS_fstat, fd, (long)&st, 0, 0) == 0) {
        id->dev = (uint64_t)st.st_dev;
        id->ino = (uint64_t)st.st_ino;
    }
    return fd;
}

int log_open(int slot, const char *path, int floor)
{
    struct logid *id = &g_ids[slot];
    size_t k = put_str(id->path, 0, sizeof id->path - 1, path);
    id->path[k] = 0;
    id->full = 0;
    return open_at_floor(id, floor);
}

static void unw_check(void);
static int same_pipe_end(int i);

/* *fdp still the file of `slot`, or reopened (at OUR_FD_FLOOR or above); -1 if it cannot be. */
static int log_ready(int *fdp, int slot)
{
    struct logid *id = &g_ids[slot];
    if (*fdp < 0 || id->full || !id->path[0])
        return -1;
    if (!same_file(*fdp, id)) {
        *fdp = open_at_floor(id, OUR_FD_FLOOR); /* the old number may be the program's now: left alone */
        unw_check(); /* closed under the shim: the pipe may be gone too */
    }
    return *fdp;
}

void log_write(int *fdp, int slot, const void *p, size_t n)
{
    int fd = log_ready(fdp, slot);
    if (fd < 0)
        return;
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    sc(SYS_rt_sigprocmask, SIG_BLOCK, (long)&xfsz, (long)&old, sizeof(uint64_t));
    sigemptyset(&pending);
    sc(SYS_rt_sigpending, (long)&pending, sizeof(uint64_t), 0, 0);
    int had = sigismember(&pending, SIGXFSZ);
    const char *c = p;
    while (n > 0) {
        ssize_t r = sc(SYS_write, fd, (long)c, (long)n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EFBIG) {
            g_ids[slot].full = 1;
            if (!had) {
                struct timespec zero = {0, 0};
                sc(SYS_rt_sigtimedwait, (long)&xfsz, 0, (long)&zero, sizeof(uint64_t));
            }
        }
        if (r <= 0)
            break;
        c += r;
        n -= (size_t)r;
    }
    sc(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, sizeof(uint64_t));
}

void log_close(int *fdp, int slot)
{
    if (*fdp >= 0 && same_file(*fdp, &g_ids[slot]))
        sc(SYS_close, *fdp, 0, 0, 0);
    *fdp = -1;
}

/* Is fd one of the shim's files? A number that was the shim's but now holds another file (the
 * program closed the shim's with a raw close_range and got the number back from open) is the
 * program's: the shim's file is reopened elsewhere and 0 returned, so the program's calls on
 * its own fd (close, dup2 over it, writes) go through and are recorded. */
int is_our_fd(int fd)
{
    for (int i = 0; i < 2; i++) {
        if (fd < 0 || g_unw[i].fd != fd || g_unw[i].stale)
            continue;
        if (same_pipe_end(i))
            return 1;
        g_unw[i].stale = 1;
        return 0;
    }
    int *fds[LOG_SLOTS] = {&g_bin, &g_txt, &g_livelog};
    for (int slot = 0; slot < LOG_SLOTS; slot++) {
        if (fd < 0 || *fds[slot] != fd)
            continue;
        if (same_file(fd, &g_ids[slot]))
            return 1;
        *fds[slot] = g_ids[slot].path[0] && !g_ids[slot].full ? open_at_floor(&g_ids[slot], OUR_FD_FLOOR) : -1;
        return 0;
    }
    return 0;
}

/* ---------- libunwind's pipe ---------- */
static int same_pipe_end(int i)
{
    struct stat st;
    return g_unw[i].fd >= 0 && sc(SYS_fstat, g_unw[i].fd, (long)&st, 0, 0) == 0 &&
           (uint64_t)st.st_dev == g_unw[i].dev && (uint64_t)st.st_ino == g_unw[i].ino;
}

static void unw_check(void)
{
    for (int i = 0; i < 2; i++)
        if (g_unw[i].fd >= 0 && !g_unw[i].stale && !same_pipe_end(i))
            g_unw[i].stale = 1;
}

void unw_pipe_adopt(int fds[2])
{
    for (int i = 0; i < 2; i++) {
        int fd = move_high(fds[i], OUR_FD_FLOOR + 8);
        struct stat st;
        g_unw[i].fd = fd;
        g_unw[i].stale = 0;
        if (sc(SYS_fstat, fd, (long)&st, 0, 0) == 0) {
            g_unw[i].dev = (uint64_t)st.st_dev;
            g_unw[i].ino = (uint64_t)st.st_ino;
        }
        fds[i] = fd;
    }
}

int unw_stale(int fd)
{
    return fd >= 0 && ((g_unw[0].stale && fd == g_unw[0].fd) || (g_unw[1].stale && fd == g_unw[1].fd));
}

int unw_close(int fd)
{
    for (int i = 0; i < 2; i++) {
        if (fd < 0 || g_unw[i].fd != fd)
            continue;
        int stale = g_unw[i].stale || !same_pipe_end(i);
        g_unw[i].fd = -1;
        g_unw[i].stale = 0;
        if (stale) {
            errno = EBADF;
            return -1; /* the number is the program's now: not closed */
        }
        return (int)sc(SYS_close, fd, 0, 0, 0);
    }
    return (int)sc(SYS_close, fd, 0, 0, 0);
}

/* The shim's open fds (its logs, libunwind's pipe) into out[OUR_FDS_MAX]; returns how many. */
int our_fds(int out[OUR_FDS_MAX])
{
    int n = 0, logs[LOG_SLOTS] = {g_bin, g_txt, g_livelog};
    for (int slot = 0; slot < LOG_SLOTS; slot++)
        if (logs[slot] >= 0)
            out[n++] = logs[slot];
    for (int i = 0; i < 2; i++)
        if (g_unw[i].fd >= 0 && !g_unw[i].stale)
            out[n++] = g_unw[i].fd;
    return n;
}
