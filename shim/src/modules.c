/* modules.c: the module table (every executable PT_LOAD segment of the process: address range,
 * load bias, module id = hash of the GNU build id or of the path, and for auto the module's
 * frame-pointer verdict), rebuilt lazily after dlopen/dlclose, whose hooks are here because they
 * only mark it stale. Walking the stack and hashing frames is stackwalk.c's. */
#include "shim.h"

static _Atomic(struct segtab *) g_segs;
static atomic_int g_segs_dirty = 1;
static pthread_mutex_t g_seg_mu = PTHREAD_MUTEX_INITIALIZER;
/* auto: module id -> frame-pointer verdict (1 yes, 0 no), kept across module-table rebuilds */
static _Atomic(uint64_t) g_mod_id[MAX_MODULES];
static _Atomic(int) g_mod_fp[MAX_MODULES];

/* ---------- module table ---------- */
static uint64_t build_id_hash(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh;
            const char *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0)
                return hash_bytes(desc, nh->n_descsz);
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 0;
}

/* Does this module keep frame pointers? Decided once per module, from its code: sample up to
 * FP_SAMPLE function entries of its .eh_frame_hdr search table (every function with unwind info)
 * and count those that open with `push %rbp; mov %rsp,%rbp` (after an optional endbr64). Code
 * built with -fno-omit-frame-pointer has that prologue in 40-75 % of its entries (leaves, thunks
 * and .cold parts have none); code built without it in under 3 %. Threshold 20 %. Static, so
 * the verdict (and with it every auto signature) is the same in every run. */
/* The module's .eh_frame_hdr if it has the layout read here (version 1, fde_count udata4, table
 * datarel|sdata4: what GNU ld and lld write), else NULL. */
static const unsigned char *eh_hdr_of(const struct dl_phdr_info *info, size_t *len)
{
    const unsigned char *h = NULL;
    size_t h_len = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) {
            h = (const unsigned char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            h_len = info->dlpi_phdr[i].p_memsz;
        }
    if (!h || h_len < 12 || h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
        return NULL;
    *len = h_len;
    return h;
}

static int eh_fp_ratio_ok(const struct dl_phdr_info *info)
{
    size_t h_len = 0;
    const unsigned char *h = eh_hdr_of(info, &h_len);
    if (!h)
        return 0;
    size_t ptr_len;
    switch (h[1] & 0x0f) {
    case 0x03: case 0x0b: ptr_len = 4; break;
    case 0x04: case 0x0c: ptr_len = 8; break;
    default: ptr_len = h[1] == 0xff ? 0 : 8; break;
    }
    uint32_t count;
    memcpy(&count, h + 4 + ptr_len, 4);
    const unsigned char *tab = h + 8 + ptr_len;
    if (count == 0 || 8 + ptr_len + 8 * (size_t)count > h_len)
        return 0; /* a table larger than its segment: not trusted */
    uint32_t step = count > FP_SAMPLE ? count / FP_SAMPLE : 1, seen = 0, fp = 0;
    for (uint32_t k = 0; k < count && seen < FP_SAMPLE; k += step) {
        int32_t rel;
        memcpy(&rel, tab + 8 * (size_t)k, 4);
        uintptr_t at = (uintptr_t)h + (intptr_t)rel;
        int inside = 0;
        for (int i = 0; i < info->dlpi_phnum && !inside; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            inside = ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && at >= lo && at + 8 <= lo + ph->p_memsz;
        }
        if (!inside)
            continue;
        const unsigned char *c = (const unsigned char *)at;
        if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
            c += 4; /* endbr64 */
        seen++;
        fp += c[0] == 0x55 && c[1] == 0x48 && c[2] == 0x89 && c[3] == 0xe5;
    }
    return seen > 0 && fp * 5 >= seen;
}

static int module_has_fp(const struct dl_phdr_info *info, uint64_t id)
{
    for (unsigned i = 0; i < MAX_MODULES; i++) {
        unsigned slot = (unsigned)(id + i) & (MAX_MODULES - 1);
        uint64_t cur = atomic_load(&g_mod_id[slot]);
        if (cur == id)
            return atomic_load(&g_mod_fp[slot]);
        if (cur == 0) {
            int v = eh_fp_ratio_ok(info);
            atomic_store(&g_mod_fp[slot], v);
            atomic_store(&g_mod_id[slot], id); /* the table is only written under g_seg_mu */
            return v;
        }
    }
    return eh_fp_ratio_ok(info);
}

static int seg_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct segtab *t = arg;
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : g_exe;
    uint64_t id = build_id_hash(info);
    if (!id)
        id = hash_bytes(path, strlen(path));
    int has_fp = -1;
    size_t eh_len = 0;
    const unsigned char *eh = eh_hdr_of(info, &eh_len);
    /* the loaded segment holding .eh_frame_hdr, where GNU ld and lld put .eh_frame too */
    uintptr_t eh_lo = 0, eh_hi = 0;
    for (int i = 0; eh && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (uintptr_t)eh >= lo && (uintptr_t)eh + eh_len <= lo + ph->p_memsz) {
            eh_lo = lo;
            eh_hi = lo + ph->p_memsz;
        }
    }
    for (int i = 0; i < info->dlpi_phnum && t->n < MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (has_fp < 0)
            has_fp = g_method == M_AUTO ? module_has_fp(info, id) : 0;
        struct seg *s = &t->s[t->n++];
        s->lo = info->dlpi_addr + ph->p_vaddr;
        s->hi = s->lo + ph->p_memsz;
        s->bias = info->dlpi_addr;
        s->module = id;
        s->path = strdup(path); /* leaked with the table: tables are replaced, never freed */
        s->has_fp = has_fp;
        s->eh_hdr = eh_hi ? eh : NULL;
        s->eh_len = eh_len;
        s->eh_lo = eh_lo;
        s->eh_hi = eh_hi;
    }
    return 0;
}

static int seg_cmp(const void *a, const void *b)
{
    const struct seg *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct segtab *segs(void)
{
    if (!atomic_load(&g_segs_dirty))
        return atomic_load(&g_segs);
    pthread_mutex_lock(&g_seg_mu);
    if (atomic_load(&g_segs_dirty)) {
        struct segtab *t = calloc(1, sizeof *t);
        if (t) {
            atomic_store(&g_segs_dirty, 0);
            dl_iterate_phdr(seg_cb, t);
            qsort(t->s, (size_t)t->n, sizeof t->s[0], seg_cmp);
            if (t->n > 0) {
                t->lo = t->s[0].lo;
                t->hi = t->s[t->n - 1].hi;
            }
            atomic_store(&g_segs, t); /* the old table is leaked: readers may still use it */
        }
    }
    pthread_mutex_unlock(&g_seg_mu);
    return atomic_load(&g_segs);
}

struct seg *find_seg(struct segtab *t, uintptr_t a)
{
    if (!t || a < t->lo || a >= t->hi)
        return NULL;
    int lo = 0, hi = t->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a < t->s[mid].lo)
            hi = mid - 1;
        else if (a >= t->s[mid].hi)
            lo = mid + 1;
        else
            return &t->s[mid];
    }
    return NULL;
}

/* ---------- hooks: a module loaded or unloaded makes the table stale ---------- */
EXPORT void *dlopen(const char *file, int mode)
{
    RESOLVE(dlopen);
    void *h = real_dlopen(file, mode);
    atomic_store(&g_segs_dirty, 1);
    return h;
}

EXPORT int dlclose(void *h)
{
    RESOLVE(dlclose);
    int r = real_dlclose(h);
    atomic_store(&g_segs_dirty, 1);
    return r;
}
