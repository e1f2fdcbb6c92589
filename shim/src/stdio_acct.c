/* stdio_acct.c: what a stream holds, read from glibc's FILE without a call or a lock: whether it
 * is writing, its bytes not yet written out (as glibc's ftell counts them; wide streams: their
 * pending wide characters by their multibyte length in the current locale), the streams a
 * description remembers (struct sslot: its buffer pointers at the last observation) and the
 * growth of a stream since then (never more than was put: a buffer written out unseen hides what
 * went with it). The observations that record from these are stdio_obs.c's. */
#include "shim.h"

#define IO_MAGIC_MASK 0xFFFF0000u
#define IO_MAGIC 0xFBAD0000u
#define IO_CURRENTLY_PUTTING 0x0800
#define IO_IS_APPENDING 0x1000
/* The first fields of glibc's struct _IO_wide_data (libio.h), which the public headers leave opaque. */
struct wide_view {
    wchar_t *read_ptr, *read_end, *read_base, *write_base, *write_ptr, *write_end;
};

int stream_ok(const FILE *f) { return f && ((unsigned)f->_flags & IO_MAGIC_MASK) == IO_MAGIC; }

static int is_putting(const FILE *f) { return (f->_flags & IO_CURRENTLY_PUTTING) && f->_IO_write_base; }

static const struct wide_view *wide_of(const FILE *f)
{
    return f->_mode > 0 && f->_wide_data ? (const struct wide_view *)(const void *)f->_wide_data : NULL;
}

/* Bytes n wide characters take in the current locale's multibyte encoding. */
int64_t wide_bytes(const wchar_t *s, size_t n)
{
    mbstate_t st;
    memset(&st, 0, sizeof st);
    char tmp[MB_LEN_MAX];
    int64_t b = 0;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)s[i] < 0x80) {
            b++;
            continue;
        }
        size_t k = wcrtomb(tmp, s[i], &st);
        if (k == (size_t)-1) {
            memset(&st, 0, sizeof st);
            k = 1;
        }
        b += (int64_t)k;
    }
    return b;
}

/* Estimated bytes of the wide characters f holds, incrementally from slot s when it can. */
static int64_t wide_pending(const FILE *f, const struct sslot *s)
{
    const struct wide_view *w = wide_of(f);
    if (!w || !w->write_base || !is_putting(f) || w->write_ptr < w->write_base)
        return 0;
    if (s && s->f == f && s->wwb == w->write_base && s->wwp && w->write_ptr >= s->wwp)
        return s->wbytes + wide_bytes(s->wwp, (size_t)(w->write_ptr - s->wwp));
    return wide_bytes(w->write_base, (size_t)(w->write_ptr - w->write_base));
}

/* What f adds to its description's file position once written out (negative while reading:
 * read-ahead), as glibc's ftell counts it. */
static int64_t stream_pending(const FILE *f, const struct sslot *s)
{
    if (is_putting(f)) {
        const char *base = (f->_flags & IO_IS_APPENDING) || !f->_IO_read_end ? f->_IO_write_base : f->_IO_read_end;
        return (f->_IO_write_ptr - base) + wide_pending(f, s);
    }
    if (f->_IO_read_ptr && f->_IO_read_end > f->_IO_read_ptr)
        return -(int64_t)(f->_IO_read_end - f->_IO_read_ptr);
    return 0;
}

static int attached(const struct desc *d, const FILE *f)
{
    int fd = f && stream_ok(f) ? f->_fileno : -1;
    return fd >= 0 && fd < MAX_FDS && atomic_load_explicit(&g_fds[fd].d, memory_order_relaxed) == d;
}

int64_t desc_pending(struct desc *d, int with_wide)
{
    int64_t p = 0;
    for (int i = 0; i < DESC_STREAMS; i++) {
        const struct sslot *s = &d->s[i];
        if (s->f && attached(d, s->f))
            p += with_wide ? stream_pending(s->f, s) : stream_pending(s->f, NULL) - wide_pending(s->f, NULL);
    }
    return p;
}

/* The slot of f in d, attached if new (*fresh = 1). Requires d's lock. */
struct sslot *slot_of(struct desc *d, FILE *f, int *fresh)
{
    struct sslot *free_slot = NULL;
    for (int i = 0; i < DESC_STREAMS; i++) {
        struct sslot *s = &d->s[i];
        if (s->f == f) {
            *fresh = 0;
            return s;
        }
        if (!free_slot && (!s->f || !attached(d, s->f)))
            free_slot = s;
    }
    if (!free_slot)
        free_slot = &d->s[0];
    if (!free_slot->f)
        atomic_fetch_add(&d->nslots, 1);
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->f = f;
    *fresh = 1;
    return free_slot;
}

/* Bytes put into f since slot s last looked, from its buffer pointers: never more than were put
 * (a buffer written out unseen since then hides what went with it). */
int64_t growth(const FILE *f, const struct sslot *s, int fresh)
{
    if (!is_putting(f))
        return 0;
    int same = !fresh && s->putting && s->wb == f->_IO_write_base && s->wp && f->_IO_write_ptr >= s->wp;
    int64_t g = same ? f->_IO_write_ptr - s->wp : f->_IO_write_ptr - f->_IO_write_base;
    const struct wide_view *w = wide_of(f);
    if (w && w->write_base) {
        int64_t now = wide_pending(f, s);
        int wsame = !fresh && s->putting && s->wwb == w->write_base && s->wwp && w->write_ptr >= s->wwp;
        if (wsame)
            g += now - s->wbytes;
        else
            g += now - (same ? s->wbytes : 0); /* converted into the byte buffer: counted there */
    }
    return g > 0 ? g : 0;
}

void remember(struct sslot *s, const FILE *f)
{
    s->putting = is_putting(f);
    s->wb = f->_IO_write_base;
    s->wp = f->_IO_write_ptr;
    const struct wide_view *w = wide_of(f);
    if (w && w->write_base && s->putting) {
        s->wbytes = wide_pending(f, s);
        s->wwb = w->write_base;
        s->wwp = w->write_ptr;
    } else {
        s->wwb = s->wwp = NULL;
        s->wbytes = 0;
    }
}

