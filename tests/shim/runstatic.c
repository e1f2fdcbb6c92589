/* Runs argv[1] (a statically linked program) with posix_spawn, then with fork + execv, and a
 * dynamic one (argv[2]) with posix_spawnp by name through PATH; exits 0 when all exit 0. */
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    pid_t pid;
    int st, ok = 1;
    char *args[] = {argv[1], 0};
    if (posix_spawn(&pid, argv[1], 0, 0, args, environ) != 0)
        return 1;
    waitpid(pid, &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    pid = fork();
    if (pid == 0) {
        execv(argv[1], args);
        _exit(9);
    }
    waitpid(pid, &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    char *targs[] = {argv[2], 0};
    if (posix_spawnp(&pid, argv[2], 0, 0, targs, environ) != 0)
        return 1;
    waitpid(pid, &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    return ok ? 0 : 1;
}
