/* pcsys_out.c: the events of the BPF capture written as the shim's logs (shim/include/pcshim.h),
 * one pair per process image: <pid>.<start_ns>.bpf.bin (header, 88-byte records) and
 * <pid>.<start_ns>.bpf.txt (P, S, F, W and E lines); ".bpf" keeps them apart from the shim's own
 * logs of the same process in the same directory.
 *
 * Files are named by path: the capture keeps (dev, ino) -> absolute path, learnt at each open (the
 * process's /proc/PID/fd/N when it still names the same inode, else the path argument resolved
 * against the process's cwd or directory fd), updated at rename, and for a file opened before the
 * capture from /proc/PID/fd/N at its first use. Under auto (`only_unreachable`) an image is
 * recorded only when the shim cannot enter it: a program without PT_INTERP (statically linked)
 * or a set-user/group-id one (the dynamic linker ignores LD_PRELOAD then); the other images are
 * left to the shim. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pchash.h"
#include "pcsys_loader.h"

#define AT_FDCWD_ -100
#define FALLOC_FL_PUNCH_HOLE_ 0x02
#define IMAGE_BUFFER 256 /* records kept before an append */
#define DIR_FDS 16       /* directory descriptors remembered per image */

/* A small set of 64-bit hashes (0 never stored). */
struct set {
    uint64_t *v;
    size_t cap, n;
};

static int set_insert(struct set *s, uint64_t h)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        uint64_t *v = calloc(cap, sizeof *v);
        if (!v)
            return 1;
        for (size_t i = 0; i < s->cap; i++)
            for (size_t j = s->v[i] % cap; s->v[i]; j = (j + 1) % cap)
                if (!v[j]) {
                    v[j] = s->v[i];
                    break;
                }
        free(s->v);
        s->v = v;
        s->cap = cap;
    }
    for (size_t j = h % s->cap;; j = (j + 1) % s->cap) {
        if (s->v[j] == h)
            return 0;
        if (!s->v[j]) {
            s->v[j] = h;
            s->n++;
            return 1;
        }
    }
}

/* A process image: one pair of logs when recorded. */
struct image {
    uint32_t pid, ppid;
    char *exe;
    char *cwd; /* the working directory last seen (for paths when the process is gone) */
    int recorded;  /* its calls are recorded here (else by the shim) */
    int has_files; /* its log pair exists (recorded, or an io_uring request of a shim image) */
    int sqpoll_said;
    char base[PATH_MAX]; /* DIR/<pid>.<start>.bpf */
    struct pcshim_record buf[IMAGE_BUFFER];
    int nbuf;
    uint64_t records;
    struct set paths, sigs;
    /* directories the image opened, by fd (for paths relative to a directory descriptor once
     * the process is gone) */
    int ndirs;
    struct { int fd; char *path; } dirs[DIR_FDS];
    struct image *next;
};

static struct out_opts g_o;
static struct image *g_images;
static struct out_counts g_n;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void append(const char *base, const char *ext, const void *p, size_t n)
{
    char name[PATH_MAX + 8];
    snprintf(name, sizeof name, "%s%s", base, ext);
    int fd = open(name, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, p, n) != (ssize_t)n) {
        if (!g_n.error)
            g_n.error = errno ? errno : EIO;
    }
    if (fd >= 0)
        close(fd);
}

static void txt(struct image *im, const char *line, size_t n) { append(im->base, ".txt", line, n); }

static void flush(struct image *im)
{
    if (im->nbuf)
        append(im->base, ".bin", im->buf, (size_t)im->nbuf * sizeof im->buf[0]);
    im->nbuf = 0;
}

static struct image *image_of(uint32_t pid)
{
    for (struct image *im = g_images; im; im = im->next)
        if (im->pid == pid)
            return im;
    return NULL;
}

static void image_end(struct image *im)
{
    if (im->has_files) {
        flush(im);
        char line[64];
        int n = snprintf(line, sizeof line, "E %llu\n", (unsigned long long)im->records);
        txt(im, line, (size_t)n);
    }
    frames_forget(im->pid);
    unwind_forget(im->pid);
    struct image **pp = &g_images;
    while (*pp != im)
        pp = &(*pp)->next;
    *pp = im->next;
    free(im->exe);
    free(im->cwd);
    for (int i = 0; i < im->ndirs; i++)
        free(im->dirs[i].path);
    free(im->paths.v);
    free(im->sigs.v);
    free(im);
}

