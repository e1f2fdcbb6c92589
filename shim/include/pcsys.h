/* pcsys: the BPF capture of file writes at the system-call boundary (`pcstream record --via bpf`,
 * and the processes the shim cannot enter under `--via auto`). This header is the contract between
 * the BPF program (bpf/pcsys.bpf.c), which sends one struct pcsys_event per system call or process
 * event through a ring buffer, and its loader (bpf/pcsys.c), which turns them into the shim's logs
 * (pcshim.h: per process image a <pid>.<start_ns>.bpf.bin of 88-byte records and a .bpf.txt of
 * P/S/F/W/E lines), so the converter reads both captures alike.
 *
 * The program follows the processes of the run: a hash map (`procs`, tgid -> enum pcsys_follow)
 * seeded by the loader with the root process(es); sched_process_fork adds each new process whose
 * parent is followed; sched_process_exit removes it. At sys_enter the arguments are kept per
 * thread; at sys_exit a call that succeeded on a regular file is sent with the file as the kernel
 * sees it then (dev, ino, file position) and the calling thread's user stack.
 *
 * The stack is bpf_get_stack(BPF_F_USER_STACK | BPF_F_USER_BUILD_ID): per frame the GNU build id
 * of the module and the offset of the address in its file (status PCSYS_FRAME_BUILD_ID), or the
 * raw address (PCSYS_FRAME_IP: a module without a GNU build id, e.g. a Go program, or one whose
 * note page was not in memory). Innermost first; the walk follows frame pointers.
 */
#ifndef PCSYS_H
#define PCSYS_H

#ifndef __VMLINUX_H__
#include <stdint.h>
typedef uint64_t pcsys_u64;
typedef int64_t pcsys_s64;
typedef uint32_t pcsys_u32;
typedef int32_t pcsys_s32;
typedef uint16_t pcsys_u16;
typedef uint8_t pcsys_u8;
#else
typedef __u64 pcsys_u64;
typedef __s64 pcsys_s64;
typedef __u32 pcsys_u32;
typedef __s32 pcsys_s32;
typedef __u16 pcsys_u16;
typedef __u8 pcsys_u8;
#endif

/* Frames kept per event; the loader skips the C library's innermost frames, then hashes at most
 * PCSHIM_FRAMES of the rest. */
#define PCSYS_MAX_FRAMES 32
/* Bytes of a path argument kept (longer ones are cut: the flag PCSYS_F_PATH_CUT). */
#define PCSYS_PATH_MAX 256
/* iovecs of an io_uring WRITEV summed */
#define PCSYS_URING_IOVECS 64
/* GNU build id bytes (as in struct bpf_stack_build_id). */
#define PCSYS_BUILD_ID_SIZE 20
/* Bytes of user stack above the stack pointer copied with an event (a PCSYS_USTACK record) when
 * the loader asks for them: the loader unwinds them with the modules' call-frame information, which
 * code built without frame pointers (most C and C++ programs, and the C library's system-call
 * wrappers) needs. 8 KiB holds a dozen or more frames of ordinary code. */
#define PCSYS_STACK_COPY 8192
/* The user registers sent with the copy, in DWARF x86-64 numbering: rax rdx rcx rbx rsi rdi rbp
 * rsp r8..r15 rip. */
#define PCSYS_UREGS 17
/* iocbs of one io_submit call recorded (more are counted lost). */
#define PCSYS_AIO_IOCBS 256
/* File-backed executable mappings sent per PCSYS_MAPS record (more are cut: PCSYS_F_MAPS_CUT). */
#define PCSYS_MAPS_MAX 192

/* The warning line ("W captured: <program>\n") the loader writes in the logs of an image it
 * records under auto: the converter then does not count the shim's "W static: <program>" for it
 * as a program whose writes were lost. */
#define PCSYS_CAPTURED_WARNING "captured: "

