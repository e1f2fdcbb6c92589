/* hooks_mmap.c: shared writable file mappings: mmap(64) of a file with MAP_SHARED(_VALIDATE) and
 * PROT_WRITE is remembered (address range -> dev, ino, path, file offset), munmap, mremap and
 * MAP_FIXED keep the table right, and msync of a range is recorded as a write of the tracked part
 * of it (flags PCSHIM_VIA_MSYNC), one record per mapping, all with the PC of the msync call.
 * Stores never msync'ed are not seen: a mapping unmapped, or still mapped at the end, that no
 * msync touched gives "W mmap: <bytes> <path>" (once per path and size; not for POSIX shared
 * memory, /dev/shm). */
#include "shim.h"

/* ---------- shared file mappings: msync of a range is recorded as a write of that range ---------- */
struct fmap {
    uintptr_t lo, hi; /* mapped addresses [lo, hi) */
    uint64_t off;     /* file offset of lo */
    uint64_t dev, ino, path;
    int synced;       /* an msync touched it */
};

static struct fmap g_maps[MAX_MAPS];
/* the paths of mapped files, for the W mmap: lines (path hash -> text) */
#define MAP_PATHS 64
static struct {
    uint64_t h;
    char p[PATH_MAX];
} g_map_paths[MAP_PATHS];
static int g_nmaps;
static atomic_int g_maps_any;
static int g_maps_warned;
static pthread_mutex_t g_map_mu = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t page_up(uintptr_t v)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    return (v + ps - 1) & ~(ps - 1);
}

/* ---------- mappings never msync'ed: W mmap: <bytes> <path> ---------- */
struct unsynced {
    int n;
    uint64_t path[16], bytes[16];
};

/* Add the never-msync'ed part of [lo, hi) to `u`. Requires g_map_mu. */
static void note_unsynced(struct unsynced *u, uintptr_t lo, uintptr_t hi)
{
    for (int i = 0; i < g_nmaps; i++) {
        const struct fmap *m = &g_maps[i];
        if (m->synced || hi <= m->lo || lo >= m->hi)
            continue;
        uint64_t n = (hi < m->hi ? hi : m->hi) - (lo > m->lo ? lo : m->lo);
        int k = 0;
        while (k < u->n && u->path[k] != m->path)
            k++;
        if (k == u->n && u->n < 16)
            u->path[u->n++] = m->path, u->bytes[k] = 0;
        if (k < u->n)
            u->bytes[k] += n;
    }
}

static void warn_unsynced(const struct unsynced *u)
{
    for (int k = 0; k < u->n; k++) {
        const char *p = "?";
        for (int i = 0; i < MAP_PATHS; i++)
            if (g_map_paths[i].h == u->path[k])
                p = g_map_paths[i].p;
        char line[PATH_MAX + 64];
        size_t at = put_str(line, 0, sizeof line - 1, "mmap: ");
        at = put_dec(line, at, sizeof line - 1, u->bytes[k]);
        at = put_str(line, at, sizeof line - 1, " ");
        at = put_str(line, at, sizeof line - 1, p);
        line[at] = 0;
        warn_once(line);
    }
}

/* At the end of the process image: mappings still there and never msync'ed (the mutex is only
 * tried: this may run in a signal handler). */
void mmap_final_warnings(void)
{
    if (!atomic_load(&g_maps_any) || pthread_mutex_trylock(&g_map_mu) != 0)
        return;
    struct unsynced u = {0, {0}, {0}};
    note_unsynced(&u, 0, UINTPTR_MAX);
    pthread_mutex_unlock(&g_map_mu);
    warn_unsynced(&u);
}

/* Forget [lo, hi): trim, split or drop the tracked mappings it overlaps. Requires g_map_mu. */
static void maps_cut(uintptr_t lo, uintptr_t hi)
{
    for (int i = 0; i < g_nmaps; i++) {
        struct fmap *m = &g_maps[i];
        if (hi <= m->lo || lo >= m->hi)
            continue;
        if (lo <= m->lo && hi >= m->hi) {
            g_maps[i--] = g_maps[--g_nmaps];
        } else if (lo <= m->lo) {
            m->off += hi - m->lo;
            m->lo = hi;
        } else if (hi >= m->hi) {
            m->hi = lo;
        } else {
            struct fmap tail = *m;
            tail.off += hi - m->lo;
            tail.lo = hi;
            m->hi = lo;
            if (g_nmaps < MAX_MAPS)
                g_maps[g_nmaps++] = tail;
        }
    }
    atomic_store(&g_maps_any, g_nmaps > 0);
}

static void maps_add(uintptr_t lo, uintptr_t hi, uint64_t off, const struct fdinfo *e, const char *path)
{
    pthread_mutex_lock(&g_map_mu);
    maps_cut(lo, hi);
    int full = g_nmaps == MAX_MAPS;
    /* POSIX shared memory (shm_open: files in /dev/shm) is memory, not storage: never warned about */
    int shm = !strncmp(path, "/dev/shm/", 9);
    if (!full)
        g_maps[g_nmaps++] = (struct fmap){lo, hi, off, e->dev, e->ino, e->path, shm};
    if (path[0]) {
        int i = 0;
        while (i < MAP_PATHS && g_map_paths[i].h && g_map_paths[i].h != e->path)
            i++;
        if (i < MAP_PATHS && !g_map_paths[i].h) {
            size_t at = put_str(g_map_paths[i].p, 0, PATH_MAX - 1, path);
            g_map_paths[i].p[at] = 0;
            g_map_paths[i].h = e->path;
        }
    }
    atomic_store(&g_maps_any, g_nmaps > 0);
    pthread_mutex_unlock(&g_map_mu);
    if (full && !g_maps_warned) {
        g_maps_warned = 1;
        shim_warn("msync: more than 1024 shared writable file mappings; msync of the others is not recorded");
    }
}

