/* pcshim: LD_PRELOAD shim recording the file writes of a program with their PC signature.
 * Layout of the logs and the environment: include/pcshim.h. Design notes: docs/RECORD.md.
 *
 * Hot path (a write to a known fd): real call, clock_gettime (vDSO), a stack walk, hashing, and a
 * copy into a per-thread buffer. No malloc, no stdio; errno is preserved; a per-thread guard makes
 * every call the shim itself makes (and calls from signal handlers interrupting the shim) pass
 * straight through.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "pcshim.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define BUF_RECORDS 256
#define MAX_THREADS 1024
#define MAX_FDS 65536
#define MAX_FRAMES 64
#define MAX_SEGS 2048
#define SEEN_SLOTS 8192
#define OUR_FD_FLOOR 900
#define MAX_MAPS 1024      /* shared writable file mappings tracked for msync */
#define SCAN_WORDS 512     /* scan: stack words examined above the hooked call (4 KiB) */
#define MAX_MODULES 512    /* auto: per-module frame-pointer verdicts */
#define FP_SAMPLE 256      /* auto: functions sampled per module */
#define MAX_ENV 4096       /* exec/spawn: environment entries the shim can rewrite */

enum { M_FP = 0, M_SCAN = 1, M_UNWIND = 2, M_AUTO = 3 };

/* ---------- real functions ---------- */
#define REAL(name) real_##name
#define DECL_REAL(ret, name, ...) static ret (*real_##name)(__VA_ARGS__)
DECL_REAL(ssize_t, write, int, const void *, size_t);
DECL_REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
DECL_REAL(ssize_t, pwrite64, int, const void *, size_t, off_t);
DECL_REAL(ssize_t, writev, int, const struct iovec *, int);
DECL_REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t);
DECL_REAL(ssize_t, pwritev64, int, const struct iovec *, int, off_t);
DECL_REAL(ssize_t, pwritev2, int, const struct iovec *, int, off_t, int);
DECL_REAL(int, open, const char *, int, ...);
DECL_REAL(int, open64, const char *, int, ...);
DECL_REAL(int, openat, int, const char *, int, ...);
DECL_REAL(int, openat64, int, const char *, int, ...);
DECL_REAL(int, creat, const char *, mode_t);
DECL_REAL(int, creat64, const char *, mode_t);
DECL_REAL(int, close, int);
DECL_REAL(int, unlink, const char *);
DECL_REAL(int, unlinkat, int, const char *, int);
DECL_REAL(int, rename, const char *, const char *);
DECL_REAL(int, renameat, int, const char *, int, const char *);
DECL_REAL(int, renameat2, int, const char *, int, const char *, unsigned int);
DECL_REAL(int, truncate, const char *, off_t);
DECL_REAL(int, truncate64, const char *, off_t);
DECL_REAL(int, ftruncate, int, off_t);
DECL_REAL(int, ftruncate64, int, off_t);
DECL_REAL(int, fallocate, int, int, off_t, off_t);
DECL_REAL(int, fallocate64, int, int, off_t, off_t);
DECL_REAL(int, fsync, int);
DECL_REAL(int, fdatasync, int);
DECL_REAL(int, sync_file_range, int, off_t, off_t, unsigned int);
DECL_REAL(int, dup, int);
DECL_REAL(int, dup2, int, int);
DECL_REAL(int, dup3, int, int, int);
DECL_REAL(int, fcntl, int, int, ...);
DECL_REAL(int, fcntl64, int, int, ...);
DECL_REAL(pid_t, fork, void);
DECL_REAL(int, execve, const char *, char *const[], char *const[]);
DECL_REAL(int, execv, const char *, char *const[]);
DECL_REAL(int, execvp, const char *, char *const[]);
DECL_REAL(int, execvpe, const char *, char *const[], char *const[]);
DECL_REAL(void, exit, int);
DECL_REAL(void, _exit, int);
DECL_REAL(void, _Exit, int);
DECL_REAL(void *, dlopen, const char *, int);
DECL_REAL(int, dlclose, void *);
DECL_REAL(size_t, fwrite, const void *, size_t, size_t, FILE *);
DECL_REAL(int, fputs, const char *, FILE *);
DECL_REAL(int, fputc, int, FILE *);
DECL_REAL(int, putc, int, FILE *);
DECL_REAL(int, vfprintf, FILE *, const char *, va_list);
DECL_REAL(int, fclose, FILE *);
DECL_REAL(FILE *, fopen, const char *, const char *);
DECL_REAL(FILE *, fopen64, const char *, const char *);
DECL_REAL(void *, mmap, void *, size_t, int, int, int, off_t);
DECL_REAL(void *, mmap64, void *, size_t, int, int, int, off_t);
DECL_REAL(int, munmap, void *, size_t);
DECL_REAL(void *, mremap, void *, size_t, size_t, int, ...);
DECL_REAL(int, msync, void *, size_t, int);
DECL_REAL(int, io_submit, unsigned long, long, struct iocb **);
DECL_REAL(long, syscall, long, ...);
DECL_REAL(ssize_t, copy_file_range, int, off_t *, int, off_t *, size_t, unsigned int);
DECL_REAL(ssize_t, sendfile, int, int, off_t *, size_t);
DECL_REAL(ssize_t, sendfile64, int, int, off_t *, size_t);
DECL_REAL(ssize_t, splice, int, off_t *, int, off_t *, size_t, unsigned int);
DECL_REAL(int, posix_spawn, pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
          char *const[], char *const[]);
DECL_REAL(int, posix_spawnp, pid_t *, const char *, const posix_spawn_file_actions_t *,
          const posix_spawnattr_t *, char *const[], char *const[]);
DECL_REAL(pid_t, _Fork, void);
DECL_REAL(int, clone, int (*)(void *), void *, int, void *, ...);
DECL_REAL(int, fexecve, int, char *const[], char *const[]);
DECL_REAL(int, execveat, int, const char *, char *const[], char *const[], int);
DECL_REAL(int, io_uring_queue_init, unsigned, void *, unsigned);
DECL_REAL(int, io_uring_queue_init_params, unsigned, void *, void *);
DECL_REAL(int, io_uring_queue_init_mem, unsigned, void *, void *, void *, size_t);
DECL_REAL(int, io_uring_setup, unsigned, void *);

#define RESOLVE(name)                                                       \
    do {                                                                    \
        if (!real_##name)                                                   \
            *(void **)(&real_##name) = dlsym(RTLD_NEXT, #name);             \
    } while (0)

/* The shim's own system calls bypass its syscall() hook. */
static long sc(long n, long a, long b, long c, long d)
{
    RESOLVE(syscall);
    return real_syscall(n, a, b, c, d, 0L, 0L);
}

/* ---------- state ---------- */
struct tbuf {
    atomic_int lock;
    int used;
    uint32_t tid;
    uintptr_t stack_lo, stack_hi;
    struct pcshim_record rec[BUF_RECORDS];
};

struct seg {
    uintptr_t lo, hi, bias;
    uint64_t module;
    const char *path;
    int has_fp; /* auto: the module keeps frame pointers (see module_has_fp) */
};

struct segtab {
    int n;
    uintptr_t lo, hi; /* span of all segments: a quick reject for stack words */
    struct seg s[MAX_SEGS];
};

struct fdinfo {
    _Atomic uint8_t state; /* 0 unknown, 1 tracked regular file, 2 ignored */
    uint64_t dev, ino, path;
};

static int g_active;
static int g_exit_recorded;
static int g_method = M_AUTO;
static int g_frames = 12;
static char g_dir[PATH_MAX];
static int g_bin = -1, g_txt = -1;
static uint32_t g_pid;
static atomic_ullong g_records;
static struct fdinfo g_fds[MAX_FDS];
static _Atomic(struct segtab *) g_segs;
static atomic_int g_segs_dirty = 1;
static pthread_mutex_t g_seg_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(uint64_t) g_seen_sig[SEEN_SLOTS];
static _Atomic(uint64_t) g_seen_path[SEEN_SLOTS];
static struct tbuf *_Atomic g_threads[MAX_THREADS];
static pthread_key_t g_key;
static int (*g_unw_backtrace)(void **, int);
static uintptr_t g_self_lo, g_self_hi;
static char g_exe[PATH_MAX];
static atomic_int g_uring_warned;
/* auto: module id -> frame-pointer verdict (1 yes, 0 no), kept across module-table rebuilds */
static _Atomic(uint64_t) g_mod_id[MAX_MODULES];
static _Atomic(int) g_mod_fp[MAX_MODULES];
/* exec/spawn: the environment entries every descendant needs ("NAME=value") */
static char g_self[PATH_MAX];
static char g_env_dir[PATH_MAX + 16], g_env_method[32], g_env_frames[32];

static TLS int t_guard;
static TLS struct tbuf *t_buf;
static TLS struct tbuf t_storage;

/* ---------- small helpers ---------- */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    h = mix64(h);
    return h ? h : 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0 && fd >= 0) {
        ssize_t r = sc(SYS_write, fd, (long)c, (long)n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        c += r;
        n -= (size_t)r;
    }
}

static size_t put_str(char *dst, size_t at, size_t cap, const char *s)
{
    while (*s && at < cap)
        dst[at++] = *s++;
    return at;
}

static size_t put_hex(char *dst, size_t at, size_t cap, uint64_t v, int width)
{
    char tmp[17];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v || n < width);
    while (n > 0 && at < cap)
        dst[at++] = tmp[--n];
    return at;
}

static size_t put_dec(char *dst, size_t at, size_t cap, uint64_t v)
{
    char tmp[21];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n > 0 && at < cap)
        dst[at++] = tmp[--n];
    return at;
}

/* Insert h into a fixed open-addressed set; 1 if new (or the set is full: duplicates are harmless). */
static int seen_insert(_Atomic(uint64_t) *set, uint64_t h)
{
    for (unsigned i = 0; i < 64; i++) {
        _Atomic(uint64_t) *slot = &set[(h + i) & (SEEN_SLOTS - 1)];
        uint64_t cur = atomic_load(slot);
        if (cur == h)
            return 0;
        if (cur == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong(slot, &zero, h))
                return 1;
            if (zero == h)
                return 0;
        }
    }
    return 1;
}

