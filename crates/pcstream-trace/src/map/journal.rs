//! The jbd2 journal in ordered mode. The running transaction collects the metadata blocks that
//! operations dirty (each block once). A commit writes, into the circular journal area, descriptor
//! blocks (254 tags each) interleaved with copies of the metadata blocks, then — after a cache
//! flush when barriers are on — the commit block. Data is never journalled: ordered mode only
//! requires that a transaction's newly allocated data reach the disk before its commit, and the
//! model writes data at allocation time, so that holds by construction.
//!
//! Committed metadata blocks become dirty at their home locations. They are written home (a) by
//! the flusher once they have been dirty for the expiry time, as the block device's dirty buffers
//! are, or (b) by a checkpoint when the journal is fuller than the checkpoint threshold or has no
//! room for the next commit; a checkpoint then records the new journal tail in the journal
//! superblock. Writing every dirty home block frees the whole journal (tail = head).

use pcstream_core::request::meta;
use rustc_hash::FxHashMap;

use super::output::Out;
use super::{FsModel, Sink};

/// Tags per descriptor block (4 KiB, 16-byte tags with the 64-bit and checksum-v3 features).
pub const TAGS_PER_DESCRIPTOR: u64 = 254;

/// The journal; see the module documentation.
///
/// # Invariants
/// `1 <= head < size`; `used <= size - 1`; `running` holds each block once (`in_running`).
pub struct Journal {
    /// Physical extents of the journal file; log block 0 is the journal superblock.
    area: Vec<(u64, u64)>,
    size: u64,
    head: u64,
    used: u64,
    /// Id of the running transaction (from 1).
    pub tid: u64,
    /// When the running transaction got its first block (its commit timer starts then).
    pub started_ns: Option<u64>,
    running: Vec<(u64, u8)>,
    in_running: FxHashMap<u64, ()>,
    /// Committed blocks not yet written home: block → meta class.
    home: FxHashMap<u64, u8>,
    /// When the first of the `home` blocks became dirty.
    home_since_ns: Option<u64>,
    /// A transaction this large is committed at once (jbd2: a quarter of the journal).
    pub max_transaction: usize,
    checkpoint_blocks: u64,
    /// Scratch for sorting.
    scratch: Vec<(u64, u8)>,
    pub commits: u64,
    pub checkpoints: u64,
}

impl Journal {
    /// A journal over the physical extents `area` (in log order), checkpointing when more than
    /// `checkpoint_fraction` of it is in use.
    pub fn new(area: Vec<(u64, u64)>, checkpoint_fraction: f64) -> Journal {
        let size: u64 = area.iter().map(|a| a.1).sum();
        debug_assert!(size >= 64, "journal too small");
        let log = size - 1;
        Journal {
            area,
            size,
            head: 1,
            used: 0,
            tid: 1,
            started_ns: None,
            running: Vec::new(),
            in_running: FxHashMap::default(),
            home: FxHashMap::default(),
            home_since_ns: None,
            max_transaction: (size / 4).max(16) as usize,
            checkpoint_blocks: ((log as f64 * checkpoint_fraction.clamp(0.05, 1.0)) as u64)
                .clamp(1, log),
            scratch: Vec::new(),
            commits: 0,
            checkpoints: 0,
        }
    }

    /// Blocks in the running transaction.
    pub fn running_len(&self) -> usize {
        self.running.len()
    }

    /// Whether metadata awaits writing home.
    pub fn home_dirty(&self) -> bool {
        !self.home.is_empty()
    }

    /// Add metadata block `lpn` of class `class` to the running transaction at time `now`.
    #[inline]
    pub fn add(&mut self, lpn: u64, class: u8, now: u64) {
        if self.in_running.insert(lpn, ()).is_none() {
            self.running.push((lpn, class));
            if self.started_ns.is_none() {
                self.started_ns = Some(now);
            }
        }
    }

    /// Log blocks a commit of the running transaction takes.
    fn commit_blocks(&self) -> u64 {
        let n = self.running.len() as u64;
        n + n.div_ceil(TAGS_PER_DESCRIPTOR) + 1
    }

    /// Physical runs of log positions `[pos, pos + n)` (wrapping past the end to position 1).
    fn log_runs(&self, mut pos: u64, mut n: u64, mut f: impl FnMut(u64, u64)) {
        while n > 0 {
            if pos >= self.size {
                pos = 1;
            }
            let upto = n.min(self.size - pos);
            // Walk the area extents covering [pos, pos + upto).
            let mut base = 0;
            let mut left = upto;
            let mut p = pos;
            for &(phys, len) in &self.area {
                if left == 0 {
                    break;
                }
                if p < base + len {
                    let off = p - base;
                    let k = left.min(len - off);
                    f(phys + off, k);
                    p += k;
                    left -= k;
                }
                base += len;
            }
            pos += upto;
            n -= upto;
        }
    }

