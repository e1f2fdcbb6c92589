/* hooks_copy.c: kernel copies into a file: copy_file_range (flags PCSHIM_VIA_COPY), sendfile and
 * sendfile64 (PCSHIM_VIA_SENDFILE), splice (PCSHIM_VIA_SPLICE). Only regular destination files
 * are recorded (rec_write, rec.c); copies into pipes or sockets record nothing. */
#include "shim.h"

/* ---------- copies into a file ---------- */
/* copy_file_range and splice: at *out_off when given (read before the call moves it), else at
 * the file position. */
#define COPY_HOOK(name, via)                                                \
    EXPORT ssize_t name(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned int flags) \
    {                                                                       \
        RESOLVE(name);                                                      \
        int64_t at = out_off ? (int64_t)*out_off : -1;                      \
        struct pc_once pc_ = {0, 0, 0};                                     \
        LIVE_BEFORE(out, &pc_);                                             \
        ssize_t r = real_##name(in, in_off, out, out_off, len, flags);      \
        RECORD_IF(r > 0 && g_record, rec_write_pc(out, at, r, via, &pc_));  \
        return r;                                                           \
    }
COPY_HOOK(copy_file_range, PCSHIM_VIA_COPY)
COPY_HOOK(splice, PCSHIM_VIA_SPLICE)

/* sendfile: always at the file position of `out` */
WRITE_HOOK(sendfile, (int out, int in, off_t *off, size_t n), (out, in, off, n), out, -1, PCSHIM_VIA_SENDFILE)
WRITE_HOOK(sendfile64, (int out, int in, off_t *off, size_t n), (out, in, off, n), out, -1, PCSHIM_VIA_SENDFILE)