/* Is `exe` an image the shim cannot enter (auto records those)? */
static int shim_cannot_enter(const char *exe, const struct pcsys_event *exec)
{
    if (exec && (exec->arg[0] != exec->arg[1] || exec->arg[2] != exec->arg[3]))
        return 1; /* set-user/group-id: secure execution, LD_PRELOAD ignored */
    return exe && elf_has_interp(exe) == 0;
}

static char *proc_link(uint32_t pid, const char *what, char *out, size_t cap);
static void open_files(struct image *im);

static struct image *image_new(uint32_t pid, uint32_t ppid, const char *exe, const char *cwd, int recorded)
{
    struct image *im = calloc(1, sizeof *im);
    if (!im)
        return NULL;
    im->pid = pid;
    im->ppid = ppid;
    im->exe = strdup(exe ? exe : "?");
    if (exe)
        unwind_learn_exec(exe);
    char here[PATH_MAX];
    const char *c = proc_link(pid, "cwd", here, sizeof here);
    im->cwd = strdup(c ? c : cwd ? cwd : "/");
    im->recorded = recorded;
    snprintf(im->base, sizeof im->base, "%s/%u.%llu.bpf", g_o.dir, pid, (unsigned long long)now_ns());
    im->next = g_images;
    g_images = im;
    g_n.images++;
    if (recorded) {
        g_n.recorded_images++;
        open_files(im);
    }
    return im;
}

/* The image's log pair: the header of its .bin, an empty .txt. */
static void open_files(struct image *im)
{
    if (im->has_files)
        return;
    im->has_files = 1;
    {
        struct pcshim_header h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, PCSHIM_MAGIC, sizeof h.magic);
        h.version = PCSHIM_VERSION;
        h.record_size = sizeof(struct pcshim_record);
        h.pid = im->pid;
        h.ppid = im->ppid;
        h.frames = (uint32_t)g_o.frames;
        h.method = 0; /* frame pointers: what the kernel walks */
        append(im->base, ".bin", &h, sizeof h);
        txt(im, "", 0);
    }
}

/* A kernel dev_t (major << 20 | minor) as stat() gives it. */
static dev_t user_dev(uint64_t kdev) { return makedev((unsigned)(kdev >> 20), (unsigned)(kdev & 0xfffff)); }

static char *proc_link(uint32_t pid, const char *what, char *out, size_t cap)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%u/%s", pid, what);
    ssize_t n = readlink(name, out, cap - 1);
    if (n <= 0)
        return NULL;
    out[n] = 0;
    return out;
}

void out_attach(uint32_t pid)
{
    char exe[PATH_MAX];
    if (image_of(pid))
        return;
    const char *e = proc_link(pid, "exe", exe, sizeof exe);
    char cwd[PATH_MAX];
    image_new(pid, 0, e, getcwd(cwd, sizeof cwd), !g_o.only_unreachable || shim_cannot_enter(e, NULL));
}

/* ---------- paths ---------- */

struct inode_path {
    uint64_t dev, ino;
    char *path;
    struct inode_path *next;
};
#define INODE_BUCKETS 4096
static struct inode_path *g_inodes[INODE_BUCKETS];

static struct inode_path **inode_slot(uint64_t dev, uint64_t ino)
{
    struct inode_path **pp = &g_inodes[(dev * 31 + ino) % INODE_BUCKETS];
    while (*pp && ((*pp)->dev != dev || (*pp)->ino != ino))
        pp = &(*pp)->next;
    return pp;
}

static void inode_set(uint64_t dev, uint64_t ino, const char *path)
{
    struct inode_path **pp = inode_slot(dev, ino);
    if (!*pp) {
        *pp = calloc(1, sizeof **pp);
        if (!*pp)
            return;
        (*pp)->dev = dev;
        (*pp)->ino = ino;
    }
    free((*pp)->path);
    (*pp)->path = strdup(path);
}

/* The path of `fd` in `pid` when it still names inode (dev, ino). */
static int fd_path(uint32_t pid, int fd, uint64_t dev, uint64_t ino, char *out, size_t cap)
{
    char what[32];
    struct stat st;
    snprintf(what, sizeof what, "fd/%d", fd);
    if (!proc_link(pid, what, out, cap) || out[0] != '/')
        return 0;
    char name[64];
    snprintf(name, sizeof name, "/proc/%u/fd/%d", pid, fd);
    return stat(name, &st) == 0 && st.st_ino == ino && st.st_dev == user_dev(dev);
}