static void txt_line(const char *s, size_t n) { write_all(g_txt, s, n); }

static void warn(const char *msg)
{
    char line[512];
    size_t at = put_str(line, 0, sizeof line - 1, "W ");
    at = put_str(line, at, sizeof line - 1, msg);
    line[at++] = '\n';
    txt_line(line, at);
}

static uint64_t intern_path(const char *p)
{
    size_t n = strnlen(p, PATH_MAX);
    uint64_t h = hash_bytes(p, n);
    if (g_txt >= 0 && seen_insert(g_seen_path, h)) {
        char line[PATH_MAX + 64];
        size_t at = put_str(line, 0, sizeof line, "P ");
        at = put_hex(line, at, sizeof line, h, 16);
        line[at++] = ' ';
        at = put_dec(line, at, sizeof line, n);
        line[at++] = ' ';
        memcpy(line + at, p, n);
        at += n;
        line[at++] = '\n';
        txt_line(line, at);
    }
    return h;
}

/* Absolute path of `p` relative to dirfd (AT_FDCWD or a directory fd), lexically. */
static int abs_path(int dirfd, const char *p, char *out, size_t cap)
{
    if (!p)
        return -1;
    if (p[0] == '/') {
        size_t at = put_str(out, 0, cap - 1, p);
        out[at] = 0;
        return 0;
    }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base))
            return -1;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, base, sizeof base - 1);
        if (n <= 0)
            return -1;
        base[n] = 0;
    }
    const char *q = p;
    while (q[0] == '.' && q[1] == '/')
        q += 2;
    size_t at = put_str(out, 0, cap - 1, strcmp(base, "/") ? base : "");
    at = put_str(out, at, cap - 1, "/");
    at = put_str(out, at, cap - 1, q);
    out[at] = 0;
    return 0;
}

/* ---------- output files ---------- */
static int move_high(int fd)
{
    if (fd < 0)
        return fd;
    int hi = (int)sc(SYS_fcntl, fd, F_DUPFD_CLOEXEC, OUR_FD_FLOOR, 0);
    if (hi >= 0) {
        sc(SYS_close, fd, 0, 0, 0);
        return hi;
    }
    return fd;
}

