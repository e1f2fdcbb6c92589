/* io_uring set-up: the parent through syscall(SYS_io_uring_setup) (hooked), a forked child through
 * an inline system call (no hook sees it; its ring is still open at exit). Both are counted.
 * Writes u.dat normally; prints "uring ok", exits 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long raw_setup(unsigned entries, struct io_uring_params *p)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"((long)SYS_io_uring_setup), "D"((long)entries), "S"(p)
                     : "rcx", "r11", "memory");
    return r;
}

int main(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long ring = syscall(SYS_io_uring_setup, 4, &p);
    if (ring < 0)
        return 1;
    close((int)ring);
    pid_t c = fork();
    if (c == 0) {
        memset(&p, 0, sizeof p);
        _exit(raw_setup(4, &p) < 0 ? 2 : 0); /* exits with the ring open */
    }
    int st;
    if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 2;
    int fd = open("u.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "uring", 5) != 5)
        return 3;
    close(fd);
    printf("uring ok\n");
    return 0;
}