/* The directory the image opened as `fd` (NULL: none known). */
static const char *dir_of(const struct image *im, int fd)
{
    for (int i = 0; i < im->ndirs; i++)
        if (im->dirs[i].fd == fd)
            return im->dirs[i].path;
    return NULL;
}

static void resolve(uint32_t pid, long dirfd, const char *p, char *out, size_t cap);

/* A directory opened as `fd`: remembered (the oldest one forgotten when full). */
static void learn_dir(struct image *im, const struct pcsys_event *e)
{
    char p[PATH_MAX];
    resolve(e->pid, (long)e->arg[0], e->path[0], p, sizeof p);
    int i = 0;
    while (i < im->ndirs && im->dirs[i].fd != (int)e->ret)
        i++;
    if (i == DIR_FDS) {
        free(im->dirs[0].path);
        memmove(im->dirs, im->dirs + 1, (DIR_FDS - 1) * sizeof im->dirs[0]);
        i = DIR_FDS - 1;
    } else if (i < im->ndirs) {
        free(im->dirs[i].path);
    } else {
        im->ndirs++;
    }
    im->dirs[i].fd = (int)e->ret;
    im->dirs[i].path = strdup(p);
}

/* `p` (relative to `dirfd` of `pid`) as an absolute path: its directory made canonical when it
 * exists, the last component kept. */
static void resolve(uint32_t pid, long dirfd, const char *p, char *out, size_t cap)
{
    dirfd = (int)dirfd; /* an int in a 64-bit register: AT_FDCWD arrives as 0xffffff9c */
    char base[PATH_MAX] = "", joined[2 * PATH_MAX + 2], dir[PATH_MAX];
    if (p[0] != '/') {
        char what[32];
        if (dirfd == AT_FDCWD_)
            snprintf(what, sizeof what, "cwd");
        else
            snprintf(what, sizeof what, "fd/%ld", dirfd);
        struct image *im = image_of(pid);
        const char *dir = im && dirfd != AT_FDCWD_ ? dir_of(im, (int)dirfd) : NULL;
        if (dir)
            snprintf(base, sizeof base, "%s", dir);
        else if (proc_link(pid, what, base, sizeof base))
            ;
        else if (dirfd != AT_FDCWD_)
            snprintf(base, sizeof base, "/proc/%u/%s", pid, what);
        else if (im)
            snprintf(base, sizeof base, "%s", im->cwd);
        else if (!getcwd(base, sizeof base)) /* the command, before its first image */
            strcpy(base, "/");
    }
    snprintf(joined, sizeof joined, "%s%s%s", base, base[0] ? "/" : "", p);
    char *slash = strrchr(joined, '/');
    *slash = 0;
    const char *last = slash + 1;
    int n;
    if (realpath(joined[0] ? joined : "/", dir))
        n = snprintf(out, cap, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, last);
    else
        n = snprintf(out, cap, "%s/%s", joined, last);
    if (n < 0)
        out[0] = 0; /* a longer path is cut: PATH_MAX is the kernel's limit too */
}

