/* write, pwrite, writev, pwritev, fsync, fdatasync, sync_file_range, ftruncate, fallocate, dup2,
 * rename, truncate, unlink on files in the current directory; prints "basic ok", exits 3. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void)
{
    int fd = open("a.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (write(fd, "hello", 5) != 5)
        return 1;
    if (pwrite(fd, "xx", 2, 100) != 2)
        return 1;
    struct iovec v[2] = {{"ab", 2}, {"cde", 3}};
    if (writev(fd, v, 2) != 5)
        return 1;
    if (pwritev(fd, v, 2, 200) != 5)
        return 1;
    fsync(fd);
    fdatasync(fd);
    sync_file_range(fd, 0, 4096, SYNC_FILE_RANGE_WRITE);
    ftruncate(fd, 150);
    int d = dup2(fd, 77);
    if (write(d, "z", 1) != 1)
        return 1;
    close(d);
    close(fd);
    rename("a.dat", "b.dat");
    truncate("b.dat", 3);
    unlink("b.dat");
    if (write(1, "basic ok\n", 9) != 9) /* stdout: a pipe, not recorded */
        return 1;
    return 3;
}
