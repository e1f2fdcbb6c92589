/* hooks_stdio.c: the stdio calls that open, close, flush or move streams: fopen(64) and
 * freopen(64) (an open record, after_open in hooks_files.c), fclose and _IO_fclose (the stream's
 * bytes accounted exactly, the safety net, a close record: glibc closes the fd internally),
 * fcloseall, _IO_flush_all(_linebuffered), fflush(_unlocked) and _IO_fflush (fflush(NULL): every
 * stream), __overflow (what putc-style macros call when the buffer is full), fseek, fseeko(64),
 * rewind, fsetpos(64) (accounted, then re-based on the new position) and __fpurge (buffered bytes
 * dropped: re-based).
 * The accounting itself is stdio_acct.c's; the calls that put bytes are in hooks_stdio_put.c,
 * hooks_stdio_print.c, hooks_stdio_wide.c and hooks_stdio_diag.c. */
#include "shim.h"

/* ---------- open ---------- */
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
        t_guard = 1; /* fopen's internal open is not ours to record twice */ \
        FILE *f = real_##name(p, m);                                        \
        t_guard = g;                                                        \
        if (f)                                                              \
            after_open(fileno(f), mode_flags(m));                           \
        return f;                                                           \
    }
FOPEN_HOOK(fopen)
FOPEN_HOOK(fopen64)

/* ---------- close ---------- */
static int fd_of(const FILE *f)
{
    return f && ((unsigned)f->_flags & 0xFFFF0000u) == 0xFBAD0000u ? f->_fileno : -1;
}

/* Before glibc closes f's fd (internally, no hook sees it): the stream's bytes exactly, the
 * safety net on its description if this is its last fd (with what the stream will still write
 * out), and the close record. Returns whether the guard was taken (the caller leaves after the
 * real call); `*locked` says whether f's own lock is held (taken to count its bytes exactly):
 * the caller releases it after the real call whenever the stream outlives that call (freopen,
 * fclose of stdin, stdout or stderr), or every other thread using the stream would wait for
 * ever. */
static int before_stream_close(FILE *f, int *locked)
{
    *locked = 0;
    int fd = fd_of(f);
    if (fd < 0)
        return 0;
    struct obs o;
    int rec = obs_begin(&o, f, OBS_EXACT);
    *locked = rec;
    if (!rec && !enter())
        goto forget;
    int e = errno;
    if (rec) {
        if (atomic_load(&o.d->refs) == 1)
            net_check(fd, o.d, 1, &o.pc);
        stdio_forget(f, fd);
    }
    rec_fd(PCSHIM_OP_CLOSE, fd, 0, 0, 0, 0);
    errno = e;
    fd_forget(fd);
    return 1;
forget:
    fd_forget(fd);
    return 0;
}

#define FCLOSE_HOOK(name)                                                   \
    EXPORT int name(FILE *f)                                                \
    {                                                                       \
        RESOLVE(name);                                                      \
        int locked;                                                         \
        /* glibc frees every stream it closes but the standard three */    \
        int kept = f == stdin || f == stdout || f == stderr;                \
        int rec = before_stream_close(f, &locked);                          \
        int r = real_##name(f);                                             \
        if (locked && kept)                                                 \
            obs_unlock(f);                                                  \
        if (rec)                                                            \
            leave();                                                        \
        return r;                                                           \
    }
FCLOSE_HOOK(fclose)
FCLOSE_HOOK(_IO_fclose)

#define FREOPEN_HOOK(name)                                                  \
    EXPORT FILE *name(const char *p, const char *m, FILE *f)                \
    {                                                                       \
        RESOLVE(name);                                                      \
        int locked;                                                         \
        int rec = before_stream_close(f, &locked);                          \
        int g = t_guard;                                                    \
        t_guard = 1;                                                        \
        FILE *r = real_##name(p, m, f);                                     \
        t_guard = g;                                                        \
        if (locked) /* f is the same object after the call, open or not */ \
            obs_unlock(f);                                                  \
        if (rec)                                                            \
            leave();                                                        \
        if (r)                                                              \
            after_open(fileno(r), mode_flags(m));                           \
        return r;                                                           \
    }
