/* stdio_obs.c: stdio accounting. glibc writes a stream's buffer with internal calls no hook sees,
 * and putc-style macros fill it without any call, so the shim accounts per stream instead of per
 * call: at every observation point (each hooked stdio call, before and after the real call;
 * __overflow, fflush, fclose, the seeks, fork, exit: the last ones exactly) the bytes put into the
 * stream since the last observation are recorded at the description's logical end (`acc`, see
 * account.c), flags PCSHIM_VIA_STDIO; bytes that got there before the current call (macros) also
 * PCSHIM_VIA_STDIO_INLINE. Growth is read from the FILE's buffer pointers (stdio_acct.c: cheap, no
 * system call); an exact observation reads the file position instead (lseek): on an exclusive
 * description every byte beyond `acc` is then recorded, on another one `acc` only follows the
 * position. The hooks are in hooks_stdio*.c. */
#include "shim.h"

#define OBS_KIND 0x0f
#define OBS_FINAL 0x10 /* exit paths: never wait long for a lock */

/* glibc's iteration over every stream (exported, libio.h) */
extern void *_IO_iter_begin(void);
extern void *_IO_iter_end(void);
extern void *_IO_iter_next(void *);
extern FILE *_IO_iter_file(void *);
extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);

static void rec_bytes(struct obs *o, int64_t n, uint32_t flags)
{
    struct desc *d = o->d;
    int64_t at = atomic_fetch_add(&d->acc, n);
    push_record(&(struct pcshim_record){.op = PCSHIM_OP_WRITE, .fd = o->fd, .offset = (uint64_t)(at < 0 ? 0 : at),
                                        .len = (uint64_t)n, .flags = flags, .dev = d->dev, .ino = d->ino,
                                        .path = d->path},
                &o->pc);
}

static int lock_for(struct obs *o, int final)
{
    if (final)
        return desc_trylock(o->d);
    desc_lock(o->d);
    return 1;
}

/* ---------- observations: the guard is held by the caller ---------- */
/* Before a call on f (or at a flush point): record what entered f since it was last observed.
 * Returns 1 if f writes to a tracked file (then obs_post may follow). */
int obs_pre(struct obs *o, FILE *f, int kind)
{
    o->f = f;
    o->d = NULL;
    o->before = -1;
    o->pc = (struct pc_once){0, 0, 0};
    o->kind = kind;
    if (!stream_ok(f))
        return 0;
    int fd = f->_fileno;
    struct fdinfo *e = fd_get(fd);
    struct desc *d = e ? atomic_load_explicit(&e->d, memory_order_relaxed) : NULL;
    if (!d)
        return 0;
    o->fd = fd;
    o->d = d;
    if (!lock_for(o, kind & OBS_FINAL))
        return 0;
    int fresh;
    struct sslot *s = slot_of(d, f, &fresh);
    int64_t g = growth(f, s, fresh);
    const uint32_t inl = PCSHIM_VIA_STDIO | PCSHIM_VIA_STDIO_INLINE;
    if ((kind & OBS_KIND) == OBS_LOOK) {
        /* nothing before the call */
    } else if ((kind & OBS_KIND) == OBS_CALL) {
        if (g > 0)
            rec_bytes(o, g, inl);
    } else {
        int64_t end = desc_end(fd, d);
        if (end < 0) {
            if (g > 0)
                rec_bytes(o, g, inl);
        } else if (atomic_load(&d->flags) & D_EXCL) {
            int64_t acc = atomic_load(&d->acc);
            if (end > acc)
                rec_bytes(o, end - acc, inl);
            atomic_store(&d->acc, end);
        } else {
            if (g > 0)
                rec_bytes(o, g, inl);
            atomic_store(&d->acc, end);
        }
        o->before = end;
    }
    remember(s, f);
    desc_unlock(d);
    return 1;
}

/* After the call: n bytes it put (-1: measure by the buffer; OBS_BRACKET: by the description's
 * exact end, which counts whatever the call wrote out itself). */
void obs_post(struct obs *o, int64_t n)
{
    struct desc *d = o->d;
    if (!d || !lock_for(o, o->kind & OBS_FINAL))
        return;
    int fresh;
    struct sslot *s = slot_of(d, o->f, &fresh);
    if ((o->kind & OBS_KIND) == OBS_BRACKET && o->before >= 0) {
        int64_t end = desc_end(o->fd, d);
        if (end > o->before)
            rec_bytes(o, end - o->before, PCSHIM_VIA_STDIO);
        if (end >= 0)
            atomic_store(&d->acc, end);
    } else {
        int64_t g = n >= 0 ? n : growth(o->f, s, fresh);
        if (g > 0)
            rec_bytes(o, g, PCSHIM_VIA_STDIO);
    }
    remember(s, o->f);
    desc_unlock(d);
}

