/* A program that closes every descriptor above 2 and then works with many files, as daemons do.
 * argv[1] says how it closes them: "range" close_range(3, ~0U, 0) through libc, "from"
 * closefrom(3), "raw" the close_range system call issued directly (no libc, as Go does), "loop"
 * close() on 3..4095. Then it opens N files (argv[2], default 1000) and keeps them open, writes
 * "file <i>\n" padded to 4 KiB into each, closes them all, and reads each back: prints
 * "closeall ok" when every file holds its own content. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static long raw_close_range(unsigned first, unsigned last, unsigned flags)
{
#if defined(__x86_64__)
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"((long)SYS_close_range), "D"((long)first), "S"((long)last), "d"((long)flags)
                     : "rcx", "r11", "memory");
    return r;
#else
    return syscall(SYS_close_range, first, last, flags);
#endif
}

static void content(int i, char *buf, size_t n)
{
    memset(buf, '.', n);
    int k = snprintf(buf, n, "file %d\n", i);
    buf[k] = '.';
    buf[n - 1] = '\n';
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "range";
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    if (!strcmp(how, "range"))
        close_range(3, ~0U, 0);
    else if (!strcmp(how, "from"))
        closefrom(3);
    else if (!strcmp(how, "raw"))
        raw_close_range(3, ~0U, 0);
    else
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
    int *fds = calloc((size_t)n, sizeof *fds);
    char name[64], buf[4096], got[4097];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "f%04d.dat", i);
        fds[i] = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fds[i] < 0) {
            perror(name);
            return 1;
        }
    }
    for (int i = 0; i < n; i++) {
        content(i, buf, sizeof buf);
        if (write(fds[i], buf, sizeof buf) != (ssize_t)sizeof buf) {
            perror("write");
            return 1;
        }
    }
    for (int i = 0; i < n; i++)
        if (close(fds[i]) != 0) {
            perror("close");
            return 1;
        }
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "f%04d.dat", i);
        int fd = open(name, O_RDONLY);
        content(i, buf, sizeof buf);
        if (fd < 0 || read(fd, got, sizeof got) != (ssize_t)sizeof buf || memcmp(got, buf, sizeof buf)) {
            fprintf(stderr, "%s: not its own content\n", name);
            return 1;
        }
        close(fd);
    }
    free(fds);
    printf("closeall ok\n");
    return 0;
}
