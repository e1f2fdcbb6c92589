// SPDX-License-Identifier: GPL-2.0
/* pcsys.bpf.c: the file system calls of the processes of one run, with each call's user stack (the
 * event format and the process map are in shim/include/pcsys.h). raw_syscalls/sys_enter keeps the
 * arguments of a followed thread's file call (and, for close, the file it is about to lose); the matching
 * sys_exit sends the call if it succeeded on a regular file, with the file's dev/ino/position as
 * the call left them and the stack taken there (the user registers of a thread in a system call
 * are the same at exit as at entry). sched_process_fork/exec/exit follow the processes. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pcsys.h"

char LICENSE[] SEC("license") = "GPL";

#define S_IFMT 0170000
#define S_IFREG 0100000
#define S_IFDIR 0040000
#define AT_FDCWD -100
#define F_SET_RW_HINT 1036
#define AT_REMOVEDIR 0x200
#define BPF_F_USER_STACK_ (1ULL << 8)
#define BPF_F_USER_BUILD_ID_ (1ULL << 11)

/* Frames asked of the kernel, set by the loader before load: the signature's frames and a few for
 * the C library's wrappers (each frame's build id costs a lookup). */
const volatile __u32 stack_frames = PCSYS_MAX_FRAMES;

/* Counters the loader reads at the end. */
__u64 lost_events = 0;

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 16 << 20); /* the loader may change it */
} events SEC(".maps");

/* tgid -> enum pcsys_follow: the processes of the run. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, __u32);
} procs SEC(".maps");

/* A call in progress: what sys_enter kept for sys_exit. */
struct pending {
    __u32 kind;
    __u32 variant; /* see classify() */
    __u64 arg[6];
    struct pcsys_file file; /* close: the file before it goes */
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, struct pending);
} inflight SEC(".maps");

static __always_inline __u32 follow_state(__u32 tgid)
{
    __u32 *v = bpf_map_lookup_elem(&procs, &tgid);
    return v ? *v : 0;
}

/* The file of `fd` in the current task: 0 with `out` filled, -1 when the fd names none. */
static __always_inline int fd_file(int fd, struct pcsys_file *out)
{
    struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
    struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
    if (!fdt || fd < 0 || (unsigned)fd >= BPF_CORE_READ(fdt, max_fds))
        return -1;
    struct file **fds = BPF_CORE_READ(fdt, fd);
    struct file *f = NULL;
    if (bpf_probe_read_kernel(&f, sizeof f, &fds[fd]) || !f)
        return -1;
    struct inode *inode = BPF_CORE_READ(f, f_inode);
    out->mode = BPF_CORE_READ(inode, i_mode);
    out->dev = BPF_CORE_READ(inode, i_sb, s_dev);
    out->ino = BPF_CORE_READ(inode, i_ino);
    out->pos = BPF_CORE_READ(f, f_pos);
    out->f_flags = BPF_CORE_READ(f, f_flags);
    return 0;
}

static __always_inline int on_enter(struct trace_event_raw_sys_enter *ctx, __u32 kind, __u32 variant)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (follow_state((__u32)(id >> 32)) != PCSYS_FOLLOW)
        return 0;
    struct pending p = {.kind = kind, .variant = variant};
    /* tracepoint context fields at constant offsets (a variable one is refused) */
    p.arg[0] = ctx->args[0];
    p.arg[1] = ctx->args[1];
    p.arg[2] = ctx->args[2];
    p.arg[3] = ctx->args[3];
    p.arg[4] = ctx->args[4];
    p.arg[5] = ctx->args[5];
    if (kind == PCSYS_CLOSE && fd_file((int)p.arg[0], &p.file) != 0)
        return 0;
    __u32 tid = (__u32)id;
    bpf_map_update_elem(&inflight, &tid, &p, BPF_ANY);
    return 0;
}

/* Wake the loader only when the ring buffer is an eighth full (it also polls every few
 * milliseconds): a wakeup per event costs the traced program an interrupt-work call per system
 * call and the loader a wakeup per event, and on a busy machine made it fall behind. */
