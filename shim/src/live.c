/* live.c: live write-lifetime hints (`pcstream run`, `record --block --table`). Before a write
 * reaches the kernel, the hook computes the write's PC signature (as record does), looks it up in
 * the signature -> hint table that PCSHIM_HINTS names, and sets the file's write-life hint with
 * fcntl(F_SET_RW_HINT) when it differs from the one this process last set on that inode. A hint
 * the program sets itself wins: the inode is left alone from then on. A hint the kernel or the
 * file system rejects marks the inode too (one R line per errno). At the end of the process
 * image one L line of counts goes to the live log (<PCSHIM_HINTS>.log), appended with one write,
 * and one R line per errno the kernel refused a hint with. The layouts of the table file and of
 * the live log (shared with python/pcstream/live.py) are in include/pcshim.h. */
#include "shim.h"

#define LIVE_INODES 16384 /* inode cache slots (power of two) */

/* I_STALE: a hint was set on an inode of this number, but it has been opened since and may be a
 * new file that reuses the number (a new inode starts with NOT_SET): set the hint again. */
enum { I_EMPTY = 0, I_SET = 1, I_OWNED = 2, I_REJECTED = 3, I_STALE = 4 };

struct inode_slot {
    uint64_t dev, ino;
    uint8_t state; /* I_* */
    uint8_t hint;  /* I_SET: the hint this process last set */
};

int g_live;
char g_env_hints[PATH_MAX + 16];
static struct pcshim_hint *g_hints; /* open addressing by mix64(sig); sig 0: empty */
static uint64_t g_hint_mask;
static struct inode_slot *g_inodes;
static atomic_flag g_inode_lock = ATOMIC_FLAG_INIT;
int g_livelog = -1;
static atomic_ullong g_writes, g_matched, g_set, g_rejected, g_owned;
static _Atomic int g_rejected_errno[4];

/* Load the table at `path` (called by the constructor); 0 if the table cannot be used (then the
 * process runs without hints). */