static void open_logs(void)
{
    char name[PATH_MAX + 64];
    uint64_t start = now_ns();
    g_pid = (uint32_t)getpid();
    snprintf(name, sizeof name, "%s/%u.%llu.bin", g_dir, g_pid, (unsigned long long)start);
    g_bin = move_high((int)sc(SYS_openat, AT_FDCWD, (long)name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    snprintf(name, sizeof name, "%s/%u.%llu.txt", g_dir, g_pid, (unsigned long long)start);
    g_txt = move_high((int)sc(SYS_openat, AT_FDCWD, (long)name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    struct pcshim_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PCSHIM_MAGIC, 8);
    h.version = PCSHIM_VERSION;
    h.record_size = sizeof(struct pcshim_record);
    h.pid = g_pid;
    h.ppid = (uint32_t)getppid();
    h.frames = (uint32_t)g_frames;
    h.method = (uint32_t)g_method;
    write_all(g_bin, &h, sizeof h);
    atomic_store(&g_records, 0);
    for (int i = 0; i < SEEN_SLOTS; i++) {
        atomic_store(&g_seen_sig[i], 0);
        atomic_store(&g_seen_path[i], 0);
    }
}

static int is_our_fd(int fd) { return fd >= 0 && (fd == g_bin || fd == g_txt); }

/* ---------- per-thread buffers ---------- */
static void flush_buf(struct tbuf *b)
{
    if (b->used > 0) {
        write_all(g_bin, b->rec, (size_t)b->used * sizeof(struct pcshim_record));
        b->used = 0;
    }
}

static void lock_buf(struct tbuf *b)
{
    while (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
        ;
}

static void unlock_buf(struct tbuf *b) { atomic_store_explicit(&b->lock, 0, memory_order_release); }

static void thread_gone(void *p)
{
    struct tbuf *b = p;
    lock_buf(b);
    flush_buf(b);
    unlock_buf(b);
    for (int i = 0; i < MAX_THREADS; i++) {
        struct tbuf *cur = b;
        if (atomic_compare_exchange_strong(&g_threads[i], &cur, NULL))
            break;
    }
}

static void flush_all(void)
{
    for (int i = 0; i < MAX_THREADS; i++) {
        struct tbuf *b = atomic_load(&g_threads[i]);
        if (!b)
            continue;
        /* Bounded wait: a thread stopped inside its append (e.g. by a signal) is skipped. */
        int got = 0;
        for (int spin = 0; spin < 1000000 && !got; spin++)
            got = !atomic_exchange_explicit(&b->lock, 1, memory_order_acquire);
        if (!got)
            continue;
        flush_buf(b);
        unlock_buf(b);
    }
}

static struct tbuf *my_buf(void)
{
    if (t_buf)
        return t_buf;
    struct tbuf *b = &t_storage;
    b->used = 0;
    b->tid = (uint32_t)sc(SYS_gettid, 0, 0, 0, 0);
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr;
        size_t size;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            b->stack_lo = (uintptr_t)addr;
            b->stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    for (int i = 0; i < MAX_THREADS; i++) {
        struct tbuf *none = NULL;
        if (atomic_compare_exchange_strong(&g_threads[i], &none, b))
            break;
    }
    pthread_setspecific(g_key, b);
    t_buf = b;
    return b;
}

/* ---------- module table ---------- */
static uint64_t build_id_hash(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh;
            const char *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0)
                return hash_bytes(desc, nh->n_descsz);
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 0;
}

/* Does this module keep frame pointers? Decided once per module, from its code: sample up to
 * FP_SAMPLE function entries of its .eh_frame_hdr search table (every function with unwind info)
 * and count those that open with `push %rbp; mov %rsp,%rbp` (after an optional endbr64). Code
 * built with -fno-omit-frame-pointer has that prologue in 40-75 % of its entries (leaves, thunks
 * and .cold parts have none); code built without it in under 3 %. Threshold 20 %. Static, so
 * the verdict (and with it every auto signature) is the same in every run. */
static int eh_fp_ratio_ok(const struct dl_phdr_info *info)
{
    const unsigned char *h = NULL;
    size_t h_len = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) {
            h = (const unsigned char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            h_len = info->dlpi_phdr[i].p_memsz;
        }
    /* version 1, fde_count udata4, table datarel|sdata4: what GNU ld and lld write */
    if (!h || h_len < 12 || h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
        return 0;
    size_t ptr_len;
    switch (h[1] & 0x0f) {
    case 0x03: case 0x0b: ptr_len = 4; break;
    case 0x04: case 0x0c: ptr_len = 8; break;
    default: ptr_len = h[1] == 0xff ? 0 : 8; break;
    }
    uint32_t count;
    memcpy(&count, h + 4 + ptr_len, 4);
    const unsigned char *tab = h + 8 + ptr_len;
    if (count == 0 || 8 + ptr_len + 8 * (size_t)count > h_len)
        return 0; /* a table larger than its segment: not trusted */
    uint32_t step = count > FP_SAMPLE ? count / FP_SAMPLE : 1, seen = 0, fp = 0;
    for (uint32_t k = 0; k < count && seen < FP_SAMPLE; k += step) {
        int32_t rel;
        memcpy(&rel, tab + 8 * (size_t)k, 4);
        uintptr_t at = (uintptr_t)h + (intptr_t)rel;
        int inside = 0;
        for (int i = 0; i < info->dlpi_phnum && !inside; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            inside = ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && at >= lo && at + 8 <= lo + ph->p_memsz;
        }
        if (!inside)
            continue;
        const unsigned char *c = (const unsigned char *)at;
        if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
            c += 4; /* endbr64 */
        seen++;
        fp += c[0] == 0x55 && c[1] == 0x48 && c[2] == 0x89 && c[3] == 0xe5;
    }
    return seen > 0 && fp * 5 >= seen;
}

static int module_has_fp(const struct dl_phdr_info *info, uint64_t id)
{
    for (unsigned i = 0; i < MAX_MODULES; i++) {
        unsigned slot = (unsigned)(id + i) & (MAX_MODULES - 1);
        uint64_t cur = atomic_load(&g_mod_id[slot]);
        if (cur == id)
            return atomic_load(&g_mod_fp[slot]);
        if (cur == 0) {
            int v = eh_fp_ratio_ok(info);
            atomic_store(&g_mod_fp[slot], v);
            atomic_store(&g_mod_id[slot], id); /* the table is only written under g_seg_mu */
            return v;
        }
    }
    return eh_fp_ratio_ok(info);
}

static int seg_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct segtab *t = arg;
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : g_exe;
    uint64_t id = build_id_hash(info);
    if (!id)
        id = hash_bytes(path, strlen(path));
    int has_fp = -1;
    for (int i = 0; i < info->dlpi_phnum && t->n < MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (has_fp < 0)
            has_fp = g_method == M_AUTO ? module_has_fp(info, id) : 0;
        struct seg *s = &t->s[t->n++];
        s->lo = info->dlpi_addr + ph->p_vaddr;
        s->hi = s->lo + ph->p_memsz;
        s->bias = info->dlpi_addr;
        s->module = id;
        s->path = strdup(path); /* leaked with the table: tables are replaced, never freed */
        s->has_fp = has_fp;
    }
    return 0;
}

static int seg_cmp(const void *a, const void *b)
{
    const struct seg *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static struct segtab *segs(void)
{
    if (!atomic_load(&g_segs_dirty))
        return atomic_load(&g_segs);
    pthread_mutex_lock(&g_seg_mu);
    if (atomic_load(&g_segs_dirty)) {
        struct segtab *t = calloc(1, sizeof *t);
        if (t) {
            atomic_store(&g_segs_dirty, 0);
            dl_iterate_phdr(seg_cb, t);
            qsort(t->s, (size_t)t->n, sizeof t->s[0], seg_cmp);
            if (t->n > 0) {
                t->lo = t->s[0].lo;
                t->hi = t->s[t->n - 1].hi;
            }
            atomic_store(&g_segs, t); /* the old table is leaked: readers may still use it */
        }
    }
    pthread_mutex_unlock(&g_seg_mu);
    return atomic_load(&g_segs);
}

static struct seg *find_seg(struct segtab *t, uintptr_t a)
{
    if (!t || a < t->lo || a >= t->hi)
        return NULL;
    int lo = 0, hi = t->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a < t->s[mid].lo)
            hi = mid - 1;
        else if (a >= t->s[mid].hi)
            lo = mid + 1;
        else
            return &t->s[mid];
    }
    return NULL;
}

/* ---------- stack walkers ---------- */
static int in_self(uintptr_t a) { return a >= g_self_lo && a < g_self_hi; }

static int frame_ok(const struct tbuf *b, uintptr_t f) { return f >= b->stack_lo && f + 16 <= b->stack_hi && !(f & 7); }

/* The frame record of the hook that was called by the program: the first record, following the
 * shim's own rbp chain (the shim is built with frame pointers), whose return address lies outside
 * the shim. Its fp[1] is the return address of the hooked call; NULL if the chain is broken. */
__attribute__((noinline)) static uintptr_t *hook_frame(const struct tbuf *b)
{
    uintptr_t *fp = __builtin_frame_address(0);
    for (int guard = 0; guard < 64; guard++) {
        if (!frame_ok(b, (uintptr_t)fp))
            return NULL;
        if (!in_self(fp[1]))
            return fp;
        if (fp[0] <= (uintptr_t)fp)
            return NULL;
        fp = (uintptr_t *)fp[0];
    }
    return NULL;
}

/* fp: follow the rbp chain from the hook's record. *ended = 1 if the chain stopped before `max`
 * frames (null or invalid next record): then the last frame's own record was read too. */
static int walk_fp(struct tbuf *b, struct segtab *t, uintptr_t *out, struct seg **sg, int max, int *ended)
{
    uintptr_t *fp = hook_frame(b);
    int n = 0;
    *ended = 1;
    while (fp && n < max) {
        uintptr_t next = fp[0], ret = fp[1];
        /* consecutive frames are mostly in one module: try the previous frame's segment first */
        struct seg *s = n > 0 && ret >= sg[n - 1]->lo && ret < sg[n - 1]->hi ? sg[n - 1] : find_seg(t, ret);
        if (!s)
            return n;
        sg[n] = s;
        out[n++] = ret;
        if (n == max)
            break;
        if (next <= (uintptr_t)fp || !frame_ok(b, next))
            return n;
        fp = (uintptr_t *)next;
    }
    *ended = n < max;
    return n;
}

static int after_call(const struct seg *s, uintptr_t a)
{
    const unsigned char *p = (const unsigned char *)a;
    if (a - 5 >= s->lo && p[-5] == 0xe8)
        return 1; /* call rel32 */
    if (a - 2 >= s->lo && p[-2] == 0xff && (p[-1] & 0xf8) == 0xd0)
        return 1; /* call *%reg */
    if (a - 3 >= s->lo && p[-3] == 0xff && ((p[-2] >> 3) & 7) == 2 && (p[-2] >> 6) == 1)
        return 1; /* call *disp8(%reg) */
    if (a - 6 >= s->lo && p[-6] == 0xff && ((p[-5] >> 3) & 7) == 2 && (p[-5] >> 6) == 2)
        return 1; /* call *disp32(%reg) */
    if (a - 6 >= s->lo && p[-6] == 0xff && p[-5] == 0x15)
        return 1; /* call *rel32(%rip) */
    if (a - 3 >= s->lo && p[-3] == 0x41 && p[-2] == 0xff && (p[-1] & 0xf8) == 0xd0)
        return 1; /* call *%r8..%r15 */
    return 0;
}

/* scan: the stack words above the hooked call, from the hook's return-address slot upward (the
 * shim's own frames, whose uninitialised locals hold stale addresses, are never read), at most
 * SCAN_WORDS words; keep the values that lie in an executable segment outside the shim and follow
 * a call instruction. The first is the exact return address of the hooked call. */
static int walk_scan(struct tbuf *b, struct segtab *t, uintptr_t *out, struct seg **sg, int max)
{
    uintptr_t *fp = hook_frame(b);
    if (!fp)
        return 0;
    const uintptr_t *w = fp + 1;
    int n = 0;
    for (int i = 0; i < SCAN_WORDS && n < max; i++, w++) {
        if ((uintptr_t)(w + 1) > b->stack_hi)
            break;
        struct seg *s = find_seg(t, *w);
        if (s && !in_self(*w) && after_call(s, *w)) {
            sg[n] = s;
            out[n++] = *w;
        }
    }
    return n;
}

static int walk_unwind(struct segtab *t, uintptr_t *out, struct seg **sg, int max)
{
    void *tmp[MAX_FRAMES + 8];
    int got = g_unw_backtrace(tmp, max + 8 < MAX_FRAMES + 8 ? max + 8 : MAX_FRAMES + 8);
    int n = 0;
    for (int i = 0; i < got && n < max; i++) {
        uintptr_t a = (uintptr_t)tmp[i];
        if (in_self(a))
            continue;
        sg[n] = find_seg(t, a);
        out[n++] = a;
    }
    return n;
}

/* auto: the fp walk is right if every record it read belongs to a module that keeps frame
 * pointers: the records of the functions holding frames 0..n-2, and of frame n-1 too when the
 * chain ended early (it supplied the end). */
static int fp_trusted(struct seg **sg, int n, int ended)
{
    if (n == 0)
        return 0;
    int need = ended ? n : n - 1;
    for (int i = 0; i < need; i++)
        if (!sg[i] || sg[i]->has_fp != 1)
            return 0;
    return 1;
}

static void emit_sig(uint64_t sig, struct seg **sg, const uintptr_t *pcs, int n)
{
    char line[8192];
    size_t at = put_str(line, 0, sizeof line, "S ");
    at = put_hex(line, at, sizeof line, sig, 16);
    line[at++] = ' ';
    at = put_dec(line, at, sizeof line, (uint64_t)n);
    line[at++] = '\n';
    for (int i = 0; i < n; i++) {
        struct seg *s = sg[i];
        const char *path = s ? s->path : "?";
        size_t len = strlen(path);
        if (at + len + 64 > sizeof line)
            break;
        at = put_str(line, at, sizeof line, "F ");
        at = put_hex(line, at, sizeof line, s ? s->module : 0, 16);
        line[at++] = ' ';
        at = put_hex(line, at, sizeof line, s ? pcs[i] - s->bias : pcs[i], 1);
        line[at++] = ' ';
        at = put_dec(line, at, sizeof line, len);
        line[at++] = ' ';
        at = put_str(line, at, sizeof line, path);
        line[at++] = '\n';
    }
    txt_line(line, at);
}

__attribute__((noinline)) static uint64_t signature(struct tbuf *b, uint16_t *nframes)
{
    struct segtab *t = segs();
    uintptr_t pcs[MAX_FRAMES];
    struct seg *sg[MAX_FRAMES];
    int n = 0, ended = 0;
    switch (g_method) {
    case M_FP:
        n = walk_fp(b, t, pcs, sg, g_frames, &ended);
        break;
    case M_SCAN:
        n = walk_scan(b, t, pcs, sg, g_frames);
        break;
    case M_UNWIND:
        n = g_unw_backtrace ? walk_unwind(t, pcs, sg, g_frames) : walk_fp(b, t, pcs, sg, g_frames, &ended);
        break;
    default:
        n = walk_fp(b, t, pcs, sg, g_frames, &ended);
        if (g_unw_backtrace && !fp_trusted(sg, n, ended))
            n = walk_unwind(t, pcs, sg, g_frames);
        break;
    }
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < n; i++) {
        struct seg *s = sg[i];
        uint64_t off = s ? pcs[i] - s->bias : pcs[i];
        h = mix64(h ^ mix64((s ? s->module : 0) + 0x632be59bd9b4e019ULL * off));
    }
    if (!h)
        h = 1;
    *nframes = (uint16_t)n;
    if (seen_insert(g_seen_sig, h))
        emit_sig(h, sg, pcs, n);
    return h;
}

/* ---------- recording ---------- */
/* One PC for several records of one call (io_submit, msync over several mappings). */
struct pc_once {
    int done;
    uint16_t nframes;
    uint64_t pc;
};

static void push_record(int op, int fd, uint64_t offset, uint64_t len, uint32_t flags, uint64_t dev, uint64_t ino,
                        uint64_t path, uint64_t aux, struct pc_once *pc)
{
    struct tbuf *b = my_buf();
    struct pcshim_record r;
    memset(&r, 0, sizeof r);
    if (pc) {
        if (!pc->done) {
            pc->pc = signature(b, &pc->nframes);
            pc->done = 1;
        }
        r.pc = pc->pc;
        r.nframes = pc->nframes;
    }
    r.ts_ns = now_ns();
    r.offset = offset;
    r.len = len;
    r.dev = dev;
    r.ino = ino;
    r.path = path;
    r.aux = aux;
    r.pid = g_pid;
    r.tid = b->tid;
    r.fd = fd;
    r.flags = flags;
    r.op = (uint16_t)op;
    lock_buf(b);
    b->rec[b->used++] = r;
    if (b->used == BUF_RECORDS)
        flush_buf(b);
    unlock_buf(b);
    atomic_fetch_add(&g_records, 1);
}

static void add_record(int op, int fd, uint64_t offset, uint64_t len, uint32_t flags, uint64_t dev, uint64_t ino,
                       uint64_t path, uint64_t aux, int want_pc)
{
    struct pc_once pc = {0, 0, 0};
    push_record(op, fd, offset, len, flags, dev, ino, path, aux, want_pc ? &pc : NULL);
}

/* Learn what fd is (regular file: its dev, ino, path). Returns the entry if tracked. */
static struct fdinfo *fd_learn(int fd)
{
    if (fd < 0 || fd >= MAX_FDS || is_our_fd(fd))
        return NULL;
    struct fdinfo *e = &g_fds[fd];
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        atomic_store(&e->state, 2);
        return NULL;
    }
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->path = n > 0 ? intern_path(target) : 0;
    atomic_store(&e->state, 1);
    return e;
}

