/* pcshim: LD_PRELOAD capture of the file writes of an unmodified program, with the program
 * context (PC signature) of each write. This header is the contract between the shim and the
 * converter (crates/pcstream-trace/src/record/shimbin.rs for the .bin layout, record/shimlog.rs for
 * the directory and the .txt lines): it documents the files in the log directory, and the two files
 * of live hints shared with python/pcstream/live.py (the hints file and the live log, at the end).
 *
 * Environment (set by `pcstream record`, inherited through fork and exec):
 *   PCSHIM_DIR     absolute directory for the logs (required to record; without it and without
 *                  PCSHIM_HINTS the shim is inert)
 *   PCSHIM_METHOD  fp | scan | unwind | auto (default auto)
 *   PCSHIM_FRAMES  frames hashed into a signature, 1..64 (default 12)
 *   PCSHIM_HINTS   live write-lifetime hints (`pcstream run`, `record --block --table`): the
 *                  signature -> hint file (shim/src/live.c); the shim then sets each write's file
 *                  hint before the write and appends its counts to <PCSHIM_HINTS>.log. With
 *                  PCSHIM_HINTS and no PCSHIM_DIR nothing is recorded.
 *   PCSHIM_JFR     JVM options (up to 8, one space between them) inserted after argv[0] when a
 *                  recorded process executes a `java` launcher that is not given
 *                  -XX:StartFlightRecording already (shim/src/jvmargs.c): Java Flight Recorder
 *                  then reports that JVM's writes with their Java call paths. Not put back into
 *                  an environment that drops it.
 *   The shim puts PCSHIM_DIR, PCSHIM_METHOD, PCSHIM_FRAMES, PCSHIM_HINTS (and itself in
 *   LD_PRELOAD) back into the environment of exec and posix_spawn calls that drop them, so every
 *   descendant is recorded.
 *
 * Files, per process image (a new pair after fork and after exec), named <pid>.<start_ns>:
 *   <pid>.<start_ns>.bin  one pcshim_header, then fixed-size pcshim_record, little-endian, appended
 *                         by whole per-thread buffers with single O_APPEND writes.
 *   <pid>.<start_ns>.txt  text lines, each appended with one write:
 *       P <hash:16 hex> <len> <path bytes>\n         a path and its 64-bit hash (records carry the hash)
 *       S <sig:16 hex> <n>\n                         a signature seen for the first time, then n lines
 *       F <module:16 hex> <offset:hex> <len> <module path>\n   its frames, innermost first
 *       N <len> <name bytes>\n                      optional after an F line: that frame's name. The
 *                                                    shim never writes it; `pcstream record` adds it for
 *                                                    frames that are not machine code (a JVM's Java
 *                                                    frames: module "java", offset = the source line,
 *                                                    python/pcstream/record/jvm.py); readers of older
 *                                                    logs see none
 *       W <text>\n                                   a warning (unwind unavailable, too many mappings,
 *                                                    ...); "W io_uring: ..." once per process image
 *                                                    that set up an io_uring (its ring I/O is not seen
 *                                                    by the shim; the BPF capture records it);
 *                                                    "W static: <path>" for an exec of a statically
 *                                                    linked program (the shim cannot enter it);
 *                                                    "W mmap: <bytes> <path>" for a shared writable
 *                                                    mapping unmapped or left at exit never msync'ed;
 *                                                    "W unplaced: <bytes> <path>: <why>" for written
 *                                                    bytes the shim knows of but could not place
 *                                                    "W hint refused: <errno> <kind> <program>" for
 *                                                    each fcntl(F_SET_RW_HINT) the kernel refused
 *                                                    (pcshim_hint_flags)
 *       E <records>\n                                the process image ended cleanly having logged
 *                                                    <records> records (absent: killed, records lost)
 *
 * The BPF capture (bpf/pcsys*.c, its events in pcsys.h) writes the same files for the processes it
 * records, named <pid>.<start_ns>.bpf.bin and .bpf.txt, in the same directory; its .txt may also
 * hold "W captured: <program>" (a program it recorded because the shim cannot enter it).
 */
#ifndef PCSHIM_H
#define PCSHIM_H

#include <stdint.h>

#define PCSHIM_MAGIC "PCSHIM01"
#define PCSHIM_VERSION 1u

