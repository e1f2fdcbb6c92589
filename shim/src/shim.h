/* shim.h: the internal header of pcshim, included first by every file of shim/src (it defines
 * _GNU_SOURCE before any system header). It holds the constants, the structs, the state shared
 * between files (declared here, each defined once in the file named beside it), the
 * real-function pointers, the macros every hook uses and the prototypes. The log format and the
 * environment, the contract with the Rust converter, are in include/pcshim.h; this header is not
 * part of that contract.
 *
 * pcshim: LD_PRELOAD shim recording the file writes of a program with their PC signature.
 * Layout of the logs and the environment: include/pcshim.h. Design notes: docs/RECORD.md.
 *
 * Hot path (a write to a known fd): real call, clock_gettime (vDSO), a stack walk, hashing, and a
 * copy into a per-thread buffer. No malloc, no stdio; errno is preserved; a per-thread guard makes
 * every call the shim itself makes (and calls from signal handlers interrupting the shim) pass
 * straight through.
 *
 * The files (one translation unit each; the Makefile links them with -flto so the hot path is
 * inlined across them as it was in one file):
 *   util.c           sc() (the shim's own system calls), hashing, the clock, number formatting,
 *                    the seen-sets, absolute paths
 *   logs.c           output files (.bin/.txt), text lines (P, W), per-thread buffers, flushing
 *   logfd.c          the output files kept the shim's own: checked and reopened at high fds, no
 *                    SIGXFSZ from a log write
 *   modules.c        module table (executable segments, build ids, frame-pointer verdicts) and the
 *                    dlopen/dlclose hooks that mark it stale
 *   stackwalk.c      fp / scan / unwind / auto walkers, the signature and its S/F lines
 *   cfi.c            auto's unwind walk: each return address's DWARF call-frame rule, cached
 *                    per thread (libunwind where it gives up)
 *   record.c         records: the time, ids and PC filled in, into the thread's buffer; the guard
 *   account.c        open file descriptions: what was recorded through each (its logical end),
 *                    the safety net (position beyond it at close, dup2, exec, fork, exit)
 *   fdtable.c        the fd table (fd -> file, description), the walks over every description
 *                    (exec, fork, exit) and the inherited fds learnt at start
 *   rec.c            the rec_* helpers of the hooks: fd table, then accounting, then the record
 *                    (record.c <- account.c <- fdtable.c <- rec.c: each uses only those before it)
 *   stdio_acct.c     what a stream holds (glibc's FILE read directly, wide characters by their
 *                    multibyte length), the streams each description remembers, their growth
 *   stdio_obs.c      stdio accounting: a stream's bytes recorded at each observation point (the
 *                    buffer's growth since the last one, or the exact file position), all streams
 *   elfcheck.c       exec of a statically linked program: the W static: warning
 *   lifecycle.c      real-function pointers, init, exit, signals, fork handler, final checks
 *   hooks_write.c    write, pwrite(64), writev, pwritev(64), pwritev2
 *   hooks_files.c    open/creat/close, unlink/rename/truncate/fallocate, fsync family, dup/fcntl
 *                    (F_DUPFD, F_SET_RW_HINT, F_SETFL), lseek
 *   jvmargs.c        a `java` launcher the program runs: the JVM options that start JFR
 *   hooks_process.c  exec family, posix_spawn(p), system, popen, fork/vfork/_Fork/clone,
 *                    exit/_exit/_Exit/quick_exit
 *   hooks_stdio.c    stdio streams: fopen, freopen, fclose, fcloseall, fflush, __overflow, the
 *                    fseek family, __fpurge
 *   hooks_stdio_put.c  fwrite, fputs, fputc, putc, putchar, puts, putw, their _unlocked and _IO_ forms
 *   hooks_stdio_print.c  printf, fprintf, vprintf, vfprintf, dprintf, vdprintf and the _chk forms
 *   hooks_stdio_wide.c   wide output: fputwc, putwc, putwchar, fputws, the wprintf family, __woverflow
 *   hooks_stdio_diag.c   error, error_at_line, err/warn family, perror, psignal, psiginfo, herror,
 *                    getopt's complaints, assert's messages, argp's help and errors, putpwent/putgrent/putspent/putsgent:
 *                    measured by the file position
 *   hooks_mmap.c     shared file mappings (mmap, munmap, mremap) and msync, W mmap: warnings
 *   hooks_aio.c      Linux AIO: io_submit and its iocbs (also used by hooks_syscall.c)
 *   hooks_copy.c     copy_file_range, sendfile(64), splice
 *   hooks_syscall.c  syscall(): write, pwrite64, io_submit, io_uring_setup, clone, clone3
 *   hooks_uring.c    liburing set-up (counted, the ring I/O is not recorded)
 *   live.c           live write-lifetime hints: the PC -> hint table, the per-inode cache,
 *                    fcntl(F_SET_RW_HINT) before each write, the live log's counts
 */
