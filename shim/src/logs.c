/* logs.c: the output files of a process image (<pid>.<start_ns>.bin and .txt, kept at fds >= 900),
 * the text lines other than signatures (P paths, W warnings; S/F lines are stackwalk.c's, the E
 * line lifecycle.c's) and the per-thread record buffers with their flushing. Records are built in
 * record.c; when logs are opened or reopened (init, fork) is lifecycle.c's business. */
#include "shim.h"

int g_bin = -1, g_txt = -1;
uint32_t g_pid;
atomic_ullong g_records;
_Atomic(uint64_t) g_seen_sig[SEEN_SLOTS];
static _Atomic(uint64_t) g_seen_path[SEEN_SLOTS];
struct tbuf *_Atomic g_threads[MAX_THREADS];
TLS struct tbuf *t_buf;
static TLS struct tbuf t_storage;

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

void open_logs(void)
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

void txt_line(const char *s, size_t n) { write_all(g_txt, s, n); }

void warn(const char *msg)
{
    char line[512];
    size_t at = put_str(line, 0, sizeof line - 1, "W ");
    at = put_str(line, at, sizeof line - 1, msg);
    line[at++] = '\n';
    txt_line(line, at);
}

uint64_t intern_path(const char *p)
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

/* ---------- per-thread buffers ---------- */
void flush_buf(struct tbuf *b)
{
    if (b->used > 0) {
        write_all(g_bin, b->rec, (size_t)b->used * sizeof(struct pcshim_record));
        b->used = 0;
    }
}

void lock_buf(struct tbuf *b)
{
    while (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
        ;
}

void unlock_buf(struct tbuf *b) { atomic_store_explicit(&b->lock, 0, memory_order_release); }

void thread_gone(void *p)
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

void flush_all(void)
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

struct tbuf *my_buf(void)
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
