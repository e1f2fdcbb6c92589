/* Per-write cost: N pwrite()s of 64 bytes at offset 0 of argv[2] (default ./o.dat), each issued
 * from a call chain DEPTH functions deep (1..10, default 10; frame pointers kept). Prints
 * "<N> writes <ns> ns/write <ns> cpu-ns/write" (CLOCK_MONOTONIC, and CLOCK_PROCESS_CPUTIME_ID:
 * unaffected by waiting for a busy CPU) and exits 0. With 12 frames hashed, depth 10 ends inside
 * the program and depth 6 reaches libc's start-up frames (auto then walks the unwind rules).
 * Usage: overhead [N [FILE [DEPTH]]]. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NI __attribute__((noinline))
static int fd;
static char buf[64];

NI static int d0(void) { return pwrite(fd, buf, sizeof buf, 0) == sizeof buf; }
NI static int d1(void) { int r = d0(); __asm__ volatile(""); return r; }
NI static int d2(void) { int r = d1(); __asm__ volatile(""); return r; }
NI static int d3(void) { int r = d2(); __asm__ volatile(""); return r; }
NI static int d4(void) { int r = d3(); __asm__ volatile(""); return r; }
NI static int d5(void) { int r = d4(); __asm__ volatile(""); return r; }
NI static int d6(void) { int r = d5(); __asm__ volatile(""); return r; }
NI static int d7(void) { int r = d6(); __asm__ volatile(""); return r; }
NI static int d8(void) { int r = d7(); __asm__ volatile(""); return r; }
NI static int d9(void) { int r = d8(); __asm__ volatile(""); return r; }

int main(int argc, char **argv)
{
    static int (*const top[])(void) = {d0, d1, d2, d3, d4, d5, d6, d7, d8, d9};
    long n = argc > 1 ? atol(argv[1]) : 200000;
    long depth = argc > 3 ? atol(argv[3]) : 10;
    fd = open(argc > 2 ? argv[2] : "o.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || n <= 0 || depth < 1 || depth > 10)
        return 1;
    int (*const chain)(void) = top[depth - 1];
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    for (long i = 0; i < n; i++)
        if (!chain())
            return 1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
    double cpu = ((double)(cb.tv_sec - ca.tv_sec) * 1e9 + (double)(cb.tv_nsec - ca.tv_nsec)) / (double)n;
    close(fd);
    printf("%ld writes %.1f ns/write %.1f cpu-ns/write\n", n, ns, cpu);
    return 0;
}
