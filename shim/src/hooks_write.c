/* hooks_write.c: the write family (write, pwrite, pwrite64, writev, pwritev, pwritev64, pwritev2),
 * the hot path: each is WRITE_HOOK (shim.h) with its own parameters and real call; the record is
 * rec_write's (rec.c). Writes that reach a file another way are in hooks_stdio.c, hooks_mmap.c
 * (msync), hooks_aio.c, hooks_copy.c and hooks_syscall.c. */
#include "shim.h"

WRITE_HOOK(write, (int fd, const void *buf, size_t n), (fd, buf, n), fd, -1, 0)
WRITE_HOOK(pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), fd, off, 0)
WRITE_HOOK(pwrite64, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), fd, off, 0)
WRITE_HOOK(writev, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), fd, -1, 0)
WRITE_HOOK(pwritev, (int fd, const struct iovec *iov, int cnt, off_t off), (fd, iov, cnt, off), fd, off, 0)
WRITE_HOOK(pwritev64, (int fd, const struct iovec *iov, int cnt, off_t off), (fd, iov, cnt, off), fd, off, 0)
WRITE_HOOK(pwritev2, (int fd, const struct iovec *iov, int cnt, off_t off, int flags), (fd, iov, cnt, off, flags),
           fd, off, 0)
