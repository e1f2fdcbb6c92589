// SPDX-License-Identifier: GPL-2.0
/* pcbio.bpf.c: every bio queued on one block device, with the file pages it carries (the message
 * format is in pcbio.h). Attached to the BTF tracepoint block_bio_queue, which fires once per bio
 * the file system submits (before splitting and merging), so its bio_vec table is the
 * submitter's: the pages of the page cache being written back, or the journal's buffers.
 *
 * The pages are walked as bio_for_each_segment does (from bi_iter.bi_idx and bi_bvec_done, for
 * bi_size bytes), one 4 KiB page per step of a bpf_loop, so the verifier sees one bounded loop. A
 * page of a large folio is a tail page: its file and index are the head's, plus its position in
 * the folio. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pcbio.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load. */
const volatile __u32 target_dev = 0;

/* Counters the loader reads at the end. */
__u64 lost_msgs = 0;
__u64 truncated_bios = 0;

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 8 << 20); /* the loader may change it */
} events SEC(".maps");


/* struct page's page-cache index was `index` before Linux 6.18 and `__folio_index` since. */
struct page___folio_index {
    unsigned long __folio_index;
} __attribute__((preserve_access_index));
struct page___index {
    unsigned long index;
} __attribute__((preserve_access_index));

#define PAGE_BYTES 4096u
#define PAGE_SHIFT_BYTES 12

/* State of the page walk. It lives in a map, not on the stack: the verifier then knows nothing
 * of its values and checks the loop's body once, instead of once per combination of values it
 * could track. Kernel pointers are kept as numbers and read with bpf_probe_read_kernel (through
 * BPF_CORE_READ). */
struct walk {
    __u64 vecs;       /* bio->bi_io_vec */
    __u64 page;       /* struct page of the current 4 KiB step */
    __u64 mapping;    /* address_space of the last page looked up, and what it gave: */
    __u64 ino;
    __u32 sdev;
    __u32 idx;        /* next bio_vec to load */
    __u32 first_skip; /* bi_bvec_done: bytes of the first bio_vec already done */
    __u32 vec_left;   /* bytes left in the current bio_vec */
    __u32 in_page;    /* byte offset inside the current page */
    __u32 done;       /* bytes of the bio walked */
    __u32 size;       /* bi_iter.bi_size */
    __u32 page_size;  /* sizeof(struct page) in the running kernel */
    __u32 nruns;      /* runs in the scratch message */
    __u32 part;       /* messages sent for this bio */
    __s32 open;       /* 1 when runs[nruns - 1] may still grow */
    __u32 _pad;
};

/* The message being built (too large for the 512-byte BPF stack) and the walk. */
struct scratch {
    struct pcbio_msg msg;
    struct walk walk;
};
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline void send(struct pcbio_msg *m, struct walk *w)
{
    __u32 n = w->nruns;
    if (n > PCBIO_RUNS_PER_MSG)
        n = PCBIO_RUNS_PER_MSG;
    m->nruns = n;
    m->bio.part = (__u8)(w->part < 255 ? w->part : 255);
    __u64 size = sizeof(struct pcbio_msg) - sizeof(m->runs) + (__u64)n * sizeof(struct pcbio_run_fields);
    if (bpf_ringbuf_output(&events, m, size, 0) != 0)
        __sync_fetch_and_add(&lost_msgs, 1);
    w->part++;
    w->nruns = 0;
    w->open = 0;
}

/* The file (ino, sdev) and page index of the struct page at `pg`; 0 when it has no file. */
static __always_inline int page_file(struct walk *w, __u64 pg, __u64 *index)
{
    struct page *p = (struct page *)pg;
    __u64 head = pg;
    unsigned long ch = BPF_CORE_READ(p, compound_head);
    if (ch & 1)
        head = ch - 1;
    struct page *h = (struct page *)head;
    __u64 mapping = (__u64)BPF_CORE_READ(h, mapping);
    if (mapping == 0 || (mapping & 3))  /* none, anonymous or movable (PAGE_MAPPING_FLAGS) */
        return 0;
    unsigned long base;
    if (bpf_core_field_exists(struct page___folio_index, __folio_index))
        base = BPF_CORE_READ((struct page___folio_index *)h, __folio_index);
    else
        base = BPF_CORE_READ((struct page___index *)h, index);
    *index = base + (pg - head) / w->page_size;
    if (mapping != w->mapping) {
        struct address_space *as = (struct address_space *)mapping;
        struct inode *host = BPF_CORE_READ(as, host);
        if (!host)
            return 0;
        w->mapping = mapping;
        w->ino = BPF_CORE_READ(host, i_ino);
        w->sdev = BPF_CORE_READ(host, i_sb, s_dev);
    }
    return 1;
}

