/* Three writes, then SIGTERM to itself: the shim flushes and the program still dies of SIGTERM. */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

int main(void)
{
    int fd = open("s.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 3; i++)
        if (write(fd, "abcd", 4) != 4)
            return 1;
    kill(getpid(), SIGTERM);
    pause();
    return 0;
}
