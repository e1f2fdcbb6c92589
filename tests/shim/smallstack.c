/* A thread with a 64 KiB stack (what some servers give their helper threads) writes 100 bytes
 * with pwrite, one at a time, in auto's call-frame walk (no frame pointers needed): glibc carves
 * the static TLS of every loaded library out of that stack, so the shim's must stay small.
 * Exits 0; 3 if the thread could not be created. */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

static void *run(void *arg)
{
    int fd = *(int *)arg;
    for (int i = 0; i < 100; i++)
        if (pwrite(fd, "s", 1, i) != 1)
            return (void *)1;
    return NULL;
}

int main(void)
{
    int fd = open("ss.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    pthread_attr_t a;
    pthread_t t;
    void *r = NULL;
    if (fd < 0 || pthread_attr_init(&a) != 0 || pthread_attr_setstacksize(&a, 64 * 1024) != 0)
        return 2;
    if (pthread_create(&t, &a, run, &fd) != 0)
        return 3;
    pthread_join(t, &r);
    return r ? 4 : close(fd);
}