#ifndef PCSHIM_SHIM_H
#define PCSHIM_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* The shim defines stdio functions glibc's headers may provide as inline (putchar, vprintf, the
 * _unlocked forms, with __USE_EXTERN_INLINES) or as fortified wrappers (_FORTIFY_SOURCE): neither. */
#undef _FORTIFY_SOURCE
#ifndef __NO_INLINE__
#define __NO_INLINE__ 1
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "pchash.h"
#include "pcshim.h"

/* Everything declared from here to the end of this header is hidden (the build's
 * -fvisibility=hidden covers definitions, this covers the extern declarations, so that other files
 * reach the shared state and helpers directly, never through the GOT or the PLT). Only the hooks,
 * defined with EXPORT, are visible outside the shim. */
#pragma GCC visibility push(hidden)

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define BUF_RECORDS 256
#define MAX_THREADS 1024
#define MAX_FDS 65536
#define MAX_FRAMES 64
#define MAX_SEGS 2048
#define SEEN_SLOTS 8192
#define OUR_FD_FLOOR 900
/* The shim's output files (logfd.c): the process image's .bin and .txt logs, the live log. */
enum { LOG_BIN, LOG_TXT, LOG_LIVE, LOG_SLOTS };
#define MAX_MAPS 1024      /* shared writable file mappings tracked for msync */
#define SCAN_WORDS 512     /* scan: stack words examined above the hooked call (4 KiB) */
#define MAX_MODULES 512    /* auto: per-module frame-pointer verdicts */
#define FP_SAMPLE 256      /* auto: functions sampled per module */
#define MAX_ENV 4096       /* exec/spawn: environment entries the shim can rewrite */
#define MAX_DESCS 4096     /* open file descriptions opened for writing, accounted at once */
#define DESC_STREAMS 4     /* stdio streams remembered per description */

enum { M_FP = 0, M_SCAN = 1, M_UNWIND = 2, M_AUTO = 3 };

/* ---------- real functions ---------- */
/* The next definition (dlsym(RTLD_NEXT)) of every hooked function, as `real_<name>`: one list,
 * declared here and defined in lifecycle.c. */
