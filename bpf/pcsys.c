/* pcsys.c: the loader of pcsys.bpf.c (`pcsys-capture`): it loads and attaches the program, follows
 * one command it starts or processes that run already, and writes what the program sends as the
 * shim's logs (pcsys_out.c; formats in shim/include/pcshim.h and shim/include/pcsys.h).
 *
 *   pcsys-capture -o DIR [--auto] [--preload SO] [--frames N] -- CMD [ARGS...]
 *       starts CMD once attached and follows it and its descendants until CMD ends; exits with
 *       CMD's status (128+N when signal N ended it), as a shell does
 *   pcsys-capture -o DIR --pid PID[,PID...] [--duration S]
 *       follows running processes (their threads and later children) until S seconds passed,
 *       SIGINT or SIGTERM, or they all ended; exits 0
 *   pcsys-capture --probe      load and attach only, then exit
 *
 * --auto records only the process images the shim cannot enter (see pcsys_out.c); --preload puts
 * SO in front of CMD's LD_PRELOAD (only CMD's: the loader itself must not be recorded by it). The
 * counts go to DIR/pcsys.json (and, with --pid, to stdout as one JSON line).
 *
 * Exit status of its own: 2 usage, 3 the program cannot be loaded or attached (one line on stderr
 * saying why), 4 the logs cannot be written. Needs root (CAP_BPF and CAP_PERFMON) and BTF. SIGINT,
 * SIGTERM and SIGHUP do not stop a capture of CMD: they are for CMD (record sends them to CMD's
 * whole process group), and the capture ends when CMD does. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pcsys_loader.h"
#include "pcsys.skel.h"

#define MAX_PIDS 64
/* How often the ring buffer is read without a wakeup (the program wakes us when it is an eighth
 * full). */
#define POLL_MS 10

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

/* libbpf's last message, to explain a failure. */
static char g_last[512];
static int g_verbose;
static int on_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    if (g_verbose)
        fputs(line, stderr);
    if (level != LIBBPF_DEBUG && line[0] && line[0] != '\n') {
        line[strcspn(line, "\n")] = 0;
        if (snprintf(g_last, sizeof g_last, "%s", line) < 0)
            g_last[0] = 0;
    }
    return 0;
}

static int fail_load(const char *what, int err)
{
    const char *hint = "";
    if (err == EPERM || (err == EACCES && geteuid() != 0))
        hint = " (needs root: CAP_BPF and CAP_PERFMON)";
    else if (err == EACCES)
        hint = " (the verifier refused it: --verbose prints its log)";
    else if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
        hint = " (the kernel has no BTF: /sys/kernel/btf/vmlinux is missing)";
    fprintf(stderr, "pcsys-capture: %s: %s%s%s%s\n", what, strerror(err), hint, g_last[0] ? "; libbpf: " : "",
            g_last);
    return 3;
}

struct args {
    const char *out, *preload;
    unsigned rb_mib, stack_copy;
    int frames, only_unreachable, probe, npids;
    double duration;
    unsigned pids[MAX_PIDS];
    char **cmd;
};

static void usage(FILE *to)
{
    fprintf(to, "usage: pcsys-capture -o DIR [--auto] [--preload SO] [--frames N] [--ringbuf-mib N] [--stack-copy B] -- CMD [ARGS...]\n"
                "       pcsys-capture -o DIR --pid PID[,PID...] [--duration S] [--auto] [--frames N]\n"
                "       pcsys-capture --probe\n");
}

static int parse_pids(const char *s, struct args *a)
{
    char *end;
    while (*s) {
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || a->npids == MAX_PIDS || (*end && *end != ','))
            return -1;
        a->pids[a->npids++] = (unsigned)v;
        s = *end ? end + 1 : end;
    }
    return a->npids ? 0 : -1;
}