static __always_inline __u64 wakeup(void)
{
    __u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
    __u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
    return avail > size / 8 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline struct pcsys_event *reserve(void)
{
    struct pcsys_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (!e) {
        __sync_fetch_and_add(&lost_events, 1);
        return NULL;
    }
    __u64 id = bpf_get_current_pid_tgid();
    e->ts_ns = bpf_ktime_get_ns();
    e->pid = (__u32)(id >> 32);
    e->tid = (__u32)id;
    e->flags = 0;
    e->nframes = 0;
    e->off = 0;
    e->ppid = 0;
    e->path_len[0] = e->path_len[1] = 0;
    e->reserved = 0;
    return e;
}

/* Bytes of user stack to copy with each stack (0: none), set by the loader. */
const volatile __u32 ustack_bytes = 0;

/* One PCSYS_USTACK record per CPU being built (too large for the BPF stack). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pcsys_ustack);
} ustack_scratch SEC(".maps");

/* Processes whose executable mappings were sent (tgid -> 1); cleared when they map code or exec. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, __u32);
} maps_sent SEC(".maps");

/* Threads inside an mmap of executable memory (tid -> 1). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, __u32);
} mmap_exec SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pcsys_maps);
} maps_scratch SEC(".maps");

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, __u64 addr) __weak __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __weak __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __weak __ksym;

#define VM_EXEC_ 0x4

/* The current process's executable file mappings as a PCSYS_MAPS record, once until it maps more
 * code: the loader then unwinds its stacks without /proc, which is gone once it has ended. */
static __always_inline void send_maps(__u64 ts)
{
    __u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), zero = 0, one = 1;
    if (bpf_map_lookup_elem(&maps_sent, &tgid))
        return;
    struct pcsys_maps *m = bpf_map_lookup_elem(&maps_scratch, &zero);
    if (!m)
        return;
    m->ts_ns = ts;
    m->kind = PCSYS_MAPS;
    m->pid = tgid;
    m->flags = 0;
    m->n = 0;
    struct bpf_iter_task_vma it;
    struct vm_area_struct *vma;
    bpf_iter_task_vma_new(&it, bpf_get_current_task_btf(), 0);
    while ((vma = bpf_iter_task_vma_next(&it))) {
        if (!(vma->vm_flags & VM_EXEC_) || !vma->vm_file)
            continue;
        /* The count is read back from the record, not kept in a register: the verifier then sees
         * an unknown count at every turn and checks the loop's body once instead of once per
         * value (which took seconds per program at each start of the capture). */
        __u32 n = *(volatile __u32 *)&m->n;
        if (n >= PCSYS_MAPS_MAX) {
            m->flags |= PCSYS_F_MAPS_CUT;
            break;
        }
        struct pcsys_map *o = &m->maps[n];
        struct inode *inode = BPF_CORE_READ(vma, vm_file, f_inode);
        o->start = vma->vm_start;
        o->end = vma->vm_end;
        o->pgoff = (__u64)vma->vm_pgoff << 12;
        o->dev = BPF_CORE_READ(inode, i_sb, s_dev);
        o->ino = BPF_CORE_READ(inode, i_ino);
        m->n = n + 1;
    }
    bpf_iter_task_vma_destroy(&it);
    if (bpf_ringbuf_output(&events, m, sizeof(*m), BPF_RB_NO_WAKEUP) == 0)
        bpf_map_update_elem(&maps_sent, &tgid, &one, BPF_ANY);
    else
        __sync_fetch_and_add(&lost_events, 1);
}

/* Copy `want` bytes from the user stack at `sp`, or, when that runs past the stack's mapping, as
 * much of it as the page holding `sp` and the next ones allow: the length copied. */
static __always_inline __u32 copy_stack(struct pcsys_ustack *s, __u64 sp, __u32 want)
{
    if (want >= PCSYS_STACK_COPY && !bpf_probe_read_user(s->data, PCSYS_STACK_COPY, (const void *)sp))
        return PCSYS_STACK_COPY;
    if (want >= PCSYS_STACK_COPY / 2 && !bpf_probe_read_user(s->data, PCSYS_STACK_COPY / 2, (const void *)sp))
        return PCSYS_STACK_COPY / 2;
    __u32 rest = 4096 - (__u32)(sp & 4095);
    if (rest > want)
        rest = want;
    rest &= PCSYS_STACK_COPY - 1; /* the verifier's bound; never changes a value <= 4096 */
    if (rest && !bpf_probe_read_user(s->data, rest, (const void *)sp))
        return rest;
    return 0;
}

/* The user registers and stack of the current thread as a PCSYS_USTACK record after `e` (which
 * says so with PCSYS_F_USTACK): the loader unwinds code without frame pointers from them. */
