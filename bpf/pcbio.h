/* pcbio.h: the bio capture of `pcstream record --block` — the messages the BPF program
 * (pcbio.bpf.c) sends through its ring buffer, and the file the loader (pcbio.c) writes.
 *
 * The program runs on the tracepoint block:block_bio_queue (tp_btf), for the bios of one device:
 * every bio the file system submits, before merging and splitting. Per bio: the time
 * (bpf_ktime_get_ns, CLOCK_MONOTONIC, the shim's clock), the operation and its flags, the first
 * sector, the bytes, the write-life hint, the submitting process; and for write bios the file
 * pages they carry, as runs: (inode, first page index in that file, first page in the bio,
 * pages). A page whose mapping is anonymous (direct I/O of anonymous memory) or has no host is
 * in no run; journal and metadata bios carry pages of the block device's own inode (sdev is then
 * not the file system's device).
 *
 * THE FILE (little-endian, records of PCBIO_RECORD_BYTES bytes, the first byte of each is its
 * kind):
 *   one PCBIO_KIND_HEADER record, then PCBIO_KIND_BIO records, each followed by the PCBIO_KIND_RUN
 *   records of its pages (a run names its bio by index: the number of BIO records before it; a
 *   run can come after later BIO records when its bio's pages needed several messages), then one
 *   PCBIO_KIND_END record when the loader stopped cleanly (SIGINT/SIGTERM, buffer drained).
 * A reader takes the records as an array (numpy: fromfile, reshape to (-1, 64), split by kind).
 * python/pcstream/groundtruth/biotracer.py reads it; docs/FSMODEL.md ("Ground truth") describes it.
 */
#ifndef PCBIO_H
#define PCBIO_H

#define PCBIO_MAGIC "PCBIO\0\0"  /* 8 bytes with the kind byte in front: see struct pcbio_header */
#define PCBIO_VERSION 1
#define PCBIO_RECORD_BYTES 64

enum pcbio_kind {
    PCBIO_KIND_HEADER = 0,
    PCBIO_KIND_BIO = 1,
    PCBIO_KIND_RUN = 2,
    PCBIO_KIND_END = 3,
};

/* Operations (bi_opf & 0xff, the kernel's enum req_op). */
enum pcbio_op {
    PCBIO_OP_READ = 0,
    PCBIO_OP_WRITE = 1,
    PCBIO_OP_FLUSH = 2,
    PCBIO_OP_DISCARD = 3,
    PCBIO_OP_SECURE_ERASE = 5,
    PCBIO_OP_WRITE_ZEROES = 9,
};

/* Request flags, this file's own bits (the kernel's bit numbers change between versions). */
enum pcbio_flag {
    PCBIO_F_PREFLUSH = 1,  /* REQ_PREFLUSH: a cache flush before the write */
    PCBIO_F_FUA = 2,       /* REQ_FUA */
    PCBIO_F_SYNC = 4,      /* REQ_SYNC */
    PCBIO_F_META = 8,      /* REQ_META (jbd2 and ext4 metadata) */
    PCBIO_F_TRUNCATED = 16, /* more pages than the program walks (PCBIO_MAX_PAGES): runs incomplete */
};

/* At most this many pages of one bio are walked (256 MiB); at most this many runs per message. */
#define PCBIO_MAX_PAGES 65536
#define PCBIO_RUNS_PER_MSG 64

/* ---------- ring buffer messages (BPF program -> loader) ---------- */

struct pcbio_bio_fields {
    __u64 ts_ns;   /* bpf_ktime_get_ns() at queue time */
    __u64 sector;  /* first 512-byte sector */
    __u64 cookie;  /* the bio's address: the messages of one bio share it (and ts_ns) */
    __u32 bytes;   /* bi_iter.bi_size */
    __u32 pid;     /* tgid of the submitting task */
    __u32 dev;     /* bi_bdev->bd_dev, the kernel's dev_t (major << 20 | minor) */
    __u8 op;       /* enum pcbio_op */
    __u8 flags;    /* enum pcbio_flag */
    __u8 hint;     /* bi_write_hint (enum rw_hint: 0 not set, 1 none, 2 short ... 5 extreme) */
    __u8 part;     /* 0 for the first message of a bio, then 1, 2, ... */
    char comm[16]; /* the submitting task's name */
};

struct pcbio_run_fields {
    __u64 ino;      /* i_ino of the page's file */
    __u64 index;    /* page offset in that file of the run's first page, in pages */
    __u32 bio_page; /* the run's first page inside the bio, in 4 KiB pages from bi_sector */
    __u32 pages;    /* length of the run */
    __u32 sdev;     /* i_sb->s_dev of the file (the file system's device, kernel dev_t) */
    __u32 _pad;
};

struct pcbio_msg {
    struct pcbio_bio_fields bio;
    __u32 nruns;
    __u32 _pad;
    struct pcbio_run_fields runs[PCBIO_RUNS_PER_MSG];
};

/* ---------- file records (loader -> file), PCBIO_RECORD_BYTES each ---------- */

struct pcbio_header {
    __u8 kind;         /* PCBIO_KIND_HEADER */
    char magic[7];     /* "PCBIO\0\0" */
    __u32 version;     /* PCBIO_VERSION */
    __u32 record_bytes; /* PCBIO_RECORD_BYTES */
    __u32 dev;         /* the traced device, kernel dev_t */
    __u32 ringbuf_bytes;
    __u64 start_ns;    /* CLOCK_MONOTONIC when the program was attached */
    __u8 _pad[32];
};

struct pcbio_bio_record {
    __u8 kind;     /* PCBIO_KIND_BIO */
    __u8 op;
    __u8 flags;
    __u8 hint;
    __u32 pid;
    __u64 ts_ns;
    __u64 sector;
    __u32 bytes;
    __u32 dev;
    __u32 nruns;   /* runs of this bio (also those in later records) */
    __u32 _pad;
    char comm[16];
    __u8 _pad2[8];
};

struct pcbio_run_record {
    __u8 kind;     /* PCBIO_KIND_RUN */
    __u8 _pad[3];
    __u32 pages;
    __u64 bio;     /* index of the bio: the count of BIO records before it */
    __u64 ino;
    __u64 index;
    __u32 bio_page;
    __u32 sdev;
    __u8 _pad2[24];
};

struct pcbio_end {
    __u8 kind;     /* PCBIO_KIND_END */
    __u8 _pad[7];
    __u64 bios;    /* BIO records written */
    __u64 runs;    /* RUN records written */
    __u64 lost;    /* messages the ring buffer had no room for (their bios are missing) */
    __u64 orphans; /* continuation messages whose first part was lost */
    __u64 truncated; /* bios with PCBIO_F_TRUNCATED */
    __u64 stop_ns; /* CLOCK_MONOTONIC at the end */
    __u8 _pad2[8];
};

#endif
