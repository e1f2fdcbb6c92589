/* pcbio.c: the loader of pcbio.bpf.c (`pcbio-capture`). It loads and attaches the program for one
 * block device, writes what it sends to a file (format in pcbio.h) until SIGINT or SIGTERM, then
 * drains the ring buffer, ends the file with its counts and prints them as one JSON line.
 *
 *   pcbio-capture --dev MAJ:MIN -o FILE [--ringbuf-mib N]   capture (prints "ready" once attached)
 *   pcbio-capture --probe                                      load and attach only, then exit
 *
 * Exit status: 0 done, 2 usage, 3 the program cannot be loaded or attached (one line on stderr
 * saying why, with libbpf's last messages), 4 the output cannot be written. Needs root (CAP_BPF
 * and CAP_PERFMON) and a kernel with BTF (/sys/kernel/btf/vmlinux). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/types.h>

#include "pcbio.h"
#include "pcbio.skel.h"

_Static_assert(sizeof(struct pcbio_header) == PCBIO_RECORD_BYTES, "header record size");
_Static_assert(sizeof(struct pcbio_bio_record) == PCBIO_RECORD_BYTES, "bio record size");
_Static_assert(sizeof(struct pcbio_run_record) == PCBIO_RECORD_BYTES, "run record size");
_Static_assert(sizeof(struct pcbio_end) == PCBIO_RECORD_BYTES, "end record size");

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

/* libbpf's messages, kept to explain a failure (the last few lines). */
static char g_log[4096];
static int g_verbose;
static int on_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    if (g_verbose)
        fputs(line, stderr);
    if (level == LIBBPF_DEBUG)
        return 0;
    size_t have = strlen(g_log), add = strlen(line);
    if (add >= sizeof g_log)
        return 0;
    if (have + add >= sizeof g_log) {
        memmove(g_log, g_log + (have + add - sizeof g_log + 1), sizeof g_log - add);
        have = strlen(g_log);
    }
    memcpy(g_log + have, line, add + 1);
    return 0;
}

static __u64 now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* ---------- writing ---------- */

static FILE *g_out;
static long g_out_fd = -1;
static __u64 g_bios, g_runs, g_orphans, g_truncated;
static int g_write_error;

/* The last bios, to find the record of a continuation message's bio. */
#define RECENT 1024
static struct { __u64 cookie, ts_ns, idx; long offset; __u32 nruns; } g_recent[RECENT];

static void put(const void *rec)
{
    if (fwrite(rec, PCBIO_RECORD_BYTES, 1, g_out) != 1)
        g_write_error = errno ? errno : EIO;
}

static void patch_bio(long offset, __u8 flags, __u32 nruns)
{
    /* rare (a bio with more runs than one message holds): rewrite flags and nruns in place */
    struct pcbio_bio_record rec;
    if (fflush(g_out) != 0 || pread((int)g_out_fd, &rec, sizeof rec, offset) != (ssize_t)sizeof rec) {
        g_write_error = errno ? errno : EIO;
        return;
    }
    rec.flags |= flags;
    rec.nruns = nruns;
    if (pwrite((int)g_out_fd, &rec, sizeof rec, offset) != (ssize_t)sizeof rec)
        g_write_error = errno ? errno : EIO;
}

