/* hooks_stdio_diag.c: libc functions that write to a stream with internal calls and may write it
 * out themselves: error and error_at_line (which also flush stdout first), the err/warn family,
 * perror, psignal, psiginfo, herror, getopt's complaints (all to stderr), assert's failure
 * messages, argp's help and errors, and putpwent, putgrent, putspent, putsgent. Their bytes are measured by the
 * description's exact end before and after the call (OBS_BRACKET, stdio_obs.c). err, errx, verr,
 * verrx are glibc's vwarn(x) followed by exit; error with a non-zero status is error with status
 * 0 followed by exit, so the exit hook runs; assert and argp, which may end the process inside
 * libc, leave their "after" to the exit path. */
#include "shim.h"

#include <argp.h>
#include <err.h>
#include <error.h>
#include <getopt.h>
#include <grp.h>
#include <gshadow.h>
#include <netdb.h>
#include <pwd.h>
#include <shadow.h>

/* stdout is flushed by error(): what macros put into it is recorded first. */
static void touch_stdout(void)
{
    if (!g_active || t_guard)
        return;
    t_guard = 1;
    int e = errno;
    struct obs o;
    my_buf();
    flockfile(stdout);
    obs_pre(&o, stdout, OBS_CALL);
    funlockfile(stdout);
    errno = e;
    t_guard = 0;
}

#define BRACKET(fexpr, call)                                                \
    do {                                                                    \
        struct obs o_;                                                      \
        int rec_ = obs_begin(&o_, (fexpr), OBS_BRACKET);                    \
        call;                                                               \
        if (rec_)                                                           \
            obs_end(&o_, -1);                                               \
    } while (0)