#define PCSHIM_REALS(R)                                                                             \
    R(ssize_t, write, int, const void *, size_t)                                                    \
    R(ssize_t, pwrite, int, const void *, size_t, off_t)                                            \
    R(ssize_t, pwrite64, int, const void *, size_t, off_t)                                          \
    R(ssize_t, writev, int, const struct iovec *, int)                                              \
    R(ssize_t, pwritev, int, const struct iovec *, int, off_t)                                      \
    R(ssize_t, pwritev64, int, const struct iovec *, int, off_t)                                    \
    R(ssize_t, pwritev2, int, const struct iovec *, int, off_t, int)                                \
    R(int, open, const char *, int, ...)                                                            \
    R(int, open64, const char *, int, ...)                                                          \
    R(int, openat, int, const char *, int, ...)                                                     \
    R(int, openat64, int, const char *, int, ...)                                                   \
    R(int, creat, const char *, mode_t)                                                             \
    R(int, creat64, const char *, mode_t)                                                           \
    R(int, close, int)                                                                              \
    R(int, unlink, const char *)                                                                    \
    R(int, unlinkat, int, const char *, int)                                                        \
    R(int, rename, const char *, const char *)                                                      \
    R(int, renameat, int, const char *, int, const char *)                                          \
    R(int, renameat2, int, const char *, int, const char *, unsigned int)                           \
    R(int, truncate, const char *, off_t)                                                           \
    R(int, truncate64, const char *, off_t)                                                         \
    R(int, ftruncate, int, off_t)                                                                   \
    R(int, ftruncate64, int, off_t)                                                                 \
    R(int, fallocate, int, int, off_t, off_t)                                                       \
    R(int, fallocate64, int, int, off_t, off_t)                                                     \
    R(int, fsync, int)                                                                              \
    R(int, fdatasync, int)                                                                          \
    R(int, sync_file_range, int, off_t, off_t, unsigned int)                                        \
    R(int, dup, int)                                                                                \
    R(int, dup2, int, int)                                                                          \
    R(int, dup3, int, int, int)                                                                     \
    R(int, fcntl, int, int, ...)                                                                    \
    R(int, fcntl64, int, int, ...)                                                                  \
    R(pid_t, fork, void)                                                                            \
    R(int, execve, const char *, char *const[], char *const[])                                      \
    R(int, execv, const char *, char *const[])                                                      \
    R(int, execvp, const char *, char *const[])                                                     \
    R(int, execvpe, const char *, char *const[], char *const[])                                     \
    R(void, exit, int)                                                                              \
    R(void, _exit, int)                                                                             \
    R(void, _Exit, int)                                                                             \
    R(void, quick_exit, int)                                                                        \
    R(void *, dlopen, const char *, int)                                                            \
    R(int, dlclose, void *)                                                                         \
    R(size_t, fwrite, const void *, size_t, size_t, FILE *)                                         \
    R(int, fputs, const char *, FILE *)                                                             \
    R(int, fputc, int, FILE *)                                                                      \
    R(int, putc, int, FILE *)                                                                       \
    R(int, vfprintf, FILE *, const char *, va_list)                                                 \
    R(int, fclose, FILE *)                                                                          \
    R(FILE *, fopen, const char *, const char *)                                                    \
    R(FILE *, fopen64, const char *, const char *)                                                  \
    R(void *, mmap, void *, size_t, int, int, int, off_t)                                           \
    R(void *, mmap64, void *, size_t, int, int, int, off_t)                                         \
    R(int, munmap, void *, size_t)                                                                  \
    R(void *, mremap, void *, size_t, size_t, int, ...)                                             \
    R(int, msync, void *, size_t, int)                                                              \
    R(int, io_submit, unsigned long, long, struct iocb **)                                          \
    R(long, syscall, long, ...)                                                                     \
    R(ssize_t, copy_file_range, int, off_t *, int, off_t *, size_t, unsigned int)                   \
    R(ssize_t, sendfile, int, int, off_t *, size_t)                                                 \
    R(ssize_t, sendfile64, int, int, off_t *, size_t)                                               \
    R(ssize_t, splice, int, off_t *, int, off_t *, size_t, unsigned int)                            \
    R(int, posix_spawn, pid_t *, const char *, const posix_spawn_file_actions_t *,                  \
      const posix_spawnattr_t *, char *const[], char *const[])                                      \
    R(int, posix_spawnp, pid_t *, const char *, const posix_spawn_file_actions_t *,                 \
      const posix_spawnattr_t *, char *const[], char *const[])                                      \
    R(pid_t, _Fork, void)                                                                           \
    R(int, clone, int (*)(void *), void *, int, void *, ...)                                        \
    R(int, fexecve, int, char *const[], char *const[])                                              \
    R(int, execveat, int, const char *, char *const[], char *const[], int)                          \
    R(int, io_uring_queue_init, unsigned, void *, unsigned)                                         \
    R(int, io_uring_queue_init_params, unsigned, void *, void *)                                    \
    R(int, io_uring_queue_init_mem, unsigned, void *, void *, void *, size_t)                       \
    R(int, io_uring_setup, unsigned, void *)                                                        \
    R(off_t, lseek, int, off_t, int)                                                                \
    R(off_t, lseek64, int, off_t, int)                                                              \
    R(int, system, const char *)                                                                    \
    R(FILE *, popen, const char *, const char *)                                                    \
    PCSHIM_STDIO_REALS(R)

