/* pcsys_frames.c: the frames of a BPF user stack turned into the shim's frames and signature.
 *
 * The kernel gives each frame as (GNU build id, offset in the module's file), or as the raw
 * address when the module has no GNU build id (a Go program) or its note could not be read. The
 * signature must be the same in every run, whether or not the process still runs when its event
 * is read, so it hashes only what does not depend on that:
 *   - a build-id frame: module id = pc_hash_bytes(the build id), offset = file offset;
 *   - an address frame: the module found in the process's mappings (/proc/PID/maps, read once
 *     and again on a miss) or, once the process is gone, the program itself when it is not
 *     position independent (its addresses are then the same in every run); module id = the build
 *     id's hash as above when the file has one, else (the shim's rule) pc_hash_bytes(path), and
 *     offset = the file offset for a module with a build id, the ELF virtual address otherwise.
 * The F lines give the ELF virtual address (file offset through the module's PT_LOAD headers)
 * and the module's path, which is what record's symbol naming needs. The C library's innermost
 * frames (the system-call wrappers: modules named libc.so*, libpthread*, ld-linux*) are skipped
 * before the signature's frames are taken. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pchash.h"
#include "pcsys_loader.h"

#define MAX_LOADS 16

/* A module file, read once per path. */
struct module {
    char *path;
    int ok;      /* its ELF headers were read */
    int is_exec; /* ET_EXEC: not position independent */
    int has_interp;
    int has_build_id;
    unsigned char build_id[PCSYS_BUILD_ID_SIZE]; /* zero-padded as the kernel gives it */
    unsigned build_id_len;
    uint64_t id;                                 /* module id (see the top) */
    int nload;
    struct { uint64_t off, vaddr, filesz; } load[MAX_LOADS];
    struct module *next;
};

static struct module *g_modules;

/* The GNU build id among the notes at [off, off + size) of the file, if there. */
static void read_notes(struct module *m, int fd, uint64_t off, uint64_t size)
{
    if (size == 0 || size > (1 << 16))
        return;
    unsigned char *buf = malloc(size);
    if (!buf || pread(fd, buf, size, (off_t)off) != (ssize_t)size) {
        free(buf);
        return;
    }
    size_t at = 0;
    while (at + sizeof(Elf64_Nhdr) <= size) {
        Elf64_Nhdr nh;
        memcpy(&nh, buf + at, sizeof nh);
        size_t name = at + sizeof nh, desc = name + ((nh.n_namesz + 3) & ~3u);
        if (desc + nh.n_descsz > size)
            break;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(buf + name, "GNU", 4) == 0 &&
            nh.n_descsz <= PCSYS_BUILD_ID_SIZE) {
            memcpy(m->build_id, buf + desc, nh.n_descsz);
            m->build_id_len = nh.n_descsz;
            m->has_build_id = 1;
            break;
        }
        at = desc + ((nh.n_descsz + 3) & ~3u);
    }
    free(buf);
}

/* A build id in a note section outside every PT_NOTE segment (Go's linker puts it there): record's
 * symbol naming reads it there too, and checks the module id against it. */
static void section_notes(struct module *m, int fd, const Elf64_Ehdr *eh)
{
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum > 4096)
        return;
    for (int i = 0; i < eh->e_shnum && !m->has_build_id; i++) {
        Elf64_Shdr sh;
        if (pread(fd, &sh, sizeof sh, (off_t)(eh->e_shoff + (uint64_t)i * sizeof sh)) != (ssize_t)sizeof sh)
            return;
        if (sh.sh_type == SHT_NOTE)
            read_notes(m, fd, sh.sh_offset, sh.sh_size);
    }
}