static struct fdinfo *fd_get(int fd)
{
    if (fd < 0 || fd >= MAX_FDS)
        return NULL;
    uint8_t s = atomic_load(&g_fds[fd].state);
    if (s == 1)
        return &g_fds[fd];
    if (s == 2)
        return NULL;
    return fd_learn(fd);
}

static void fd_forget(int fd)
{
    if (fd >= 0 && fd < MAX_FDS)
        atomic_store(&g_fds[fd].state, 0);
}

/* Enter the shim: 1 if this call should be recorded (guard taken), 0 to pass through. */
static int enter(void)
{
    if (!g_active || t_guard)
        return 0;
    t_guard = 1;
    return 1;
}

static void leave(void) { t_guard = 0; }

static void rec_fd(int op, int fd, uint64_t off, uint64_t len, uint32_t flags, int want_pc)
{
    struct fdinfo *e = fd_get(fd);
    if (e)
        add_record(op, fd, off, len, flags, e->dev, e->ino, e->path, 0, want_pc);
}

static void rec_write(int fd, int64_t off, ssize_t ret, uint32_t flags)
{
    struct fdinfo *e = fd_get(fd);
    if (!e)
        return;
    if (off < 0) {
        off_t cur = lseek(fd, 0, SEEK_CUR);
        off = cur >= 0 ? cur - ret : 0;
        if (off < 0)
            off = 0;
    }
    add_record(PCSHIM_OP_WRITE, fd, (uint64_t)off, (uint64_t)ret, flags, e->dev, e->ino, e->path, 0, 1);
}

static void rec_path(int op, int dirfd, const char *p, uint64_t aux, const struct stat *st)
{
    char abs[PATH_MAX];
    if (abs_path(dirfd, p, abs, sizeof abs) != 0)
        return;
    add_record(op, -1, 0, 0, 0, st ? st->st_dev : 0, st ? st->st_ino : 0, intern_path(abs), aux, 1);
}

/* ---------- init / exit ---------- */
static void on_exit_flush(int status, int record)
{
    if (!g_active)
        return;
    int was = t_guard;
    t_guard = 1;
    if (record)
        g_exit_recorded = 1;
    if (record)
        add_record(PCSHIM_OP_EXIT, -1, (uint64_t)(uint32_t)status, 0, 0, 0, 0, 0, 0, 0);
    flush_all();
    t_guard = was;
}

/* Once per process image: this process set up an io_uring (the converter counts these lines). */
static void uring_used(void)
{
    if (!g_active || atomic_exchange(&g_uring_warned, 1))
        return;
    int was = t_guard;
    t_guard = 1;
    warn("io_uring: this process set up an io_uring; the I/O it submits through the ring is not recorded");
    t_guard = was;
}

static void final_checks(void)
{
    /* io_uring rings still open at exit, set up by a path no hook saw (inline system calls). */
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *de;
        int rings = 0;
        while ((de = readdir(d))) {
            char link[300], target[128];
            snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n > 0) {
                target[n] = 0;
                if (strstr(target, "io_uring"))
                    rings++;
            }
        }
        closedir(d);
        if (rings)
            uring_used();
    }
}

static int g_finished;

static void end_line(void)
{
    char line[64];
    size_t at = put_str(line, 0, sizeof line, "E ");
    at = put_dec(line, at, sizeof line, atomic_load(&g_records));
    line[at++] = '\n';
    txt_line(line, at);
}

static void finish(int status, int record)
{
    if (!g_active || g_finished)
        return;
    if (!record && !g_exit_recorded) {
        /* Return from main (exit inside libc is not interposable): status unknown, flags = 1. */
        int was = t_guard;
        t_guard = 1;
        add_record(PCSHIM_OP_EXIT, -1, 0, 0, 1, 0, 0, 0, 0, 0);
        t_guard = was;
    }
    g_exit_recorded = 1;
    on_exit_flush(status, record);
    int was = t_guard;
    t_guard = 1;
    g_finished = 1;
    final_checks();
    end_line();
    t_guard = was;
}

static struct sigaction g_old_term, g_old_int, g_old_hup;

static void on_signal(int sig)
{
    int saved = errno;
    if (g_active && !g_finished) {
        int was = t_guard;
        t_guard = 1;
        flush_all();
        warn(sig == SIGTERM ? "terminated by SIGTERM" : "terminated by a signal");
        end_line();
        t_guard = was;
    }
    signal(sig, SIG_DFL);
    errno = saved;
    raise(sig);
}

static void install_signal(int sig, struct sigaction *old)
{
    if (sigaction(sig, NULL, old) != 0 || old->sa_handler != SIG_DFL)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, NULL);
}

static void atfork_child(void)
{
    if (!g_active)
        return;
    /* The parent's unflushed records were copied into this thread's buffer: they are not ours. */
    for (int i = 0; i < MAX_THREADS; i++)
        atomic_store(&g_threads[i], NULL);
    if (t_buf) {
        t_buf->used = 0;
        atomic_store(&t_buf->lock, 0);
        t_buf->tid = (uint32_t)sc(SYS_gettid, 0, 0, 0, 0);
        atomic_store(&g_threads[0], t_buf);
    }
    sc(SYS_close, g_bin, 0, 0, 0);
    sc(SYS_close, g_txt, 0, 0, 0);
    g_finished = 0;
    g_exit_recorded = 0;
    atomic_store(&g_uring_warned, 0);
    open_logs();
}

static void resolve_all(void)
{
    RESOLVE(write); RESOLVE(pwrite); RESOLVE(pwrite64); RESOLVE(writev); RESOLVE(pwritev);
    RESOLVE(pwritev64); RESOLVE(pwritev2); RESOLVE(open); RESOLVE(open64); RESOLVE(openat);
    RESOLVE(openat64); RESOLVE(creat); RESOLVE(creat64); RESOLVE(close); RESOLVE(unlink);
    RESOLVE(unlinkat); RESOLVE(rename); RESOLVE(renameat); RESOLVE(renameat2); RESOLVE(truncate);
    RESOLVE(truncate64); RESOLVE(ftruncate); RESOLVE(ftruncate64); RESOLVE(fallocate);
    RESOLVE(fallocate64); RESOLVE(fsync); RESOLVE(fdatasync); RESOLVE(sync_file_range); RESOLVE(dup);
    RESOLVE(dup2); RESOLVE(dup3); RESOLVE(fcntl); RESOLVE(fcntl64); RESOLVE(fork); RESOLVE(execve);
    RESOLVE(execv); RESOLVE(execvp); RESOLVE(execvpe); RESOLVE(exit); RESOLVE(_exit); RESOLVE(_Exit);
    RESOLVE(dlopen); RESOLVE(dlclose); RESOLVE(fwrite); RESOLVE(fputs); RESOLVE(fputc); RESOLVE(putc);
    RESOLVE(vfprintf); RESOLVE(fclose); RESOLVE(fopen); RESOLVE(fopen64); RESOLVE(mmap); RESOLVE(mmap64);
    RESOLVE(munmap); RESOLVE(mremap); RESOLVE(msync); RESOLVE(syscall); RESOLVE(copy_file_range);
    RESOLVE(sendfile); RESOLVE(sendfile64); RESOLVE(splice); RESOLVE(posix_spawn); RESOLVE(posix_spawnp);
    RESOLVE(_Fork); RESOLVE(clone); RESOLVE(fexecve); RESOLVE(execveat);
}

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < lo + ph->p_memsz) {
            g_self_lo = lo;
            g_self_hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

__attribute__((constructor)) static void pcshim_init(void)
{
    int saved = errno;
    t_guard = 1;
    resolve_all();
    const char *dir = getenv("PCSHIM_DIR");
    if (!dir || !dir[0]) {
        t_guard = 0;
        errno = saved;
        return;
    }
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    const char *m = getenv("PCSHIM_METHOD");
    if (m && !strcmp(m, "fp"))
        g_method = M_FP;
    else if (m && !strcmp(m, "scan"))
        g_method = M_SCAN;
    else if (m && !strcmp(m, "unwind"))
        g_method = M_UNWIND;
    else
        g_method = M_AUTO;
    const char *f = getenv("PCSHIM_FRAMES");
    if (f) {
        int v = atoi(f);
        g_frames = v < 1 ? 1 : v > MAX_FRAMES ? MAX_FRAMES : v;
    }
    static const char *const method_names[] = {"fp", "scan", "unwind", "auto"};
    snprintf(g_env_dir, sizeof g_env_dir, "PCSHIM_DIR=%s", g_dir);
    snprintf(g_env_method, sizeof g_env_method, "PCSHIM_METHOD=%s", method_names[g_method]);
    snprintf(g_env_frames, sizeof g_env_frames, "PCSHIM_FRAMES=%d", g_frames);
    Dl_info self;
    if (dladdr((void *)&pcshim_init, &self) && self.dli_fname && self.dli_fname[0] == '/')
        snprintf(g_self, sizeof g_self, "%s", self.dli_fname);
    ssize_t n = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
    g_exe[n > 0 ? n : 0] = 0;
    dl_iterate_phdr(self_cb, (void *)(uintptr_t)&pcshim_init);
    pthread_key_create(&g_key, thread_gone);
    open_logs();
    if (g_method == M_UNWIND || g_method == M_AUTO) {
        void *h = real_dlopen ? real_dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h) {
            *(void **)(&g_unw_backtrace) = dlsym(h, "unw_backtrace");
            /* libunwind's default global cache takes a lock per walk; a per-thread cache does not */
            int (*set_policy)(void *, int);
            *(void **)(&set_policy) = dlsym(h, "_ULx86_64_set_caching_policy");
            void **space = dlsym(h, "_ULx86_64_local_addr_space");
            if (set_policy && space)
                set_policy(*space, 2 /* UNW_CACHE_PER_THREAD */);
        }
        if (!g_unw_backtrace) {
            warn("unwind: libunwind.so.8 not found; using the frame-pointer walk instead");
        } else {
            void *warm[4];
            g_unw_backtrace(warm, 4);
        }
    }
    install_signal(SIGTERM, &g_old_term);
    install_signal(SIGINT, &g_old_int);
    install_signal(SIGHUP, &g_old_hup);
    pthread_atfork(NULL, NULL, atfork_child);
    segs();
    g_active = 1;
    t_guard = 0;
    errno = saved;
}