static long step(__u64 i, void *ctx)
{
    __u32 zero = 0;
    struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
    if (!s)
        return 1;
    struct pcbio_msg *m = &s->msg;
    struct walk *w = &s->walk;
    if (w->done >= w->size)
        return 1;
    if (w->vec_left == 0) {
        struct bio_vec v;
        if (bpf_probe_read_kernel(&v, sizeof(v), (void *)(w->vecs + (__u64)w->idx * sizeof(v))) != 0)
            return 1;
        w->idx++;
        __u32 off = v.bv_offset + w->first_skip;
        __u32 len = v.bv_len > w->first_skip ? v.bv_len - w->first_skip : 0;
        w->first_skip = 0;
        if (len > w->size - w->done)
            len = w->size - w->done;
        w->vec_left = len;
        w->page = (__u64)v.bv_page + (__u64)(off >> PAGE_SHIFT_BYTES) * w->page_size;
        w->in_page = off & (PAGE_BYTES - 1);
        if (len == 0)
            return 0;
    }
    __u32 chunk = PAGE_BYTES - w->in_page;
    if (chunk > w->vec_left)
        chunk = w->vec_left;
    __u32 bio_page = w->done >> PAGE_SHIFT_BYTES;
    __u64 index = 0;
    if (page_file(w, w->page, &index)) {
        __u32 n = w->nruns;
        int joined = 0;
        if (w->open && n > 0) {
            /* the mask keeps the index provably inside the array (n <= PCBIO_RUNS_PER_MSG) */
            struct pcbio_run_fields *last = &m->runs[(n - 1) & (PCBIO_RUNS_PER_MSG - 1)];
            if (last->ino == w->ino && last->sdev == w->sdev) {
                __u64 li = last->index + last->pages;
                __u32 lb = last->bio_page + last->pages;
                if (li - 1 == index && lb - 1 == bio_page) {
                    joined = 1; /* another piece of the run's last page (sub-page segments) */
                } else if (li == index && lb == bio_page) {
                    last->pages++;
                    joined = 1;
                }
            }
        }
        if (!joined) {
            if (n >= PCBIO_RUNS_PER_MSG) {
                send(m, w);
                n = 0;
            }
            struct pcbio_run_fields *r = &m->runs[n & (PCBIO_RUNS_PER_MSG - 1)];
            r->ino = w->ino;
            r->index = index;
            r->bio_page = bio_page;
            r->pages = 1;
            r->sdev = w->sdev;
            r->_pad = 0;
            w->nruns = (n & (PCBIO_RUNS_PER_MSG - 1)) + 1;
            w->open = 1;
        }
    } else {
        w->open = 0;
    }
    w->done += chunk;
    w->vec_left -= chunk;
    w->in_page += chunk;
    if (w->in_page >= PAGE_BYTES) {
        w->in_page = 0;
        w->page += w->page_size;
    }
    return w->done >= w->size;
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(pcbio_queue, struct bio *bio)
{
    __u32 dev = BPF_CORE_READ(bio, bi_bdev, bd_dev);
    if (dev != target_dev)
        return 0;
    __u32 zero = 0;
    struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
    if (!s)
        return 0;
    struct pcbio_msg *m = &s->msg;
    struct walk *w = &s->walk;
    __u32 opf = BPF_CORE_READ(bio, bi_opf);
    __u8 flags = 0;
    if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)))
        flags |= PCBIO_F_PREFLUSH;
    if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA)))
        flags |= PCBIO_F_FUA;
    if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC)))
        flags |= PCBIO_F_SYNC;
    if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
        flags |= PCBIO_F_META;
    struct pcbio_bio_fields *b = &m->bio;
    b->ts_ns = bpf_ktime_get_ns();
    b->sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
    b->cookie = (__u64)bio;
    b->bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
    b->pid = bpf_get_current_pid_tgid() >> 32;
    b->dev = dev;
    b->op = opf & 0xff;
    /* enum rw_hint is one byte (__packed) in the kernel; vmlinux.h declares it as an int, so the
     * read takes three bytes of the next fields with it. */
    b->hint = BPF_CORE_READ(bio, bi_write_hint) & 0xff;
    b->part = 0;
    b->flags = flags;
    bpf_get_current_comm(b->comm, sizeof(b->comm));

    __builtin_memset(w, 0, sizeof(*w));
    w->size = b->bytes;
    w->page_size = bpf_core_type_size(struct page);
    if (b->op == PCBIO_OP_WRITE && w->size > 0 && w->page_size > 0) {
        w->vecs = (__u64)BPF_CORE_READ(bio, bi_io_vec);
        w->idx = BPF_CORE_READ(bio, bi_iter.bi_idx);
        w->first_skip = BPF_CORE_READ(bio, bi_iter.bi_bvec_done);
        if (w->vecs) {
            /* a step per page, and one more per segment that starts or ends inside a page */
            __u32 steps = 2 * (w->size >> PAGE_SHIFT_BYTES) + 16;
            if (steps > PCBIO_MAX_PAGES)
                steps = PCBIO_MAX_PAGES;
            bpf_loop(steps, step, NULL, 0);
            if (w->done < w->size) {
                m->bio.flags |= PCBIO_F_TRUNCATED;
                __sync_fetch_and_add(&truncated_bios, 1);
            }
        }
    }
    /* The last (or only) message of the bio (the walk may have sent earlier ones). */
    send(m, w);
    return 0;
}