static __always_inline void send_ustack(struct pcsys_event *e)
{
    __u32 want = ustack_bytes, zero = 0;
    if (!want)
        return;
    send_maps(e->ts_ns);
    struct pcsys_ustack *s = bpf_map_lookup_elem(&ustack_scratch, &zero);
    if (!s)
        return;
    struct task_struct *task = bpf_get_current_task_btf();
    struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
    if (!r)
        return;
    s->ts_ns = e->ts_ns;
    s->kind = PCSYS_USTACK;
    s->tid = e->tid;
    s->regs[0] = BPF_CORE_READ(r, ax);
    s->regs[1] = BPF_CORE_READ(r, dx);
    s->regs[2] = BPF_CORE_READ(r, cx);
    s->regs[3] = BPF_CORE_READ(r, bx);
    s->regs[4] = BPF_CORE_READ(r, si);
    s->regs[5] = BPF_CORE_READ(r, di);
    s->regs[6] = BPF_CORE_READ(r, bp);
    s->regs[7] = BPF_CORE_READ(r, sp);
    s->regs[8] = BPF_CORE_READ(r, r8);
    s->regs[9] = BPF_CORE_READ(r, r9);
    s->regs[10] = BPF_CORE_READ(r, r10);
    s->regs[11] = BPF_CORE_READ(r, r11);
    s->regs[12] = BPF_CORE_READ(r, r12);
    s->regs[13] = BPF_CORE_READ(r, r13);
    s->regs[14] = BPF_CORE_READ(r, r14);
    s->regs[15] = BPF_CORE_READ(r, r15);
    s->regs[16] = BPF_CORE_READ(r, ip);
    s->reserved = 0;
    __u32 len = copy_stack(s, s->regs[7], want);
    s->len = len;
    __u64 size = __builtin_offsetof(struct pcsys_ustack, data) + (len & (PCSYS_STACK_COPY * 2 - 1));
    if (size > sizeof(*s))
        size = sizeof(*s);
    if (bpf_ringbuf_output(&events, s, size, BPF_RB_NO_WAKEUP) == 0)
        e->flags |= PCSYS_F_USTACK;
    else
        __sync_fetch_and_add(&lost_events, 1);
}

/* take_stack for a bpf_loop callback, which has no program context: the current task's stack. */
/* Frames the kernel gave as raw addresses (a module without a build id, or whose note it could not
 * read at that moment) are resolved by the loader through the process's mappings: they are sent
 * now, as the process may have ended when the event is read. */
static __always_inline void maps_for_raw_frames(struct pcsys_event *e)
{
    for (int i = 0; i < PCSYS_MAX_FRAMES; i++) {
        if (i >= e->nframes)
            return;
        if (e->frames[i].status == PCSYS_FRAME_IP) {
            send_maps(e->ts_ns);
            return;
        }
    }
}

static __always_inline void take_task_stack(struct pcsys_event *e)
{
    __u32 want = stack_frames;
    if (want > PCSYS_MAX_FRAMES)
        want = PCSYS_MAX_FRAMES;
    long n = bpf_get_task_stack(bpf_get_current_task_btf(), e->frames, want * sizeof(struct pcsys_frame),
                                BPF_F_USER_STACK_ | BPF_F_USER_BUILD_ID_);
    e->nframes = n > 0 ? (int)(n / sizeof(struct pcsys_frame)) : 0;
    if ((__u32)e->nframes < want)
        send_ustack(e);
    else
        maps_for_raw_frames(e);
}

static __always_inline void take_stack(void *ctx, struct pcsys_event *e)
{
    __u32 want = stack_frames;
    if (want > PCSYS_MAX_FRAMES)
        want = PCSYS_MAX_FRAMES;
    long n = bpf_get_stack(ctx, e->frames, want * sizeof(struct pcsys_frame), BPF_F_USER_STACK_ | BPF_F_USER_BUILD_ID_);
    e->nframes = n > 0 ? (int)(n / sizeof(struct pcsys_frame)) : 0;
    /* A walk that fills every frame asked for followed a frame-pointer chain (code without frame
     * pointers breaks it within a frame or two): the stack copy, which costs the program a few
     * microseconds per call, is then not needed. */
    if ((__u32)e->nframes < want)
        send_ustack(e);
    else
        maps_for_raw_frames(e);
}

