/* hooks_uring.c: liburing's set-up functions: a process that sets up a ring is marked once
 * (uring_used, lifecycle.c); the I/O submitted through the ring bypasses every hook and is not
 * recorded. */
#include "shim.h"

/* ---------- liburing: set-up is counted (ring I/O bypasses every hook) ---------- */
#define URING_HOOK(name, params, args)                                      \
    EXPORT int name params                                                  \
    {                                                                       \
        RESOLVE(name);                                                      \
        if (!real_##name)                                                   \
            return -ENOSYS;                                                 \
        int r = real_##name args;                                           \
        if (r >= 0)                                                         \
            uring_used();                                                   \
        return r;                                                           \
    }
URING_HOOK(io_uring_queue_init, (unsigned entries, void *ring, unsigned flags), (entries, ring, flags))
URING_HOOK(io_uring_queue_init_params, (unsigned entries, void *ring, void *p), (entries, ring, p))
URING_HOOK(io_uring_queue_init_mem, (unsigned entries, void *ring, void *p, void *buf, size_t n),
           (entries, ring, p, buf, n))
URING_HOOK(io_uring_setup, (unsigned entries, void *p), (entries, p))