/* -1 to go on, else the exit status (0 after --help, 2 on a usage error, said on stderr). */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"pid", required_argument, 0, 'p'},
        {"duration", required_argument, 0, 'd'}, {"frames", required_argument, 0, 'f'},
        {"auto", no_argument, 0, 'a'}, {"preload", required_argument, 0, 'l'},
        {"ringbuf-mib", required_argument, 0, 'b'}, {"probe", no_argument, 0, 'P'},
        {"stack-copy", required_argument, 0, 's'},
        {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "+o:p:d:f:al:b:s:Pvh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case 'p':
            if (parse_pids(optarg, a) != 0) {
                fprintf(stderr, "pcsys-capture: --pid %s: expected PID[,PID...] (at most %d)\n", optarg, MAX_PIDS);
                return 2;
            }
            break;
        case 'd':
            a->duration = strtod(optarg, &end);
            if (*end || a->duration < 0) {
                fprintf(stderr, "pcsys-capture: --duration %s: expected seconds >= 0\n", optarg);
                return 2;
            }
            break;
        case 'f':
            a->frames = (int)strtol(optarg, &end, 10);
            if (*end || a->frames < 1 || a->frames > 64) {
                fprintf(stderr, "pcsys-capture: --frames %s: expected 1..64\n", optarg);
                return 2;
            }
            break;
        case 'a': a->only_unreachable = 1; break;
        case 'l': a->preload = optarg; break;
        case 'b':
            a->rb_mib = (unsigned)strtoul(optarg, NULL, 10);
            if (a->rb_mib == 0 || a->rb_mib > 1024 || (a->rb_mib & (a->rb_mib - 1))) {
                fprintf(stderr, "pcsys-capture: --ringbuf-mib %s: a power of two from 1 to 1024\n", optarg);
                return 2;
            }
            break;
        case 's':
            /* bytes of user stack sent with each stack for unwinding (0: frame pointers only) */
            a->stack_copy = (unsigned)strtoul(optarg, &end, 10);
            if (*end || a->stack_copy > PCSYS_STACK_COPY) {
                fprintf(stderr, "pcsys-capture: --stack-copy %s: expected 0..%d bytes\n", optarg, PCSYS_STACK_COPY);
                return 2;
            }
            break;
        case 'P': a->probe = 1; break;
        case 'v': g_verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    a->cmd = optind < argc ? argv + optind : NULL;
    if (!a->probe && (!a->out || (!a->cmd) == (!a->npids))) {
        usage(stderr);
        return 2;
    }
    return -1;
}

static int open_program(const struct args *a, struct pcsys_bpf **skel_out)
{
    struct pcsys_bpf *skel = pcsys_bpf__open();
    if (!skel)
        return fail_load("cannot open the BPF program", errno ? errno : EINVAL);
    /* the signature's frames, and room for the C library's wrappers skipped before them */
    skel->rodata->stack_frames = (unsigned)a->frames + 4 < PCSYS_MAX_FRAMES ? (unsigned)a->frames + 4 : PCSYS_MAX_FRAMES;
    skel->rodata->ustack_bytes = a->stack_copy;
    int err = bpf_map__set_max_entries(skel->maps.events, a->rb_mib << 20);
    if (!err)
        err = pcsys_bpf__load(skel);
    if (err) {
        pcsys_bpf__destroy(skel);
        return fail_load("cannot load the BPF program", -err);
    }
    err = pcsys_bpf__attach(skel);
    if (err) {
        pcsys_bpf__destroy(skel);
        return fail_load("cannot attach to the syscalls and sched tracepoints", -err);
    }
    *skel_out = skel;
    return 0;
}

static int g_procs_fd = -1;

static int on_event(void *ctx, void *data, size_t size)
{
    (void)ctx;
    const struct pcsys_event *e = data;
    if (size >= sizeof(struct pcsys_maps) && e->kind == PCSYS_MAPS) {
        unwind_maps(data);
        return 0;
    }
    if (size >= offsetof(struct pcsys_ustack, data) && e->kind == PCSYS_USTACK) {
        e = unwind_take(data, size);
        if (!e)
            return 0;
    } else if (size < sizeof(struct pcsys_event)) {
        return 0;
    } else if (e->flags & PCSYS_F_USTACK) {
        unwind_keep(e); /* until its stack, the next record of its thread */
        return 0;
    }
    if (unwind_emit(e)) {
        __u32 pid = e->pid, quiet = PCSYS_QUIET;
        bpf_map_update_elem(g_procs_fd, &pid, &quiet, BPF_EXIST);
    }
    return 0;
}

static void follow(unsigned pid)
{
    __u32 key = pid, v = PCSYS_FOLLOW;
    bpf_map_update_elem(g_procs_fd, &key, &v, BPF_ANY);
}