static __always_inline void user_path(struct pcsys_event *e, int slot, __u64 uptr)
{
    if (slot < 0 || slot > 1)
        return;
    long n = bpf_probe_read_user_str(e->path[slot], PCSYS_PATH_MAX, (const void *)uptr);
    if (n <= 0) {
        e->path[slot][0] = 0;
        n = 1;
    }
    e->path_len[slot] = (__u16)(n - 1);
    if (n == PCSYS_PATH_MAX)
        e->flags |= PCSYS_F_PATH_CUT;
}

/* The fd whose file an exit event carries (-1: none). */
static __always_inline int event_fd(const struct pending *p, long ret)
{
    switch (p->kind) {
    case PCSYS_COPY:
    case PCSYS_SPLICE:
        return (int)p->arg[2];
    case PCSYS_OPEN:
        return (int)ret;
    case PCSYS_RENAME:
    case PCSYS_UNLINK:
    case PCSYS_CLOSE:
    case PCSYS_MSYNC:
        return -1;
    default:
        return (int)p->arg[0];
    }
}

/* copy_file_range and splice: the out offset (its pointer, advanced by the call, or the position). */
static __always_inline __u64 out_offset(const struct pending *p, long ret, const struct pcsys_file *f)
{
    __u64 at = 0;
    if (p->arg[3] && bpf_probe_read_user(&at, sizeof at, (const void *)p->arg[3]) == 0)
        return at - ret;
    return f->pos - ret;
}

/* msync: the file and file offset of the mapping at arg[0]. */
struct vma_ctx {
    struct pcsys_event *e;
    __u64 addr;
    int found;
};

static long vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
    struct vma_ctx *c = data;
    struct file *f = BPF_CORE_READ(vma, vm_file);
    if (!f)
        return 0;
    struct inode *inode = BPF_CORE_READ(f, f_inode);
    c->e->file.mode = BPF_CORE_READ(inode, i_mode);
    c->e->file.dev = BPF_CORE_READ(inode, i_sb, s_dev);
    c->e->file.ino = BPF_CORE_READ(inode, i_ino);
    c->e->off = (c->addr - BPF_CORE_READ(vma, vm_start)) + (BPF_CORE_READ(vma, vm_pgoff) << 12);
    c->found = 1;
    return 0;
}

static __always_inline int fill_file(struct pcsys_event *e, const struct pending *p, long ret)
{
    if (p->kind == PCSYS_CLOSE) {
        e->file = p->file;
    } else if (p->kind == PCSYS_MSYNC) {
        struct vma_ctx c = {.e = e, .addr = p->arg[0]};
        struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
        if (bpf_find_vma(task, p->arg[0], vma_cb, &c, 0) || !c.found)
            return -1;
    } else {
        int fd = event_fd(p, ret);
        if (fd < 0)
            return 0; /* a call named for a path */
        if (fd_file(fd, &e->file) != 0)
            return -1;
    }
    if (e->file.mode && (e->file.mode & S_IFMT) != S_IFREG)
        e->flags |= PCSYS_F_NOT_REG;
    return 0;
}

/* What the kinds need beyond the file: paths, the offset. 0 to send, -1 to drop. */
static __always_inline int fill_kind(struct pcsys_event *e, const struct pending *p, long ret)
{
    switch (p->kind) {
    case PCSYS_OPEN:
        if (p->variant == 2) { /* openat2: flags in struct open_how */
            __u64 fl = 0;
            bpf_probe_read_user(&fl, sizeof fl, (const void *)p->arg[2]);
            e->off = fl;
        } else {
            e->off = p->arg[p->variant == 1 ? 2 : 1];
        }
        if (p->variant == 0) { /* open(path, flags, mode): as openat(AT_FDCWD, ...) */
            user_path(e, 0, p->arg[0]);
            e->arg[0] = (__u64)(long)AT_FDCWD;
        } else {
            user_path(e, 0, p->arg[1]);
        }
        return 0;
    case PCSYS_RENAME:
        if (p->variant == 0) { /* rename(old, new) */
            user_path(e, 0, p->arg[0]);
            user_path(e, 1, p->arg[1]);
            e->arg[0] = e->arg[2] = (__u64)(long)AT_FDCWD;
        } else {
            user_path(e, 0, p->arg[1]);
            user_path(e, 1, p->arg[3]);
        }
        return 0;
    case PCSYS_UNLINK:
        if (p->variant == 0) {
            user_path(e, 0, p->arg[0]);
            e->arg[0] = (__u64)(long)AT_FDCWD;
        } else {
            if (p->arg[2] & AT_REMOVEDIR)
                return -1;
            user_path(e, 0, p->arg[1]);
        }
        return 0;
    case PCSYS_COPY:
    case PCSYS_SPLICE:
        e->off = out_offset(p, ret, &e->file);
        return 0;
    case PCSYS_SET_HINT:
        bpf_probe_read_user(&e->off, sizeof e->off, (const void *)p->arg[2]);
        return 0;
    default:
        return 0;
    }
}