int live_load(const char *path)
{
    char logp[PATH_MAX + 8];
    size_t k = put_str(logp, 0, sizeof logp - 1, path);
    k = put_str(logp, k, sizeof logp - 1, PCSHIM_LIVE_LOG_SUFFIX);
    logp[k] = 0;
    g_livelog = log_open(LOG_LIVE, logp, OUR_FD_FLOOR + 2);
    int fd = (int)sc(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct pcshim_hints_header h;
    int ok = sc(SYS_read, fd, (long)&h, sizeof h, 0) == (long)sizeof h &&
             !memcmp(h.magic, PCSHIM_HINTS_MAGIC, sizeof h.magic) && h.count <= PCSHIM_HINTS_MAX_COUNT;
    uint64_t slots = 16;
    while (ok && slots < 2 * (uint64_t)h.count)
        slots <<= 1;
    void *mem = ok ? mmap(NULL, slots * sizeof(struct pcshim_hint) + LIVE_INODES * sizeof(struct inode_slot),
                          PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                   : MAP_FAILED;
    if (mem == MAP_FAILED) {
        sc(SYS_close, fd, 0, 0, 0);
        return 0;
    }
    g_hints = mem;
    g_hint_mask = slots - 1;
    g_inodes = (struct inode_slot *)((char *)mem + slots * sizeof(struct pcshim_hint));
    for (uint32_t i = 0; ok && i < h.count; i++) {
        struct pcshim_hint e;
        if (sc(SYS_read, fd, (long)&e, sizeof e, 0) != (long)sizeof e || e.sig == 0 || e.hint > PCSHIM_HINTS_MAX_HINT) {
            ok = 0;
            break;
        }
        uint64_t at = mix64(e.sig) & g_hint_mask;
        while (g_hints[at].sig && g_hints[at].sig != e.sig)
            at = (at + 1) & g_hint_mask;
        g_hints[at] = e;
    }
    sc(SYS_close, fd, 0, 0, 0);
    if (!ok)
        return 0;
    snprintf(g_env_hints, sizeof g_env_hints, "PCSHIM_HINTS=%s", path);
    g_live = 1;
    return 1;
}

static uint64_t hint_of(uint64_t sig)
{
    if (!sig)
        return 0;
    for (uint64_t at = mix64(sig) & g_hint_mask;; at = (at + 1) & g_hint_mask) {
        if (g_hints[at].sig == sig)
            return g_hints[at].hint;
        if (!g_hints[at].sig)
            return UINT64_MAX;
    }
}

/* The cache slot of (dev, ino), claimed if new (NULL: the cache is full). Lock held by caller. */
static struct inode_slot *inode_slot(uint64_t dev, uint64_t ino)
{
    uint64_t start = mix64(dev * 0x9e3779b97f4a7c15ULL ^ ino) & (LIVE_INODES - 1);
    for (uint64_t i = 0; i < LIVE_INODES; i++) {
        struct inode_slot *s = &g_inodes[(start + i) & (LIVE_INODES - 1)];
        if (s->state == I_EMPTY) {
            s->dev = dev;
            s->ino = ino;
            return s;
        }
        if (s->dev == dev && s->ino == ino)
            return s;
    }
    return NULL;
}

static void lock_inodes(void)
{
    while (atomic_flag_test_and_set_explicit(&g_inode_lock, memory_order_acquire))
        ;
}

static void unlock_inodes(void) { atomic_flag_clear_explicit(&g_inode_lock, memory_order_release); }

static void live_line(const char *tag, const uint64_t *v, int n)
{
    if (g_livelog < 0)
        return;
    char line[256];
    size_t at = put_str(line, 0, sizeof line, tag);
    for (int i = 0; i < n; i++) {
        at = put_str(line, at, sizeof line, " ");
        at = put_dec(line, at, sizeof line, v[i]);
    }
    line[at++] = '\n';
    log_write(&g_livelog, LOG_LIVE, line, at);
}

/* Before a write to `fd`: its PC into `pc`, and the inode's hint set from the table. Guard held. */
void live_before(int fd, struct pc_once *pc)
{
    struct fdinfo *e = fd_get(fd);
    if (!e)
        return;
    if (!pc->done) {
        pc->pc = signature(my_buf(), &pc->nframes);
        pc->done = 1;
    }
    atomic_fetch_add_explicit(&g_writes, 1, memory_order_relaxed);
    uint64_t h = hint_of(pc->pc);
    if (h == UINT64_MAX)
        h = 0; /* unknown PC: RWH_WRITE_LIFE_NOT_SET */
    else
        atomic_fetch_add_explicit(&g_matched, 1, memory_order_relaxed);
    lock_inodes();
    struct inode_slot *s = inode_slot(e->dev, e->ino);
    int skip = s && (s->state == I_OWNED || s->state == I_REJECTED || (s->state == I_SET && s->hint == h));
    unlock_inodes();
    if (skip)
        return;
    long r = sc(SYS_fcntl, fd, F_SET_RW_HINT, (long)&h, 0);
    int err = r < 0 ? (int)-r : 0;
    if (r >= 0)
        atomic_fetch_add_explicit(&g_set, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&g_rejected, 1, memory_order_relaxed);
    lock_inodes();
    s = inode_slot(e->dev, e->ino);
    if (s && s->state != I_OWNED) {
        s->state = r >= 0 ? I_SET : I_REJECTED;
        s->hint = (uint8_t)h;
    }
    unlock_inodes();
    if (err) {
        /* one R line per errno (and process image) */
        for (int i = 0; i < 4; i++) {
            int cur = 0;
            if (atomic_load(&g_rejected_errno[i]) == err)
                break;
            if (atomic_compare_exchange_strong(&g_rejected_errno[i], &cur, err)) {
                uint64_t v[2] = {(uint64_t)err, g_pid};
                live_line("R", v, 2);
                break;
            }
        }
    }
}

/* A file was opened: if this process set a hint on an inode of that number, set it again at the
 * next write (inode numbers are reused: RocksDB's new SST files get the numbers of deleted ones,
 * and a new inode has no hint). At most one more fcntl per open. */
void live_opened(uint64_t dev, uint64_t ino)
{
    lock_inodes();
    uint64_t start = mix64(dev * 0x9e3779b97f4a7c15ULL ^ ino) & (LIVE_INODES - 1);
    for (uint64_t i = 0; i < LIVE_INODES; i++) {
        struct inode_slot *s = &g_inodes[(start + i) & (LIVE_INODES - 1)];
        if (s->state == I_EMPTY)
            break;
        if (s->dev == dev && s->ino == ino) {
            if (s->state == I_SET)
                s->state = I_STALE;
            break;
        }
    }
    unlock_inodes();
}

/* The program set a hint on `fd` itself (and the kernel took it): its inode is its own now. */
void live_owned(int fd)
{
    struct fdinfo *e = fd_get(fd);
    if (!e)
        return;
    lock_inodes();
    struct inode_slot *s = inode_slot(e->dev, e->ino);
    if (s && s->state != I_OWNED) {
        s->state = I_OWNED;
        atomic_fetch_add(&g_owned, 1);
    }
    unlock_inodes();
}

/* The end of the process image (or an exec): the L line of the counts since the last one, which
 * start again from 0 (a failed exec goes on counting). Nothing when there is nothing to count. */
void live_finish(void)
{
    if (!g_live)
        return;
    uint64_t v[6] = {g_pid, atomic_exchange(&g_writes, 0), atomic_exchange(&g_matched, 0),
                     atomic_exchange(&g_set, 0), atomic_exchange(&g_rejected, 0), atomic_exchange(&g_owned, 0)};
    if (v[1] || v[3] || v[4] || v[5])
        live_line("L", v, 6);
}

/* A forked child: its own counts; the inode cache stays (the kernel's hints are the parent's). */
void live_after_fork(void)
{
    atomic_store(&g_writes, 0);
    atomic_store(&g_matched, 0);
    atomic_store(&g_set, 0);
    atomic_store(&g_rejected, 0);
    atomic_store(&g_owned, 0);
    atomic_flag_clear(&g_inode_lock);
}
