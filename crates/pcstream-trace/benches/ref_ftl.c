/*
 * ref_ftl: the reference the engine's speed is measured against (`cargo bench -p pcstream-trace
 * --bench vs_c`, docs/PERFORMANCE.md). The simplest correct page-mapped FTL: an L2P and a
 * reverse map, per-unit valid counts, greedy GC from lists of units by valid count, one write
 * point for host data and GC copies alike, no timing.
 *
 *   ref_ftl LPNS LOGICAL UNITS UNIT_PAGES GC_LOW GC_HIGH
 *
 * LPNS is a file of little-endian u32 LPNs, one per host page written, in trace order. The loop
 * writes LPNs 0 .. LOGICAL-1 once in order (the prefill), then the file's pages; GC runs when a
 * unit is needed and at most GC_LOW units are free, and collects until GC_HIGH are free. It
 * prints the trace's host pages, GC copies, WAF and the seconds the whole run took (file read
 * included), one line. Built with -DREF_PREFETCH it also prefetches, a few writes ahead, the
 * map entries the host writes will touch.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NIL UINT32_MAX

static uint32_t *l2p, *rev, *valid, *next, *prev, *head, *tail, *freeq;
static uint8_t *sealed;
static uint32_t units, unit_pages, gc_low, gc_high, min_bucket;
static uint32_t free_head, free_count; /* free units: a ring of `units` entries */
static uint32_t open_unit = NIL, open_next;
static uint64_t gc_pages;

static void *alloc(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "ref_ftl: out of memory (%zu x %zu bytes)\n", n, size);
        exit(1);
    }
    return p;
}

/* Append unit u to the list of units with b valid pages (oldest first). */
static void link_unit(uint32_t u, uint32_t b) {
    uint32_t t = tail[b];
    prev[u] = t;
    next[u] = NIL;
    if (t == NIL)
        head[b] = u;
    else
        next[t] = u;
    tail[b] = u;
    if (b < min_bucket)
        min_bucket = b;
}

static void unlink_unit(uint32_t u, uint32_t b) {
    uint32_t p = prev[u], n = next[u];
    if (p == NIL)
        head[b] = n;
    else
        next[p] = n;
    if (n == NIL)
        tail[b] = p;
    else
        prev[n] = p;
}

/* The page at ppn no longer holds valid data. */
static void invalidate(uint32_t ppn) {
    uint32_t u = ppn / unit_pages;
    uint32_t v = valid[u]--;
    rev[ppn] = NIL;
    if (sealed[u]) {
        unlink_unit(u, v);
        link_unit(u, v - 1);
    }
}

static void push_free(uint32_t u) {
    freeq[(free_head + free_count) % units] = u;
    free_count++;
}

static uint32_t pop_free(void) {
    uint32_t u = freeq[free_head];
    free_head = (free_head + 1) % units;
    free_count--;
    return u;
}

static void collect(void);

/* The next page of the write point, a new unit opened (and GC run first) when it is full. */
static uint32_t alloc_page(int host) {
    /* GC copies go to this same write point: they may open the unit the host then fills. */
    if (open_unit == NIL && host && free_count <= gc_low)
        collect();
    if (open_unit == NIL) {
        if (free_count == 0) {
            fprintf(stderr, "ref_ftl: no free unit left\n");
            exit(1);
        }
        open_unit = pop_free();
        open_next = 0;
    }
    uint32_t ppn = open_unit * unit_pages + open_next++;
    valid[open_unit]++;
    if (open_next == unit_pages) {
        sealed[open_unit] = 1;
        link_unit(open_unit, valid[open_unit]);
        open_unit = NIL;
    }
    return ppn;
}

/* Greedy GC: the sealed unit with the fewest valid pages (the oldest of them) until enough are
 * free; its valid pages are copied to the write point, then it is erased. */
