/* hooks_stdio_print.c: formatted output: printf, vprintf, fprintf, vfprintf, the fortified
 * __printf_chk, __vprintf_chk, __fprintf_chk, __vfprintf_chk (what _FORTIFY_SOURCE builds call),
 * glibc's old _IO_printf, _IO_fprintf, _IO_vfprintf: observations of the stream around the call
 * (stdio_acct.c), the bytes put being the returned count. dprintf, vdprintf, __dprintf_chk and
 * __vdprintf_chk write straight to an fd through a stream of their own: recorded as writes of
 * that fd (at its file position). */
#include "shim.h"

/* A v-form hook (va_list given) on stream `fexpr`. */
#define VPRINT_HOOK(name, params, args, fexpr)                              \
    EXPORT int name params                                                  \
    {                                                                       \
        RESOLVE(name);                                                      \
        struct obs o;                                                       \
        int rec = obs_begin(&o, (fexpr), OBS_CALL);                         \
        int r = real_##name args;                                           \
        if (rec)                                                            \
            obs_end(&o, r >= 0 ? r : -1);                                   \
        return r;                                                           \
    }

/* A variadic hook calling the v-form `vname` on stream `fexpr`. */
#define PRINT_HOOK(name, params, last, vname, vargs, fexpr)                 \
    EXPORT int name params                                                  \
    {                                                                       \
        RESOLVE(vname);                                                     \
        va_list ap;                                                         \
        va_start(ap, last);                                                 \
        struct obs o;                                                       \
        int rec = obs_begin(&o, (fexpr), OBS_CALL);                         \
        int r = real_##vname vargs;                                         \
        if (rec)                                                            \
            obs_end(&o, r >= 0 ? r : -1);                                   \
        va_end(ap);                                                         \
        return r;                                                           \
    }

VPRINT_HOOK(vfprintf, (FILE * f, const char *fmt, va_list ap), (f, fmt, ap), f)
VPRINT_HOOK(_IO_vfprintf, (FILE * f, const char *fmt, va_list ap), (f, fmt, ap), f)
VPRINT_HOOK(vprintf, (const char *fmt, va_list ap), (fmt, ap), stdout)
VPRINT_HOOK(__vfprintf_chk, (FILE * f, int flag, const char *fmt, va_list ap), (f, flag, fmt, ap), f)
VPRINT_HOOK(__vprintf_chk, (int flag, const char *fmt, va_list ap), (flag, fmt, ap), stdout)

PRINT_HOOK(fprintf, (FILE * f, const char *fmt, ...), fmt, vfprintf, (f, fmt, ap), f)
PRINT_HOOK(_IO_fprintf, (FILE * f, const char *fmt, ...), fmt, vfprintf, (f, fmt, ap), f)
PRINT_HOOK(printf, (const char *fmt, ...), fmt, vprintf, (fmt, ap), stdout)
PRINT_HOOK(_IO_printf, (const char *fmt, ...), fmt, vprintf, (fmt, ap), stdout)
PRINT_HOOK(__fprintf_chk, (FILE * f, int flag, const char *fmt, ...), fmt, __vfprintf_chk, (f, flag, fmt, ap), f)
PRINT_HOOK(__printf_chk, (int flag, const char *fmt, ...), fmt, __vprintf_chk, (flag, fmt, ap), stdout)

/* ---------- dprintf: a write of the fd ---------- */
#define VDPRINT_HOOK(name, params, args)                                    \
    EXPORT int name params                                                  \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r = real_##name args;                                           \
        RECORD_IF(r > 0, rec_write(fd, -1, r, 0));                          \
        return r;                                                           \
    }
VDPRINT_HOOK(vdprintf, (int fd, const char *fmt, va_list ap), (fd, fmt, ap))
VDPRINT_HOOK(__vdprintf_chk, (int fd, int flag, const char *fmt, va_list ap), (fd, flag, fmt, ap))

#define DPRINT_HOOK(name, params, last, vname, vargs)                       \
    EXPORT int name params                                                  \
    {                                                                       \
        RESOLVE(vname);                                                     \
        va_list ap;                                                         \
        va_start(ap, last);                                                 \
        int r = real_##vname vargs;                                         \
        va_end(ap);                                                         \
        RECORD_IF(r > 0, rec_write(fd, -1, r, 0));                          \
        return r;                                                           \
    }
DPRINT_HOOK(dprintf, (int fd, const char *fmt, ...), fmt, vdprintf, (fd, fmt, ap))
DPRINT_HOOK(__dprintf_chk, (int fd, int flag, const char *fmt, ...), fmt, __vdprintf_chk, (fd, flag, fmt, ap))