/* What an event is: a system call that succeeded, or a process event. */
enum pcsys_kind {
    PCSYS_WRITE = 1,      /* write, writev: fd, file (position after the call), ret = bytes */
    PCSYS_PWRITE,         /* pwrite64, pwritev, pwritev2: fd, file, ret bytes, arg[3] = offset (on
                           * 64-bit the whole offset is in pos_l); -1 in pwritev2: at the position */
    PCSYS_FSYNC,          /* fd, file */
    PCSYS_FDATASYNC,      /* fd, file */
    PCSYS_SYNC_RANGE,     /* fd, file, arg[1] offset, arg[2] bytes, arg[3] flags */
    PCSYS_FALLOCATE,      /* fd, file, arg[1] mode, arg[2] offset, arg[3] len */
    PCSYS_FTRUNCATE,      /* fd, file, arg[1] length */
    PCSYS_COPY,           /* copy_file_range: out fd arg[2], file, ret bytes; `off` = the out offset */
    PCSYS_SENDFILE,       /* out fd arg[0], file, ret bytes at the position before the call */
    PCSYS_SPLICE,         /* out fd arg[2], file, ret bytes; `off` = the out offset */
    PCSYS_MSYNC,          /* file of the mapping, `off` = file offset of arg[0], arg[1] bytes */
    PCSYS_SET_HINT,       /* fcntl(F_SET_RW_HINT): fd, file, `off` = the hint */
    PCSYS_OPEN,           /* open, openat, openat2: ret = fd, file, path[0], arg[0] dirfd (AT_FDCWD
                           * for open), `off` = open flags */
    PCSYS_CLOSE,          /* fd arg[0], file (taken at sys_enter) */
    PCSYS_RENAME,         /* path[0] old (dirfd arg[0]), path[1] new (dirfd arg[2]) */
    PCSYS_UNLINK,         /* path[0] (dirfd arg[0]) */
    PCSYS_FORK,           /* a new process: pid = child, ppid = parent */
    PCSYS_EXEC,           /* pid, path[0] = the program as exec'd, arg[0..3] = uid, euid, gid, egid */
    PCSYS_EXIT,           /* pid (the last thread), ret = exit status (wait status form) */
    PCSYS_URING_WRITE,    /* an io_uring write submitted (WRITE, WRITEV, WRITE_FIXED): file, `off` =
                           * the offset asked for (-1: the file position, in file.pos), arg[0] the
                           * bytes asked for (WRITEV: the sum of the first PCSYS_URING_IOVECS
                           * iovecs), arg[1] the opcode, arg[2] the fd or fixed-file index */
    PCSYS_URING_FSYNC,    /* an io_uring fsync submitted: file, arg[0] 1 for IORING_FSYNC_DATASYNC */
    PCSYS_USTACK,         /* not an event: a struct pcsys_ustack, the user stack of the event before
                           * it from the same thread (that event has PCSYS_F_USTACK) */
    PCSYS_MAPS,           /* not an event: a struct pcsys_maps, the process's executable file
                           * mappings, sent before its first stack copy and again after it maps
                           * more code (dlopen) or execs: the loader unwinds with them, so the
                           * modules are known even once the process has ended */
    PCSYS_AIO_WRITE,      /* an io_submit write iocb (IOCB_CMD_PWRITE, PWRITEV), at submission:
                           * fd arg[2], file, `off` = its offset, arg[0] = bytes asked for (PWRITEV:
                           * the sum of its first PCSYS_URING_IOVECS iovecs) */
    PCSYS_AIO_FSYNC,      /* an io_submit IOCB_CMD_FSYNC (arg[0] 0) or FDSYNC (1): fd arg[2], file */
};

/* Values of the `procs` map. */
enum pcsys_follow {
    PCSYS_FOLLOW = 1, /* followed; its calls are sent */
    PCSYS_QUIET = 2,  /* followed (forks, execs, exits) but its calls are not sent: the loader
                       * leaves it to the shim */
};

