/* util.c: small helpers with no state of their own: the shim's own system calls (sc), hashing,
 * the time stamp, number formatting without stdio, the fixed "seen" sets
 * and absolute paths. What is written where is logs.c's business; paths are interned there. */
#include "shim.h"

/* The shim's own system calls bypass its syscall() hook. */
long sc(long n, long a, long b, long c, long d)
{
    RESOLVE(syscall);
    return real_syscall(n, a, b, c, d, 0L, 0L);
}

/* ---------- small helpers ---------- */
uint64_t mix64(uint64_t x) { return pc_mix64(x); }

uint64_t hash_bytes(const void *p, size_t n) { return pc_hash_bytes(p, n); }

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

size_t put_str(char *dst, size_t at, size_t cap, const char *s)
{
    while (*s && at < cap)
        dst[at++] = *s++;
    return at;
}

size_t put_hex(char *dst, size_t at, size_t cap, uint64_t v, int width)
{
    char tmp[17];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v || n < width);
    while (n > 0 && at < cap)
        dst[at++] = tmp[--n];
    return at;
}

size_t put_dec(char *dst, size_t at, size_t cap, uint64_t v)
{
    char tmp[21];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n > 0 && at < cap)
        dst[at++] = tmp[--n];
    return at;
}

/* Insert h into a fixed open-addressed set; 1 if new (or the set is full: duplicates are harmless). */
int seen_insert(_Atomic(uint64_t) *set, uint64_t h)
{
    for (unsigned i = 0; i < 64; i++) {
        _Atomic(uint64_t) *slot = &set[(h + i) & (SEEN_SLOTS - 1)];
        uint64_t cur = atomic_load(slot);
        if (cur == h)
            return 0;
        if (cur == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong(slot, &zero, h))
                return 1;
            if (zero == h)
                return 0;
        }
    }
    return 1;
}

/* Absolute path of `p` relative to dirfd (AT_FDCWD or a directory fd), lexically. */
int abs_path(int dirfd, const char *p, char *out, size_t cap)
{
    if (!p)
        return -1;
    if (p[0] == '/') {
        size_t at = put_str(out, 0, cap - 1, p);
        out[at] = 0;
        return 0;
    }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base))
            return -1;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, base, sizeof base - 1);
        if (n <= 0)
            return -1;
        base[n] = 0;
    }
    const char *q = p;
    while (q[0] == '.' && q[1] == '/')
        q += 2;
    size_t at = put_str(out, 0, cap - 1, strcmp(base, "/") ? base : "");
    at = put_str(out, at, cap - 1, "/");
    at = put_str(out, at, cap - 1, q);
    out[at] = 0;
    return 0;
}

/* Zeroed memory of a thread's own (its walk caches), from mmap so that only threads that record
 * pay for it, and only for the pages they touch; NULL if refused. */
void *thread_block(size_t n)
{
    RESOLVE(mmap);
    void *p = real_mmap ? real_mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    return p == MAP_FAILED ? NULL : p;
}

void thread_block_free(void *p, size_t n)
{
    RESOLVE(munmap);
    if (p && real_munmap)
        real_munmap(p, n);
}
