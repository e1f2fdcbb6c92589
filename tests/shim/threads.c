/* 4 threads x 500 pwrites of 10 bytes to one file; exits 0. */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

static int fd;

static void *worker(void *arg)
{
    long t = (long)arg;
    for (int i = 0; i < 500; i++)
        if (pwrite(fd, "0123456789", 10, (t * 500 + i) * 10) != 10)
            return (void *)1;
    return 0;
}

int main(void)
{
    pthread_t th[4];
    fd = open("t.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (long t = 0; t < 4; t++)
        pthread_create(&th[t], 0, worker, (void *)t);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], 0);
    close(fd);
    return 0;
}