/* stdio (hooks_stdio*.c) */
#define PCSHIM_STDIO_REALS(R)                                                                       \
    R(size_t, fwrite_unlocked, const void *, size_t, size_t, FILE *)                                \
    R(size_t, _IO_fwrite, const void *, size_t, size_t, FILE *)                                     \
    R(int, fputs_unlocked, const char *, FILE *)                                                    \
    R(int, _IO_fputs, const char *, FILE *)                                                         \
    R(int, fputc_unlocked, int, FILE *)                                                             \
    R(int, putc_unlocked, int, FILE *)                                                              \
    R(int, _IO_putc, int, FILE *)                                                                   \
    R(int, putchar, int)                                                                            \
    R(int, putchar_unlocked, int)                                                                   \
    R(int, puts, const char *)                                                                      \
    R(int, _IO_puts, const char *)                                                                  \
    R(int, putw, int, FILE *)                                                                       \
    R(int, vprintf, const char *, va_list)                                                          \
    R(int, _IO_vfprintf, FILE *, const char *, va_list)                                             \
    R(int, __vfprintf_chk, FILE *, int, const char *, va_list)                                      \
    R(int, __vprintf_chk, int, const char *, va_list)                                               \
    R(int, vdprintf, int, const char *, va_list)                                                    \
    R(int, __vdprintf_chk, int, int, const char *, va_list)                                         \
    R(int, fflush, FILE *)                                                                          \
    R(int, fflush_unlocked, FILE *)                                                                 \
    R(int, _IO_fflush, FILE *)                                                                      \
    R(int, _IO_fclose, FILE *)                                                                      \
    R(int, fcloseall, void)                                                                         \
    R(int, _IO_flush_all, void)                                                                     \
    R(void, _IO_flush_all_linebuffered, void)                                                       \
    R(FILE *, freopen, const char *, const char *, FILE *)                                          \
    R(FILE *, freopen64, const char *, const char *, FILE *)                                        \
    R(int, fseek, FILE *, long, int)                                                                \
    R(int, fseeko, FILE *, off_t, int)                                                              \
    R(int, fseeko64, FILE *, off_t, int)                                                            \
    R(void, rewind, FILE *)                                                                         \
    R(int, fsetpos, FILE *, const fpos_t *)                                                         \
    R(int, fsetpos64, FILE *, const fpos64_t *)                                                       \
    R(void, __fpurge, FILE *)                                                                       \
    R(int, __overflow, FILE *, int)                                                                 \
    R(wint_t, __woverflow, FILE *, wint_t)                                                          \
    R(wint_t, fputwc, wchar_t, FILE *)                                                              \
    R(wint_t, putwc, wchar_t, FILE *)                                                               \
    R(wint_t, fputwc_unlocked, wchar_t, FILE *)                                                     \
    R(wint_t, putwc_unlocked, wchar_t, FILE *)                                                      \
    R(wint_t, putwchar, wchar_t)                                                                    \
    R(wint_t, putwchar_unlocked, wchar_t)                                                           \
    R(int, fputws, const wchar_t *, FILE *)                                                         \
    R(int, fputws_unlocked, const wchar_t *, FILE *)                                                \
    R(int, vfwprintf, FILE *, const wchar_t *, va_list)                                             \
    R(int, vwprintf, const wchar_t *, va_list)                                                      \
    R(int, __vfwprintf_chk, FILE *, int, const wchar_t *, va_list)                                  \
    R(int, __vwprintf_chk, int, const wchar_t *, va_list)                                           \
    R(void, error, int, int, const char *, ...)                                                     \
    R(void, error_at_line, int, int, const char *, unsigned int, const char *, ...)                 \
    R(void, perror, const char *)                                                                   \
    R(void, psignal, int, const char *)                                                             \
    R(void, psiginfo, const siginfo_t *, const char *)                                              \
    R(void, herror, const char *)                                                                   \
    R(void, vwarn, const char *, va_list)                                                           \
    R(void, vwarnx, const char *, va_list)                                                          \
    R(int, getopt, int, char *const *, const char *)                                                \
    R(int, getopt_long, int, char *const *, const char *, const void *, int *)                      \
    R(int, getopt_long_only, int, char *const *, const char *, const void *, int *)                 \
    R(void, __assert_fail, const char *, const char *, unsigned int, const char *)                  \
    R(void, __assert_perror_fail, int, const char *, unsigned int, const char *)                    \
    R(void, argp_help, const void *, FILE *, unsigned, char *)                                      \
    R(void, argp_state_help, const void *, FILE *, unsigned)                                        \
    R(void, argp_error, const void *, const char *, ...)                                            \
    R(void, argp_failure, const void *, int, int, const char *, ...)                                \
    R(int, putpwent, const void *, FILE *)                                                          \
    R(int, putgrent, const void *, FILE *)                                                          \
    R(int, putspent, const void *, FILE *)                                                          \
    R(int, putsgent, const void *, FILE *)