static __always_inline int on_exit(struct trace_event_raw_sys_exit *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id;
    struct pending *pp = bpf_map_lookup_elem(&inflight, &tid);
    if (!pp)
        return 0;
    struct pending p = *pp;
    bpf_map_delete_elem(&inflight, &tid);
    long ret = ctx->ret;
    if (ret < 0)
        return 0;
    struct pcsys_event *e = reserve();
    if (!e)
        return 0;
    e->kind = p.kind;
    e->ret = ret;
    for (int i = 0; i < 6; i++)
        e->arg[i] = p.arg[i];
    __builtin_memset(&e->file, 0, sizeof e->file);
    if (fill_file(e, &p, ret) != 0 || fill_kind(e, &p, ret) != 0) {
        bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
        return 0;
    }
    if ((e->flags & PCSYS_F_NOT_REG) && !(p.kind == PCSYS_OPEN && (e->file.mode & S_IFMT) == S_IFDIR)) {
        bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP); /* a pipe, a tty, a socket, a device */
        return 0;
    }
    if (e->flags & PCSYS_F_NOT_REG) { /* a directory opened: the loader resolves paths against it */
        bpf_ringbuf_submit(e, wakeup());
        return 0;
    }
    if (p.kind != PCSYS_CLOSE)
        take_stack(ctx, e);
    bpf_ringbuf_submit(e, wakeup());
    return 0;
}

/* The calls followed, by x86-64 system call number (arch/x86/entry/syscalls/syscall_64.tbl), as
 * (kind, variant): `variant` tells apart calls of one kind whose arguments differ (open 0, openat 1,
 * openat2 2; rename/unlink 0, their *at forms 1). One pair of raw_syscalls tracepoints serves them
 * all: detaching a tracepoint program waits for an RCU grace period (~75 ms each here), which for
 * one program per call made every capture end 3.5 s late. */
#ifndef __TARGET_ARCH_x86
#error "pcsys.bpf.c knows the x86-64 system call numbers only"
#endif
static __always_inline int classify(long nr, __u32 *kind, __u32 *variant)
{
    *variant = 0;
    switch (nr) {
    case 1: /* write */
    case 20: *kind = PCSYS_WRITE; return 1; /* writev */
    case 18: /* pwrite64 */
    case 296: /* pwritev */
    case 328: *kind = PCSYS_PWRITE; return 1; /* pwritev2 */
    case 74: *kind = PCSYS_FSYNC; return 1;
    case 75: *kind = PCSYS_FDATASYNC; return 1;
    case 277: *kind = PCSYS_SYNC_RANGE; return 1;
    case 285: *kind = PCSYS_FALLOCATE; return 1;
    case 77: *kind = PCSYS_FTRUNCATE; return 1;
    case 326: *kind = PCSYS_COPY; return 1;
    case 40: *kind = PCSYS_SENDFILE; return 1;
    case 275: *kind = PCSYS_SPLICE; return 1;
    case 26: *kind = PCSYS_MSYNC; return 1;
    case 72: *kind = PCSYS_SET_HINT; return 1; /* fcntl, F_SET_RW_HINT only */
    case 3: *kind = PCSYS_CLOSE; return 1;
    case 2: *kind = PCSYS_OPEN; return 1;
    case 257: *kind = PCSYS_OPEN; *variant = 1; return 1;
    case 437: *kind = PCSYS_OPEN; *variant = 2; return 1;
    case 82: *kind = PCSYS_RENAME; return 1;
    case 264: /* renameat */
    case 316: *kind = PCSYS_RENAME; *variant = 1; return 1; /* renameat2 */
    case 87: *kind = PCSYS_UNLINK; return 1;
    case 263: *kind = PCSYS_UNLINK; *variant = 1; return 1;
    default: return 0;
    }
}

static __always_inline int on_io_submit(struct trace_event_raw_sys_enter *ctx);