FREOPEN_HOOK(freopen)
FREOPEN_HOOK(freopen64)

/* glibc's fcloseall writes every stream out (it closes no fd); so do its exported
 * _IO_flush_all and _IO_flush_all_linebuffered (the line-buffered ones). */
#define ALL_STREAMS_HOOK(ret, name)                                         \
    EXPORT ret name(void)                                                   \
    {                                                                       \
        RESOLVE(name);                                                      \
        RECORD_IF(1, stdio_all());                                          \
        return real_##name();                                               \
    }
ALL_STREAMS_HOOK(int, fcloseall)
ALL_STREAMS_HOOK(int, _IO_flush_all)

EXPORT void _IO_flush_all_linebuffered(void)
{
    RESOLVE(_IO_flush_all_linebuffered);
    RECORD_IF(1, stdio_all());
    real__IO_flush_all_linebuffered();
}

/* ---------- flush points ---------- */
#define FFLUSH_HOOK(name)                                                   \
    EXPORT int name(FILE *f)                                                \
    {                                                                       \
        RESOLVE(name);                                                      \
        if (!f) {                                                           \
            RECORD_IF(1, stdio_all());                                      \
            return real_##name(f);                                          \
        }                                                                   \
        struct obs o;                                                       \
        int rec = obs_begin(&o, f, OBS_EXACT);                              \
        int r = real_##name(f);                                             \
        if (rec)                                                            \
            obs_end(&o, 0);                                                 \
        return r;                                                           \
    }
FFLUSH_HOOK(fflush)
FFLUSH_HOOK(fflush_unlocked)
FFLUSH_HOOK(_IO_fflush)

/* putc-style macros call __overflow when the buffer is full (then: exact), and on every byte of
 * an unbuffered or line-buffered stream (then: the buffer's growth, no system call). */
EXPORT int __overflow(FILE *f, int c)
{
    RESOLVE(__overflow);
    int full = f && f->_IO_write_ptr >= f->_IO_write_end && f->_IO_write_end > f->_IO_write_base;
    struct obs o;
    int rec = obs_begin(&o, f, full ? OBS_EXACT : OBS_CALL);
    int r = real___overflow(f, c);
    if (rec)
        obs_end(&o, c != EOF && r != EOF ? 1 : 0);
    return r;
}

/* ---------- seeks: what was put is accounted, then the accounting follows the new position ---------- */
#define SEEK_HOOK(ret, name, params, args)                                  \
    EXPORT ret name params                                                  \
    {                                                                       \
        RESOLVE(name);                                                      \
        struct obs o;                                                       \
        int rec = obs_begin(&o, f, OBS_EXACT);                              \
        ret r = real_##name args;                                           \
        if (rec)                                                            \
            obs_end_rebase(&o);                                             \
        return r;                                                           \
    }
SEEK_HOOK(int, fseek, (FILE * f, long off, int whence), (f, off, whence))
SEEK_HOOK(int, fseeko, (FILE * f, off_t off, int whence), (f, off, whence))
SEEK_HOOK(int, fseeko64, (FILE * f, off_t off, int whence), (f, off, whence))
SEEK_HOOK(int, fsetpos, (FILE * f, const fpos_t *pos), (f, pos))
SEEK_HOOK(int, fsetpos64, (FILE * f, const fpos64_t *pos), (f, pos))

EXPORT void rewind(FILE *f)
{
    RESOLVE(rewind);
    struct obs o;
    int rec = obs_begin(&o, f, OBS_EXACT);
    real_rewind(f);
    if (rec)
        obs_end_rebase(&o);
}

/* __fpurge drops the buffer: those bytes are never written (nothing recorded before the call). */
EXPORT void __fpurge(FILE *f)
{
    RESOLVE(__fpurge);
    struct obs o;
    int rec = obs_begin(&o, f, OBS_LOOK);
    real___fpurge(f);
    if (rec)
        obs_end_rebase(&o);
}