#define REAL(name) real_##name
#define DECL_REAL(ret, name, ...) extern ret (*real_##name)(__VA_ARGS__);
PCSHIM_REALS(DECL_REAL)

#define RESOLVE(name)                                                       \
    do {                                                                    \
        if (!real_##name)                                                   \
            *(void **)(&real_##name) = dlsym(RTLD_NEXT, #name);             \
    } while (0)

/* ---------- state ---------- */
struct tbuf {
    atomic_int lock;
    int used;
    uint32_t tid;
    uintptr_t stack_lo, stack_hi;
    struct pcshim_record rec[BUF_RECORDS];
};

struct seg {
    uintptr_t lo, hi, bias;
    uint64_t module;
    const char *path;
    int has_fp; /* auto: the module keeps frame pointers (see module_has_fp) */
    /* auto's unwind walk (cfi.c): the module's .eh_frame_hdr (NULL: none, or a layout not
     * read) and the loaded segment holding it, which every FDE and CIE read must lie in */
    const unsigned char *eh_hdr;
    size_t eh_len;
    uintptr_t eh_lo, eh_hi;
};

struct segtab {
    int n;
    uintptr_t lo, hi; /* span of all segments: a quick reject for stack words */
    struct seg s[MAX_SEGS];
};

/* What stdio accounting remembers of one stream (FILE) at its last observation (stdio_acct.c). */
struct sslot {
    FILE *f;            /* NULL: free */
    char *wb, *wp;      /* its byte buffer: _IO_write_base, _IO_write_ptr */
    wchar_t *wwb, *wwp; /* wide streams: the wide buffer's write base and pointer */
    int64_t wbytes;     /* wide streams: estimated bytes of the wide characters pending */
    int putting;        /* it was writing (_IO_CURRENTLY_PUTTING) */
};

/* An open file description of a tracked regular file opened for writing (account.c): shared by
 * the fds dup'ed from one another. `acc` is its logical end as far as the shim has recorded it:
 * the file position plus what its streams hold in their buffers, once everything written through
 * it is recorded. Exclusive (D_EXCL) descriptions were opened by this process image write-only,
 * not appending, and never shared with another process (fork, posix_spawn): only there is a file
 * position beyond `acc` known to be this process's unrecorded bytes (the safety net). */
enum {
    D_WRITE = 1,
    D_APPEND = 2,
    D_RDWR = 4,
    D_EXCL = 8,
    D_OWN = 16,   /* opened by this image, never shared */
    D_DIRECT = 32 /* O_DIRECT: its writes bypass the page cache (PCSHIM_VIA_DIRECT) */
};
struct desc {
    atomic_int refs;     /* fds referring to it; 0 = free slot */
    atomic_int lock;     /* 0 or the tid of the holder */
    _Atomic uint32_t flags;
    atomic_int nslots;   /* streams attached (a hint: 0 skips the pending sum) */
    _Atomic int64_t acc; /* logical end accounted */
    uint32_t gen;        /* walk mark (net_all) */
    uint64_t dev, ino, path;
    struct sslot s[DESC_STREAMS];
};

/* What the shim knows of an fd (struct fdinfo's state). */
enum fd_state {
    FD_UNKNOWN = 0, /* not seen yet, or closed: learnt at its next use */
    FD_TRACKED = 1, /* a regular file: dev, ino, path (and its description if opened for writing) */
    FD_IGNORED = 2, /* not a regular file (pipe, socket, tty, device): never recorded */
};

struct fdinfo {
    _Atomic uint8_t state; /* enum fd_state */
    uint64_t dev, ino, path;
    struct desc *_Atomic d; /* tracked and opened for writing: its description, else NULL */
};

/* One PC for several records of one call (io_submit, msync over several mappings). */
struct pc_once {
    int done;
    uint16_t nframes;
    uint64_t pc;
};

/* Shared between files; state used by one file only is static there. */
/* lifecycle.c: settings and identity, set once by pcshim_init */
extern int g_active;
extern int g_method;
extern int g_frames;
extern char g_dir[PATH_MAX];
extern pthread_key_t g_key;
extern int (*g_unw_backtrace)(void **, int);
extern uintptr_t g_self_lo, g_self_hi;
extern char g_exe[PATH_MAX];
/* exec/spawn: the environment entries every descendant needs ("NAME=value") */
extern char g_self[PATH_MAX];
extern char g_env_dir[PATH_MAX + 16], g_env_method[32], g_env_frames[32];
/* logs.c: the log files of this process image and the per-thread buffers */
extern int g_bin, g_txt;
extern uint32_t g_pid;
extern atomic_ullong g_records;
extern _Atomic(uint64_t) g_seen_sig[SEEN_SLOTS];
extern struct tbuf *_Atomic g_threads[MAX_THREADS];
extern TLS struct tbuf *t_buf;
/* record.c: the re-entrancy guard; fdtable.c: the fd table */
extern TLS int t_guard;
extern struct fdinfo g_fds[MAX_FDS];
extern atomic_int g_fd_hi;
/* lifecycle.c: the process image ended (finish): nothing more is recorded */
extern atomic_int g_finished;
/* lifecycle.c: logs are written (PCSHIM_DIR set); live.c: hints are set (PCSHIM_HINTS loaded) */
extern int g_record;
extern int g_live;
extern int g_livelog;
extern char g_env_hints[PATH_MAX + 16];

/* ---------- prototypes ---------- */
/* util.c */
long sc(long n, long a, long b, long c, long d);
uint64_t mix64(uint64_t x);
uint64_t hash_bytes(const void *p, size_t n);
uint64_t now_ns(void);
size_t put_str(char *dst, size_t at, size_t cap, const char *s);
size_t put_hex(char *dst, size_t at, size_t cap, uint64_t v, int width);
size_t put_dec(char *dst, size_t at, size_t cap, uint64_t v);
int seen_insert(_Atomic(uint64_t) *set, uint64_t h);
int abs_path(int dirfd, const char *p, char *out, size_t cap);
void *thread_block(size_t n);
void thread_block_free(void *p, size_t n);
/* logs.c */
void open_logs(void);
void txt_line(const char *s, size_t n);
void shim_warn(const char *msg);
void warn_once(const char *msg);
uint64_t intern_path(const char *p);
void flush_buf(struct tbuf *b);
int lock_buf(struct tbuf *b, int bounded);
void unlock_buf(struct tbuf *b);
void buf_append(struct tbuf *b, const struct pcshim_record *r);
void thread_gone(void *p);
void flush_all(int hold);
struct tbuf *my_buf(void);
/* modules.c */
struct segtab *segs(void);
struct seg *find_seg(struct segtab *t, uintptr_t a);
/* stackwalk.c */
uint64_t signature(struct tbuf *b, uint16_t *nframes);
void walk_caches_free(void); /* the calling thread's memos and rules (it ends) */
/* cfi.c */
int walk_cfi(const struct tbuf *b, struct segtab *t, const uintptr_t *fp, uintptr_t *out, struct seg **sg, int max);
void cfi_thread_gone(void);
/* record.c: `r` is what is recorded, as a compound literal at the call (`&(struct
 * pcshim_record){.op = PCSHIM_OP_WRITE, .fd = fd, ...}`); push_record fills in the time, pid,
 * tid and PC. */
void push_record(struct pcshim_record *r, struct pc_once *pc);
void add_record(struct pcshim_record *r, int want_pc);
/* hooks_files.c */
long close_fds(unsigned first, unsigned last, unsigned flags);
/* logfd.c */
int log_open(int slot, const char *path, int floor);
void log_write(int *fdp, int slot, const void *p, size_t n);
void log_close(int *fdp, int slot);
int is_our_fd(int fd);
#define OUR_FDS_MAX (LOG_SLOTS + 2)
int our_fds(int out[OUR_FDS_MAX]);
extern TLS int t_unwinding; /* inside libunwind's walk (its pipe2, read, write, close are its own) */
void unw_pipe_adopt(int fds[2]);
int unw_stale(int fd);
int unw_close(int fd);
/* fdtable.c */
struct fdinfo *fd_learn(int fd);
struct fdinfo *fd_opened(int fd, int oflags);
struct fdinfo *fd_get(int fd);
uint32_t fd_direct_via(const struct fdinfo *e);
void fd_forget(int fd);
void fd_copy(int from, int to);
void net_all(int pending);
void desc_share_all(int only_inheritable);
void learn_inherited(void);
/* jvmargs.c */
void jfr_init(void);
size_t jfr_room(char *const argv[]);
char *const *jfr_argv(const char *p, char *const argv[], char **out);
/* rec.c */
void rec_fd(int op, int fd, uint64_t off, uint64_t len, uint32_t flags, int want_pc);
void rec_write(int fd, int64_t off, ssize_t ret, uint32_t flags);
void rec_write_pc(int fd, int64_t off, ssize_t ret, uint32_t flags, struct pc_once *pc);
void rec_path(int op, int dirfd, const char *p, uint64_t aux, const struct stat *st);
/* account.c */
struct desc *desc_new(uint32_t flags, int64_t acc);
void desc_release(struct desc *d);
void desc_lock(struct desc *d);
int desc_trylock(struct desc *d);
void desc_unlock(struct desc *d);
int64_t desc_end(int fd, struct desc *d);
void desc_moved(int fd, struct desc *d, int64_t cur, int64_t n, struct pc_once *pc);
void net_check(int fd, struct desc *d, int pending, struct pc_once *pc);
void desc_after_fork_child(void);
void warn_unplaced(uint64_t bytes, int fd, const char *why);
/* stdio_acct.c: what a stream holds; stdio_obs.c: an observation of a stream around a hooked call */
/* CALL: the buffer's growth; EXACT: the file position; BRACKET: the exact end before and after the
 * call; LOOK: nothing recorded before the call */
enum { OBS_CALL = 0, OBS_EXACT = 1, OBS_BRACKET = 2, OBS_LOOK = 3 };
struct obs {
    FILE *f;
    int fd;
    struct desc *d;
    int64_t before; /* OBS_BRACKET: the description's exact end before the call */
    int kind;       /* OBS_* (and stdio_acct.c's flags) */
    struct pc_once pc;
};
int stream_ok(const FILE *f);
int64_t desc_pending(struct desc *d, int with_wide);
struct sslot *slot_of(struct desc *d, FILE *f, int *fresh);
int64_t growth(const FILE *f, const struct sslot *s, int fresh);
void remember(struct sslot *s, const FILE *f);
int obs_begin(struct obs *o, FILE *f, int kind);
void obs_end(struct obs *o, int64_t n);
void obs_unlock(FILE *f);
void obs_end_rebase(struct obs *o);
int obs_pre(struct obs *o, FILE *f, int kind);
void obs_post(struct obs *o, int64_t n);
int obs_begin_pending(FILE *f);
void obs_end_pending(void);
void pending_end(void);
void stdio_forget(FILE *f, int fd);
void stdio_all(void);
int64_t wide_bytes(const wchar_t *s, size_t n);
/* elfcheck.c */
void check_static(int dirfd, const char *p, int search, char *const envp[]);
/* hooks_mmap.c */
void mmap_final_warnings(void);
/* lifecycle.c */
void on_exit_flush(int status, int record);
void uring_used(void);
void end_line(void);
void finish(int status, int record, int streams);
void atfork_child(void);
/* live.c */
int live_load(const char *path);
void live_before(int fd, struct pc_once *pc);
void live_owned(int fd);
void live_opened(uint64_t dev, uint64_t ino);
void live_finish(void);
void live_after_fork(void);
/* hooks_files.c, hooks_process.c, hooks_aio.c: used by other hooks */
void after_open(int fd, int flags);
void rec_fork(pid_t child);
void rec_iocbs(struct iocb **cbs, long n);

/* ---------- the guard and the hook tail ---------- */
/* Enter the shim: 1 if this call should be recorded (guard taken), 0 to pass through. */
static inline int enter(void)
{
    if (!g_active || t_guard)
        return 0;
    t_guard = 1;
    return 1;
}

static inline void leave(void) { t_guard = 0; }



/* Live hints, before a write's real call: the PC into `pc` and the file's hint set (live.c). */
#define LIVE_BEFORE(fd, pc)                                                 \
    do {                                                                    \
        if (g_live && enter()) {                                            \
            int saved_errno_ = errno;                                       \
            live_before((fd), (pc));                                        \
            errno = saved_errno_;                                           \
            leave();                                                        \
        }                                                                   \
    } while (0)

/* The tail of a hook, written once: if `cond` holds (evaluated first: a failed call never takes
 * the guard) and the shim may record (enter() takes the guard), run the statements (the rest of
 * the arguments, commas allowed) with the program's errno saved around them, then leave(). Most
 * hooks use it after their real call (`RECORD_IF(r > 0, rec_write(...))`); exec before its call. */
#define RECORD_IF(cond, ...)                                                \
    do {                                                                    \
        if ((cond) && enter()) {                                            \
            int saved_errno_ = errno;                                       \
            __VA_ARGS__;                                                    \
            errno = saved_errno_;                                           \
            leave();                                                        \
        }                                                                   \
    } while (0)

/* A hook whose successful call wrote r bytes into `to_fd` at `at` (-1: at the file position,
 * found afterwards), recorded with the write flags `via`: the write family (and sendfile) differ
 * only by their parameters and the real call. */
#define WRITE_HOOK(name, params, args, to_fd, at, via)                      \
    EXPORT ssize_t name params                                              \
    {                                                                       \
        RESOLVE(name);                                                      \
        if (__builtin_expect(t_unwinding, 0) && unw_stale(to_fd)) {         \
            errno = EBADF; /* libunwind's pipe, closed under it: not ours */ \
            return -1;                                                      \
        }                                                                   \
        struct pc_once pc_ = {0, 0, 0};                                     \
        LIVE_BEFORE(to_fd, &pc_);                                           \
        ssize_t r = real_##name args;                                       \
        RECORD_IF(r > 0 && g_record, rec_write_pc(to_fd, at, r, via, &pc_)); \
        return r;                                                           \
    }

#pragma GCC visibility pop

#endif
