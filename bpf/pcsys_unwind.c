/* pcsys_unwind.c: call paths of code built without frame pointers, from the user stack the BPF
 * program copies beside an event (struct pcsys_ustack: the registers at the system call and the
 * stack bytes above rsp).
 *
 * The kernel's own user-stack walk follows rbp, which most C and C++ code (and the C library's
 * system-call wrappers everywhere) uses as an ordinary register: for such a program it ends in the
 * wrapper, and every call site of the program gets one signature. Here the stack is unwound as a
 * debugger does, with each module's call-frame information (.eh_frame, else .debug_frame) through
 * elfutils' libdwfl, its memory reads served from the copied bytes. The modules of a process are
 * the BPF program's PCSYS_MAPS records (sent before a process's first stack and again after it maps
 * more code), so a process that has ended before its events are read unwinds as one still running:
 * the signature never depends on how far behind the loader is. The unwound addresses become
 * (build id, file offset) frames, as the kernel gives them.
 *
 * An event with PCSYS_F_USTACK is held until its stack, the next record of the same thread in the
 * ring buffer, arrives (the BPF program reserves the event before it sends the stack). */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pcsys_loader.h"

/* Events waiting for their stacks, by thread: a thread has at most one at a time. */
#define HELD_SLOTS 1024
static struct held {
    int used;
    struct pcsys_event e;
} g_held[HELD_SLOTS];

/* Files by (kernel dev, ino): the paths of the modules in PCSYS_MAPS records. Learned from the
 * loader's own mappings (the C library and dynamic loader of most programs), each exec (the
 * program and its interpreter), each open the capture sees, and /proc while a process runs. */
#define FILE_BUCKETS 1024
static struct known_file {
    uint64_t dev, ino;
    char *path;
    struct known_file *next;
} *g_files[FILE_BUCKETS];

/* A process's modules (from its latest PCSYS_MAPS record) as libdwfl knows them. */
struct proc {
    uint32_t pid;
    uint32_t n;
    struct pcsys_map *maps;
    Dwfl *dwfl; /* built at its first stack */
    struct proc *next;
};
static struct proc *g_procs;

/* The stack being unwound, for the memory callback. */
static const struct pcsys_ustack *g_stack;

/* What the BPF program's frames would be replaced with. */
struct walk {
    uint64_t ip[PCSYS_MAX_FRAMES];
    int n;
};

static struct held *held_slot(uint32_t tid, int create)
{
    for (unsigned i = 0; i < HELD_SLOTS; i++) {
        struct held *h = &g_held[(tid + i) % HELD_SLOTS];
        if (h->used && h->e.tid == tid)
            return h;
        if (!h->used)
            return create ? h : NULL;
    }
    return NULL;
}

void unwind_keep(const struct pcsys_event *e)
{
    struct held *h = held_slot(e->tid, 1);
    if (!h) { /* a thousand threads waiting at once: this one keeps the kernel's frames */
        unwind_emit(e);
        return;
    }
    if (h->used) /* its stack never came (cannot happen: the BPF program sends it before) */
        unwind_emit(&h->e);
    h->e = *e;
    h->e.flags &= ~(uint32_t)PCSYS_F_USTACK;
    h->used = 1;
}

/* Remove slot `h` keeping every other thread reachable from its home slot. */
static void held_remove(struct held *h)
{
    unsigned i = (unsigned)(h - g_held);
    h->used = 0;
    for (unsigned j = (i + 1) % HELD_SLOTS; g_held[j].used; j = (j + 1) % HELD_SLOTS) {
        struct pcsys_event moved = g_held[j].e;
        g_held[j].used = 0;
        struct held *to = held_slot(moved.tid, 1);
        to->e = moved;
        to->used = 1;
    }
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
    (void)dwfl, (void)arg, (void)thread_arg;
    return 0; /* only get_thread is used */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
    (void)dwfl, (void)tid, (void)arg;
    *thread_arg = NULL;
    return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl, (void)arg;
    uint64_t sp = g_stack->regs[7];
    if (addr < sp || addr - sp + sizeof(Dwarf_Word) > g_stack->len)
        return false; /* beyond the copy: the walk ends there */
    memcpy(result, g_stack->data + (addr - sp), sizeof *result);
    return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    (void)arg;
    Dwarf_Word regs[PCSYS_UREGS];
    for (int i = 0; i < PCSYS_UREGS; i++)
        regs[i] = g_stack->regs[i];
    dwfl_thread_state_register_pc(thread, g_stack->regs[16]);
    return dwfl_thread_state_registers(thread, 0, PCSYS_UREGS, regs);
}