SEC("tracepoint/raw_syscalls/sys_enter")
int on_sys_enter(struct trace_event_raw_sys_enter *ctx)
{
    __u32 kind, variant;
    if (ctx->id == 9 && (ctx->args[2] & 4 /* PROT_EXEC */) && ustack_bytes) { /* mmap of code */
        __u64 id = bpf_get_current_pid_tgid();
        __u32 tid = (__u32)id, one = 1;
        if (follow_state((__u32)(id >> 32)))
            bpf_map_update_elem(&mmap_exec, &tid, &one, BPF_ANY);
        return 0;
    }
    if (ctx->id == 209) /* io_submit */
        return on_io_submit(ctx);
    if (!classify(ctx->id, &kind, &variant))
        return 0;
    if (kind == PCSYS_SET_HINT && ctx->args[1] != F_SET_RW_HINT)
        return 0;
    return on_enter(ctx, kind, variant);
}

SEC("tracepoint/raw_syscalls/sys_exit")
int on_sys_exit(struct trace_event_raw_sys_exit *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id, tgid = (__u32)(id >> 32);
    __u32 state = follow_state(tgid); /* first: every process of the machine passes here */
    if (!state)
        return 0;
    if (bpf_map_lookup_elem(&mmap_exec, &tid)) { /* new code mapped: its table is sent again */
        bpf_map_delete_elem(&mmap_exec, &tid);
        bpf_map_delete_elem(&maps_sent, &tgid);
        return 0;
    }
    if (state != PCSYS_FOLLOW)
        return 0;
    return on_exit(ctx);
}

/* ---------- io_submit (libaio) ---------- */

#define IOCB_CMD_PWRITE_ 1
#define IOCB_CMD_FSYNC_ 2
#define IOCB_CMD_FDSYNC_ 3
#define IOCB_CMD_PWRITEV_ 8

/* struct iocb (linux/aio_abi.h), x86-64 */
struct iocb_ {
    __u64 data;
    __u32 key, rw_flags;
    __u16 opcode;
    __s16 reqprio;
    __u32 fildes;
    __u64 buf, nbytes;
    __s64 offset;
    __u64 reserved2;
    __u32 flags, resfd;
};

struct aio_walk {
    __u64 iocbpp;
};

static __always_inline __u64 iov_bytes(__u64 addr, __u32 n, struct pcsys_event *e);

/* One iocb of an io_submit call: a write or sync event, at submission (as the shim records it). */
static long aio_one(__u64 i, struct aio_walk *w)
{
    __u64 ptr = 0;
    struct iocb_ cb = {};
    if (bpf_probe_read_user(&ptr, sizeof ptr, (const void *)(w->iocbpp + i * sizeof ptr)) || !ptr ||
        bpf_probe_read_user(&cb, sizeof cb, (const void *)ptr))
        return 1; /* the kernel stops at the same bad pointer */
    __u32 kind;
    if (cb.opcode == IOCB_CMD_PWRITE_ || cb.opcode == IOCB_CMD_PWRITEV_)
        kind = PCSYS_AIO_WRITE;
    else if (cb.opcode == IOCB_CMD_FSYNC_ || cb.opcode == IOCB_CMD_FDSYNC_)
        kind = PCSYS_AIO_FSYNC;
    else
        return 0;
    struct pcsys_event *e = reserve();
    if (!e)
        return 0;
    e->kind = kind;
    e->ret = 0;
    for (int k = 0; k < 6; k++)
        e->arg[k] = 0;
    __builtin_memset(&e->file, 0, sizeof e->file);
    if (fd_file((int)cb.fildes, &e->file) != 0 || (e->file.mode & S_IFMT) != S_IFREG) {
        bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
        return 0;
    }
    e->arg[2] = cb.fildes;
    if (kind == PCSYS_AIO_WRITE) {
        e->off = (__u64)cb.offset;
        e->arg[0] = cb.opcode == IOCB_CMD_PWRITEV_ ? iov_bytes(cb.buf, (__u32)cb.nbytes, e) : cb.nbytes;
    } else {
        e->arg[0] = cb.opcode == IOCB_CMD_FDSYNC_;
    }
    take_task_stack(e);
    bpf_ringbuf_submit(e, wakeup());
    return 0;
}

