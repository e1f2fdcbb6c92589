/* hooks_stdio.c: stdio, recorded at the stdio call: glibc writes its buffers with internal calls
 * no hook sees, so fwrite, fputs, fputc, putc, fprintf and vfprintf record the bytes they accept
 * (offset = ftello at the call, flags PCSHIM_VIA_STDIO), fopen(64) records an open (after_open,
 * hooks_files.c) and fclose a close. Kept on its own so that a rewrite of stdio capture stays
 * here. */
#include "shim.h"

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
        t_guard = 1; /* fopen's internal open is not ours to record twice */ \
        FILE *f = real_##name(p, m);                                        \
        t_guard = g;                                                        \
        if (f)                                                              \
            after_open(fileno(f), mode_flags(m));                           \
        return f;                                                           \
    }
FOPEN_HOOK(fopen)
FOPEN_HOOK(fopen64)
