/* Writes from a signal handler and from a plain call, three times each (argc bounds the loop,
 * so it is not unrolled into three call sites). The signal is raised at one call site, so the handler's stack (handler < signal frame < raise < main) is the same
 * every time. Built without frame pointers: auto walks the call-frame rules, gives up at the
 * signal frame and lets libunwind walk it. Exits 0. */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#define NI __attribute__((noinline))
static int fd;

static void on_usr2(int sig)
{
    (void)sig;
    if (write(fd, "h", 1) != 1)
        _exit(2);
}

NI static void plain(void)
{
    if (write(fd, "p", 1) != 1)
        _exit(3);
    __asm__ volatile("");
}

int main(int argc, char **argv)
{
    (void)argv;
    fd = open("hw.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || signal(SIGUSR2, on_usr2) == SIG_ERR)
        return 1;
    for (int i = 0; i < argc + 2; i++) {
        raise(SIGUSR2);
        plain();
    }
    return close(fd) == 0 ? 0 : 1;
}