enum pcshim_op {
    PCSHIM_OP_OPEN = 1,       /* fd = new fd, flags = open flags, path */
    PCSHIM_OP_WRITE = 2,      /* fd (-1 for msync), offset, len = bytes, flags = pcshim_write_via bits */
    PCSHIM_OP_FSYNC = 3,      /* fd */
    PCSHIM_OP_FDATASYNC = 4,  /* fd */
    PCSHIM_OP_SYNC_RANGE = 5, /* fd, offset, len, flags = sync_file_range flags */
    PCSHIM_OP_TRUNCATE = 6,   /* fd (-1 for truncate(path)), offset = new size, path */
    PCSHIM_OP_PUNCH_HOLE = 7, /* fd, offset, len, flags = fallocate mode */
    PCSHIM_OP_FALLOCATE = 8,  /* fd, offset, len, flags = fallocate mode */
    PCSHIM_OP_UNLINK = 9,     /* path */
    PCSHIM_OP_RENAME = 10,    /* path = old path, aux = hash of the new path */
    PCSHIM_OP_CLOSE = 11,     /* fd */
    PCSHIM_OP_FORK = 12,      /* in the parent: offset = child pid */
    PCSHIM_OP_EXEC = 13,      /* path = program */
    PCSHIM_OP_EXIT = 14,      /* offset = exit status; flags = 1: status unknown (return from main) */
    PCSHIM_OP_SPAWN = 15,     /* posix_spawn(p) in the parent: offset = child pid, path = program */
    PCSHIM_OP_SET_HINT = 16,  /* fcntl(F_SET_RW_HINT) the program made: fd, offset = the hint
                               * (enum rw_hint: 0 NOT_SET, 1 NONE, 2 SHORT, 3 MEDIUM, 4 LONG,
                               * 5 EXTREME), dev/ino of the file, flags = pcshim_hint_flags; when
                               * the kernel refused it: offset = the level meant, len = the raw
                               * u64 argument, aux = errno */
};

/* flags of PCSHIM_OP_WRITE: how the bytes reached the file (0 = a write/pwrite/writev call). */
enum pcshim_write_via {
    PCSHIM_VIA_STDIO = 1u << 0,    /* a stdio stream's bytes, accounted per stream when they enter its
                                    * buffer (at the call that put them, or at the next flush point),
                                    * offset = where the stream's position puts them */
    PCSHIM_VIA_MSYNC = 1u << 1,    /* msync of a shared writable file mapping: the synced range */
    PCSHIM_VIA_AIO = 1u << 2,      /* io_submit (libaio or syscall()): one record per write iocb, at submission */
    PCSHIM_VIA_COPY = 1u << 3,     /* copy_file_range into this file */
    PCSHIM_VIA_SENDFILE = 1u << 4, /* sendfile into this file (at its file position) */
    PCSHIM_VIA_SPLICE = 1u << 5,   /* splice from a pipe into this file */
    PCSHIM_VIA_SYSCALL = 1u << 6,  /* syscall(SYS_write|SYS_pwrite64, ...) */
    PCSHIM_VIA_RECOVERED = 1u << 7, /* found by the safety net at close/exit: bytes between the
                                     * file position (or size) and what was recorded for the fd,
                                     * at the offsets they occupy; pc = the closing call path */
    PCSHIM_VIA_STDIO_INLINE = 1u << 8, /* with VIA_STDIO: bytes that entered a stdio buffer without a
                                        * stdio call the shim saw (putc-style macros), accounted at
                                        * the next flush point (overflow, fflush, fclose, a stdio
                                        * call, fork, exit); pc = that flush point's call path */
    PCSHIM_VIA_DIRECT = 1u << 9,       /* with any of the above: the file description had O_DIRECT
                                        * (from open, or set by fcntl F_SETFL) at the call: the
                                        * bytes bypassed the page cache */
    PCSHIM_VIA_URING = 1u << 10,       /* an io_uring write (IORING_OP_WRITE, WRITEV, WRITE_FIXED) at its
                                        * submission, len = the bytes asked for (the BPF capture,
                                        * shim/include/pcsys.h); pc = the submitting thread's call path
                                        * (0 for an SQPOLL submission) */
};

/* flags of PCSHIM_OP_SET_HINT (0: the kernel accepted the hint). */
enum pcshim_hint_flags {
    PCSHIM_HINT_REFUSED = 1u << 0, /* the kernel refused it (not EFAULT); offset = the level the
                                    * program meant: the u64 if it is a level, else its low 32
                                    * bits if they are one (a 4-byte value passed where Linux
                                    * reads 8); also a "W hint refused: <errno> <kind> <program>"
                                    * line, kind = level | low32 | invalid */
    PCSHIM_HINT_INVALID = 1u << 1, /* with REFUSED: no level in the argument (offset 0, len = raw):
                                    * map ignores it */
};