/* [lo, hi) is no longer mapped (munmap, MAP_FIXED over it): what of it was never msync'ed is
 * warned about (only if the shim may write: not inside its own calls). */
static void unmapped(uintptr_t lo, uintptr_t hi)
{
    struct unsynced u = {0, {0}, {0}};
    pthread_mutex_lock(&g_map_mu);
    note_unsynced(&u, lo, hi);
    maps_cut(lo, hi);
    pthread_mutex_unlock(&g_map_mu);
    RECORD_IF(u.n > 0, warn_unsynced(&u));
}

static void after_mmap(void *r, size_t len, int prot, int flags, int fd, off_t off)
{
    if (r == MAP_FAILED || !g_active)
        return;
    int type = flags & MAP_TYPE;
    if ((type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && (prot & PROT_WRITE) && fd >= 0 && enter()) {
        int e = errno;
        struct fdinfo *info = fd_get(fd);
        if (info) {
            char link[64], path[PATH_MAX];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(link, path, sizeof path - 1);
            path[n > 0 ? n : 0] = 0;
            maps_add((uintptr_t)r, (uintptr_t)r + page_up(len), (uint64_t)off, info, path);
        }
        errno = e;
        leave();
    } else if ((flags & MAP_FIXED) && atomic_load(&g_maps_any)) {
        unmapped((uintptr_t)r, (uintptr_t)r + page_up(len));
    }
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    RESOLVE(mmap);
    void *r = real_mmap(addr, len, prot, flags, fd, off);
    after_mmap(r, len, prot, flags, fd, off);
    return r;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    RESOLVE(mmap64);
    void *r = real_mmap64(addr, len, prot, flags, fd, off);
    after_mmap(r, len, prot, flags, fd, off);
    return r;
}

EXPORT int munmap(void *addr, size_t len)
{
    RESOLVE(munmap);
    int r = real_munmap(addr, len);
    if (r == 0 && atomic_load(&g_maps_any))
        unmapped((uintptr_t)addr, (uintptr_t)addr + page_up(len));
    return r;
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    RESOLVE(mremap);
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    void *r = real_mremap(old, old_len, new_len, flags, want);
    if (r != MAP_FAILED && atomic_load(&g_maps_any)) {
        uintptr_t lo = (uintptr_t)old, hi = lo + page_up(old_len);
        pthread_mutex_lock(&g_map_mu);
        struct fmap moved = {0, 0, 0, 0, 0, 0, 0};
        for (int i = 0; i < g_nmaps; i++)
            if (lo >= g_maps[i].lo && lo < g_maps[i].hi) {
                moved = g_maps[i];
                moved.off += lo - g_maps[i].lo;
                break;
            }
        if (!(flags & MREMAP_DONTUNMAP))
            maps_cut(lo, hi);
        if (moved.hi) {
            maps_cut((uintptr_t)r, (uintptr_t)r + page_up(new_len));
            moved.lo = (uintptr_t)r;
            moved.hi = (uintptr_t)r + page_up(new_len);
            if (g_nmaps < MAX_MAPS)
                g_maps[g_nmaps++] = moved;
        }
        atomic_store(&g_maps_any, g_nmaps > 0);
        pthread_mutex_unlock(&g_map_mu);
    }
    return r;
}

/* One write record per tracked mapping the synced range overlaps (at most 16), page-rounded and
 * clipped to the mapping, all with the PC of the msync call. */
static void rec_msync(void *addr, size_t len)
{
    uintptr_t lo = (uintptr_t)addr, hi = lo + page_up(len);
    struct fmap hit[16];
    int n = 0;
    pthread_mutex_lock(&g_map_mu);
    for (int i = 0; i < g_nmaps && n < 16; i++) {
        struct fmap m = g_maps[i];
        if (hi <= m.lo || lo >= m.hi)
            continue;
        uintptr_t a = lo > m.lo ? lo : m.lo, b = hi < m.hi ? hi : m.hi;
        g_maps[i].synced = 1;
        hit[n++] = (struct fmap){a, b, m.off + (a - m.lo), m.dev, m.ino, m.path, 1};
    }
    pthread_mutex_unlock(&g_map_mu);
    struct pc_once pc = {0, 0, 0};
    for (int i = 0; i < n; i++)
        push_record(&(struct pcshim_record){.op = PCSHIM_OP_WRITE, .fd = -1, .offset = hit[i].off,
                                            .len = hit[i].hi - hit[i].lo, .flags = PCSHIM_VIA_MSYNC,
                                            .dev = hit[i].dev, .ino = hit[i].ino, .path = hit[i].path},
                    &pc);
}

EXPORT int msync(void *addr, size_t len, int flags)
{
    RESOLVE(msync);
    int r = real_msync(addr, len, flags);
    RECORD_IF(r == 0 && (flags & (MS_SYNC | MS_ASYNC)) && atomic_load(&g_maps_any), rec_msync(addr, len));
    return r;
}
