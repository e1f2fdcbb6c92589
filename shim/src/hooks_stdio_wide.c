/* hooks_stdio_wide.c: wide-character output: fputwc, putwc, putwchar, fputws, their _unlocked
 * forms, fwprintf, vfwprintf, wprintf, vwprintf and the fortified __fwprintf_chk, __vfwprintf_chk,
 * __wprintf_chk, __vwprintf_chk, and __woverflow. A wide stream holds wide characters until it
 * converts them into its byte buffer; stdio_acct.c counts them by their multibyte length in the
 * current locale (wide_bytes), which is what reaches the file. */
#include "shim.h"

#define WPUT_HOOK(name, params, args, fexpr, nbytes)                        \
    EXPORT wint_t name params                                               \
    {                                                                       \
        RESOLVE(name);                                                      \
        struct obs o;                                                       \
        int rec = obs_begin(&o, (fexpr), OBS_CALL);                         \
        wint_t r = real_##name args;                                        \
        if (rec)                                                            \
            obs_end(&o, (nbytes));                                          \
        return r;                                                           \
    }

#define WC_BYTES (r != WEOF ? wide_bytes(&wc, 1) : 0)
WPUT_HOOK(fputwc, (wchar_t wc, FILE *f), (wc, f), f, WC_BYTES)
WPUT_HOOK(putwc, (wchar_t wc, FILE *f), (wc, f), f, WC_BYTES)
WPUT_HOOK(fputwc_unlocked, (wchar_t wc, FILE *f), (wc, f), f, WC_BYTES)
WPUT_HOOK(putwc_unlocked, (wchar_t wc, FILE *f), (wc, f), f, WC_BYTES)
WPUT_HOOK(putwchar, (wchar_t wc), (wc), stdout, WC_BYTES)
WPUT_HOOK(putwchar_unlocked, (wchar_t wc), (wc), stdout, WC_BYTES)

#define FPUTWS_HOOK(name)                                                   \
    EXPORT int name(const wchar_t *ws, FILE *f)                             \
    {                                                                       \
        RESOLVE(name);                                                      \
        struct obs o;                                                       \
        int rec = obs_begin(&o, f, OBS_CALL);                               \
        int r = real_##name(ws, f);                                         \
        if (rec)                                                            \
            obs_end(&o, r >= 0 ? wide_bytes(ws, wcslen(ws)) : -1);          \
        return r;                                                           \
    }
FPUTWS_HOOK(fputws)
FPUTWS_HOOK(fputws_unlocked)

/* The wprintf family returns wide characters, not bytes: measured from the buffers. */
#define VWPRINT_HOOK(name, params, args, fexpr)                             \
    EXPORT int name params                                                  \
    {                                                                       \
        RESOLVE(name);                                                      \
        struct obs o;                                                       \
        int rec = obs_begin(&o, (fexpr), OBS_CALL);                         \
        int r = real_##name args;                                           \
        if (rec)                                                            \
            obs_end(&o, -1);                                                \
        return r;                                                           \
    }
VWPRINT_HOOK(vfwprintf, (FILE * f, const wchar_t *fmt, va_list ap), (f, fmt, ap), f)
VWPRINT_HOOK(vwprintf, (const wchar_t *fmt, va_list ap), (fmt, ap), stdout)
VWPRINT_HOOK(__vfwprintf_chk, (FILE * f, int flag, const wchar_t *fmt, va_list ap), (f, flag, fmt, ap), f)
VWPRINT_HOOK(__vwprintf_chk, (int flag, const wchar_t *fmt, va_list ap), (flag, fmt, ap), stdout)

#define WPRINT_HOOK(name, params, last, vname, vargs, fexpr)                \
    EXPORT int name params                                                  \
    {                                                                       \
        RESOLVE(vname);                                                     \
        va_list ap;                                                         \
        va_start(ap, last);                                                 \
        struct obs o;                                                       \
        int rec = obs_begin(&o, (fexpr), OBS_CALL);                         \
        int r = real_##vname vargs;                                         \
        if (rec)                                                            \
            obs_end(&o, -1);                                                \
        va_end(ap);                                                         \
        return r;                                                           \
    }
WPRINT_HOOK(fwprintf, (FILE * f, const wchar_t *fmt, ...), fmt, vfwprintf, (f, fmt, ap), f)
WPRINT_HOOK(wprintf, (const wchar_t *fmt, ...), fmt, vwprintf, (fmt, ap), stdout)
WPRINT_HOOK(__fwprintf_chk, (FILE * f, int flag, const wchar_t *fmt, ...), fmt, __vfwprintf_chk, (f, flag, fmt, ap), f)
WPRINT_HOOK(__wprintf_chk, (int flag, const wchar_t *fmt, ...), fmt, __vwprintf_chk, (flag, fmt, ap), stdout)

/* A wide stream's buffer is full (or unbuffered): exact, like __overflow. */
EXPORT wint_t __woverflow(FILE *f, wint_t wc)
{
    RESOLVE(__woverflow);
    struct obs o;
    int rec = obs_begin(&o, f, OBS_EXACT);
    wint_t r = real___woverflow(f, wc);
    if (rec) {
        wchar_t c = (wchar_t)wc;
        obs_end(&o, wc != WEOF && r != WEOF ? wide_bytes(&c, 1) : 0);
    }
    return r;
}