    /// Commit the running transaction (nothing when it is empty). Checkpoints first when the
    /// journal lacks room, and afterwards when it is fuller than the threshold.
    pub(crate) fn commit(
        &mut self,
        out: &mut Out,
        sink: &mut dyn FnMut(pcstream_core::request::Request),
    ) {
        if self.running.is_empty() {
            return;
        }
        let need = self.commit_blocks();
        if self.used + need > self.size - 1 {
            self.checkpoint(out, sink);
        }
        // Descriptor + copies, as one sequential stream of log blocks.
        let body = need - 1;
        let head = self.head;
        self.log_runs(head, body, |p, k| out.meta_write(sink, p, k, meta::JOURNAL));
        if out.barrier {
            out.flush(sink);
        }
        let commit_pos = {
            let p = head + body;
            if p >= self.size {
                p - (self.size - 1)
            } else {
                p
            }
        };
        self.log_runs(commit_pos, 1, |p, k| {
            out.meta_write(sink, p, k, meta::JOURNAL)
        });
        self.head = commit_pos + 1;
        if self.head >= self.size {
            self.head = 1;
        }
        self.used += need;
        // The blocks are now dirty at home.
        for &(lpn, class) in &self.running {
            self.home.insert(lpn, class);
        }
        if self.home_since_ns.is_none() {
            self.home_since_ns = Some(out.now);
        }
        self.running.clear();
        self.in_running.clear();
        self.started_ns = None;
        self.tid += 1;
        self.commits += 1;
        if self.used > self.checkpoint_blocks {
            self.checkpoint(out, sink);
        }
    }

    /// Write every dirty home block (sorted, contiguous blocks of one class merged) and free the
    /// journal.
    fn write_home(&mut self, out: &mut Out, sink: &mut dyn FnMut(pcstream_core::request::Request)) {
        self.scratch.clear();
        self.scratch.extend(self.home.drain());
        self.scratch.sort_unstable();
        let mut i = 0;
        while i < self.scratch.len() {
            let (start, class) = self.scratch[i];
            let mut j = i + 1;
            while j < self.scratch.len()
                && self.scratch[j].0 == start + (j - i) as u64
                && self.scratch[j].1 == class
            {
                j += 1;
            }
            out.meta_write(sink, start, (j - i) as u64, class);
            i = j;
        }
        self.home_since_ns = None;
        self.used = 0;
    }

    /// Checkpoint: write the metadata home, then the journal superblock with the new tail.
    pub(crate) fn checkpoint(
        &mut self,
        out: &mut Out,
        sink: &mut dyn FnMut(pcstream_core::request::Request),
    ) {
        self.write_home(out, sink);
        let sb = self.area[0].0;
        out.meta_write(sink, sb, 1, meta::JOURNAL);
        self.checkpoints += 1;
    }

    /// The flusher's pass at `now`: metadata dirty at home for `expire_ns` or longer is written.
    pub(crate) fn expire_home(
        &mut self,
        now: u64,
        expire_ns: u64,
        out: &mut Out,
        sink: &mut dyn FnMut(pcstream_core::request::Request),
    ) {
        if let Some(since) = self.home_since_ns {
            if since.saturating_add(expire_ns) <= now {
                self.write_home(out, sink);
            }
        }
    }

    /// Blocks of the journal (superblock included).
    pub fn size(&self) -> u64 {
        self.size
    }
    /// Next log position (for tests).
    pub fn head(&self) -> u64 {
        self.head
    }
}

// ---------------------------------------------------------------- the model's use of the journal

impl FsModel {
    #[inline]
    pub(super) fn jadd(&mut self, lpn: u64, class: u8) {
        if !self.quiet {
            self.journal.add(lpn, class, self.out.now);
        }
    }

    pub(super) fn jadd_group(&mut self, start: u64, len: u64) {
        let g0 = self.layout.group_of(start);
        let g1 = self.layout.group_of(start + len - 1);
        for g in g0..=g1 {
            self.jadd(self.layout.block_bitmap(g).0, meta::BITMAP);
            self.jadd(self.layout.descriptor_block(g).0, meta::BITMAP);
        }
    }

    /// The inode of `f` changed in the running transaction (`data`: a change fdatasync must
    /// commit: size or allocation).
    pub(super) fn touch_inode(&mut self, slot: u32, data: bool) {
        let tid = self.journal.tid;
        let f = self.files[slot as usize].as_mut().expect("live file");
        f.meta_tid = tid;
        if data {
            f.datasync_tid = tid;
        }
        if f.inode_tid != tid || self.journal.running_len() == 0 {
            f.inode_tid = tid;
            let b = self.layout.inode_block(f.ino).0;
            self.jadd(b, meta::INODE);
        }
    }

    /// Commit the running transaction, then release (and discard) the extents it freed.
    ///
    /// With `discard_free_tail` a discard covers the freed extent and the free blocks that
    /// follow it up to the next used block or the end of the group, as measured on Linux 6.18
    /// (`-o discard`: deleting the last file of a group discards the group's whole free tail).
    /// Free blocks were discarded when they were freed, so the extension invalidates nothing
    /// more on the device; it keeps the discarded byte count comparable.
    pub(super) fn commit(&mut self, sink: Sink) {
        self.journal.commit(&mut self.out, sink);
        if self.pending_free.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending_free);
        for p in &pending {
            self.free.release(p.start, p.len);
            self.out.freed(p.start, p.len);
            self.mark_untrimmed(p.start);
        }
        for p in &pending {
            if self.opts.discard {
                let len = if self.opts.discard_free_tail {
                    let group_end = self.layout.group_end(self.layout.group_of(p.start));
                    self.free
                        .free_run_at(p.start)
                        .min(group_end - p.start)
                        .max(p.len)
                } else {
                    p.len
                };
                self.out.trim(sink, p.start, len, p.file, p.class);
            }
        }
        self.pending_free = pending;
        self.pending_free.clear();
    }
}
