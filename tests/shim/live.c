/* Live hints: two call paths with different data lifetimes.
 *   live two     short.dat: 64 KiB rewritten (and fsync'ed) 40 times per round by write_short;
 *                long.dat: 2 MiB written once per round by write_long; 4 rounds
 *   live one     the same two paths on two regions of one file, both.dat (the hard case: one inode,
 *                one hint at a time, the pages of both paths dirty at the same writeback)
 *   live onelazy as one, but neither path syncs: one fsync per round, so the pages of both paths
 *                are dirty at the same writeback and carry the hint the inode holds then
 *   live reuse   as two, but long.dat is unlinked and created again before each round (a file system
 *                that reuses inode numbers gives the new file the old one's); prints "round ino"
 *   live hinted  as two, but the program sets LONG (4) on short.dat itself first
 *   live threads two threads writing one file each through write_short / write_long, then a fork
 *                whose child writes through write_long; exits 7; prints "done"
 * Prints the inode numbers of the files it wrote, one "name ino" per line. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB 1024
static char buf[64 * KIB];
static int lazy; /* onelazy: the paths do not sync */

__attribute__((noinline)) static void put(int fd, off_t off, size_t n)
{
    if (pwrite(fd, buf, n, off) != (ssize_t)n)
        _exit(3);
}

__attribute__((noinline)) void write_short(int fd, off_t at)
{
    put(fd, at, sizeof buf);
    if (!lazy)
        fdatasync(fd);
}

__attribute__((noinline)) void write_long(int fd, off_t at, int chunks)
{
    for (int i = 0; i < chunks; i++)
        put(fd, at + (off_t)i * (off_t)sizeof buf, sizeof buf);
    if (!lazy)
        fdatasync(fd);
}

static int open_file(const char *name)
{
    int fd = open(name, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0)
        _exit(2);
    return fd;
}

static void show(const char *name, int fd)
{
    struct stat st;
    fstat(fd, &st);
    printf("%s %lu\n", name, (unsigned long)st.st_ino);
}

static void *thread_short(void *arg)
{
    int fd = *(int *)arg;
    for (int i = 0; i < 20; i++)
        write_short(fd, 0);
    return NULL;
}

static void *thread_long(void *arg)
{
    int fd = *(int *)arg;
    write_long(fd, 0, 8);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "two";
    memset(buf, 'x', sizeof buf);
    if (!strcmp(mode, "threads")) {
        int a = open_file("short.dat"), b = open_file("long.dat");
        pthread_t t1, t2;
        pthread_create(&t1, NULL, thread_short, &a);
        pthread_create(&t2, NULL, thread_long, &b);
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        pid_t child = fork();
        if (child == 0) {
            int c = open_file("child.dat");
            write_long(c, 0, 4);
            _exit(0);
        }
        int st = 0;
        waitpid(child, &st, 0);
        printf("done\n");
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 7 : 1;
    }
    lazy = !strcmp(mode, "onelazy");
    int reuse = !strcmp(mode, "reuse");
    int one = lazy || !strcmp(mode, "one");
    int s = open_file(one ? "both.dat" : "short.dat");
    int l = one ? s : open_file("long.dat");
    if (!strcmp(mode, "hinted")) {
        uint64_t h = 4;
        if (fcntl(s, F_SET_RW_HINT, &h) != 0)
            return 4;
    }
    off_t long_at = one ? 1024 * KIB : 0; /* one file: the long path's region after the short one's */
    for (int round = 0; round < 4; round++) {
        if (reuse && round > 0) {
            close(l);
            unlink("long.dat");
            l = open_file("long.dat");
        }
        if (reuse) {
            struct stat st;
            fstat(l, &st);
            printf("round%d %lu\n", round, (unsigned long)st.st_ino);
        }
        write_long(l, long_at, 32);
        for (int i = 0; i < 40; i++)
            write_short(s, 0);
        if (lazy)
            fsync(s);
    }
    show(one ? "both" : "short", s);
    if (!one)
        show("long", l);
    return 0;
}
