/* logs.c: the output files of a process image (<pid>.<start_ns>.bin and .txt, kept at fds >= 900
 * and kept the shim's own by logfd.c),
 * the text lines other than signatures (P paths, W warnings; S/F lines are stackwalk.c's, the E
 * line lifecycle.c's) and the per-thread record buffers with their flushing. Records are built in
 * record.c; when logs are opened or reopened (init, fork) is lifecycle.c's business. */
#include "shim.h"

int g_bin = -1, g_txt = -1;
uint32_t g_pid;
atomic_ullong g_records;
_Atomic(uint64_t) g_seen_sig[SEEN_SLOTS];
static _Atomic(uint64_t) g_seen_path[SEEN_SLOTS];
static _Atomic(uint64_t) g_seen_warn[SEEN_SLOTS];
struct tbuf *_Atomic g_threads[MAX_THREADS];
TLS struct tbuf *t_buf;
static TLS struct tbuf t_storage;

/* ---------- output files ---------- */
void open_logs(void)
{
    char name[PATH_MAX + 64];
    uint64_t start = now_ns();
    g_pid = (uint32_t)getpid();
    snprintf(name, sizeof name, "%s/%u.%llu.bin", g_dir, g_pid, (unsigned long long)start);
    g_bin = log_open(LOG_BIN, name, OUR_FD_FLOOR);
    snprintf(name, sizeof name, "%s/%u.%llu.txt", g_dir, g_pid, (unsigned long long)start);
    g_txt = log_open(LOG_TXT, name, OUR_FD_FLOOR);
    struct pcshim_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PCSHIM_MAGIC, 8);
    h.version = PCSHIM_VERSION;
    h.record_size = sizeof(struct pcshim_record);
    h.pid = g_pid;
    h.ppid = (uint32_t)getppid();
    h.frames = (uint32_t)g_frames;
    h.method = (uint32_t)g_method;
    log_write(&g_bin, LOG_BIN, &h, sizeof h);
    atomic_store(&g_records, 0);
    for (int i = 0; i < SEEN_SLOTS; i++) {
        atomic_store(&g_seen_sig[i], 0);
        atomic_store(&g_seen_path[i], 0);
        atomic_store(&g_seen_warn[i], 0);
    }
}

void txt_line(const char *s, size_t n)
{
    log_write(&g_txt, LOG_TXT, s, n);
}

void shim_warn(const char *msg)
{
    char line[PATH_MAX + 512];
    size_t at = put_str(line, 0, sizeof line - 1, "W ");
    at = put_str(line, at, sizeof line - 1, msg);
    line[at++] = '\n';
    txt_line(line, at);
}

/* A warning written once per process image (the same text again is dropped). */
void warn_once(const char *msg)
{
    if (seen_insert(g_seen_warn, hash_bytes(msg, strlen(msg))))
        shim_warn(msg);
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
/* A buffer is consistent at every instruction for a signal handler of its own thread: push_record
 * stores a record before counting it, and the flush (write, then reset) runs with every signal
 * blocked. So an exit path in a handler that interrupted the shim can still flush it. */
void flush_buf(struct tbuf *b)
{
    if (b->used > 0 && g_bin >= 0) {
        uint64_t all = ~0ULL, old = 0;
        sc(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, sizeof all);
        log_write(&g_bin, LOG_BIN, b->rec, (size_t)b->used * sizeof(struct pcshim_record));
        b->used = 0;
        sc(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, sizeof old);
    }
}

static int self_id(void) { return t_buf ? (int)t_buf->tid : (int)sc(SYS_gettid, 0, 0, 0, 0); }

/* Take b's lock (holder id = tid). Returns 1 if taken; 0 when the holder is this very thread (a
 * signal handler interrupting the shim: go on without it), when the process image has ended (its
 * buffers are held for good), or, if `bounded`, when another thread keeps it too long. */
int lock_buf(struct tbuf *b, int bounded)
{
    int me = self_id();
    for (long spin = 0;; spin++) {
        int cur = 0;
        if (atomic_compare_exchange_weak_explicit(&b->lock, &cur, me, memory_order_acquire, memory_order_relaxed))
            return 1;
        if (cur == me || atomic_load_explicit(&g_finished, memory_order_relaxed) || (bounded && spin > 1000000))
            return 0;
    }
}

void unlock_buf(struct tbuf *b) { atomic_store_explicit(&b->lock, 0, memory_order_release); }

/* Append a record to this thread's buffer (flushed when full). */
void buf_append(struct tbuf *b, const struct pcshim_record *r)
{
    int owned = lock_buf(b, 0);
    if (!owned && atomic_load(&g_finished))
        return;
    int i = b->used;
    if (i >= BUF_RECORDS) {
        flush_buf(b);
        i = 0;
    }
    b->rec[i] = *r;
    atomic_signal_fence(memory_order_seq_cst);
    b->used = i + 1;
    if (b->used == BUF_RECORDS)
        flush_buf(b);
    if (owned)
        unlock_buf(b);
}

void thread_gone(void *p)
{
    struct tbuf *b = p;
    int owned = lock_buf(b, 1);
    if (owned) {
        flush_buf(b);
        unlock_buf(b);
    }
    for (int i = 0; i < MAX_THREADS; i++) {
        struct tbuf *cur = b;
        if (atomic_compare_exchange_strong(&g_threads[i], &cur, NULL))
            break;
    }
}

/* Flush every thread's buffer. A thread stopped inside its append (by a signal) is waited for a
 * bounded time, then skipped. `hold`: keep the locks (the end of the process image: a thread
 * still running flushes nothing after the E line, so no torn record follows it). */
void flush_all(int hold)
{
    int me = self_id();
    for (int i = 0; i < MAX_THREADS; i++) {
        struct tbuf *b = atomic_load(&g_threads[i]);
        if (!b)
            continue;
        int got = 0, mine = 0;
        for (long spin = 0; spin < 1000000 && !got && !mine; spin++) {
            int cur = 0;
            got = atomic_compare_exchange_weak_explicit(&b->lock, &cur, me, memory_order_acquire,
                                                        memory_order_relaxed);
            mine = !got && cur == me;
        }
        if (!got && !mine)
            continue;
        flush_buf(b);
        if (got && !hold)
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
