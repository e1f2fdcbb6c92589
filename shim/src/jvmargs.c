/* jvmargs.c: a `java` launcher that a recorded program runs itself (a start-up script, a server
 * started by a shell, a ProcessBuilder's child) gets the JVM options that start Java Flight
 * Recorder, so that its writes get their Java call paths as the recorded JVM's do. `record`
 * puts the options in PCSHIM_JFR (include/pcshim.h), separated by single spaces (its paths hold
 * no white space or comma: JFR could not take them); the exec hooks insert them right after
 * argv[0], where the launcher reads JVM options first and the program's own options still come
 * after them. A launcher given -XX:StartFlightRecording already (the recorded JVM itself, a
 * launcher that re-executes itself, a program's own recording) is left as it is. */
#include "shim.h"

#define JFR_MAX_OPTS 8

static char g_jfr_text[4 * PATH_MAX];
static char *g_jfr_opts[JFR_MAX_OPTS];
static int g_jfr_n;

void jfr_init(void)
{
    const char *e = getenv("PCSHIM_JFR");
    if (!e || !e[0] || strlen(e) >= sizeof g_jfr_text)
        return;
    memcpy(g_jfr_text, e, strlen(e) + 1);
    for (char *s = g_jfr_text; *s && g_jfr_n < JFR_MAX_OPTS;) {
        g_jfr_opts[g_jfr_n++] = s;
        char *sp = strchr(s, ' ');
        if (!sp)
            break;
        *sp = 0;
        s = sp + 1;
    }
}

size_t jfr_room(char *const argv[])
{
    size_t n = 0;
    while (argv && argv[n])
        n++;
    return n + (size_t)g_jfr_n + 1;
}

static int is_java(const char *p)
{
    if (!p)
        return 0;
    const char *base = strrchr(p, '/');
    return !strcmp(base ? base + 1 : p, "java");
}

char *const *jfr_argv(const char *p, char *const argv[], char **out)
{
    if (!g_record || !g_jfr_n || !argv || !argv[0] || !is_java(p))
        return argv;
    for (char *const *a = argv; *a; a++)
        if (!strncmp(*a, "-XX:StartFlightRecording", 24))
            return argv;
    size_t m = 0;
    out[m++] = argv[0];
    for (int i = 0; i < g_jfr_n; i++)
        out[m++] = g_jfr_opts[i];
    for (char *const *a = argv + 1; *a; a++)
        out[m++] = *a;
    out[m] = NULL;
    return out;
}