/* Start CMD once `go` is written to; its pid. */
static pid_t start_child(const struct args *a, int *go)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(p[1]);
        if (read(p[0], &c, 1) != 1)
            _exit(3); /* the capture could not start: the loader said why */
        if (a->preload) {
            const char *old = getenv("LD_PRELOAD");
            char *v = NULL;
            if (asprintf(&v, "%s%s%s", a->preload, old && *old ? ":" : "", old && *old ? old : "") < 0)
                _exit(127);
            setenv("LD_PRELOAD", v, 1);
        }
        execvp(a->cmd[0], a->cmd);
        fprintf(stderr, "pcsys-capture: %s: %s\n", a->cmd[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(p[0]);
    *go = p[1];
    return pid;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int any_alive(const struct args *a)
{
    for (int i = 0; i < a->npids; i++)
        if (kill((pid_t)a->pids[i], 0) == 0 || errno == EPERM)
            return 1;
    return 0;
}

/* Poll until the end (see the top); the child's wait status in *status (CMD mode). */
static void run(const struct args *a, struct ring_buffer *rb, pid_t child, int *status)
{
    double until = a->duration > 0 ? now_s() + a->duration : 0;
    for (;;) {
        int n = ring_buffer__poll(rb, POLL_MS);
        /* The BPF program wakes the poll only when the ring is an eighth full: read what came
         * since, so events are read while their processes still run (their maps, for unwinding) */
        if (n == 0)
            n = ring_buffer__consume(rb);
        if (n < 0 && n != -EINTR) {
            fprintf(stderr, "pcsys-capture: reading the ring buffer: %s\n", strerror(-n));
            break;
        }
        if (child > 0) {
            if (waitpid(child, status, WNOHANG) == child)
                break;
            continue;
        }
        if (g_stop || (until && now_s() >= until) || !any_alive(a))
            break;
    }
}

static void write_summary(const struct args *a, struct pcsys_bpf *skel, int status)
{
    struct out_counts c = out_counts();
    char name[4096], line[512];
    snprintf(line, sizeof line,
             "{\"events\": %llu, \"records\": %llu, \"write_bytes\": %llu, \"images\": %llu, "
             "\"recorded_images\": %llu, \"lost\": %llu, \"status\": %d}\n",
             (unsigned long long)c.events, (unsigned long long)c.records, (unsigned long long)c.write_bytes,
             (unsigned long long)c.images, (unsigned long long)c.recorded_images,
             (unsigned long long)skel->bss->lost_events, status);
    snprintf(name, sizeof name, "%s/pcsys.json", a->out);
    FILE *f = fopen(name, "w");
    if (f) {
        fputs(line, f);
        fclose(f);
    }
    if (!a->cmd)
        fputs(line, stdout);
}

static int exit_status(int ws) { return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws); }

int main(int argc, char **argv)
{
    struct args a = {.rb_mib = 64, .frames = 12, .stack_copy = PCSYS_STACK_COPY};
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    libbpf_set_print(on_libbpf_print);
    struct pcsys_bpf *skel = NULL;
    status = open_program(&a, &skel);
    if (status)
        return status;
    if (a.probe) {
        pcsys_bpf__destroy(skel);
        puts("ok");
        return 0;
    }
    g_procs_fd = bpf_map__fd(skel->maps.procs);
    struct out_opts o = {.dir = a.out, .frames = a.frames, .only_unreachable = a.only_unreachable};
    out_init(&o);
    frames_init();
    unwind_init(a.preload);
    struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, NULL, NULL);
    if (!rb) {
        pcsys_bpf__destroy(skel);
        return fail_load("cannot open the ring buffer", errno ? errno : EINVAL);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    int go = -1, ws = 0;
    pid_t child = a.cmd ? start_child(&a, &go) : 0;
    if (child < 0) {
        fprintf(stderr, "pcsys-capture: cannot start %s: %s\n", a.cmd[0], strerror(errno));
        return 3;
    }
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (child) {
        follow((unsigned)child);
        if (write(go, "g", 1) != 1)
            kill(child, SIGKILL);
        close(go);
    } else {
        for (int i = 0; i < a.npids; i++) {
            follow(a.pids[i]);
            out_attach(a.pids[i]);
        }
    }
    run(&a, rb, child, &ws);
    pcsys_bpf__detach(skel);
    ring_buffer__consume(rb);
    unwind_drain();
    out_finish(skel->bss->lost_events);
    status = child ? exit_status(ws) : 0;
    write_summary(&a, skel, status);
    ring_buffer__free(rb);
    pcsys_bpf__destroy(skel);
    int err = out_counts().error;
    if (err) {
        fprintf(stderr, "pcsys-capture: %s: writing the logs failed (%s)\n", a.out, strerror(err));
        return child ? status : 4;
    }
    return status;
}
