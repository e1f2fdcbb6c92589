/* elfcheck.c: before an exec or posix_spawn, is the program statically linked? A static ELF
 * program (no PT_INTERP: no dynamic loader, so LD_PRELOAD is never read) runs without the shim
 * and none of its writes can be recorded; the exec'ing process writes "W static: <path>" to its
 * own log first. A "#!" script is judged by its interpreter; the dynamic loader itself, run as a
 * program, honours LD_PRELOAD and is not static. No malloc: fixed buffers and raw system calls. */
#include "shim.h"

/* 1 static ELF, 0 not (dynamic, not ELF, unreadable); a script's interpreter goes to `interp`. */
static int elf_static(const char *path, char *interp, size_t cap)
{
    interp[0] = 0;
    int fd = (int)sc(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    unsigned char h[256];
    long n = sc(SYS_pread64, fd, (long)h, sizeof h, 0);
    int verdict = 0;
    if (n >= 2 && h[0] == '#' && h[1] == '!') {
        long i = 2;
        while (i < n && (h[i] == ' ' || h[i] == '\t'))
            i++;
        size_t k = 0;
        while (i < n && h[i] != ' ' && h[i] != '\t' && h[i] != '\n' && k + 1 < cap)
            interp[k++] = (char)h[i++];
        interp[k] = 0;
    } else if (n >= (long)sizeof(Elf64_Ehdr) && !memcmp(h, ELFMAG, SELFMAG) && h[EI_CLASS] == ELFCLASS64) {
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)h;
        Elf64_Phdr ph[64];
        int cnt = eh->e_phnum < 64 ? eh->e_phnum : 64;
        size_t want = (size_t)cnt * sizeof(Elf64_Phdr);
        if ((eh->e_type == ET_EXEC || eh->e_type == ET_DYN) && eh->e_phentsize == sizeof(Elf64_Phdr) &&
            sc(SYS_pread64, fd, (long)ph, (long)want, (long)eh->e_phoff) == (long)want) {
            int has_interp = 0;
            for (int i = 0; i < cnt; i++)
                has_interp |= ph[i].p_type == PT_INTERP;
            verdict = !has_interp;
        }
    }
    sc(SYS_close, fd, 0, 0, 0);
    if (verdict) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld.so", 5) || !strncmp(base, "ld64.so", 7))
            verdict = 0; /* the dynamic loader run as a program: it loads the preload */
    }
    return verdict;
}

/* The file execvp would run for `name` (no '/'): the first executable PATH entry. */
static int search_path(const char *name, char *out, size_t cap)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        size_t at = 0;
        if (len == 0) {
            at = put_str(out, 0, cap - 1, ".");
        } else {
            for (size_t i = 0; i < len && at < cap - 1; i++)
                out[at++] = path[i];
        }
        at = put_str(out, at, cap - 1, "/");
        at = put_str(out, at, cap - 1, name);
        out[at] = 0;
        if (sc(SYS_faccessat, AT_FDCWD, (long)out, X_OK, 0) == 0)
            return 0;
        if (!end)
            break;
        path = end + 1;
    }
    return -1;
}

/* Before exec/spawn of `p` (relative to dirfd; `search`: looked up in PATH when it has no '/'). */
void check_static(int dirfd, const char *p, int search, char *const envp[])
{
    (void)envp;
    if (!p || !p[0])
        return;
    char file[PATH_MAX], abs[PATH_MAX], interp[PATH_MAX];
    if (search && !strchr(p, '/')) {
        if (search_path(p, file, sizeof file) != 0)
            return;
    } else {
        size_t at = put_str(file, 0, sizeof file - 1, p);
        file[at] = 0;
    }
    if (abs_path(file[0] == '/' ? AT_FDCWD : dirfd, file, abs, sizeof abs) != 0)
        return;
    int st = elf_static(abs, interp, sizeof interp);
    if (!st && interp[0] == '/') {
        char inner[PATH_MAX];
        if (elf_static(interp, inner, sizeof inner)) {
            st = 1;
            size_t at = put_str(abs, 0, sizeof abs - 1, interp);
            abs[at] = 0;
        }
    }
    if (st) {
        char line[PATH_MAX + 16];
        size_t at = put_str(line, 0, sizeof line - 1, "static: ");
        at = put_str(line, at, sizeof line - 1, abs);
        line[at] = 0;
        shim_warn(line);
    }
}