__attribute__((destructor)) static void pcshim_fini(void)
{
    int saved = errno;
    finish(0, 0);
    errno = saved;
}

/* ---------- hooks ---------- */
EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    RESOLVE(write);
    ssize_t r = real_write(fd, buf, n);
    if (r > 0 && enter()) {
        int e = errno;
        rec_write(fd, -1, r, 0);
        errno = e;
        leave();
    }
    return r;
}

#define PWRITE_HOOK(name)                                                   \
    EXPORT ssize_t name(int fd, const void *buf, size_t n, off_t off)       \
    {                                                                       \
        RESOLVE(name);                                                      \
        ssize_t r = real_##name(fd, buf, n, off);                           \
        if (r > 0 && enter()) {                                             \
            int e = errno;                                                  \
            rec_write(fd, off, r, 0);                                       \
            errno = e;                                                      \
            leave();                                                        \
        }                                                                   \
        return r;                                                           \
    }
PWRITE_HOOK(pwrite)
PWRITE_HOOK(pwrite64)

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    RESOLVE(writev);
    ssize_t r = real_writev(fd, iov, cnt);
    if (r > 0 && enter()) {
        int e = errno;
        rec_write(fd, -1, r, 0);
        errno = e;
        leave();
    }
    return r;
}

#define PWRITEV_HOOK(name)                                                  \
    EXPORT ssize_t name(int fd, const struct iovec *iov, int cnt, off_t off) \
    {                                                                       \
        RESOLVE(name);                                                      \
        ssize_t r = real_##name(fd, iov, cnt, off);                         \
        if (r > 0 && enter()) {                                             \
            int e = errno;                                                  \
            rec_write(fd, off, r, 0);                                       \
            errno = e;                                                      \
            leave();                                                        \
        }                                                                   \
        return r;                                                           \
    }
PWRITEV_HOOK(pwritev)
PWRITEV_HOOK(pwritev64)

EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    RESOLVE(pwritev2);
    ssize_t r = real_pwritev2(fd, iov, cnt, off, flags);
    if (r > 0 && enter()) {
        int e = errno;
        rec_write(fd, off, r, 0);
        errno = e;
        leave();
    }
    return r;
}

static void after_open(int fd, int flags)
{
    if (fd < 0 || !enter())
        return;
    int e = errno;
    fd_forget(fd);
    struct fdinfo *info = fd_learn(fd);
    if (info)
        add_record(PCSHIM_OP_OPEN, fd, 0, 0, (uint32_t)flags, info->dev, info->ino, info->path, 0, 1);
    errno = e;
    leave();
}

#define OPEN_HOOK(name)                                                     \
    EXPORT int name(const char *p, int flags, ...)                          \
    {                                                                       \
        RESOLVE(name);                                                      \
        mode_t mode = 0;                                                    \
        if (flags & (O_CREAT | __O_TMPFILE)) {                              \
            va_list ap;                                                     \
            va_start(ap, flags);                                            \
            mode = (mode_t)va_arg(ap, int);                                 \
            va_end(ap);                                                     \
        }                                                                   \
        int fd = real_##name(p, flags, mode);                               \
        after_open(fd, flags);                                              \
        return fd;                                                          \
    }
OPEN_HOOK(open)
OPEN_HOOK(open64)

#define OPENAT_HOOK(name)                                                   \
    EXPORT int name(int dirfd, const char *p, int flags, ...)               \
    {                                                                       \
        RESOLVE(name);                                                      \
        mode_t mode = 0;                                                    \
        if (flags & (O_CREAT | __O_TMPFILE)) {                              \
            va_list ap;                                                     \
            va_start(ap, flags);                                            \
            mode = (mode_t)va_arg(ap, int);                                 \
            va_end(ap);                                                     \
        }                                                                   \
        int fd = real_##name(dirfd, p, flags, mode);                        \
        after_open(fd, flags);                                              \
        return fd;                                                          \
    }
OPENAT_HOOK(openat)
OPENAT_HOOK(openat64)

#define CREAT_HOOK(name)                                                    \
    EXPORT int name(const char *p, mode_t mode)                             \
    {                                                                       \
        RESOLVE(name);                                                      \
        int fd = real_##name(p, mode);                                      \
        after_open(fd, O_CREAT | O_WRONLY | O_TRUNC);                       \
        return fd;                                                          \
    }
CREAT_HOOK(creat)
CREAT_HOOK(creat64)

EXPORT int close(int fd)
{
    RESOLVE(close);
    if (g_active && is_our_fd(fd))
        return 0; /* the shim's own log files survive programs that close every fd */
    int rec = 0;
    if (enter()) {
        int e = errno;
        rec_fd(PCSHIM_OP_CLOSE, fd, 0, 0, 0, 0);
        errno = e;
        rec = 1;
    }
    fd_forget(fd);
    int r = real_close(fd);
    if (rec)
        leave();
    return r;
}

EXPORT int unlink(const char *p)
{
    RESOLVE(unlink);
    struct stat st;
    int ok = g_active && !t_guard && lstat(p, &st) == 0 && S_ISREG(st.st_mode);
    int r = real_unlink(p);
    if (r == 0 && ok && enter()) {
        int e = errno;
        rec_path(PCSHIM_OP_UNLINK, AT_FDCWD, p, 0, &st);
        errno = e;
        leave();
    }
    return r;
}

EXPORT int unlinkat(int dirfd, const char *p, int flags)
{
    RESOLVE(unlinkat);
    struct stat st;
    int ok = g_active && !t_guard && fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    int r = real_unlinkat(dirfd, p, flags);
    if (r == 0 && ok && enter()) {
        int e = errno;
        rec_path(PCSHIM_OP_UNLINK, dirfd, p, 0, &st);
        errno = e;
        leave();
    }
    return r;
}

static void rec_rename(int odir, const char *o, int ndir, const char *n, const struct stat *st)
{
    char abs[PATH_MAX];
    if (abs_path(ndir, n, abs, sizeof abs) != 0)
        return;
    uint64_t to = intern_path(abs);
    rec_path(PCSHIM_OP_RENAME, odir, o, to, st);
}

#define RENAME_BODY(call, odir, o, ndir, n)                                 \
    struct stat st;                                                         \
    int ok = g_active && !t_guard && fstatat(odir, o, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode); \
    int r = call;                                                           \
    if (r == 0 && ok && enter()) {                                          \
        int e = errno;                                                      \
        rec_rename(odir, o, ndir, n, &st);                                  \
        errno = e;                                                          \
        leave();                                                            \
    }                                                                       \
    return r;

EXPORT int rename(const char *o, const char *n)
{
    RESOLVE(rename);
    RENAME_BODY(real_rename(o, n), AT_FDCWD, o, AT_FDCWD, n)
}

EXPORT int renameat(int od, const char *o, int nd, const char *n)
{
    RESOLVE(renameat);
    RENAME_BODY(real_renameat(od, o, nd, n), od, o, nd, n)
}

EXPORT int renameat2(int od, const char *o, int nd, const char *n, unsigned int fl)
{
    RESOLVE(renameat2);
    RENAME_BODY(real_renameat2(od, o, nd, n, fl), od, o, nd, n)
}

#define TRUNCATE_HOOK(name)                                                 \
    EXPORT int name(const char *p, off_t len)                               \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r = real_##name(p, len);                                        \
        if (r == 0 && enter()) {                                            \
            int e = errno;                                                  \
            struct stat st;                                                 \
            char abs[PATH_MAX];                                             \
            if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && abs_path(AT_FDCWD, p, abs, sizeof abs) == 0) \
                add_record(PCSHIM_OP_TRUNCATE, -1, (uint64_t)len, 0, 0, st.st_dev, st.st_ino, \
                           intern_path(abs), 0, 1);                         \
            errno = e;                                                      \
            leave();                                                        \
        }                                                                   \
        return r;                                                           \
    }
TRUNCATE_HOOK(truncate)
TRUNCATE_HOOK(truncate64)

#define FTRUNCATE_HOOK(name)                                                \
    EXPORT int name(int fd, off_t len)                                      \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r = real_##name(fd, len);                                       \
        if (r == 0 && enter()) {                                            \
            int e = errno;                                                  \
            rec_fd(PCSHIM_OP_TRUNCATE, fd, (uint64_t)len, 0, 0, 1);         \
            errno = e;                                                      \
            leave();                                                        \
        }                                                                   \
        return r;                                                           \
    }
FTRUNCATE_HOOK(ftruncate)
FTRUNCATE_HOOK(ftruncate64)

#define FALLOCATE_HOOK(name)                                                \
    EXPORT int name(int fd, int mode, off_t off, off_t len)                 \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r = real_##name(fd, mode, off, len);                            \
        if (r == 0 && enter()) {                                            \
            int e = errno;                                                  \
            rec_fd((mode & 0x02) ? PCSHIM_OP_PUNCH_HOLE : PCSHIM_OP_FALLOCATE, fd, (uint64_t)off, \
                   (uint64_t)len, (uint32_t)mode, 1);                       \
            errno = e;                                                      \
            leave();                                                        \
        }                                                                   \
        return r;                                                           \
    }
FALLOCATE_HOOK(fallocate)
FALLOCATE_HOOK(fallocate64)