/* First 32 bytes of every .bin file. */
struct pcshim_header {
    char magic[8];        /* "PCSHIM01" */
    uint32_t version;     /* PCSHIM_VERSION */
    uint32_t record_size; /* sizeof(struct pcshim_record) = 88 */
    uint32_t pid;
    uint32_t ppid;
    uint32_t frames; /* PCSHIM_FRAMES in effect */
    uint32_t method; /* 0 fp, 1 scan, 2 unwind, 3 auto */
};

/* One event: 88 bytes. Only regular files are recorded (pipes, ttys, sockets, devices are not). */
struct pcshim_record {
    uint64_t ts_ns;  /* CLOCK_MONOTONIC, comparable across processes */
    uint64_t offset; /* file offset (see the ops) */
    uint64_t len;    /* bytes */
    uint64_t pc;     /* PC signature of the call (0 for events without one) */
    uint64_t dev;    /* st_dev of the file (0 unknown) */
    uint64_t ino;    /* st_ino of the file (0 unknown) */
    uint64_t path;   /* hash of the file's absolute path (0 none), see the P lines */
    uint64_t aux;    /* rename: hash of the new path */
    uint32_t pid;
    uint32_t tid;
    int32_t fd;
    uint32_t flags;
    uint16_t op; /* enum pcshim_op */
    uint16_t nframes;  /* frames in the signature */
    uint32_t reserved; /* 0 */
};

/* ---------- live hints: the shim and python/pcstream/live.py ----------
 *
 * The hints file PCSHIM_HINTS names, written by live.py (write_hints) and read by the shim
 * (shim/src/live.c) once at start; little-endian, no padding:
 *   struct pcshim_hints_header   16 bytes: "PCHINTS1", u32 count, u32 reserved (0)
 *   count x struct pcshim_hint   16 bytes each: u64 signature (never 0), u64 hint (0..5, enum
 *                                rw_hint: 0 NOT_SET ... 5 EXTREME); live.py writes them sorted by
 *                                signature, the shim does not rely on the order
 * A file with another magic, more than PCSHIM_HINTS_MAX_COUNT entries, fewer entries than its
 * count, a signature 0 or a hint above PCSHIM_HINTS_MAX_HINT is not used (the program runs
 * without hints).
 *
 * The live log, <PCSHIM_HINTS> followed by PCSHIM_LIVE_LOG_SUFFIX, written by the shim and read
 * by live.py (read_live_log): text, each line appended with one write, fields separated by one
 * space, numbers in decimal:
 *   L <pid> <writes> <matched> <set> <rejected> <inodes>\n   at the end of a process image (or an
 *       exec) with something counted: write calls to regular files seen, those whose signature
 *       is in the table, hints set, hints the kernel refused, inodes the program set a hint on
 *       itself (left alone from then on)
 *   R <errno> <pid>\n   the kernel or file system refused a hint with errno (once per errno and
 *       process image)
 */
#define PCSHIM_HINTS_MAGIC "PCHINTS1"
#define PCSHIM_HINTS_MAX_COUNT (1u << 24)
#define PCSHIM_HINTS_MAX_HINT 5u /* RWH_WRITE_LIFE_EXTREME */
#define PCSHIM_LIVE_LOG_SUFFIX ".log"

struct pcshim_hints_header {
    char magic[8];     /* PCSHIM_HINTS_MAGIC */
    uint32_t count;    /* entries that follow */
    uint32_t reserved; /* 0 */
};

struct pcshim_hint {
    uint64_t sig;  /* PC signature (as in pcshim_record.pc) */
    uint64_t hint; /* write-life hint set before a write with this signature */
};

#ifdef __cplusplus
static_assert(sizeof(struct pcshim_record) == 88, "record layout");
static_assert(sizeof(struct pcshim_hints_header) == 16, "hints header layout");
static_assert(sizeof(struct pcshim_hint) == 16, "hint layout");
#else
_Static_assert(sizeof(struct pcshim_record) == 88, "record layout");
_Static_assert(sizeof(struct pcshim_header) == 32, "header layout");
_Static_assert(sizeof(struct pcshim_hints_header) == 16, "hints header layout");
_Static_assert(sizeof(struct pcshim_hint) == 16, "hint layout");
#endif

#endif
