/* Three threads pwrite 8-byte records, each through its own third of x.dat in order, and a fourth
 * fputs 8-byte lines to s.txt, all in loops, while a fifth thread calls exit(3) after 30 ms: the
 * process ends cleanly (an E line, no torn record) and keeps what it recorded. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int fd;
static FILE *s;

static void *writer(void *arg)
{
    long t = (long)arg;
    for (long i = 0;; i = (i + 1) % 1000000)
        if (pwrite(fd, "01234567", 8, (t * 1000000 + i) * 8) != 8)
            abort();
    return NULL;
}

static void *liner(void *arg)
{
    (void)arg;
    for (;;)
        if (fputs("line 67\n", s) < 0)
            abort();
    return NULL;
}

static void *ender(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
    exit(3);
}

int main(void)
{
    fd = open("x.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    s = fopen("s.txt", "w");
    pthread_t th[5];
    for (long t = 0; t < 3; t++)
        pthread_create(&th[t], 0, writer, (void *)t);
    pthread_create(&th[3], 0, liner, NULL);
    pthread_create(&th[4], 0, ender, NULL);
    pthread_join(th[4], NULL);
    return 0;
}