static const Dwfl_Thread_Callbacks g_thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

static char *g_debuginfo_path;
static const Dwfl_Callbacks g_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &g_debuginfo_path,
};

static const char *file_path(uint64_t dev, uint64_t ino)
{
    for (struct known_file *f = g_files[(dev * 31 + ino) % FILE_BUCKETS]; f; f = f->next)
        if (f->dev == dev && f->ino == ino)
            return f->path;
    return NULL;
}

void unwind_learn(uint64_t dev, uint64_t ino, const char *path)
{
    if (!path || path[0] != '/' || file_path(dev, ino))
        return;
    struct known_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return;
    }
    f->dev = dev;
    f->ino = ino;
    struct known_file **head = &g_files[(dev * 31 + ino) % FILE_BUCKETS];
    f->next = *head;
    *head = f;
}

/* The kernel's encoding of a device number (as struct super_block.s_dev holds it). */
static uint64_t kernel_dev(dev_t d) { return ((uint64_t)major(d) << 20) | minor(d); }

static void learn_stat(const char *path)
{
    struct stat st;
    if (path && stat(path, &st) == 0)
        unwind_learn(kernel_dev(st.st_dev), st.st_ino, path);
}

/* Every file-backed mapping of /proc/PID/maps (`pid` 0: the loader's own). */
static void learn_proc_maps(uint32_t pid)
{
    char name[64], line[PATH_MAX + 128];
    snprintf(name, sizeof name, pid ? "/proc/%u/maps" : "/proc/self/maps", pid);
    FILE *f = fopen(name, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned maj, mnr;
        unsigned long long ino;
        int at = 0;
        if (sscanf(line, "%*x-%*x %*s %*x %x:%x %llu %n", &maj, &mnr, &ino, &at) < 3 || !ino || !at)
            continue;
        char *path = line + at;
        path[strcspn(path, "\n")] = 0;
        unwind_learn(((uint64_t)maj << 20) | mnr, ino, path);
    }
    fclose(f);
}

/* The loader's own modules, and `preload` (the shim every program of `--auto` maps: a process that
 * ends before its mappings are read from /proc still has the shim's frames named). */
void unwind_init(const char *preload)
{
    learn_proc_maps(0);
    learn_stat(preload);
}

/* The program and the dynamic loader its PT_INTERP names. */
void unwind_learn_exec(const char *exe)
{
    learn_stat(exe);
    int fd = open(exe, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256)
        for (int i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            char interp[PATH_MAX];
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph)
                break;
            if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz >= sizeof interp)
                continue;
            if (pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz) {
                interp[ph.p_filesz] = 0;
                learn_stat(interp);
            }
        }
    close(fd);
}

static struct proc *proc_of(uint32_t pid)
{
    for (struct proc *p = g_procs; p; p = p->next)
        if (p->pid == pid)
            return p;
    return NULL;
}

void unwind_forget(uint32_t pid)
{
    for (struct proc **at = &g_procs; *at; at = &(*at)->next)
        if ((*at)->pid == pid) {
            struct proc *p = *at;
            *at = p->next;
            if (p->dwfl)
                dwfl_end(p->dwfl);
            free(p->maps);
            free(p);
            return;
        }
}

void unwind_maps(const struct pcsys_maps *m)
{
    unwind_forget(m->pid);
    struct proc *p = calloc(1, sizeof *p);
    uint32_t n = m->n < PCSYS_MAPS_MAX ? m->n : PCSYS_MAPS_MAX;
    if (!p || !(p->maps = malloc((n ? n : 1) * sizeof *p->maps))) {
        free(p);
        return;
    }
    memcpy(p->maps, m->maps, n * sizeof *p->maps);
    p->n = n;
    p->pid = m->pid;
    p->next = g_procs;
    g_procs = p;
    /* while the process runs, /proc names what the loader has not seen opened */
    for (uint32_t i = 0; i < n; i++)
        if (!file_path(p->maps[i].dev, p->maps[i].ino)) {
            learn_proc_maps(m->pid);
            break;
        }
}

/* The ELF virtual address of file offset `off` of `path`'s loadable segments (-1: none). */
static int64_t off_to_vaddr(Elf *elf, uint64_t off)
{
    size_t nph;
    if (elf_getphdrnum(elf, &nph) != 0)
        return -1;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && off >= (ph.p_offset & ~4095ull) &&
            off < ph.p_offset + ph.p_filesz)
            return (int64_t)(ph.p_vaddr + off - ph.p_offset);
    }
    return -1;
}