static int on_msg(void *ctx, void *data, size_t size)
{
    (void)ctx;
    const struct pcbio_msg *m = data;
    size_t head = sizeof(*m) - sizeof(m->runs);
    if (size < head)
        return 0;
    __u32 n = m->nruns;
    if (n > PCBIO_RUNS_PER_MSG || head + n * sizeof(m->runs[0]) > size)
        n = (__u32)((size - head) / sizeof(m->runs[0]));
    __u64 idx;
    unsigned slot = (unsigned)((m->bio.cookie >> 6) ^ m->bio.ts_ns) % RECENT;
    if (m->bio.part == 0) {
        struct pcbio_bio_record r;
        memset(&r, 0, sizeof r);
        r.kind = PCBIO_KIND_BIO;
        r.op = m->bio.op;
        r.flags = m->bio.flags;
        r.hint = m->bio.hint;
        r.pid = m->bio.pid;
        r.ts_ns = m->bio.ts_ns;
        r.sector = m->bio.sector;
        r.bytes = m->bio.bytes;
        r.dev = m->bio.dev;
        r.nruns = n;
        memcpy(r.comm, m->bio.comm, sizeof r.comm);
        /* records before this one: the header, the bios and the runs */
        long offset = (long)((1 + g_bios + g_runs) * PCBIO_RECORD_BYTES);
        idx = g_bios++;
        g_recent[slot].cookie = m->bio.cookie;
        g_recent[slot].ts_ns = m->bio.ts_ns;
        g_recent[slot].idx = idx;
        g_recent[slot].offset = offset;
        g_recent[slot].nruns = n;
        if (r.flags & PCBIO_F_TRUNCATED)
            g_truncated++;
        put(&r);
    } else {
        if (g_recent[slot].cookie != m->bio.cookie || g_recent[slot].ts_ns != m->bio.ts_ns) {
            g_orphans++;
            return 0;
        }
        idx = g_recent[slot].idx;
        g_recent[slot].nruns += n;
        if (m->bio.flags & PCBIO_F_TRUNCATED)
            g_truncated++;
        patch_bio(g_recent[slot].offset, m->bio.flags & PCBIO_F_TRUNCATED, g_recent[slot].nruns);
    }
    for (__u32 i = 0; i < n; i++) {
        struct pcbio_run_record r;
        memset(&r, 0, sizeof r);
        r.kind = PCBIO_KIND_RUN;
        r.pages = m->runs[i].pages;
        r.bio = idx;
        r.ino = m->runs[i].ino;
        r.index = m->runs[i].index;
        r.bio_page = m->runs[i].bio_page;
        r.sdev = m->runs[i].sdev;
        g_runs++;
        put(&r);
    }
    return 0;
}

/* ---------- main ---------- */

static void usage(FILE *to)
{
    fprintf(to, "usage: pcbio-capture --dev MAJ:MIN -o FILE [--ringbuf-mib N] [--verbose]\n"
                "       pcbio-capture --probe\n");
}

static int fail_load(const char *what, int err)
{
    /* one line: what failed, why, and libbpf's last message */
    char last[512] = "";
    char *end = g_log + strlen(g_log);
    while (end > g_log && (end[-1] == '\n' || end[-1] == ' '))
        *--end = 0;
    char *start = strrchr(g_log, '\n');
    snprintf(last, sizeof last, "%s", start ? start + 1 : g_log);
    const char *hint = "";
    if (err == EPERM || err == EACCES)
        hint = " (needs root: CAP_BPF and CAP_PERFMON)";
    else if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
        hint = " (the kernel has no BTF: /sys/kernel/btf/vmlinux is missing)";
    fprintf(stderr, "pcbio-capture: %s: %s%s%s%s\n", what, strerror(err), hint, last[0] ? "; libbpf: " : "",
            last);
    return 3;
}

/* What the command line asks for. */
struct args {
    const char *out;
    unsigned maj, min, rb_mib;
    int have_dev, probe;
};

/* The command line into `a`: -1 to go on, else the exit status (0 after --help, 2 on a usage
 * error, said on stderr). */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"dev", required_argument, 0, 'd'},   {"output", required_argument, 0, 'o'},
        {"ringbuf-mib", required_argument, 0, 'b'}, {"probe", no_argument, 0, 'p'},
        {"verbose", no_argument, 0, 'v'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "d:o:b:pvh", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (sscanf(optarg, "%u:%u", &a->maj, &a->min) != 2) {
                fprintf(stderr, "pcbio-capture: --dev %s: expected MAJ:MIN\n", optarg);
                return 2;
            }
            a->have_dev = 1;
            break;
        case 'o': a->out = optarg; break;
        case 'b':
            a->rb_mib = (unsigned)strtoul(optarg, NULL, 10);
            if (a->rb_mib == 0 || a->rb_mib > 1024 || (a->rb_mib & (a->rb_mib - 1))) {
                fprintf(stderr, "pcbio-capture: --ringbuf-mib %s: a power of two from 1 to 1024\n", optarg);
                return 2;
            }
            break;
        case 'p': a->probe = 1; break;
        case 'v': g_verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!a->probe && (!a->have_dev || !a->out)) {
        usage(stderr);
        return 2;
    }
    return -1;
}

/* Open the program, point it at the device, size its ring buffer, load and attach it: 0 with
 * the skeleton in `*skel`, else the exit status (3, said on stderr). */
