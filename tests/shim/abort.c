/* Ten writes of 4 bytes (fewer than one shim buffer), then abort(): the records survive. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    int fd = open("a.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 10; i++)
        if (write(fd, "abcd", 4) != 4)
            return 1;
    abort();
}
