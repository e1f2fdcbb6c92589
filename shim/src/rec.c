/* rec.c: the rec_* helpers the hooks call after their real call: the fd's file from the fd table
 * (fdtable.c), a write through the file position followed by its description's accounting
 * (account.c), then the record (record.c). */
#include "shim.h"

void rec_fd(int op, int fd, uint64_t off, uint64_t len, uint32_t flags, int want_pc)
{
    struct fdinfo *e = fd_get(fd);
    if (e)
        add_record(&(struct pcshim_record){.op = op, .fd = fd, .offset = off, .len = len, .flags = flags,
                                           .dev = e->dev, .ino = e->ino, .path = e->path},
                   want_pc);
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
    flags |= fd_direct_via(e);
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
    /* every field named: a partly named record is zeroed first (rep stos, slow to start) */
    struct pcshim_record r = {.ts_ns = 0, .offset = (uint64_t)off, .len = (uint64_t)ret, .pc = 0, .dev = e->dev,
                              .ino = e->ino, .path = e->path, .aux = 0, .pid = 0, .tid = 0, .fd = fd,
                              .flags = flags, .op = PCSHIM_OP_WRITE, .nframes = 0, .reserved = 0};
    push_record(&r, &pc);
}

void rec_path(int op, int dirfd, const char *p, uint64_t aux, const struct stat *st)
{
    char abs[PATH_MAX];
    if (abs_path(dirfd, p, abs, sizeof abs) != 0)
        return;
    add_record(&(struct pcshim_record){.op = op, .fd = -1, .dev = st ? st->st_dev : 0, .ino = st ? st->st_ino : 0,
                                       .path = intern_path(abs), .aux = aux},
               1);
}
