/* hooks_stdio_put.c: the stdio calls that put bytes into a stream: fwrite, fputs, fputc, putc,
 * putchar, puts, putw, their _unlocked forms (what _FORTIFY_SOURCE builds and gnulib's
 * unlocked-io use) and glibc's old _IO_ aliases. Each is an observation around the real call
 * (stdio_acct.c): what entered the stream before it (macros) is recorded first, then the bytes
 * the call put, from its return value. */
#include "shim.h"

/* A hook on stream `fexpr` whose real call returns r; `nbytes` (an expression of r) is what it
 * put (-1: measured from the buffer). */
#define PUT_HOOK(ret, name, params, args, fexpr, nbytes)                    \
    EXPORT ret name params                                                  \
    {                                                                       \
        RESOLVE(name);                                                      \
        struct obs o;                                                       \
        int rec = obs_begin(&o, (fexpr), OBS_CALL);                         \
        ret r = real_##name args;                                           \
        if (rec)                                                            \
            obs_end(&o, (nbytes));                                          \
        return r;                                                           \
    }

#define FWRITE_BYTES ((int64_t)(r * size))
PUT_HOOK(size_t, fwrite, (const void *p, size_t size, size_t n, FILE *f), (p, size, n, f), f, FWRITE_BYTES)
PUT_HOOK(size_t, fwrite_unlocked, (const void *p, size_t size, size_t n, FILE *f), (p, size, n, f), f, FWRITE_BYTES)
PUT_HOOK(size_t, _IO_fwrite, (const void *p, size_t size, size_t n, FILE *f), (p, size, n, f), f, FWRITE_BYTES)

#define FPUTS_BYTES (r >= 0 ? (int64_t)strlen(s) : -1)
PUT_HOOK(int, fputs, (const char *s, FILE *f), (s, f), f, FPUTS_BYTES)
PUT_HOOK(int, fputs_unlocked, (const char *s, FILE *f), (s, f), f, FPUTS_BYTES)
PUT_HOOK(int, _IO_fputs, (const char *s, FILE *f), (s, f), f, FPUTS_BYTES)

#define PUTC_BYTES (r != EOF ? 1 : 0)
PUT_HOOK(int, fputc, (int c, FILE *f), (c, f), f, PUTC_BYTES)
PUT_HOOK(int, putc, (int c, FILE *f), (c, f), f, PUTC_BYTES)
PUT_HOOK(int, fputc_unlocked, (int c, FILE *f), (c, f), f, PUTC_BYTES)
PUT_HOOK(int, putc_unlocked, (int c, FILE *f), (c, f), f, PUTC_BYTES)
PUT_HOOK(int, _IO_putc, (int c, FILE *f), (c, f), f, PUTC_BYTES)
PUT_HOOK(int, putchar, (int c), (c), stdout, PUTC_BYTES)
PUT_HOOK(int, putchar_unlocked, (int c), (c), stdout, PUTC_BYTES)

#define PUTS_BYTES (r >= 0 ? (int64_t)strlen(s) + 1 : -1)
PUT_HOOK(int, puts, (const char *s), (s), stdout, PUTS_BYTES)
PUT_HOOK(int, _IO_puts, (const char *s), (s), stdout, PUTS_BYTES)

PUT_HOOK(int, putw, (int w, FILE *f), (w, f), f, (r == 0 ? (int64_t)sizeof(int) : -1))