EXPORT int fsync(int fd)
{
    RESOLVE(fsync);
    int r = real_fsync(fd);
    if (r == 0 && enter()) {
        int e = errno;
        rec_fd(PCSHIM_OP_FSYNC, fd, 0, 0, 0, 1);
        errno = e;
        leave();
    }
    return r;
}

EXPORT int fdatasync(int fd)
{
    RESOLVE(fdatasync);
    int r = real_fdatasync(fd);
    if (r == 0 && enter()) {
        int e = errno;
        rec_fd(PCSHIM_OP_FDATASYNC, fd, 0, 0, 0, 1);
        errno = e;
        leave();
    }
    return r;
}

EXPORT int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
    RESOLVE(sync_file_range);
    int r = real_sync_file_range(fd, off, n, flags);
    if (r == 0 && enter()) {
        int e = errno;
        rec_fd(PCSHIM_OP_SYNC_RANGE, fd, (uint64_t)off, (uint64_t)n, flags, 1);
        errno = e;
        leave();
    }
    return r;
}

static void copy_fd(int from, int to)
{
    if (to < 0 || to >= MAX_FDS)
        return;
    if (from >= 0 && from < MAX_FDS && atomic_load(&g_fds[from].state) == 1) {
        g_fds[to].dev = g_fds[from].dev;
        g_fds[to].ino = g_fds[from].ino;
        g_fds[to].path = g_fds[from].path;
        atomic_store(&g_fds[to].state, 1);
    } else {
        fd_forget(to);
    }
}

/* Before the program takes fd number `fd` (dup2/dup3 target): move a log file out of the way. */
static void vacate(int fd)
{
    if (!g_active || !is_our_fd(fd))
        return;
    int moved = (int)sc(SYS_fcntl, fd, F_DUPFD_CLOEXEC, fd + 1, 0);
    if (moved < 0)
        return;
    if (fd == g_bin)
        g_bin = moved;
    else
        g_txt = moved;
}

EXPORT int dup(int fd)
{
    RESOLVE(dup);
    int r = real_dup(fd);
    if (r >= 0)
        copy_fd(fd, r);
    return r;
}

EXPORT int dup2(int fd, int to)
{
    RESOLVE(dup2);
    vacate(to);
    int r = real_dup2(fd, to);
    if (r >= 0 && fd != to)
        copy_fd(fd, r);
    return r;
}

EXPORT int dup3(int fd, int to, int flags)
{
    RESOLVE(dup3);
    vacate(to);
    int r = real_dup3(fd, to, flags);
    if (r >= 0)
        copy_fd(fd, r);
    return r;
}

#define FCNTL_HOOK(name)                                                    \
    EXPORT int name(int fd, int cmd, ...)                                   \
    {                                                                       \
        RESOLVE(name);                                                      \
        va_list ap;                                                         \
        va_start(ap, cmd);                                                  \
        void *arg = va_arg(ap, void *);                                     \
        va_end(ap);                                                         \
        int r = real_##name(fd, cmd, arg);                                  \
        if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))           \
            copy_fd(fd, r);                                                 \
        return r;                                                           \
    }
FCNTL_HOOK(fcntl)
FCNTL_HOOK(fcntl64)

EXPORT pid_t fork(void)
{
    RESOLVE(fork);
    pid_t r = real_fork();
    if (r > 0 && enter()) {
        int e = errno;
        add_record(PCSHIM_OP_FORK, -1, (uint64_t)r, 0, 0, 0, 0, 0, 0, 1);
        errno = e;
        leave();
    }
    return r;
}

static void before_exec_at(int dirfd, const char *p)
{
    if (!enter())
        return;
    int e = errno;
    char abs[PATH_MAX];
    uint64_t h = 0;
    if (p && strchr(p, '/') && abs_path(dirfd, p, abs, sizeof abs) == 0)
        h = intern_path(abs);
    else if (p)
        h = intern_path(p);
    add_record(PCSHIM_OP_EXEC, -1, 0, 0, 0, 0, 0, h, 0, 1);
    flush_all();
    end_line(); /* if exec fails, later records still reach the same files */
    errno = e;
    leave();
}

static void before_exec(const char *p) { before_exec_at(AT_FDCWD, p); }

/* The environment a new image gets: `envp` itself when it carries the shim's variables and the
 * shim in LD_PRELOAD, else a copy in `out` (room for MAX_ENV + 6 entries) with them put back
 * (`pre` holds a rebuilt LD_PRELOAD entry). Programs that clear their environment before exec
 * (or spawn with a minimal one) stay recorded this way. */
static char *const *fix_env(char *const *envp, char **out, char *pre, size_t pre_cap)
{
    if (!g_active || !g_self[0])
        return envp;
    const char *preload = NULL;
    int dir = 0, method = 0, frames = 0, n = 0;
    for (char *const *e = envp; e && *e; e++, n++) {
        if (!strncmp(*e, "LD_PRELOAD=", 11))
            preload = *e;
        else if (!strcmp(*e, g_env_dir))
            dir = 1;
        else if (!strcmp(*e, g_env_method))
            method = 1;
        else if (!strcmp(*e, g_env_frames))
            frames = 1;
    }
    int has_self = preload && strstr(preload + 11, g_self);
    if ((dir && method && frames && has_self) || n > MAX_ENV)
        return envp;
    int m = 0;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "PCSHIM_DIR=", 11) && strncmp(*e, "PCSHIM_METHOD=", 14) &&
            strncmp(*e, "PCSHIM_FRAMES=", 14))
            out[m++] = *e;
    out[m++] = g_env_dir;
    out[m++] = g_env_method;
    out[m++] = g_env_frames;
    if (has_self) {
        out[m++] = (char *)preload;
    } else {
        size_t at = put_str(pre, 0, pre_cap - 1, "LD_PRELOAD=");
        at = put_str(pre, at, pre_cap - 1, g_self);
        if (preload && preload[11]) {
            at = put_str(pre, at, pre_cap - 1, ":");
            at = put_str(pre, at, pre_cap - 1, preload + 11);
        }
        pre[at] = 0;
        out[m++] = pre;
    }
    out[m] = NULL;
    return out;
}

#define ENV_BUFS                                                            \
    char *env_out[MAX_ENV + 6];                                             \
    char env_pre[2 * PATH_MAX]
#define FIXED(envp) ((char *const *)fix_env(envp, env_out, env_pre, sizeof env_pre))

EXPORT int execve(const char *p, char *const argv[], char *const envp[])
{
    RESOLVE(execve);
    ENV_BUFS;
    before_exec(p);
    return real_execve(p, argv, FIXED(envp));
}

EXPORT int execv(const char *p, char *const argv[])
{
    RESOLVE(execve);
    ENV_BUFS;
    before_exec(p);
    return real_execve(p, argv, FIXED(environ));
}

EXPORT int execvp(const char *p, char *const argv[])
{
    RESOLVE(execvpe);
    ENV_BUFS;
    before_exec(p);
    return real_execvpe(p, argv, FIXED(environ));
}

EXPORT int execvpe(const char *p, char *const argv[], char *const envp[])
{
    RESOLVE(execvpe);
    ENV_BUFS;
    before_exec(p);
    return real_execvpe(p, argv, FIXED(envp));
}

/* execl, execle, execlp: glibc calls execve internally (no PLT), so they are hooked themselves. */
#define COLLECT_ARGS(arg0, ap, argv, with_env, envp_out)                    \
    int argc_ = 1;                                                          \
    va_start(ap, arg0);                                                     \
    while (va_arg(ap, char *))                                              \
        argc_++;                                                            \
    va_end(ap);                                                             \
    if (argc_ > MAX_ENV) {                                                  \
        errno = E2BIG;                                                      \
        return -1;                                                          \
    }                                                                       \
    char *argv[argc_ + 1];                                                  \
    argv[0] = (char *)(arg0);                                               \
    va_start(ap, arg0);                                                     \
    for (int i_ = 1; i_ <= argc_; i_++)                                     \
        argv[i_] = va_arg(ap, char *);                                      \
    if (with_env)                                                           \
        envp_out = va_arg(ap, char *const *);                                \
    va_end(ap)

EXPORT int execl(const char *p, const char *arg, ...)
{
    RESOLVE(execve);
    va_list ap;
    char *const *unused = NULL;
    COLLECT_ARGS(arg, ap, argv, 0, unused);
    (void)unused;
    ENV_BUFS;
    before_exec(p);
    return real_execve(p, argv, FIXED(environ));
}

EXPORT int execle(const char *p, const char *arg, ...)
{
    RESOLVE(execve);
    va_list ap;
    char *const *envp = NULL;
    COLLECT_ARGS(arg, ap, argv, 1, envp);
    ENV_BUFS;
    before_exec(p);
    return real_execve(p, argv, FIXED(envp));
}

EXPORT int execlp(const char *p, const char *arg, ...)
{
    RESOLVE(execvpe);
    va_list ap;
    char *const *unused = NULL;
    COLLECT_ARGS(arg, ap, argv, 0, unused);
    (void)unused;
    ENV_BUFS;
    before_exec(p);
    return real_execvpe(p, argv, FIXED(environ));
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    RESOLVE(fexecve);
    ENV_BUFS;
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    before_exec(n > 0 ? target : NULL);
    return real_fexecve(fd, argv, FIXED(envp));
}

EXPORT int execveat(int dirfd, const char *p, char *const argv[], char *const envp[], int flags)
{
    RESOLVE(execveat);
    if (!real_execveat) {
        errno = ENOSYS;
        return -1;
    }
    ENV_BUFS;
    before_exec_at(dirfd, p);
    return real_execveat(dirfd, p, argv, FIXED(envp), flags);
}

/* posix_spawn(p): glibc's clone+exec runs inside libc (no hook sees it); the child's new image
 * starts its own shim from the (fixed) environment. The parent records a spawn. */
static void rec_spawn(pid_t child, const char *p)
{
    if (!enter())
        return;
    int e = errno;
    char abs[PATH_MAX];
    uint64_t h = 0;
    if (p && strchr(p, '/') && abs_path(AT_FDCWD, p, abs, sizeof abs) == 0)
        h = intern_path(abs);
    else if (p)
        h = intern_path(p);
    add_record(PCSHIM_OP_SPAWN, -1, (uint64_t)child, 0, 0, 0, 0, h, 0, 1);
    errno = e;
    leave();
}

