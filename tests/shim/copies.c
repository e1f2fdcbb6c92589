/* Bytes copied into a file by the kernel: copy_file_range (explicit and implicit offset),
 * sendfile (into a file; into a pipe it is not recorded), splice from a pipe, pwritev2 (explicit
 * offset and -1 = file position) and syscall(SYS_pwrite64). Prints "copies ok", exits 7. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void)
{
    int in = open("src.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (write(in, "0123456789abcdefghij", 20) != 20)
        return 1;
    int out = open("dst.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
    off_t src = 0, dst = 100;
    if (copy_file_range(in, &src, out, &dst, 10, 0) != 10) /* dst 100..110 */
        return 2;
    src = 0;
    if (copy_file_range(in, &src, out, NULL, 5, 0) != 5) /* dst position 0..5 */
        return 3;
    src = 0;
    if (sendfile(out, in, &src, 7) != 7) /* dst position 5..12 */
        return 4;
    int p[2];
    if (pipe(p) != 0)
        return 5;
    src = 0;
    if (sendfile(p[1], in, &src, 4) != 4) /* into a pipe: not a file write */
        return 5;
    char junk[4];
    if (read(p[0], junk, 4) != 4 || write(p[1], "xyz", 3) != 3)
        return 5;
    off_t at = 300;
    if (splice(p[0], NULL, out, &at, 3, 0) != 3) /* dst 300..303 */
        return 6;
    struct iovec v[2] = {{"ab", 2}, {"cde", 3}};
    if (pwritev2(out, v, 2, 50, 0) != 5 || pwritev2(out, v, 2, -1, 0) != 5) /* 50..55, 12..17 */
        return 7;
    if (syscall(SYS_pwrite64, out, "q", 1L, 400L) != 1) /* 400..401 */
        return 8;
    close(out);
    close(in);
    printf("copies ok\n");
    return 7;
}
