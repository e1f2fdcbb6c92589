/* Write-lifetime hints: h.dat gets F_SET_RW_HINT SHORT (2), then 4096 bytes; k.dat LONG (4), then
 * 4096 bytes. Prints "hint ok", or "hint unsupported" when the kernel refuses the hint. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef F_SET_RW_HINT
#define F_SET_RW_HINT 1036
#endif

static int put(const char *name, uint64_t hint)
{
    static char buf[4096];
    memset(buf, 'h', sizeof buf);
    int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || fcntl(fd, F_SET_RW_HINT, &hint) != 0)
        return 0;
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        return 0;
    close(fd);
    return 1;
}

int main(void)
{
    int ok = put("h.dat", 2) && put("k.dat", 4);
    printf(ok ? "hint ok\n" : "hint unsupported\n");
    return 0;
}