/* Read the ELF headers of `m->path`: its PT_LOADs, PT_INTERP and GNU build id. */
static void read_elf(struct module *m)
{
    int fd = open(m->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256) {
        m->ok = 1;
        m->is_exec = eh.e_type == ET_EXEC;
        for (int i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph)
                break;
            if (ph.p_type == PT_INTERP)
                m->has_interp = 1;
            else if (ph.p_type == PT_NOTE && !m->has_build_id)
                read_notes(m, fd, ph.p_offset, ph.p_filesz);
            else if (ph.p_type == PT_LOAD && m->nload < MAX_LOADS) {
                m->load[m->nload].off = ph.p_offset;
                m->load[m->nload].vaddr = ph.p_vaddr;
                m->load[m->nload].filesz = ph.p_filesz;
                m->nload++;
            }
        }
    }
    if (m->ok && !m->has_build_id)
        section_notes(m, fd, &eh);
    close(fd);
    m->id = m->has_build_id ? pc_hash_bytes(m->build_id, m->build_id_len) : pc_hash_bytes(m->path, strlen(m->path));
}

static struct module *module_at(const char *path)
{
    for (struct module *m = g_modules; m; m = m->next)
        if (strcmp(m->path, path) == 0)
            return m;
    struct module *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->path = strdup(path);
    read_elf(m);
    m->next = g_modules;
    g_modules = m;
    return m;
}

int module_build_id(const char *path, unsigned char id[PCSYS_BUILD_ID_SIZE])
{
    struct module *m = module_at(path);
    if (!m || !m->has_build_id)
        return 0;
    memcpy(id, m->build_id, PCSYS_BUILD_ID_SIZE);
    return 1;
}

int elf_has_interp(const char *path)
{
    struct module *m = module_at(path);
    return m && m->ok ? m->has_interp : -1;
}

static uint64_t to_vaddr(const struct module *m, uint64_t off)
{
    for (int i = 0; i < m->nload; i++)
        if (off >= m->load[i].off && off < m->load[i].off + m->load[i].filesz)
            return off - m->load[i].off + m->load[i].vaddr;
    return off;
}

static int vaddr_to_off(const struct module *m, uint64_t va, uint64_t *off)
{
    for (int i = 0; i < m->nload; i++)
        if (va >= m->load[i].vaddr && va < m->load[i].vaddr + m->load[i].filesz) {
            *off = va - m->load[i].vaddr + m->load[i].off;
            return 1;
        }
    return 0;
}

/* ---------- the mappings of a process ---------- */

struct mapping {
    uint64_t lo, hi, off;
    struct module *m;
};
static struct {
    uint32_t pid;
    int n, cap;
    struct mapping *v;
} g_maps;

static void read_maps(uint32_t pid)
{
    g_maps.pid = pid;
    g_maps.n = 0;
    char name[64], line[PATH_MAX + 128];
    snprintf(name, sizeof name, "/proc/%u/maps", pid);
    FILE *f = fopen(name, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off;
        char perms[8];
        int at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &at) < 4 || perms[2] != 'x')
            continue;
        char *path = line + at;
        path[strcspn(path, "\n")] = 0;
        if (path[0] != '/' || strstr(path, " (deleted)"))
            continue;
        if (g_maps.n == g_maps.cap) {
            int cap = g_maps.cap ? 2 * g_maps.cap : 64;
            struct mapping *v = realloc(g_maps.v, (size_t)cap * sizeof *v);
            if (!v)
                break;
            g_maps.v = v;
            g_maps.cap = cap;
        }
        struct module *m = module_at(path);
        if (m)
            g_maps.v[g_maps.n++] = (struct mapping){lo, hi, off, m};
    }
    fclose(f);
}

void frames_init(void)
{
    /* the C library and dynamic loader the loader itself runs with are those of most programs:
     * known by build id from the start, their frames are named (and skipped) even when the
     * process is gone by the time its event is read */
    read_maps((uint32_t)getpid());
    g_maps.pid = 0;
}

void frames_forget(uint32_t pid)
{
    if (g_maps.pid == pid)
        g_maps.pid = 0;
}

/* The mapping of `ip` in process `pid`; `*fresh` says whether the maps were read for this event
 * already (then a miss is final). */