EXPORT int posix_spawn(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    RESOLVE(posix_spawn);
    ENV_BUFS;
    pid_t child = 0;
    int r = real_posix_spawn(&child, p, fa, attr, argv, FIXED(envp));
    if (r == 0) {
        if (pid)
            *pid = child;
        rec_spawn(child, p);
    }
    return r;
}

EXPORT int posix_spawnp(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    RESOLVE(posix_spawnp);
    ENV_BUFS;
    pid_t child = 0;
    int r = real_posix_spawnp(&child, p, fa, attr, argv, FIXED(envp));
    if (r == 0) {
        if (pid)
            *pid = child;
        rec_spawn(child, p);
    }
    return r;
}

/* vfork: the child would share the parent's memory and so the shim's buffers and log files;
 * served as fork, which POSIX allows (a vfork child may only exec or _exit). */
EXPORT pid_t vfork(void) { return fork(); }

static void rec_fork(pid_t child)
{
    if (child > 0 && enter()) {
        int e = errno;
        add_record(PCSHIM_OP_FORK, -1, (uint64_t)child, 0, 0, 0, 0, 0, 0, 1);
        errno = e;
        leave();
    }
}

/* _Fork runs no atfork handlers: the child starts its logs here. */
EXPORT pid_t _Fork(void)
{
    RESOLVE(_Fork);
    pid_t r = real__Fork();
    if (r == 0)
        atfork_child();
    else
        rec_fork(r);
    return r;
}

/* clone() without CLONE_VM makes a new process that runs no atfork handler. */
struct clone_tramp {
    int (*fn)(void *);
    void *arg;
};

static int clone_child(void *p)
{
    struct clone_tramp t = *(struct clone_tramp *)p; /* the child's copy of the parent's frame */
    atfork_child();
    int status = t.fn(t.arg);
    if (!t_guard)
        finish(status, 1); /* glibc's clone ends the child with a bare exit system call */
    return status;
}

EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    RESOLVE(clone);
    va_list ap;
    va_start(ap, arg);
    void *ptid = va_arg(ap, void *), *tls = va_arg(ap, void *), *ctid = va_arg(ap, void *);
    va_end(ap);
    if (!g_active || (flags & CLONE_VM))
        return real_clone(fn, stack, flags, arg, ptid, tls, ctid);
    struct clone_tramp t = {fn, arg};
    int r = real_clone(clone_child, stack, flags, &t, ptid, tls, ctid);
    rec_fork(r);
    return r;
}

EXPORT void exit(int status)
{
    RESOLVE(exit);
    if (!t_guard)
        on_exit_flush(status, 1);
    real_exit(status);
    __builtin_unreachable();
}

EXPORT void _exit(int status)
{
    RESOLVE(_exit);
    if (!t_guard)
        finish(status, 1);
    real__exit(status);
    __builtin_unreachable();
}

EXPORT void _Exit(int status)
{
    RESOLVE(_Exit);
    if (!t_guard)
        finish(status, 1);
    real__Exit(status);
    __builtin_unreachable();
}

EXPORT void *dlopen(const char *file, int mode)
{
    RESOLVE(dlopen);
    void *h = real_dlopen(file, mode);
    atomic_store(&g_segs_dirty, 1);
    return h;
}

EXPORT int dlclose(void *h)
{
    RESOLVE(dlclose);
    int r = real_dlclose(h);
    atomic_store(&g_segs_dirty, 1);
    return r;
}

/* ---------- stdio: glibc's internal writes bypass the PLT; record at the stdio call ---------- */
static int64_t stdio_pos(FILE *f)
{
    off_t o = ftello(f);
    return o >= 0 ? o : 0;
}

#define STDIO_PRE(f)                                                        \
    int rec = enter();                                                      \
    int64_t pos = 0;                                                        \
    int sfd = -1;                                                           \
    if (rec) {                                                              \
        int e = errno;                                                      \
        sfd = fileno(f);                                                    \
        if (!fd_get(sfd)) {                                                 \
            leave();                                                        \
            rec = 0;                                                        \
        } else                                                              \
            pos = stdio_pos(f);                                             \
        errno = e;                                                          \
    }

#define STDIO_POST(nbytes)                                                  \
    if (rec) {                                                              \
        int e = errno;                                                      \
        if ((nbytes) > 0)                                                   \
            rec_write(sfd, pos, (ssize_t)(nbytes), 1);                      \
        errno = e;                                                          \
        leave();                                                            \
    }

EXPORT size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    RESOLVE(fwrite);
    STDIO_PRE(f)
    size_t r = real_fwrite(p, size, n, f);
    STDIO_POST(r * size)
    return r;
}

EXPORT int fputs(const char *s, FILE *f)
{
    RESOLVE(fputs);
    STDIO_PRE(f)
    int r = real_fputs(s, f);
    STDIO_POST(r >= 0 ? strlen(s) : 0)
    return r;
}

EXPORT int fputc(int c, FILE *f)
{
    RESOLVE(fputc);
    STDIO_PRE(f)
    int r = real_fputc(c, f);
    STDIO_POST(r != EOF ? 1 : 0)
    return r;
}

EXPORT int putc(int c, FILE *f)
{
    RESOLVE(putc);
    STDIO_PRE(f)
    int r = real_putc(c, f);
    STDIO_POST(r != EOF ? 1 : 0)
    return r;
}

EXPORT int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    RESOLVE(vfprintf);
    STDIO_PRE(f)
    int r = real_vfprintf(f, fmt, ap);
    STDIO_POST(r > 0 ? r : 0)
    return r;
}

EXPORT int fprintf(FILE *f, const char *fmt, ...)
{
    RESOLVE(vfprintf);
    va_list ap;
    va_start(ap, fmt);
    STDIO_PRE(f)
    int r = real_vfprintf(f, fmt, ap);
    STDIO_POST(r > 0 ? r : 0)
    va_end(ap);
    return r;
}

EXPORT int fclose(FILE *f)
{
    RESOLVE(fclose);
    int fd = f ? fileno(f) : -1;
    int rec = 0;
    if (fd >= 0 && enter()) {
        int e = errno;
        rec_fd(PCSHIM_OP_CLOSE, fd, 0, 0, 0, 0);
        errno = e;
        rec = 1;
    }
    fd_forget(fd);
    int r = real_fclose(f);
    if (rec)
        leave();
    return r;
}

static int mode_flags(const char *m)
{
    int fl = 0;
    if (m[0] == 'r')
        fl = strchr(m, '+') ? O_RDWR : O_RDONLY;
    else
        fl = (strchr(m, '+') ? O_RDWR : O_WRONLY) | O_CREAT | (m[0] == 'a' ? O_APPEND : O_TRUNC);
    return fl;
}

#define FOPEN_HOOK(name)                                                    \
    EXPORT FILE *name(const char *p, const char *m)                         \
    {                                                                       \
        RESOLVE(name);                                                      \
        int g = t_guard;                                                    \
        t_guard = 1; /* fopen's internal open is not ours to record twice */\
        FILE *f = real_##name(p, m);                                        \
        t_guard = g;                                                        \
        if (f)                                                              \
            after_open(fileno(f), mode_flags(m));                           \
        return f;                                                           \
    }
FOPEN_HOOK(fopen)
FOPEN_HOOK(fopen64)


/* ---------- shared file mappings: msync of a range is recorded as a write of that range ---------- */
struct fmap {
    uintptr_t lo, hi; /* mapped addresses [lo, hi) */
    uint64_t off;     /* file offset of lo */
    uint64_t dev, ino, path;
};

static struct fmap g_maps[MAX_MAPS];
static int g_nmaps;
static atomic_int g_maps_any;
static int g_maps_warned;
static pthread_mutex_t g_map_mu = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t page_up(uintptr_t v)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    return (v + ps - 1) & ~(ps - 1);
}

/* Forget [lo, hi): trim, split or drop the tracked mappings it overlaps. Requires g_map_mu. */
static void maps_cut(uintptr_t lo, uintptr_t hi)
{
    for (int i = 0; i < g_nmaps; i++) {
        struct fmap *m = &g_maps[i];
        if (hi <= m->lo || lo >= m->hi)
            continue;
        if (lo <= m->lo && hi >= m->hi) {
            g_maps[i--] = g_maps[--g_nmaps];
        } else if (lo <= m->lo) {
            m->off += hi - m->lo;
            m->lo = hi;
        } else if (hi >= m->hi) {
            m->hi = lo;
        } else {
            struct fmap tail = *m;
            tail.off += hi - m->lo;
            tail.lo = hi;
            m->hi = lo;
            if (g_nmaps < MAX_MAPS)
                g_maps[g_nmaps++] = tail;
        }
    }
    atomic_store(&g_maps_any, g_nmaps > 0);
}

static void maps_add(uintptr_t lo, uintptr_t hi, uint64_t off, const struct fdinfo *e)
{
    pthread_mutex_lock(&g_map_mu);
    maps_cut(lo, hi);
    int full = g_nmaps == MAX_MAPS;
    if (!full)
        g_maps[g_nmaps++] = (struct fmap){lo, hi, off, e->dev, e->ino, e->path};
    atomic_store(&g_maps_any, g_nmaps > 0);
    pthread_mutex_unlock(&g_map_mu);
    if (full && !g_maps_warned) {
        g_maps_warned = 1;
        warn("msync: more than 1024 shared writable file mappings; msync of the others is not recorded");
    }
}

