/* Parent writes p.dat; a forked child writes c.dat and exec's itself as "exec" which writes
 * e.dat and leaves with _exit(0); another forked child writes k.dat and leaves with _exit(4).
 * The parent exits 5. */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void put(const char *name, const char *s)
{
    int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (write(fd, s, strlen(s)) < 0)
        _exit(9);
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "exec")) {
        put("e.dat", "exec");
        _exit(0);
    }
    put("p.dat", "parent");
    pid_t c = fork();
    if (c == 0) {
        put("c.dat", "child");
        char *args[] = {argv[0], "exec", 0};
        execv(argv[0], args);
        _exit(8);
    }
    int st;
    waitpid(c, &st, 0);
    pid_t k = fork();
    if (k == 0) {
        put("k.dat", "kid");
        _exit(4);
    }
    waitpid(k, &st, 0);
    return WEXITSTATUS(st) == 4 ? 5 : 1;
}
