/* Shared writable mappings: m.dat (3 pages) is stored into and unmapped without msync; n.dat
 * (2 pages) is stored into, msync'ed and unmapped; o.dat (1 page) is stored into and still
 * mapped at exit. Prints "mmapwarn ok". */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *map(const char *name, size_t len)
{
    int fd = open(name, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0)
        return NULL;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return NULL;
    memset(p, 'm', len);
    return p;
}

int main(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    char *m = map("m.dat", 3 * pg), *n = map("n.dat", 2 * pg), *o = map("o.dat", pg);
    if (!m || !n || !o)
        return 1;
    munmap(m, 3 * pg);
    msync(n, 2 * pg, MS_SYNC);
    munmap(n, 2 * pg);
    printf("mmapwarn ok\n");
    return 0;
}
