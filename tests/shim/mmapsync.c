/* Shared writable file mappings: msync of a range is recorded as a write of that range (page
 * granular, clipped to the mapping), also after the fd is closed, after a partial munmap and
 * after mremap. Private and read-only mappings are not. Prints "mmap ok", exits 4. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096

int main(void)
{
    int fd = open("m.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 4 * PG) != 0)
        return 1;
    char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PG); /* file pages 1..3 */
    char *ro = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
    char *priv = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED || ro == MAP_FAILED || priv == MAP_FAILED)
        return 1;
    close(fd);
    memset(m + PG + 10, 'a', 100);
    if (msync(m + PG, 100, MS_SYNC) != 0)         /* -> file offset 2*PG, one page */
        return 1;
    if (msync(m, 3 * PG, MS_ASYNC) != 0)          /* -> PG, three pages */
        return 1;
    priv[0] = 'p';
    if (msync(priv, PG, MS_SYNC) != 0 || msync(ro, PG, MS_SYNC) != 0) /* not recorded */
        return 1;
    if (munmap(m + PG, PG) != 0)                  /* hole: [m, m+PG) and [m+2PG, m+3PG) remain */
        return 1;
    if (msync(m + 2 * PG, PG, MS_SYNC) != 0)      /* -> 3*PG, one page */
        return 1;
    char *moved = mremap(m + 2 * PG, PG, 2 * PG, MREMAP_MAYMOVE); /* file pages 3..4 */
    if (moved == MAP_FAILED || msync(moved, 2 * PG, MS_SYNC) != 0) /* -> 3*PG, two pages */
        return 1;
    if (msync(m, PG, MS_INVALIDATE) != 0)         /* neither MS_SYNC nor MS_ASYNC: no write */
        return 1;
    munmap(m, PG);
    munmap(moved, 2 * PG);
    munmap(ro, PG);
    munmap(priv, PG);
    printf("mmap ok\n");
    return 4;
}
