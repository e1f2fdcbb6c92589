/* A Redis-like exit path: 5 times, a forked child opens u<i>.dat and writes 3-byte records in a
 * tight loop until its parent sends SIGUSR1, whose handler calls _exit(0) (so the signal lands
 * inside the shim most of the time). The parent waits for each child and exits 0. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void on_usr1(int sig)
{
    (void)sig;
    _exit(0);
}

int main(void)
{
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "u%d.dat", i);
        int ready[2];
        if (pipe(ready) != 0)
            return 1;
        pid_t c = fork();
        if (c == 0) {
            signal(SIGUSR1, on_usr1);
            int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
            if (write(ready[1], "r", 1) != 1)
                _exit(2);
            for (;;)
                if (write(fd, "abc", 3) != 3)
                    _exit(3);
        }
        char b;
        if (read(ready[0], &b, 1) != 1)
            return 1;
        struct timespec ts = {0, 30 * 1000 * 1000};
        nanosleep(&ts, NULL);
        kill(c, SIGUSR1);
        int st;
        waitpid(c, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 1;
        close(ready[0]);
        close(ready[1]);
    }
    return 0;
}
