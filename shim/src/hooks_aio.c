/* hooks_aio.c: Linux AIO: libaio's io_submit; every write iocb the kernel accepted is a write
 * record at its aio_offset (flags PCSHIM_VIA_AIO), every fsync/fdatasync iocb an fsync/fdatasync
 * record, all with the PC of the call. rec_iocbs is shared with syscall(SYS_io_submit) in
 * hooks_syscall.c. The completion side (io_getevents) is not looked at. */
#include "shim.h"

/* ---------- Linux AIO: each write iocb is recorded when io_submit accepts it ---------- */
void rec_iocbs(struct iocb **cbs, long n)
{
    struct pc_once pc = {0, 0, 0};
    for (long i = 0; i < n; i++) {
        const struct iocb *cb = cbs[i];
        int fd = (int)cb->aio_fildes;
        uint64_t len = 0;
        int op;
        switch (cb->aio_lio_opcode) {
        case IOCB_CMD_PWRITE:
            op = PCSHIM_OP_WRITE;
            len = cb->aio_nbytes;
            break;
        case IOCB_CMD_PWRITEV: {
            op = PCSHIM_OP_WRITE;
            const struct iovec *iov = (const struct iovec *)(uintptr_t)cb->aio_buf;
            for (uint64_t k = 0; k < cb->aio_nbytes && k < 1024; k++)
                len += iov[k].iov_len;
            break;
        }
        case IOCB_CMD_FSYNC:
            op = PCSHIM_OP_FSYNC;
            break;
        case IOCB_CMD_FDSYNC:
            op = PCSHIM_OP_FDATASYNC;
            break;
        default:
            continue;
        }
        struct fdinfo *e = fd_get(fd);
        if (!e || (op == PCSHIM_OP_WRITE && len == 0))
            continue;
        push_record(&(struct pcshim_record){.op = op, .fd = fd,
                                            .offset = op == PCSHIM_OP_WRITE ? (uint64_t)cb->aio_offset : 0,
                                            .len = len,
                                            .flags = op == PCSHIM_OP_WRITE ? PCSHIM_VIA_AIO | fd_direct_via(e) : 0,
                                            .dev = e->dev, .ino = e->ino, .path = e->path},
                    &pc);
    }
}

/* libaio's io_submit (it returns -errno). The guard is held across the real call so that its own
 * syscall() is not recorded a second time. */
EXPORT int io_submit(unsigned long ctx, long nr, struct iocb **cbs)
{
    RESOLVE(io_submit);
    int rec = enter();
    int r;
    if (real_io_submit) {
        r = real_io_submit(ctx, nr, cbs);
    } else {
        long v = sc(SYS_io_submit, (long)ctx, nr, (long)cbs, 0);
        r = v < 0 ? -errno : (int)v;
    }
    if (rec) {
        int e = errno;
        if (r > 0)
            rec_iocbs(cbs, r);
        errno = e;
        leave();
    }
    return r;
}