/* Report each module of `p` once, at the bias its first executable mapping gives. */
static Dwfl *proc_dwfl(struct proc *p)
{
    if (p->dwfl)
        return p->dwfl;
    Dwfl *d = dwfl_begin(&g_callbacks);
    if (!d)
        return NULL;
    dwfl_report_begin(d);
    for (uint32_t i = 0; i < p->n; i++) {
        const struct pcsys_map *m = &p->maps[i];
        const char *path = file_path(m->dev, m->ino);
        int dup = 0;
        for (uint32_t j = 0; j < i && !dup; j++)
            dup = p->maps[j].dev == m->dev && p->maps[j].ino == m->ino;
        if (!path || dup)
            continue;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        int64_t va = elf ? off_to_vaddr(elf, m->pgoff) : -1;
        if (elf)
            elf_end(elf);
        close(fd);
        if (va < 0)
            continue;
        /* the segment holding file offset pgoff is mapped at start: the load bias */
        dwfl_report_elf(d, path, path, -1, m->start - ((uint64_t)va & ~4095ull), false);
    }
    if (dwfl_report_end(d, NULL, NULL) != 0 || !dwfl_attach_state(d, NULL, (pid_t)p->pid, &g_thread_callbacks, NULL)) {
        dwfl_end(d);
        return NULL;
    }
    p->dwfl = d;
    return d;
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
    struct walk *w = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0)
        return DWARF_CB_ABORT;
    w->ip[w->n++] = pc; /* a return address, as the kernel's frames give it */
    return w->n < PCSYS_MAX_FRAMES ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static void walk(uint32_t pid, uint32_t tid, struct walk *w)
{
    w->n = 0;
    struct proc *p = proc_of(pid);
    Dwfl *d = p ? proc_dwfl(p) : NULL;
    if (d && dwfl_addrmodule(d, g_stack->regs[16]))
        dwfl_getthread_frames(d, (pid_t)tid, on_frame, w);
}

/* Frame `i` of `out` as the kernel gives a frame of a module with a build id: (build id, file
 * offset), so the signature depends on neither the addresses nor the process being alive. */
static void set_frame(struct pcsys_event *out, int i, const struct proc *p, uint64_t ip)
{
    struct pcsys_frame *f = &out->frames[i];
    memset(f, 0, sizeof *f);
    f->status = PCSYS_FRAME_IP;
    f->addr = ip;
    for (uint32_t k = 0; k < p->n; k++) {
        const struct pcsys_map *m = &p->maps[k];
        if (ip < m->start || ip >= m->end)
            continue;
        const char *path = file_path(m->dev, m->ino);
        if (path && module_build_id(path, f->build_id)) {
            f->status = PCSYS_FRAME_BUILD_ID;
            f->addr = ip - m->start + m->pgoff;
        }
        return;
    }
}

int unwind_emit(const struct pcsys_event *e)
{
    static struct pcsys_event copy; /* `e` may be the ring's record, which is read-only */
    copy = *e;
    const struct proc *p = proc_of(copy.pid);
    int nf = copy.nframes < PCSYS_MAX_FRAMES ? copy.nframes : PCSYS_MAX_FRAMES;
    for (int i = 0; p && i < nf; i++)
        if (copy.frames[i].status == PCSYS_FRAME_IP)
            set_frame(&copy, i, p, copy.frames[i].addr);
    return out_event(&copy);
}

const struct pcsys_event *unwind_take(const void *data, size_t size)
{
    static struct pcsys_event out;
    const struct pcsys_ustack *s = data;
    if (size < offsetof(struct pcsys_ustack, data))
        return NULL;
    struct held *h = held_slot(s->tid, 0);
    if (!h)
        return NULL;
    out = h->e;
    held_remove(h);
    if (s->len > size - offsetof(struct pcsys_ustack, data) || s->len < sizeof(uint64_t))
        return &out;
    struct walk w;
    g_stack = s;
    walk(out.pid, out.tid, &w);
    g_stack = NULL;
    /* Two frames at least (the system-call wrapper and its caller), else the kernel's walk stays:
     * a module without call-frame information (a stripped Go program) has nothing better. */
    if (w.n < 2)
        return &out;
    const struct proc *p = proc_of(out.pid);
    out.nframes = w.n;
    for (int i = 0; i < w.n; i++)
        set_frame(&out, i, p, w.ip[i]);
    return &out;
}

void unwind_drain(void)
{
    for (unsigned i = 0; i < HELD_SLOTS; i++)
        if (g_held[i].used) {
            g_held[i].used = 0;
            unwind_emit(&g_held[i].e);
        }
}
