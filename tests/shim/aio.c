/* Linux AIO through libaio: one io_submit of a pwrite, a pwritev (2 x 512 B) and an fsync, then a
 * pwrite submitted with syscall(SYS_io_submit). Each write iocb is one record (flags: AIO), none
 * twice (libaio itself calls syscall()). Prints "aio ok", exits 0. Needs libaio-dev. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libaio.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char a[4096], b[512], c[512], d[100];

int main(void)
{
    int fd = open("aio.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
    io_context_t ctx = 0;
    if (fd < 0 || io_setup(8, &ctx) != 0)
        return 1;
    memset(a, 'a', sizeof a);
    struct iocb w, v, s, r;
    struct iovec iov[2] = {{b, sizeof b}, {c, sizeof c}};
    io_prep_pwrite(&w, fd, a, sizeof a, 0);
    io_prep_pwritev(&v, fd, iov, 2, 8192);
    io_prep_fsync(&s, fd);
    struct iocb *cbs[3] = {&w, &v, &s};
    if (io_submit(ctx, 3, cbs) != 3)
        return 2;
    struct io_event ev[4];
    if (io_getevents(ctx, 3, 3, ev, NULL) != 3)
        return 3;
    io_prep_pwrite(&r, fd, d, sizeof d, 20000);
    struct iocb *one[1] = {&r};
    if (syscall(SYS_io_submit, ctx, 1L, one) != 1 || io_getevents(ctx, 1, 1, ev, NULL) != 1)
        return 4;
    io_destroy(ctx);
    close(fd);
    printf("aio ok\n");
    return 0;
}
