/* Writes through io_uring with raw system calls (no liburing): uring_short() 64 x 4 KiB with
 * IORING_OP_WRITE to a.dat then one IORING_OP_FSYNC, uring_long() 128 x 4 KiB with
 * IORING_OP_WRITEV (two 2 KiB iovecs each) to b.dat, uring_fixed() 32 x 4 KiB with IORING_OP_WRITE
 * on c.dat registered as fixed file 0 (IOSQE_FIXED_FILE); one request at a time, each awaited.
 * Prints "uringwrite ok", exits 0 (1: io_uring unavailable). test_record_bpf.py builds it with
 * frame pointers. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

struct ring {
    int fd;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static int ring_init(struct ring *r)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    r->fd = (int)syscall(SYS_io_uring_setup, 8, &p);
    if (r->fd < 0)
        return -1;
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
    r->sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   r->fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED)
        return -1;
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(cq + p.cq_off.head);
    r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    return 0;
}

/* Submit one request and wait for its completion: its result. */
__attribute__((noinline)) static int submit(struct ring *r, const struct io_uring_sqe *s)
{
    unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask;
    r->sqes[idx] = *s;
    r->sq_array[idx] = idx;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
    if (syscall(SYS_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
        return -1;
    unsigned head = *r->cq_head;
    if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
        return -1;
    int res = r->cqes[head & *r->cq_mask].res;
    __atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
    return res;
}

static char block[4096];

__attribute__((noinline)) static int uring_short(struct ring *r)
{
    int fd = open("a.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 64; i++) {
        struct io_uring_sqe s = {.opcode = IORING_OP_WRITE, .fd = fd, .off = (__u64)i * sizeof block,
                                 .addr = (__u64)(unsigned long)block, .len = sizeof block};
        if (submit(r, &s) != (int)sizeof block)
            return -1;
    }
    struct io_uring_sqe s = {.opcode = IORING_OP_FSYNC, .fd = fd};
    return submit(r, &s) == 0 ? close(fd) : -1;
}

__attribute__((noinline)) static int uring_long(struct ring *r)
{
    int fd = open("b.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    struct iovec v[2] = {{block, 2048}, {block + 2048, 2048}};
    for (int i = 0; i < 128; i++) {
        struct io_uring_sqe s = {.opcode = IORING_OP_WRITEV, .fd = fd, .off = (__u64)i * sizeof block,
                                 .addr = (__u64)(unsigned long)v, .len = 2};
        if (submit(r, &s) != (int)sizeof block)
            return -1;
    }
    return close(fd);
}

__attribute__((noinline)) static int uring_fixed(struct ring *r)
{
    int fd = open("c.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (syscall(SYS_io_uring_register, r->fd, IORING_REGISTER_FILES, &fd, 1) != 0)
        return -1;
    for (int i = 0; i < 32; i++) {
        struct io_uring_sqe s = {.opcode = IORING_OP_WRITE, .flags = IOSQE_FIXED_FILE, .fd = 0,
                                 .off = (__u64)i * sizeof block, .addr = (__u64)(unsigned long)block,
                                 .len = sizeof block};
        if (submit(r, &s) != (int)sizeof block)
            return -1;
    }
    return close(fd);
}

int main(void)
{
    struct ring r;
    memset(block, 'u', sizeof block);
    if (ring_init(&r) != 0)
        return 1;
    if (uring_short(&r) != 0 || uring_long(&r) != 0 || uring_fixed(&r) != 0)
        return 2;
    printf("uringwrite ok\n");
    return 0;
}