static void collect(void) {
    while (free_count < gc_high) {
        while (min_bucket <= unit_pages && head[min_bucket] == NIL)
            min_bucket++;
        if (min_bucket > unit_pages)
            return;
        uint32_t victim = head[min_bucket];
        unlink_unit(victim, min_bucket);
        sealed[victim] = 0;
        uint32_t base = victim * unit_pages;
        for (uint32_t off = 0; off < unit_pages && valid[victim] > 0; off++) {
            uint32_t lpn = rev[base + off];
            if (lpn == NIL)
                continue;
            uint32_t to = alloc_page(0);
            rev[to] = lpn;
            l2p[lpn] = to;
            rev[base + off] = NIL;
            valid[victim]--;
            gc_pages++;
        }
        push_free(victim);
    }
}

static void write_page(uint32_t lpn) {
    uint32_t old = l2p[lpn];
    if (old != NIL)
        invalidate(old);
    uint32_t ppn = alloc_page(1);
    rev[ppn] = lpn;
    l2p[lpn] = ppn;
}

static uint32_t arg(char **argv, int i) {
    char *end;
    unsigned long v = strtoul(argv[i], &end, 10);
    if (*end || v == 0 || v >= NIL) {
        fprintf(stderr, "ref_ftl: argument %d '%s' is not a positive 32-bit number\n", i,
                argv[i]);
        exit(2);
    }
    return (uint32_t)v;
}

static uint32_t *read_lpns(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    *n = (size_t)size / 4;
    uint32_t *lpns = alloc(*n + 1, 4);
    if (fread(lpns, 4, *n, f) != *n) {
        fprintf(stderr, "ref_ftl: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    return lpns;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: ref_ftl LPNS LOGICAL UNITS UNIT_PAGES GC_LOW GC_HIGH\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t logical = arg(argv, 2);
    units = arg(argv, 3);
    unit_pages = arg(argv, 4);
    gc_low = arg(argv, 5);
    gc_high = arg(argv, 6);
    uint64_t physical = (uint64_t)units * unit_pages;
    if (physical >= NIL || logical >= physical) {
        fprintf(stderr, "ref_ftl: need LOGICAL < UNITS x UNIT_PAGES < 2^32\n");
        return 2;
    }
    size_t n;
    uint32_t *lpns = read_lpns(argv[1], &n);
    l2p = alloc(logical, 4);
    rev = alloc(physical, 4);
    valid = alloc(units, 4);
    next = alloc(units, 4);
    prev = alloc(units, 4);
    freeq = alloc(units, 4);
    sealed = alloc(units, 1);
    head = alloc(unit_pages + 1, 4);
    tail = alloc(unit_pages + 1, 4);
    for (uint32_t i = 0; i < logical; i++)
        l2p[i] = NIL;
    for (uint64_t p = 0; p < physical; p++)
        rev[p] = NIL;
    for (uint32_t b = 0; b <= unit_pages; b++)
        head[b] = tail[b] = NIL;
    for (uint32_t u = 0; u < units; u++)
        push_free(u);
    min_bucket = unit_pages + 1;
    for (uint32_t lpn = 0; lpn < logical; lpn++)
        write_page(lpn);
    uint64_t gc_before = gc_pages;
    for (size_t i = 0; i < n; i++) {
        if (lpns[i] >= logical) {
            fprintf(stderr, "ref_ftl: LPN %u at page %zu is beyond %u\n", lpns[i], i, logical);
            return 2;
        }
#ifdef REF_PREFETCH
        /* The variant built with -DREF_PREFETCH starts loading the map entry of the page 16
         * writes ahead and the reverse-map entry of its old version 8 ahead, as the engine does. */
        if (i + 16 < n)
            __builtin_prefetch(&l2p[lpns[i + 16]]);
        if (i + 8 < n && l2p[lpns[i + 8]] != NIL)
            __builtin_prefetch(&rev[l2p[lpns[i + 8]]]);
#endif
        write_page(lpns[i]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    uint64_t gc = gc_pages - gc_before;
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("host_pages %zu gc_pages %llu waf %.6f seconds %.6f\n", n, (unsigned long long)gc,
           n ? (double)(n + gc) / n : 1.0, secs);
    return 0;
}