/* io_submit(ctx, nr, iocbpp) of a process the capture records (the shim sees its own). */
static __always_inline int on_io_submit(struct trace_event_raw_sys_enter *ctx)
{
    if (follow_state((__u32)(bpf_get_current_pid_tgid() >> 32)) != PCSYS_FOLLOW)
        return 0;
    long nr = (long)ctx->args[1];
    if (nr <= 0)
        return 0;
    if (nr > PCSYS_AIO_IOCBS) {
        __sync_fetch_and_add(&lost_events, nr - PCSYS_AIO_IOCBS);
        nr = PCSYS_AIO_IOCBS;
    }
    struct aio_walk w = {.iocbpp = ctx->args[2]};
    bpf_loop((__u32)nr, aio_one, &w, 0);
    return 0;
}

/* ---------- io_uring ---------- */

#define IORING_OP_WRITEV_ 2
#define IORING_OP_FSYNC_ 3
#define IORING_OP_WRITE_FIXED_ 5
#define IORING_OP_WRITE_ 23
#define IORING_FSYNC_DATASYNC_ 1
#define REQ_F_FIXED_FILE_ 1
#define PF_IO_WORKER_ 0x10
#define FFS_FLAGS_ 3UL /* the low bits of a fixed file's file_ptr (FFS_NOWAIT, FFS_ISREG) */

struct iovec_ {
    __u64 base, len;
};

/* The file of a request: the fd in the submitter's table, or the ring's registered file. */
static __always_inline struct file *uring_file(struct io_kiocb *req)
{
    int fd = BPF_CORE_READ(req, cqe.fd);
    if (!(BPF_CORE_READ(req, flags) & REQ_F_FIXED_FILE_)) {
        struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
        struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
        if (!fdt || fd < 0 || (unsigned)fd >= BPF_CORE_READ(fdt, max_fds))
            return NULL;
        struct file **fds = BPF_CORE_READ(fdt, fd);
        struct file *f = NULL;
        bpf_probe_read_kernel(&f, sizeof f, &fds[fd]);
        return f;
    }
    struct io_ring_ctx *ctx = BPF_CORE_READ(req, ctx);
    if (fd < 0 || (unsigned)fd >= BPF_CORE_READ(ctx, file_table.data.nr))
        return NULL;
    struct io_rsrc_node **nodes = BPF_CORE_READ(ctx, file_table.data.nodes);
    struct io_rsrc_node *node = NULL;
    if (bpf_probe_read_kernel(&node, sizeof node, &nodes[fd]) || !node)
        return NULL;
    return (struct file *)(BPF_CORE_READ(node, file_ptr) & ~FFS_FLAGS_);
}