/* ---------- to stderr ---------- */
#define STDERR_HOOK(name, params, args)                                     \
    EXPORT void name params                                                 \
    {                                                                       \
        RESOLVE(name);                                                      \
        BRACKET(stderr, real_##name args);                                  \
    }
STDERR_HOOK(perror, (const char *s), (s))
STDERR_HOOK(psignal, (int sig, const char *s), (sig, s))
STDERR_HOOK(psiginfo, (const siginfo_t *si, const char *s), (si, s))
STDERR_HOOK(herror, (const char *s), (s))
STDERR_HOOK(vwarn, (const char *fmt, va_list ap), (fmt, ap))
STDERR_HOOK(vwarnx, (const char *fmt, va_list ap), (fmt, ap))

#define WARN_HOOK(name, vname)                                              \
    EXPORT void name(const char *fmt, ...)                                  \
    {                                                                       \
        RESOLVE(vname);                                                     \
        va_list ap;                                                         \
        va_start(ap, fmt);                                                  \
        BRACKET(stderr, real_##vname(fmt, ap));                             \
        va_end(ap);                                                         \
    }
WARN_HOOK(warn, vwarn)
WARN_HOOK(warnx, vwarnx)

#define VERR_HOOK(name, vname)                                              \
    EXPORT void name(int status, const char *fmt, va_list ap)               \
    {                                                                       \
        RESOLVE(vname);                                                     \
        BRACKET(stderr, real_##vname(fmt, ap));                             \
        exit(status);                                                       \
    }
VERR_HOOK(verr, vwarn)
VERR_HOOK(verrx, vwarnx)

#define ERR_HOOK(name, vname)                                               \
    EXPORT void name(int status, const char *fmt, ...)                      \
    {                                                                       \
        RESOLVE(vname);                                                     \
        va_list ap;                                                         \
        va_start(ap, fmt);                                                  \
        BRACKET(stderr, real_##vname(fmt, ap));                             \
        va_end(ap);                                                         \
        exit(status);                                                       \
    }
ERR_HOOK(err, vwarn)
ERR_HOOK(errx, vwarnx)

/* error(): the message is formatted here (glibc has no va_list form before 2.38) and given to
 * the real error() as "%s", on the stack: a message longer than 64 KiB is cut there. */
#define MSG_MAX (1 << 16)
#define FORMAT_MSG(last)                                                    \
    va_list ap, ap2;                                                        \
    va_start(ap, last);                                                     \
    va_copy(ap2, ap);                                                       \
    int need_ = vsnprintf(NULL, 0, fmt, ap2);                               \
    va_end(ap2);                                                            \
    size_t cap_ = need_ < 0 ? 1 : need_ >= MSG_MAX ? MSG_MAX : (size_t)need_ + 1; \
    char msg[cap_];                                                         \
    msg[0] = 0;                                                             \
    if (need_ >= 0)                                                         \
        vsnprintf(msg, cap_, fmt, ap);                                      \
    va_end(ap)

EXPORT void error(int status, int errnum, const char *fmt, ...)
{
    RESOLVE(error);
    int e = errno;
    FORMAT_MSG(fmt);
    touch_stdout();
    errno = e;
    BRACKET(stderr, real_error(0, errnum, "%s", msg));
    if (status)
        exit(status);
}

EXPORT void error_at_line(int status, int errnum, const char *file, unsigned int line, const char *fmt, ...)
{
    RESOLVE(error_at_line);
    int e = errno;
    FORMAT_MSG(fmt);
    touch_stdout();
    errno = e;
    BRACKET(stderr, real_error_at_line(0, errnum, file, line, "%s", msg));
    if (status)
        exit(status);
}

/* getopt's complaints about options go to stderr from inside libc. */
EXPORT int getopt(int argc, char *const argv[], const char *opts)
{
    RESOLVE(getopt);
    int r;
    BRACKET(stderr, r = real_getopt(argc, argv, opts));
    return r;
}

#define GETOPT_LONG_HOOK(name)                                              \
    EXPORT int name(int argc, char *const argv[], const char *opts, const struct option *lo, int *li) \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r;                                                              \
        BRACKET(stderr, r = real_##name(argc, argv, opts, lo, li));         \
        return r;                                                           \
    }
GETOPT_LONG_HOOK(getopt_long)
GETOPT_LONG_HOOK(getopt_long_only)

/* ---------- calls that may end the process inside libc ---------- */
/* assert's message goes to stderr, then abort; argp's help and errors may exit (inside libc, no
 * hook sees it): their "after" is taken on the exit path if they do not return. */
#define MAYBE_NORETURN(fexpr, call)                                         \
    do {                                                                    \
        obs_begin_pending(fexpr);                                           \
        call;                                                               \
        obs_end_pending();                                                  \
    } while (0)

EXPORT void __assert_fail(const char *a, const char *file, unsigned int line, const char *fn)
{
    RESOLVE(__assert_fail);
    obs_begin_pending(stderr);
    real___assert_fail(a, file, line, fn);
    __builtin_unreachable();
}

EXPORT void __assert_perror_fail(int errnum, const char *file, unsigned int line, const char *fn)
{
    RESOLVE(__assert_perror_fail);
    obs_begin_pending(stderr);
    real___assert_perror_fail(errnum, file, line, fn);
    __builtin_unreachable();
}

EXPORT void argp_help(const struct argp *argp, FILE *f, unsigned flags, char *name)
{
    RESOLVE(argp_help);
    MAYBE_NORETURN(f, real_argp_help(argp, f, flags, name));
}

EXPORT void argp_state_help(const struct argp_state *state, FILE *f, unsigned flags)
{
    RESOLVE(argp_state_help);
    MAYBE_NORETURN(f, real_argp_state_help(state, f, flags));
}

EXPORT void argp_error(const struct argp_state *state, const char *fmt, ...)
{
    RESOLVE(argp_error);
    int e = errno;
    FORMAT_MSG(fmt);
    errno = e;
    MAYBE_NORETURN(stderr, real_argp_error(state, "%s", msg));
}

EXPORT void argp_failure(const struct argp_state *state, int status, int errnum, const char *fmt, ...)
{
    RESOLVE(argp_failure);
    int e = errno;
    FORMAT_MSG(fmt);
    errno = e;
    MAYBE_NORETURN(stderr, real_argp_failure(state, status, errnum, "%s", msg));
}

/* ---------- entries of the user and group files ---------- */
#define PUTENT_HOOK(name, type)                                             \
    EXPORT int name(const type *p, FILE *f)                                 \
    {                                                                       \
        RESOLVE(name);                                                      \
        int r;                                                              \
        BRACKET(f, r = real_##name(p, f));                                  \
        return r;                                                           \
    }
PUTENT_HOOK(putpwent, struct passwd)
PUTENT_HOOK(putgrent, struct group)
PUTENT_HOOK(putspent, struct spwd)
PUTENT_HOOK(putsgent, struct sgrp)
