/* Two call sites sharing their 5 innermost frames (c5..c1) but reached from a1 or b1; built with
 * frame pointers and no inlining. Writes from a1 once ("twice": twice, from the same site), then b1. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int fd;
#define NI __attribute__((noinline))
NI static void c5(int x) { if (pwrite(fd, "w", 1, x) != 1) _exit(1); __asm__ volatile(""); }
NI static void c4(int x) { c5(x); __asm__ volatile(""); }
NI static void c3(int x) { c4(x); __asm__ volatile(""); }
NI static void c2(int x) { c3(x); __asm__ volatile(""); }
NI static void c1(int x) { c2(x); __asm__ volatile(""); }
NI static void a1(int x) { c1(x); __asm__ volatile(""); }
NI static void b1(int x) { c1(x); __asm__ volatile(""); }

int main(int argc, char **argv)
{
    fd = open("cs.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int n = argc > 1 && !strcmp(argv[1], "twice") ? 2 : 1;
    for (int i = 0; i < n; i++)
        a1(2 * i);
    b1(1);
    close(fd);
    return 0;
}
