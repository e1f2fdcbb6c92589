/* freopen: stdout, stderr and a file stream reopened while other threads write to them, then
 * every stream written again from another thread. A hook that kept a stream's lock across
 * freopen (or fclose of a standard stream, whose object glibc keeps) would block the other
 * threads for ever. Prints "freopen ok" to the first stdout (a duplicate taken before the
 * reopening). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static FILE *g_file;

static void *late_writer(void *arg)
{
    (void)arg;
    /* stderr is closed: the call fails, it does not wait */
    return fprintf(stderr, "after fclose\n") < 0 ? NULL : arg;
}

static void *writer(void *arg)
{
    const char *who = arg;
    for (int i = 0; i < 200; i++) {
        fprintf(stderr, "%s err %d\n", who, i);
        fprintf(stdout, "%s out %d\n", who, i);
        fprintf(g_file, "%s file %d\n", who, i);
    }
    return NULL;
}

int main(void)
{
    int first = dup(1);
    g_file = fopen("file0.txt", "w");
    /* the ten-line case: stderr reopened, written here, then from a new thread */
    if (!freopen("err.txt", "w", stderr))
        return 1;
    fprintf(stderr, "main after freopen\n");
    pthread_t t[3];
    pthread_create(&t[0], NULL, writer, "a");
    pthread_join(t[0], NULL);
    /* all three reopened while two threads write to them */
    pthread_create(&t[1], NULL, writer, "b");
    pthread_create(&t[2], NULL, writer, "c");
    if (!freopen("out.txt", "w", stdout) || !freopen("err2.txt", "w", stderr) ||
        !freopen("file1.txt", "w", g_file))
        return 1;
    pthread_join(t[1], NULL);
    pthread_join(t[2], NULL);
    writer("d");
    fclose(g_file);
    fflush(NULL);
    /* glibc keeps the standard streams' objects after fclose: another thread still uses them */
    fclose(stderr);
    void *late = NULL;
    pthread_create(&t[0], NULL, late_writer, "late");
    pthread_join(t[0], &late);
    dprintf(first, late ? "late write succeeded\n" : "freopen ok\n");
    return 0;
}