static int open_program(const struct args *a, struct pcbio_bpf **skel_out)
{
    /* --verbose: the verifier's whole log on stderr */
    static char vlog[1 << 22];
    LIBBPF_OPTS(bpf_object_open_opts, oo, .kernel_log_buf = g_verbose ? vlog : NULL,
                .kernel_log_size = g_verbose ? sizeof vlog : 0, .kernel_log_level = g_verbose ? 1 : 0);
    struct pcbio_bpf *skel = pcbio_bpf__open_opts(&oo);
    if (!skel)
        return fail_load("cannot open the BPF program", errno ? errno : EINVAL);
    skel->rodata->target_dev = (a->maj << 20) | a->min;
    int err = bpf_map__set_max_entries(skel->maps.events, a->rb_mib << 20);
    if (err)
        return fail_load("cannot size the ring buffer", -err);
    err = pcbio_bpf__load(skel);
    if (g_verbose && vlog[0])
        fputs(vlog, stderr);
    if (err) {
        pcbio_bpf__destroy(skel);
        return fail_load("cannot load the BPF program", -err);
    }
    err = pcbio_bpf__attach(skel);
    if (err) {
        pcbio_bpf__destroy(skel);
        return fail_load("cannot attach to tp_btf/block_bio_queue", -err);
    }
    *skel_out = skel;
    return 0;
}

/* The file's first record. */
static void put_header(const struct args *a)
{
    struct pcbio_header h;
    memset(&h, 0, sizeof h);
    h.kind = PCBIO_KIND_HEADER;
    memcpy(h.magic, PCBIO_MAGIC, sizeof h.magic);
    h.version = PCBIO_VERSION;
    h.record_bytes = PCBIO_RECORD_BYTES;
    h.dev = (a->maj << 20) | a->min;
    h.ringbuf_bytes = a->rb_mib << 20;
    h.start_ns = now_ns();
    put(&h);
}

/* Write what the program sends until SIGINT or SIGTERM, then stop it and take what is left. */
static void capture(struct pcbio_bpf *skel, struct ring_buffer *rb)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    printf("ready\n");
    fflush(stdout);

    while (!g_stop) {
        int n = ring_buffer__poll(rb, 100);
        if (n < 0 && n != -EINTR) {
            fprintf(stderr, "pcbio-capture: reading the ring buffer: %s\n", strerror(-n));
            break;
        }
    }
    /* stop producing, then take what is left */
    pcbio_bpf__detach(skel);
    ring_buffer__consume(rb);
}

/* The file's last record, with the counts; returned to be printed. */
static struct pcbio_end put_end(const struct pcbio_bpf *skel)
{
    struct pcbio_end e;
    memset(&e, 0, sizeof e);
    e.kind = PCBIO_KIND_END;
    e.bios = g_bios;
    e.runs = g_runs;
    e.lost = skel->bss->lost_msgs;
    e.orphans = g_orphans;
    e.truncated = g_truncated;
    e.stop_ns = now_ns();
    put(&e);
    return e;
}

int main(int argc, char **argv)
{
    struct args a = {.rb_mib = 8};
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    libbpf_set_print(on_libbpf_print);
    struct pcbio_bpf *skel = NULL;
    status = open_program(&a, &skel);
    if (status)
        return status;
    if (a.probe) {
        pcbio_bpf__destroy(skel);
        puts("ok");
        return 0;
    }

    g_out = fopen(a.out, "wb");
    if (!g_out) {
        fprintf(stderr, "pcbio-capture: %s: cannot write (%s)\n", a.out, strerror(errno));
        pcbio_bpf__destroy(skel);
        return 4;
    }
    setvbuf(g_out, NULL, _IOFBF, 1 << 20);
    g_out_fd = fileno(g_out);
    put_header(&a);

    struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_msg, NULL, NULL);
    if (!rb) {
        pcbio_bpf__destroy(skel);
        return fail_load("cannot open the ring buffer", errno ? errno : EINVAL);
    }
    capture(skel, rb);
    struct pcbio_end e = put_end(skel);
    if (fclose(g_out) != 0 && !g_write_error)
        g_write_error = errno ? errno : EIO;
    ring_buffer__free(rb);
    pcbio_bpf__destroy(skel);
    printf("{\"bios\": %llu, \"runs\": %llu, \"lost\": %llu, \"orphans\": %llu, \"truncated\": %llu}\n",
           (unsigned long long)e.bios, (unsigned long long)e.runs, (unsigned long long)e.lost,
           (unsigned long long)e.orphans, (unsigned long long)e.truncated);
    fflush(stdout);
    if (g_write_error) {
        fprintf(stderr, "pcbio-capture: %s: writing failed (%s)\n", a.out, strerror(g_write_error));
        return 4;
    }
    return 0;
}