static const struct mapping *mapping_of(uint32_t pid, uint64_t ip, int *fresh)
{
    for (int pass = 0; pass < 2; pass++) {
        if (g_maps.pid == pid)
            for (int i = 0; i < g_maps.n; i++)
                if (ip >= g_maps.v[i].lo && ip < g_maps.v[i].hi)
                    return &g_maps.v[i];
        if (*fresh)
            return NULL;
        read_maps(pid);
        *fresh = 1;
    }
    return NULL;
}

/* ---------- frames ---------- */

/* A module file with this build id: from the process's mappings, else the program. */
static struct module *module_of_build_id(const unsigned char *id, uint32_t pid, const char *exe, int *fresh)
{
    for (struct module *m = g_modules; m; m = m->next)
        if (m->has_build_id && memcmp(m->build_id, id, PCSYS_BUILD_ID_SIZE) == 0)
            return m;
    if (!*fresh) {
        read_maps(pid);
        *fresh = 1;
        for (int i = 0; i < g_maps.n; i++)
            if (g_maps.v[i].m->has_build_id && memcmp(g_maps.v[i].m->build_id, id, PCSYS_BUILD_ID_SIZE) == 0)
                return g_maps.v[i].m;
    }
    struct module *m = exe ? module_at(exe) : NULL;
    return m && m->has_build_id && memcmp(m->build_id, id, PCSYS_BUILD_ID_SIZE) == 0 ? m : NULL;
}

/* The module id of a build id as the kernel gives it, zero-padded to 20 bytes: the padding is
 * taken off (a build id that really ends in zero bytes then gets another id than the shim's, but
 * the same in every run). */
static uint64_t build_id_hash(const unsigned char *id)
{
    size_t n = PCSYS_BUILD_ID_SIZE;
    while (n > 0 && id[n - 1] == 0)
        n--;
    return pc_hash_bytes(id, n);
}

/* One frame: its (module id, offset) for the signature and its F line; 0 when it is unknown. */
static int one_frame(const struct pcsys_frame *f, uint32_t pid, const char *exe, int *fresh, uint64_t *sig_off,
                     struct frame_out *o)
{
    if (f->status == PCSYS_FRAME_BUILD_ID) {
        struct module *m = module_of_build_id(f->build_id, pid, exe, fresh);
        o->module = build_id_hash(f->build_id);
        *sig_off = f->addr;
        o->vaddr = m ? to_vaddr(m, f->addr) : f->addr;
        o->path = m ? m->path : "?";
        return 1;
    }
    if (f->status != PCSYS_FRAME_IP)
        return 0;
    const struct mapping *mp = mapping_of(pid, f->addr, fresh);
    struct module *m = mp ? mp->m : (exe ? module_at(exe) : NULL);
    uint64_t off;
    if (mp)
        off = f->addr - mp->lo + mp->off;
    else if (!m || !m->is_exec || !vaddr_to_off(m, f->addr, &off))
        m = NULL;
    if (!m) { /* a position-independent module of a process that is gone: its raw address */
        o->module = 0;
        *sig_off = o->vaddr = f->addr;
        o->path = "?";
        return 1;
    }
    o->module = m->id;
    o->vaddr = to_vaddr(m, off);
    *sig_off = m->has_build_id ? off : o->vaddr;
    o->path = m->path;
    return 1;
}

static int is_libc(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0 ||
           strncmp(base, "libpthread", 10) == 0 || strncmp(base, "ld-linux", 8) == 0;
}

uint64_t frames_signature(const struct pcsys_event *e, const char *exe, int frames, struct frame_out *out,
                          int *n)
{
    int fresh = 0, skipping = 1, nf = e->nframes < PCSYS_MAX_FRAMES ? e->nframes : PCSYS_MAX_FRAMES;
    uint64_t h = PC_SIG_SEED;
    *n = 0;
    for (int i = 0; i < nf && *n < frames; i++) {
        uint64_t off;
        struct frame_out o;
        if (!one_frame(&e->frames[i], e->pid, exe, &fresh, &off, &o))
            break;
        if (skipping && is_libc(o.path))
            continue;
        skipping = 0;
        h = pc_sig_step(h, o.module, off);
        out[(*n)++] = o;
    }
    if (*n == 0)
        return 0;
    return h ? h : 1;
}