/* event.flags */
enum pcsys_flags {
    PCSYS_F_PATH_CUT = 1u << 0,   /* a path did not fit PCSYS_PATH_MAX */
    PCSYS_F_NOT_REG = 1u << 1,    /* not a regular file: only opens of directories are sent so (the
                                   * loader resolves relative paths against directory fds) */
    PCSYS_F_SQPOLL = 1u << 2,     /* submitted by an io_uring SQPOLL thread: no user stack */
    PCSYS_F_IOV_CUT = 1u << 3,    /* a WRITEV with more iovecs than PCSYS_URING_IOVECS */
    PCSYS_F_FIXED = 1u << 4,      /* an io_uring request on a registered file: arg[2] is its index */
    PCSYS_F_USTACK = 1u << 5,     /* a PCSYS_USTACK record of the same thread follows in the ring */
    PCSYS_F_MAPS_CUT = 1u << 6,   /* a PCSYS_MAPS record with more mappings than PCSYS_MAPS_MAX */
};

/* frame.status, as struct bpf_stack_build_id's */
enum pcsys_frame_status {
    PCSYS_FRAME_EMPTY = 0,
    PCSYS_FRAME_BUILD_ID = 1, /* build_id + file offset */
    PCSYS_FRAME_IP = 2,       /* raw user address */
};

/* One frame: the layout of struct bpf_stack_build_id (32 bytes). */
struct pcsys_frame {
    pcsys_s32 status;
    unsigned char build_id[PCSYS_BUILD_ID_SIZE];
    pcsys_u64 addr; /* file offset (BUILD_ID) or address (IP) */
};

/* The file an fd names, read from the task's fd table. */
struct pcsys_file {
    pcsys_u64 dev;  /* super_block.s_dev, kernel encoding (major << 20 | minor) */
    pcsys_u64 ino;
    pcsys_u64 pos;  /* file position after the call */
    pcsys_u32 mode; /* i_mode */
    pcsys_u32 f_flags;
};

struct pcsys_event {
    pcsys_u64 ts_ns; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
    pcsys_u32 kind;  /* enum pcsys_kind */
    pcsys_u32 flags; /* enum pcsys_flags */
    pcsys_u32 pid;   /* tgid */
    pcsys_u32 tid;
    pcsys_u32 ppid;
    pcsys_s32 nframes; /* frames in `frames` (0: none taken) */
    pcsys_s64 ret;     /* the call's return value */
    pcsys_u64 off;     /* see the kinds */
    pcsys_u64 arg[6];
    struct pcsys_file file;
    pcsys_u16 path_len[2];
    pcsys_u32 reserved;
    char path[2][PCSYS_PATH_MAX];
    struct pcsys_frame frames[PCSYS_MAX_FRAMES];
};

/* The user stack of an event (PCSYS_F_USTACK): registers and the bytes from rsp up. `ts_ns` and
 * `kind` at the offsets of struct pcsys_event's, so a reader tells the two apart by `kind`. */
struct pcsys_ustack {
    pcsys_u64 ts_ns;
    pcsys_u32 kind; /* PCSYS_USTACK */
    pcsys_u32 tid;
    pcsys_u64 regs[PCSYS_UREGS];
    pcsys_u32 len; /* bytes of `data` copied (0: the stack could not be read) */
    pcsys_u32 reserved;
    unsigned char data[PCSYS_STACK_COPY];
};

/* One executable file mapping: [start, end) maps the file (dev in kernel encoding, ino) from
 * byte `pgoff`. */
struct pcsys_map {
    pcsys_u64 start, end, pgoff, dev, ino;
};

/* A process's executable file mappings. `ts_ns` and `kind` at the offsets of pcsys_event's. */
struct pcsys_maps {
    pcsys_u64 ts_ns;
    pcsys_u32 kind; /* PCSYS_MAPS */
    pcsys_u32 pid;
    pcsys_u32 n;
    pcsys_u32 flags; /* PCSYS_F_MAPS_CUT */
    struct pcsys_map maps[PCSYS_MAPS_MAX];
};

_Static_assert(sizeof(struct pcsys_frame) == 32, "frame layout");
_Static_assert(sizeof(struct pcsys_maps) == 24 + 40 * PCSYS_MAPS_MAX, "maps layout");
_Static_assert(sizeof(struct pcsys_ustack) == 160 + PCSYS_STACK_COPY, "ustack layout");
_Static_assert(sizeof(struct pcsys_event) == 136 + 2 * PCSYS_PATH_MAX + 32 * PCSYS_MAX_FRAMES, "event layout");

#endif