/* The hash of `path`, with its P line the first time this image uses it. */
static uint64_t intern(struct image *im, const char *path)
{
    size_t n = strlen(path);
    uint64_t h = pc_hash_bytes(path, n);
    if (set_insert(&im->paths, h)) {
        char line[PATH_MAX + 64];
        int k = snprintf(line, sizeof line, "P %016llx %zu %s\n", (unsigned long long)h, n, path);
        txt(im, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
    }
    return h;
}

/* The path hash of the file an event names by fd; 0 when unknown (the converter then takes the
 * path another record of the same dev/ino gave, e.g. the shim's open of a file whose io_uring
 * writes are recorded here). */
static uint64_t file_path(struct image *im, const struct pcsys_event *e, int fd)
{
    struct inode_path **pp = inode_slot(e->file.dev, e->file.ino);
    if (!*pp) {
        char p[PATH_MAX];
        if (fd < 0 || !fd_path(e->pid, fd, e->file.dev, e->file.ino, p, sizeof p))
            return 0;
        inode_set(e->file.dev, e->file.ino, p);
        pp = inode_slot(e->file.dev, e->file.ino);
    }
    return *pp && (*pp)->path ? intern(im, (*pp)->path) : 0;
}

/* ---------- records ---------- */

static void put(struct image *im, struct pcshim_record *r)
{
    r->pid = im->pid;
    im->buf[im->nbuf++] = *r;
    im->records++;
    g_n.records++;
    if (r->op == PCSHIM_OP_WRITE)
        g_n.write_bytes += r->len;
    if (im->nbuf == IMAGE_BUFFER)
        flush(im);
}

/* The event's signature into `r`, with its S and F lines the first time this image sees it. */
static void signature(struct image *im, const struct pcsys_event *e, struct pcshim_record *r)
{
    struct frame_out f[64];
    int n = 0;
    r->pc = frames_signature(e, im->exe, g_o.frames, f, &n);
    r->nframes = (uint16_t)n;
    if (!r->pc || !set_insert(&im->sigs, r->pc))
        return;
    char line[16384];
    size_t at = (size_t)snprintf(line, sizeof line, "S %016llx %d\n", (unsigned long long)r->pc, n);
    for (int i = 0; i < n && at + PATH_MAX + 64 < sizeof line; i++)
        at += (size_t)snprintf(line + at, sizeof line - at, "F %016llx %llx %zu %s\n",
                               (unsigned long long)f[i].module, (unsigned long long)f[i].vaddr,
                               strlen(f[i].path), f[i].path);
    txt(im, line, at);
}

/* call_record for requests submitted to io_uring or io_submit: written or synced later, recorded
 * at submission as the shim records io_submit. */
static void async_record(const struct pcsys_event *e, struct pcshim_record *r)
{
    switch (e->kind) {
    case PCSYS_URING_WRITE:
        r->op = PCSHIM_OP_WRITE;
        r->fd = (e->flags & PCSYS_F_FIXED) ? -1 : (int32_t)e->arg[2];
        r->offset = e->off == UINT64_MAX ? e->file.pos : e->off;
        r->len = e->arg[0];
        r->flags = PCSHIM_VIA_URING;
        break;
    case PCSYS_URING_FSYNC:
        r->op = e->arg[0] ? PCSHIM_OP_FDATASYNC : PCSHIM_OP_FSYNC;
        r->fd = (e->flags & PCSYS_F_FIXED) ? -1 : (int32_t)e->arg[2];
        break;
    case PCSYS_AIO_WRITE:
        r->op = PCSHIM_OP_WRITE;
        r->fd = (int32_t)e->arg[2];
        r->offset = e->off;
        r->len = e->arg[0];
        r->flags = PCSHIM_VIA_AIO;
        break;
    case PCSYS_AIO_FSYNC:
        r->op = e->arg[0] ? PCSHIM_OP_FDATASYNC : PCSHIM_OP_FSYNC;
        r->fd = (int32_t)e->arg[2];
        break;
    default: break;
    }
}

/* What a system-call event is as a record: op, fd, offset, len, flags. 0 when it is none. */
static int call_record(const struct pcsys_event *e, struct pcshim_record *r)
{
    int64_t ret = e->ret;
    r->fd = (int32_t)e->arg[0];
    r->len = 0;
    switch (e->kind) {
    case PCSYS_WRITE:
    case PCSYS_SENDFILE:
        r->op = PCSHIM_OP_WRITE;
        r->offset = e->file.pos - (uint64_t)ret;
        r->len = (uint64_t)ret;
        r->flags = e->kind == PCSYS_SENDFILE ? PCSHIM_VIA_SENDFILE : 0;
        break;
    case PCSYS_PWRITE:
        r->op = PCSHIM_OP_WRITE;
        r->offset = (int64_t)e->arg[3] == -1 ? e->file.pos - (uint64_t)ret : e->arg[3];
        r->len = (uint64_t)ret;
        break;
    case PCSYS_COPY:
    case PCSYS_SPLICE:
        r->op = PCSHIM_OP_WRITE;
        r->fd = (int32_t)e->arg[2];
        r->offset = e->off;
        r->len = (uint64_t)ret;
        r->flags = e->kind == PCSYS_COPY ? PCSHIM_VIA_COPY : PCSHIM_VIA_SPLICE;
        break;
    case PCSYS_MSYNC:
        r->op = PCSHIM_OP_WRITE;
        r->fd = -1;
        r->offset = e->off;
        r->len = e->arg[1];
        r->flags = PCSHIM_VIA_MSYNC;
        break;
    case PCSYS_FSYNC: r->op = PCSHIM_OP_FSYNC; break;
    case PCSYS_FDATASYNC: r->op = PCSHIM_OP_FDATASYNC; break;
    case PCSYS_SYNC_RANGE:
        r->op = PCSHIM_OP_SYNC_RANGE;
        r->offset = e->arg[1];
        r->len = e->arg[2];
        r->flags = (uint32_t)e->arg[3];
        break;
    case PCSYS_FALLOCATE:
        r->op = (e->arg[1] & FALLOC_FL_PUNCH_HOLE_) ? PCSHIM_OP_PUNCH_HOLE : PCSHIM_OP_FALLOCATE;
        r->offset = e->arg[2];
        r->len = e->arg[3];
        r->flags = (uint32_t)e->arg[1];
        break;
    case PCSYS_FTRUNCATE:
        r->op = PCSHIM_OP_TRUNCATE;
        r->offset = e->arg[1];
        break;
    case PCSYS_SET_HINT:
        r->op = PCSHIM_OP_SET_HINT;
        r->offset = e->off;
        break;
    case PCSYS_CLOSE: r->op = PCSHIM_OP_CLOSE; break;
    case PCSYS_OPEN:
        r->op = PCSHIM_OP_OPEN;
        r->fd = (int32_t)ret;
        r->flags = (uint32_t)e->off;
        break;
    case PCSYS_URING_WRITE:
    case PCSYS_URING_FSYNC:
    case PCSYS_AIO_WRITE:
    case PCSYS_AIO_FSYNC: async_record(e, r); break;
    default: return 0;
    }
    /* O_DIRECT as the description has it at the call (set by open or by fcntl F_SETFL), as the
     * shim marks it: the bytes bypassed the page cache */
    if (r->op == PCSHIM_OP_WRITE && e->kind != PCSYS_MSYNC && (e->file.f_flags & O_DIRECT))
        r->flags |= PCSHIM_VIA_DIRECT;
    return 1;
}

/* An open: learn the new fd's path. */
static void learn_open(const struct pcsys_event *e)
{
    char p[PATH_MAX];
    if (!fd_path(e->pid, (int)e->ret, e->file.dev, e->file.ino, p, sizeof p))
        resolve(e->pid, (long)e->arg[0], e->path[0], p, sizeof p);
    inode_set(e->file.dev, e->file.ino, p);
    unwind_learn(e->file.dev, e->file.ino, p); /* a library the dynamic loader opens, for unwinding */
}

/* rename and unlink: records named by path. */
static void path_call(struct image *im, const struct pcsys_event *e)
{
    char a[PATH_MAX], b[PATH_MAX];
    struct pcshim_record r;
    memset(&r, 0, sizeof r);
    resolve(e->pid, (long)e->arg[0], e->path[0], a, sizeof a);
    r.fd = -1;
    r.op = e->kind == PCSYS_RENAME ? PCSHIM_OP_RENAME : PCSHIM_OP_UNLINK;
    if (e->kind == PCSYS_RENAME) {
        /* the new path's directory exists: resolve it after the call */
        resolve(e->pid, (long)e->arg[2], e->path[1], b, sizeof b);
        for (size_t i = 0; i < INODE_BUCKETS; i++)
            for (struct inode_path *ip = g_inodes[i]; ip; ip = ip->next)
                if (ip->path && strcmp(ip->path, a) == 0) {
                    free(ip->path);
                    ip->path = strdup(b);
                }
        r.aux = intern(im, b);
    }
    r.path = intern(im, a);
    r.ts_ns = e->ts_ns;
    r.tid = e->tid;
    signature(im, e, &r);
    put(im, &r);
}

static void syscall_event(struct image *im, const struct pcsys_event *e)
{
    if (e->flags & PCSYS_F_NOT_REG) {
        if (e->kind == PCSYS_OPEN)
            learn_dir(im, e);
        return;
    }
    if (e->kind == PCSYS_RENAME || e->kind == PCSYS_UNLINK) {
        path_call(im, e);
        return;
    }
    struct pcshim_record r;
    memset(&r, 0, sizeof r);
    if (!call_record(e, &r))
        return;
    if (e->kind == PCSYS_OPEN)
        learn_open(e);
    r.ts_ns = e->ts_ns;
    r.tid = e->tid;
    r.dev = user_dev(e->file.dev);
    r.ino = e->file.ino;
    r.path = file_path(im, e, r.fd);
    if (e->flags & PCSYS_F_SQPOLL) {
        if (!im->sqpoll_said) { /* no call path: PC 0, said once per image */
            static const char w[] = "W bpf: io_uring SQPOLL submissions have no call path (PC 0)\n";
            txt(im, w, sizeof w - 1);
            im->sqpoll_said = 1;
        }
    } else if (e->kind != PCSYS_CLOSE) {
        signature(im, e, &r);
    }
    put(im, &r);
}

/* ---------- processes ---------- */

static void proc_record(struct image *im, const struct pcsys_event *e, uint16_t op, uint64_t offset, uint64_t path)
{
    if (!im || !im->recorded)
        return; /* the shim records the processes of its images */
    struct pcshim_record r;
    memset(&r, 0, sizeof r);
    r.op = op;
    r.fd = -1;
    r.offset = offset;
    r.path = path;
    r.ts_ns = e->ts_ns;
    r.tid = im->pid;
    put(im, &r);
}

static int on_fork(const struct pcsys_event *e)
{
    struct image *parent = image_of(e->ppid), *old = image_of(e->pid);
    if (old)
        image_end(old);
    char exe[PATH_MAX];
    const char *x = parent ? parent->exe : proc_link(e->pid, "exe", exe, sizeof exe);
    int recorded = parent ? parent->recorded : !g_o.only_unreachable || shim_cannot_enter(x, NULL);
    proc_record(parent, e, PCSHIM_OP_FORK, e->pid, 0);
    image_new(e->pid, e->ppid, x, parent ? parent->cwd : NULL, recorded);
    return !recorded;
}

static int on_exec(const struct pcsys_event *e)
{
    char p[PATH_MAX], exe[PATH_MAX];
    resolve(e->pid, AT_FDCWD_, e->path[0], p, sizeof p);
    if (!realpath(p, exe))
        snprintf(exe, sizeof exe, "%s", p);
    struct image *old = image_of(e->pid);
    uint32_t ppid = e->ppid;
    char cwd[PATH_MAX] = "/";
    if (old)
        snprintf(cwd, sizeof cwd, "%s", old->cwd);
    else if (!getcwd(cwd, sizeof cwd))
        strcpy(cwd, "/");
    if (old) {
        proc_record(old, e, PCSHIM_OP_EXEC, 0, old->recorded ? intern(old, exe) : 0);
        ppid = old->ppid;
        image_end(old);
    }
    int recorded = !g_o.only_unreachable || shim_cannot_enter(exe, e);
    struct image *im = image_new(e->pid, ppid, exe, cwd, recorded);
    if (im && recorded && g_o.only_unreachable) {
        /* the shim's "W static:" for this exec is then not a loss: say it was captured here */
        char line[PATH_MAX + 32];
        int n = snprintf(line, sizeof line, "W %s%s\n", PCSYS_CAPTURED_WARNING, exe);
        txt(im, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    return !recorded;
}

static int on_exit_event(const struct pcsys_event *e)
{
    struct image *im = image_of(e->pid);
    if (!im)
        return 0;
    int st = (int)e->ret;
    uint64_t status = WIFSIGNALED(st) ? 128u + (unsigned)WTERMSIG(st) : (unsigned)WEXITSTATUS(st);
    proc_record(im, e, PCSHIM_OP_EXIT, status, 0);
    image_end(im);
    return 0;
}

int out_event(const struct pcsys_event *e)
{
    g_n.events++;
    switch (e->kind) {
    case PCSYS_FORK: return on_fork(e);
    case PCSYS_EXEC: return on_exec(e);
    case PCSYS_EXIT: return on_exit_event(e);
    default: break;
    }
    struct image *im = image_of(e->pid);
    if (!im) {
        out_attach(e->pid);
        im = image_of(e->pid);
    }
    int uring = e->kind == PCSYS_URING_WRITE || e->kind == PCSYS_URING_FSYNC;
    if (!im || (!im->recorded && !uring))
        return 1;
    if (uring)
        open_files(im); /* a shim image's ring I/O: the shim cannot see it */
    syscall_event(im, e);
    return 0;
}

void out_init(const struct out_opts *o) { g_o = *o; }

void out_finish(uint64_t lost)
{
    if (lost && g_images) {
        char line[160];
        int n = snprintf(line, sizeof line,
                         "W bpf: %llu events lost (the ring buffer was full: the capture fell behind the program)\n",
                         (unsigned long long)lost);
        struct image *im = g_images;
        while (im && !im->has_files)
            im = im->next;
        if (im)
            txt(im, line, (size_t)n);
    }
    while (g_images)
        image_end(g_images);
}

struct out_counts out_counts(void) { return g_n; }