/* ---------- the hooks' entry and exit ---------- */
/* A hooked call holds the stream's own lock (recursive: the real call takes it again) from before
 * to after, so that another thread's call on the same stream is wholly before or after it and
 * its bytes are never counted twice (once as growth, once by its return value). The stream lock
 * is always taken before a description's lock. */
static void stream_lock(FILE *f)
{
    if (f->_lock)
        flockfile(f);
}

static void stream_unlock(FILE *f)
{
    if (f->_lock)
        funlockfile(f);
}

/* The stream lock of an obs_begin whose stream outlives a call that is not followed by obs_end
 * (freopen, and fclose of the three standard streams, which glibc keeps). */
void obs_unlock(FILE *f)
{
    stream_unlock(f);
}

int obs_begin(struct obs *o, FILE *f, int kind)
{
    if (!g_active || t_guard || !f)
        return 0;
    t_guard = 1;
    int e = errno;
    int r = 0;
    struct fdinfo *fe = stream_ok(f) ? fd_get(f->_fileno) : NULL;
    if (fe && atomic_load_explicit(&fe->d, memory_order_relaxed)) {
        my_buf(); /* a first record sets the thread up (the main thread's reads /proc with stdio): not under a stream lock */
        stream_lock(f);
        r = obs_pre(o, f, kind);
        if (!r)
            stream_unlock(f);
    }
    if (!r)
        t_guard = 0;
    errno = e;
    return r;
}

void obs_end(struct obs *o, int64_t n)
{
    int e = errno;
    obs_post(o, n);
    stream_unlock(o->f);
    errno = e;
    leave();
}

/* After a seek or a purge: the description's end is read again, nothing is recorded. */
void obs_end_rebase(struct obs *o)
{
    int e = errno;
    struct desc *d = o->d;
    if (d) {
        desc_lock(d);
        int fresh;
        struct sslot *s = slot_of(d, o->f, &fresh);
        int64_t end = desc_end(o->fd, d);
        if (end >= 0)
            atomic_store(&d->acc, end);
        remember(s, o->f);
        desc_unlock(d);
    }
    stream_unlock(o->f);
    errno = e;
    leave();
}

/* A bracketed call that may not return (it exits or aborts inside libc): its "after" is taken on
 * the exit path (pending_end), before the streams are accounted there. */
static TLS struct obs t_pending;
static TLS int t_pending_on;

int obs_begin_pending(FILE *f)
{
    int r = obs_begin(&t_pending, f, OBS_BRACKET);
    t_pending_on = r;
    return r;
}

void obs_end_pending(void)
{
    if (t_pending_on) {
        t_pending_on = 0;
        obs_end(&t_pending, -1);
    }
}

void pending_end(void)
{
    if (t_pending_on) {
        t_pending_on = 0;
        t_pending.kind |= OBS_FINAL;
        obs_post(&t_pending, -1);
    }
}

/* f is being closed: its slot is freed. */
void stdio_forget(FILE *f, int fd)
{
    struct desc *d = fd >= 0 && fd < MAX_FDS ? atomic_load(&g_fds[fd].d) : NULL;
    if (!d)
        return;
    desc_lock(d);
    for (int i = 0; i < DESC_STREAMS; i++)
        if (d->s[i].f == f) {
            memset(&d->s[i], 0, sizeof d->s[i]);
            atomic_fetch_sub(&d->nslots, 1);
        }
    desc_unlock(d);
}

/* Every stream, exactly (fflush(NULL), fcloseall, fork, exit: before glibc writes them out). The
 * guard is held by the caller. */
void stdio_all(void)
{
    _IO_list_lock();
    for (void *it = _IO_iter_begin(); it != _IO_iter_end(); it = _IO_iter_next(it)) {
        struct obs o;
        FILE *f = _IO_iter_file(it);
        if (!f || !stream_ok(f) || f->_fileno < 0 || !f->_lock)
            continue;
        struct fdinfo *e = fd_get(f->_fileno);
        if (!e || !atomic_load_explicit(&e->d, memory_order_relaxed))
            continue; /* not a file written here (stdin, a pipe, a tty): never waited for */
        /* a thread inside a call on f finishes it first (bounded: a thread stopped with the lock
         * held, or this very thread interrupted, is not waited for) */
        int got = 0;
        for (int spin = 0; spin < 100000 && !(got = ftrylockfile(f) == 0); spin++)
            if (spin > 100)
                sched_yield();
        if (!got)
            continue;
        obs_pre(&o, f, OBS_EXACT | OBS_FINAL);
        funlockfile(f);
    }
    _IO_list_unlock();
}
