/* Descendants made without fork()+exec in the program: posix_spawn (inherited environment),
 * posix_spawn with an empty environment, system(), vfork+execve, clone() without CLONE_VM,
 * _Fork(), and execl after clearenv(). Each child writes its own file (sN.dat, "as child N").
 * Prints "spawn ok", exits 6. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void put(const char *name)
{
    int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || write(fd, name, strlen(name)) < 0)
        _exit(9);
    close(fd);
}

static int waited(pid_t p)
{
    int st;
    return waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int cloned(void *arg)
{
    put(arg);
    return 0;
}

static char stack[64 * 1024];

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "child")) {
        put(argv[2]);
        return 0;
    }
    pid_t p;
    char *a1[] = {argv[0], "child", "s1.dat", NULL};
    if (posix_spawn(&p, argv[0], NULL, NULL, a1, environ) != 0 || !waited(p))
        return 1;
    char *a2[] = {argv[0], "child", "s2.dat", NULL};
    char *none[] = {NULL};
    if (posix_spawn(&p, argv[0], NULL, NULL, a2, none) != 0 || !waited(p))
        return 2;
    if (system("echo s3 > s3.dat") != 0)
        return 3;
    char *a4[] = {argv[0], "child", "s4.dat", NULL};
    p = vfork();
    if (p == 0) {
        execve(argv[0], a4, environ);
        _exit(8);
    }
    if (!waited(p))
        return 4;
    p = clone(cloned, stack + sizeof stack, SIGCHLD, "s5.dat");
    if (p < 0 || !waited(p))
        return 5;
    p = _Fork();
    if (p == 0) {
        put("s6.dat");
        _exit(0);
    }
    if (!waited(p))
        return 6;
    p = fork();
    if (p == 0) {
        clearenv();
        execl(argv[0], argv[0], "child", "s7.dat", (char *)NULL);
        _exit(8);
    }
    if (!waited(p))
        return 7;
    printf("spawn ok\n");
    return 6;
}
