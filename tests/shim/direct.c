/* O_DIRECT: d.dat opened twice, buffered (fd a) and O_DIRECT (fd b). Writes, in order: 8 KiB
 * buffered at 0; 8 KiB direct at 4096 (pwrite on b); 4 KiB buffered at 12288; then F_SETFL
 * O_DIRECT on a and 4 KiB through it at 16384; then F_SETFL back to buffered and 4 KiB at 20480.
 * Prints "direct ok", or "direct unsupported" when the file system refuses O_DIRECT. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096

int main(void)
{
    void *buf;
    if (posix_memalign(&buf, PAGE, 2 * PAGE) != 0)
        return 1;
    memset(buf, 'd', 2 * PAGE);
    int a = open("d.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int b = open("d.dat", O_WRONLY | O_DIRECT);
    if (a < 0)
        return 1;
    if (b < 0) {
        printf("direct unsupported\n");
        return 0;
    }
    int ok = pwrite(a, buf, 2 * PAGE, 0) == 2 * PAGE;
    ok = ok && pwrite(b, buf, 2 * PAGE, PAGE) == 2 * PAGE;
    ok = ok && pwrite(a, buf, PAGE, 3 * PAGE) == PAGE;
    int fl = fcntl(a, F_GETFL);
    ok = ok && fcntl(a, F_SETFL, fl | O_DIRECT) == 0;
    ok = ok && pwrite(a, buf, PAGE, 4 * PAGE) == PAGE;
    ok = ok && fcntl(a, F_SETFL, fl & ~O_DIRECT) == 0;
    ok = ok && pwrite(a, buf, PAGE, 5 * PAGE) == PAGE;
    close(a);
    close(b);
    free(buf);
    printf(ok ? "direct ok\n" : "direct failed\n");
    return ok ? 0 : 1;
}
