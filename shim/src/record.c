/* record.c: building records (time, pid/tid, the PC signature from stackwalk.c) into the calling
 * thread's buffer (logs.c), the fd -> (dev, ino, path) table, and the rec_* helpers the hooks call
 * after their real call. The re-entrancy guard t_guard is defined here; enter()/leave() and the
 * hook tail RECORD_IF are in shim.h. */
#include "shim.h"

TLS int t_guard;
struct fdinfo g_fds[MAX_FDS];
atomic_int g_fd_hi; /* the highest fd ever tracked: bounds the walks over the table */

/* ---------- recording ---------- */
void push_record(int op, int fd, uint64_t offset, uint64_t len, uint32_t flags, uint64_t dev, uint64_t ino,
                 uint64_t path, uint64_t aux, struct pc_once *pc)
{
    if (!g_record)
        return; /* live hints only (pcstream run): no logs */
    struct tbuf *b = my_buf();
    struct pcshim_record r;
    memset(&r, 0, sizeof r);
    if (pc) {
        if (!pc->done) {
            pc->pc = signature(b, &pc->nframes);
            pc->done = 1;
        }
        r.pc = pc->pc;
        r.nframes = pc->nframes;
    }
    r.ts_ns = now_ns();
    r.offset = offset;
    r.len = len;
    r.dev = dev;
    r.ino = ino;
    r.path = path;
    r.aux = aux;
    r.pid = g_pid;
    r.tid = b->tid;
    r.fd = fd;
    r.flags = flags;
    r.op = (uint16_t)op;
    if (atomic_load_explicit(&g_finished, memory_order_relaxed))
        return; /* the process image has ended (E written): nothing more is recorded */
    buf_append(b, &r);
    atomic_fetch_add(&g_records, 1);
}

void add_record(int op, int fd, uint64_t offset, uint64_t len, uint32_t flags, uint64_t dev, uint64_t ino,
                uint64_t path, uint64_t aux, int want_pc)
{
    struct pc_once pc = {0, 0, 0};
    push_record(op, fd, offset, len, flags, dev, ino, path, aux, want_pc ? &pc : NULL);
}

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
        atomic_store(&e->state, 2);
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
        uint32_t df = D_WRITE | ((fl & O_APPEND) ? D_APPEND : 0) | ((fl & O_ACCMODE) == O_RDWR ? D_RDWR : 0);
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
    int hi = atomic_load(&g_fd_hi);
    while (fd > hi && !atomic_compare_exchange_weak(&g_fd_hi, &hi, fd))
        ;
    atomic_store(&e->state, 1);
    return e;
}

struct fdinfo *fd_learn(int fd) { return fd_learn_as(fd, -1); }

struct fdinfo *fd_opened(int fd, int oflags) { return fd_learn_as(fd, oflags); }

struct fdinfo *fd_get(int fd)
{
    if (fd < 0 || fd >= MAX_FDS)
        return NULL;
    uint8_t s = atomic_load(&g_fds[fd].state);
    if (s == 1)
        return &g_fds[fd];
    if (s == 2)
        return NULL;
    return fd_learn(fd);
}

void fd_forget(int fd)
{
    if (fd < 0 || fd >= MAX_FDS)
        return;
    atomic_store(&g_fds[fd].state, 0);
    struct desc *d = atomic_exchange(&g_fds[fd].d, NULL);
    if (d)
        desc_release(d);
}

void rec_fd(int op, int fd, uint64_t off, uint64_t len, uint32_t flags, int want_pc)
{
    struct fdinfo *e = fd_get(fd);
    if (e)
        add_record(op, fd, off, len, flags, e->dev, e->ino, e->path, 0, want_pc);
}

void rec_write(int fd, int64_t off, ssize_t ret, uint32_t flags)
{
    struct pc_once pc = {0, 0, 0};
    rec_write_pc(fd, off, ret, flags, &pc);
}

/* rec_write with the call's PC, computed already (live hints: before the real call) or not. */
void rec_write_pc(int fd, int64_t off, ssize_t ret, uint32_t flags, struct pc_once *pcp)
{
    struct fdinfo *e = fd_get(fd);
    if (!e)
        return;
    struct pc_once pc = *pcp;
    if (off < 0) {
        /* the signature first: a signal handler ending the process between the accounting below
         * and the record then has the shortest window to land in */
        if (!pc.done) {
            pc.pc = signature(my_buf(), &pc.nframes);
            pc.done = 1;
        }
        off_t cur = sc(SYS_lseek, fd, 0, SEEK_CUR, 0);
        off = cur >= 0 ? cur - ret : 0;
        if (off < 0)
            off = 0;
        /* the write moved the file position: the description's accounting follows it */
        struct desc *d = atomic_load_explicit(&e->d, memory_order_relaxed);
        if (d && cur >= 0)
            desc_moved(fd, d, cur, ret, &pc);
    }
    push_record(PCSHIM_OP_WRITE, fd, (uint64_t)off, (uint64_t)ret, flags, e->dev, e->ino, e->path, 0, &pc);
}

void rec_path(int op, int dirfd, const char *p, uint64_t aux, const struct stat *st)
{
    char abs[PATH_MAX];
    if (abs_path(dirfd, p, abs, sizeof abs) != 0)
        return;
    add_record(op, -1, 0, 0, 0, st ? st->st_dev : 0, st ? st->st_ino : 0, intern_path(abs), aux, 1);
}