/* Bytes of a WRITEV: the sum of its iovecs (at most PCSYS_URING_IOVECS). */
static __always_inline __u64 iov_bytes(__u64 addr, __u32 n, struct pcsys_event *e)
{
    __u64 sum = 0;
    if (n > PCSYS_URING_IOVECS) {
        e->flags |= PCSYS_F_IOV_CUT;
        n = PCSYS_URING_IOVECS;
    }
    for (__u32 i = 0; i < PCSYS_URING_IOVECS && i < n; i++) {
        struct iovec_ v = {};
        if (bpf_probe_read_user(&v, sizeof v, (const void *)(addr + i * sizeof v)))
            break;
        sum += v.len;
    }
    return sum;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(on_uring_submit, struct io_kiocb *req)
{
    /* every process of the run, the shim's included: the shim cannot see ring I/O */
    if (!follow_state((__u32)(bpf_get_current_pid_tgid() >> 32)))
        return 0;
    __u8 op = BPF_CORE_READ(req, opcode);
    if (op != IORING_OP_WRITE_ && op != IORING_OP_WRITEV_ && op != IORING_OP_WRITE_FIXED_ && op != IORING_OP_FSYNC_)
        return 0;
    struct file *f = uring_file(req);
    if (!f)
        return 0;
    struct inode *inode = BPF_CORE_READ(f, f_inode);
    __u32 mode = BPF_CORE_READ(inode, i_mode);
    if ((mode & S_IFMT) != S_IFREG)
        return 0;
    struct pcsys_event *e = reserve();
    if (!e)
        return 0;
    e->kind = op == IORING_OP_FSYNC_ ? PCSYS_URING_FSYNC : PCSYS_URING_WRITE;
    e->ret = 0;
    for (int i = 0; i < 6; i++)
        e->arg[i] = 0;
    e->file.mode = mode;
    e->file.dev = BPF_CORE_READ(inode, i_sb, s_dev);
    e->file.ino = BPF_CORE_READ(inode, i_ino);
    e->file.pos = BPF_CORE_READ(f, f_pos);
    e->file.f_flags = BPF_CORE_READ(f, f_flags);
    e->arg[1] = op;
    e->arg[2] = (__u64)(long)BPF_CORE_READ(req, cqe.fd);
    if (BPF_CORE_READ(req, flags) & REQ_F_FIXED_FILE_)
        e->flags |= PCSYS_F_FIXED;
    if (op == IORING_OP_FSYNC_) {
        struct io_sync *sync = (struct io_sync *)&req->cmd;
        e->arg[0] = BPF_CORE_READ(sync, flags) & IORING_FSYNC_DATASYNC_;
    } else {
        struct io_rw *rw = (struct io_rw *)&req->cmd;
        e->off = BPF_CORE_READ(rw, kiocb.ki_pos);
        __u32 len = BPF_CORE_READ(rw, len);
        e->arg[0] = op == IORING_OP_WRITEV_ ? iov_bytes(BPF_CORE_READ(rw, addr), len, e) : len;
    }
    struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
    if (task->flags & PF_IO_WORKER_)
        e->flags |= PCSYS_F_SQPOLL; /* the SQPOLL thread: its stack is not the submitter's */
    else
        take_stack(ctx, e);
    bpf_ringbuf_submit(e, wakeup());
    return 0;
}

/* ---------- processes ---------- */

static __always_inline void proc_event(__u32 kind, __u32 pid, __u32 ppid, long ret)
{
    struct pcsys_event *e = reserve();
    if (!e)
        return;
    e->kind = kind;
    e->pid = pid;
    e->tid = pid;
    e->ppid = ppid;
    e->ret = ret;
    __builtin_memset(&e->file, 0, sizeof e->file);
    for (int i = 0; i < 6; i++)
        e->arg[i] = 0;
    e->path[0][0] = 0;
    bpf_ringbuf_submit(e, wakeup());
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
    __u32 ptgid = parent->tgid, ctgid = child->tgid;
    if (ptgid == ctgid)
        return 0; /* a thread */
    __u32 state = follow_state(ptgid);
    if (!state)
        return 0;
    bpf_map_update_elem(&procs, &ctgid, &state, BPF_ANY);
    proc_event(PCSYS_FORK, ctgid, ptgid, 0);
    return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
    __u32 tgid = p->tgid;
    if (!follow_state(tgid))
        return 0;
    /* until the loader decides from the program's ELF (the shim's or ours), its calls are sent */
    __u32 state = PCSYS_FOLLOW;
    bpf_map_update_elem(&procs, &tgid, &state, BPF_ANY);
    bpf_map_delete_elem(&maps_sent, &tgid);
    struct pcsys_event *e = reserve();
    if (!e)
        return 0;
    e->kind = PCSYS_EXEC;
    e->pid = tgid;
    e->ppid = BPF_CORE_READ(p, real_parent, tgid);
    e->ret = 0;
    __builtin_memset(&e->file, 0, sizeof e->file);
    const struct cred *c = BPF_CORE_READ(p, cred);
    e->arg[0] = BPF_CORE_READ(c, uid.val);
    e->arg[1] = BPF_CORE_READ(c, euid.val);
    e->arg[2] = BPF_CORE_READ(c, gid.val);
    e->arg[3] = BPF_CORE_READ(c, egid.val);
    e->arg[4] = e->arg[5] = 0;
    const char *fn = BPF_CORE_READ(bprm, filename);
    long n = bpf_probe_read_kernel_str(e->path[0], PCSYS_PATH_MAX, fn);
    e->path_len[0] = n > 0 ? (__u16)(n - 1) : 0;
    if (n == PCSYS_PATH_MAX)
        e->flags |= PCSYS_F_PATH_CUT;
    bpf_ringbuf_submit(e, wakeup());
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit_proc, struct task_struct *p, bool group_dead)
{
    __u32 tgid = p->tgid;
    __u32 tid = p->pid;
    bpf_map_delete_elem(&inflight, &tid);
    if (!group_dead || !follow_state(tgid))
        return 0;
    bpf_map_delete_elem(&procs, &tgid);
    bpf_map_delete_elem(&maps_sent, &tgid);
    long code = BPF_CORE_READ(p, signal, group_exit_code);
    if (!code)
        code = p->exit_code;
    proc_event(PCSYS_EXIT, tgid, 0, code);
    return 0;
}
