/* Signals landing anywhere, the shim included: the main loop fputs to s.txt and write()s to
 * w.dat while SIGALRM fires every 100 us; its handler fprintf's a line to h.txt (and so, when it
 * lands inside the shim, calls a hook with the guard held) and, at the 2000th signal, calls
 * exit(0) from the handler. Nothing may deadlock; the run ends with status 0. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static FILE *h;
static volatile sig_atomic_t n;

static void on_alarm(int sig)
{
    (void)sig;
    fprintf(h, "signal %d\n", (int)n);
    if (++n == 2000)
        exit(0);
}

int main(void)
{
    FILE *s = fopen("s.txt", "w");
    h = fopen("h.txt", "w");
    int fd = open("w.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (;;) {
        fputs("line of s\n", s);
        if (write(fd, "w", 1) != 1)
            return 1;
    }
}
