/* pchash.h: the hashes of the PC signature, shared by the shim (shim/src/util.c, stackwalk.c) and
 * the BPF capture's loader (bpf/pcsys_frames.c), so that module ids and signatures are computed
 * one way: a module id is pc_hash_bytes of its GNU build id (or of its path when it has none), a
 * signature folds (module id, offset) pairs innermost first with pc_sig_step from PC_SIG_SEED. */
#ifndef PCHASH_H
#define PCHASH_H

#include <stddef.h>
#include <stdint.h>

#define PC_SIG_SEED 0x9e3779b97f4a7c15ULL

static inline uint64_t pc_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* FNV-1a, then mixed; never 0 (0 means "none" in the logs). */
static inline uint64_t pc_hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    h = pc_mix64(h);
    return h ? h : 1;
}

/* One frame into a signature (the finished signature is never 0: 0 becomes 1). */
static inline uint64_t pc_sig_step(uint64_t h, uint64_t module, uint64_t off)
{
    return pc_mix64(h ^ pc_mix64(module + 0x632be59bd9b4e019ULL * off));
}

#endif