static void after_mmap(void *r, size_t len, int prot, int flags, int fd, off_t off)
{
    if (r == MAP_FAILED || !g_active)
        return;
    int type = flags & MAP_TYPE;
    if ((type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && (prot & PROT_WRITE) && fd >= 0 && enter()) {
        int e = errno;
        struct fdinfo *info = fd_get(fd);
        if (info)
            maps_add((uintptr_t)r, (uintptr_t)r + page_up(len), (uint64_t)off, info);
        errno = e;
        leave();
    } else if ((flags & MAP_FIXED) && atomic_load(&g_maps_any)) {
        pthread_mutex_lock(&g_map_mu);
        maps_cut((uintptr_t)r, (uintptr_t)r + page_up(len));
        pthread_mutex_unlock(&g_map_mu);
    }
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    RESOLVE(mmap);
    void *r = real_mmap(addr, len, prot, flags, fd, off);
    after_mmap(r, len, prot, flags, fd, off);
    return r;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    RESOLVE(mmap64);
    void *r = real_mmap64(addr, len, prot, flags, fd, off);
    after_mmap(r, len, prot, flags, fd, off);
    return r;
}

EXPORT int munmap(void *addr, size_t len)
{
    RESOLVE(munmap);
    int r = real_munmap(addr, len);
    if (r == 0 && atomic_load(&g_maps_any)) {
        pthread_mutex_lock(&g_map_mu);
        maps_cut((uintptr_t)addr, (uintptr_t)addr + page_up(len));
        pthread_mutex_unlock(&g_map_mu);
    }
    return r;
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    RESOLVE(mremap);
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    void *r = real_mremap(old, old_len, new_len, flags, want);
    if (r != MAP_FAILED && atomic_load(&g_maps_any)) {
        uintptr_t lo = (uintptr_t)old, hi = lo + page_up(old_len);
        pthread_mutex_lock(&g_map_mu);
        struct fmap moved = {0, 0, 0, 0, 0, 0};
        for (int i = 0; i < g_nmaps; i++)
            if (lo >= g_maps[i].lo && lo < g_maps[i].hi) {
                moved = g_maps[i];
                moved.off += lo - g_maps[i].lo;
                break;
            }
        if (!(flags & MREMAP_DONTUNMAP))
            maps_cut(lo, hi);
        if (moved.hi) {
            maps_cut((uintptr_t)r, (uintptr_t)r + page_up(new_len));
            moved.lo = (uintptr_t)r;
            moved.hi = (uintptr_t)r + page_up(new_len);
            if (g_nmaps < MAX_MAPS)
                g_maps[g_nmaps++] = moved;
        }
        atomic_store(&g_maps_any, g_nmaps > 0);
        pthread_mutex_unlock(&g_map_mu);
    }
    return r;
}

EXPORT int msync(void *addr, size_t len, int flags)
{
    RESOLVE(msync);
    int r = real_msync(addr, len, flags);
    if (r != 0 || !(flags & (MS_SYNC | MS_ASYNC)) || !atomic_load(&g_maps_any) || !enter())
        return r;
    int e = errno;
    uintptr_t lo = (uintptr_t)addr, hi = lo + page_up(len);
    struct fmap hit[16];
    int n = 0;
    pthread_mutex_lock(&g_map_mu);
    for (int i = 0; i < g_nmaps && n < 16; i++) {
        struct fmap m = g_maps[i];
        if (hi <= m.lo || lo >= m.hi)
            continue;
        uintptr_t a = lo > m.lo ? lo : m.lo, b = hi < m.hi ? hi : m.hi;
        hit[n++] = (struct fmap){a, b, m.off + (a - m.lo), m.dev, m.ino, m.path};
    }
    pthread_mutex_unlock(&g_map_mu);
    struct pc_once pc = {0, 0, 0};
    for (int i = 0; i < n; i++)
        push_record(PCSHIM_OP_WRITE, -1, hit[i].off, hit[i].hi - hit[i].lo, PCSHIM_VIA_MSYNC, hit[i].dev, hit[i].ino,
                    hit[i].path, 0, &pc);
    errno = e;
    leave();
    return r;
}

/* ---------- Linux AIO: each write iocb is recorded when io_submit accepts it ---------- */
static void rec_iocbs(struct iocb **cbs, long n)
{
    struct pc_once pc = {0, 0, 0};
    for (long i = 0; i < n; i++) {
        const struct iocb *cb = cbs[i];
        int fd = (int)cb->aio_fildes;
        uint64_t len = 0;
        int op;
        switch (cb->aio_lio_opcode) {
        case IOCB_CMD_PWRITE:
            op = PCSHIM_OP_WRITE;
            len = cb->aio_nbytes;
            break;
        case IOCB_CMD_PWRITEV: {
            op = PCSHIM_OP_WRITE;
            const struct iovec *iov = (const struct iovec *)(uintptr_t)cb->aio_buf;
            for (uint64_t k = 0; k < cb->aio_nbytes && k < 1024; k++)
                len += iov[k].iov_len;
            break;
        }
        case IOCB_CMD_FSYNC:
            op = PCSHIM_OP_FSYNC;
            break;
        case IOCB_CMD_FDSYNC:
            op = PCSHIM_OP_FDATASYNC;
            break;
        default:
            continue;
        }
        struct fdinfo *e = fd_get(fd);
        if (!e || (op == PCSHIM_OP_WRITE && len == 0))
            continue;
        push_record(op, fd, op == PCSHIM_OP_WRITE ? (uint64_t)cb->aio_offset : 0, len,
                    op == PCSHIM_OP_WRITE ? PCSHIM_VIA_AIO : 0, e->dev, e->ino, e->path, 0, &pc);
    }
}

/* libaio's io_submit (it returns -errno). The guard is held across the real call so that its own
 * syscall() is not recorded a second time. */
EXPORT int io_submit(unsigned long ctx, long nr, struct iocb **cbs)
{
    RESOLVE(io_submit);
    int rec = enter();
    int r;
    if (real_io_submit) {
        r = real_io_submit(ctx, nr, cbs);
    } else {
        long v = sc(SYS_io_submit, (long)ctx, nr, (long)cbs, 0);
        r = v < 0 ? -errno : (int)v;
    }
    if (rec) {
        int e = errno;
        if (r > 0)
            rec_iocbs(cbs, r);
        errno = e;
        leave();
    }
    return r;
}

/* ---------- copies into a file ---------- */
EXPORT ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned int flags)
{
    RESOLVE(copy_file_range);
    int64_t at = out_off ? (int64_t)*out_off : -1;
    ssize_t r = real_copy_file_range(in, in_off, out, out_off, len, flags);
    if (r > 0 && enter()) {
        int e = errno;
        rec_write(out, at, r, PCSHIM_VIA_COPY);
        errno = e;
        leave();
    }
    return r;
}

#define SENDFILE_HOOK(name)                                                 \
    EXPORT ssize_t name(int out, int in, off_t *off, size_t n)              \
    {                                                                       \
        RESOLVE(name);                                                      \
        ssize_t r = real_##name(out, in, off, n);                           \
        if (r > 0 && enter()) {                                             \
            int e = errno;                                                  \
            rec_write(out, -1, r, PCSHIM_VIA_SENDFILE);                     \
            errno = e;                                                      \
            leave();                                                        \
        }                                                                   \
        return r;                                                           \
    }
SENDFILE_HOOK(sendfile)
SENDFILE_HOOK(sendfile64)

EXPORT ssize_t splice(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned int flags)
{
    RESOLVE(splice);
    int64_t at = out_off ? (int64_t)*out_off : -1;
    ssize_t r = real_splice(in, in_off, out, out_off, len, flags);
    if (r > 0 && enter()) {
        int e = errno;
        rec_write(out, at, r, PCSHIM_VIA_SPLICE);
        errno = e;
        leave();
    }
    return r;
}

/* ---------- syscall(): the raw calls the shim cares about ---------- */
EXPORT long syscall(long n, ...)
{
    RESOLVE(syscall);
    va_list ap;
    va_start(ap, n);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e5 = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    switch (n) {
    case SYS_io_submit: {
        int rec = enter();
        long r = real_syscall(n, a, b, c, d, e5, f);
        if (rec) {
            int e = errno;
            if (r > 0)
                rec_iocbs((struct iocb **)c, r);
            errno = e;
            leave();
        }
        return r;
    }
    case SYS_io_uring_setup: {
        long r = real_syscall(n, a, b, c, d, e5, f);
        if (r >= 0)
            uring_used();
        return r;
    }
    case SYS_write:
    case SYS_pwrite64: {
        long r = real_syscall(n, a, b, c, d, e5, f);
        if (r > 0 && enter()) {
            int e = errno;
            rec_write((int)a, n == SYS_pwrite64 ? d : -1, r, PCSHIM_VIA_SYSCALL);
            errno = e;
            leave();
        }
        return r;
    }
    case SYS_clone:
    case SYS_clone3: {
        /* A new process (no CLONE_VM) returning here in the child: start its logs. A child on
         * a new stack cannot return through C code, so only the fork-like form matters. */
        unsigned long fl = n == SYS_clone ? (unsigned long)a : a ? *(const unsigned long *)a : 0;
        long r = real_syscall(n, a, b, c, d, e5, f);
        if (g_active && !(fl & CLONE_VM)) {
            if (r == 0)
                atfork_child();
            else
                rec_fork((pid_t)r);
        }
        return r;
    }
    default:
        return real_syscall(n, a, b, c, d, e5, f);
    }
}

/* ---------- liburing: set-up is counted (ring I/O bypasses every hook) ---------- */
#define URING_HOOK(name, params, args)                                      \
    EXPORT int name params                                                  \
    {                                                                       \
        RESOLVE(name);                                                      \
        if (!real_##name)                                                   \
            return -ENOSYS;                                                 \
        int r = real_##name args;                                           \
        if (r >= 0)                                                         \
            uring_used();                                                   \
        return r;                                                           \
    }
URING_HOOK(io_uring_queue_init, (unsigned entries, void *ring, unsigned flags), (entries, ring, flags))
URING_HOOK(io_uring_queue_init_params, (unsigned entries, void *ring, void *p), (entries, ring, p))
URING_HOOK(io_uring_queue_init_mem, (unsigned entries, void *ring, void *p, void *buf, size_t n),
           (entries, ring, p, buf, n))
URING_HOOK(io_uring_setup, (unsigned entries, void *p), (entries, p))
