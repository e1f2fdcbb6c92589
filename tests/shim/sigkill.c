/* 300 writes (more than one shim buffer of 256 records), then SIGKILL: the rest is lost. */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

int main(void)
{
    int fd = open("k.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 300; i++)
        if (write(fd, "x", 1) != 1)
            return 1;
    kill(getpid(), SIGKILL);
    return 0;
}
