/* Write-lifetime hints passed the wrong way and the right way. a.dat and b.dat get their hint as a
 * 4-byte int (SHORT, then EXTREME) with non-zero bytes above it, as RocksDB 7.x passes its enum:
 * Linux reads 8 bytes and refuses them (EINVAL). c.dat gets a correct u64 MEDIUM; d.dat a value
 * with no level in it. Each file then gets 8 KiB. Prints each fcntl's result and errno, so a run
 * under the recorder can be compared with a plain run. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef F_SET_RW_HINT
#define F_SET_RW_HINT 1036
#endif

/* An int followed by other bytes, as an enum local is followed by its neighbours on the stack. */
struct int_hint {
    int32_t level;
    int32_t after;
};

static int put(const char *name, const void *hint)
{
    static char buf[8192];
    memset(buf, 'h', sizeof buf);
    int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        return 0;
    errno = 0;
    int r = fcntl(fd, F_SET_RW_HINT, hint);
    printf("%s %d %d\n", name, r, r < 0 ? errno : 0);
    int ok = write(fd, buf, sizeof buf) == (ssize_t)sizeof buf;
    close(fd);
    return ok;
}

int main(void)
{
    struct int_hint a = {2, 0x5a5a}, b = {5, -1};
    uint64_t c = 3, d = 0xdeadbeefdeadbeefULL;
    int ok = put("a.dat", &a) && put("b.dat", &b) && put("c.dat", &c) && put("d.dat", &d);
    return ok ? 0 : 1;
}
