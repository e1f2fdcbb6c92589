//! The model's block allocation, as ext4's mballoc does it: the goal block of a file's next
//! extent, per-inode preallocation windows and per-CPU locality groups for small files, extent
//! map updates (with extent-tree blocks), and freeing — immediately for never-written
//! preallocations, at the next commit for freed data (then discarded with `-o discard`).
//! The free-space bitmaps themselves are in [`super::freespace`].

use pcstream_core::request::meta;

use super::extent::{tree_blocks, EXTENTS_PER_BLOCK};
use super::freespace::normalize;

/// Longest unwritten extent ext4 stores (blocks): a fallocate range up to this is allocated
/// without normalisation (`EXT_UNWRITTEN_MAX_LEN`).
const EXT_UNWRITTEN_MAX_LEN: u64 = 32767;
use super::*;

impl FsModel {
    /// Free now (preallocated blocks never written: no journal wait, no discard).
    pub(super) fn release_now(&mut self, start: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.free.release(start, len);
        self.mark_untrimmed(start);
        self.jadd_group(start, len);
    }

    /// Free when the running transaction commits (blocks that held data or metadata).
    pub(super) fn free_later(&mut self, start: u64, len: u64, file: u32, class: u16) {
        if len == 0 {
            return;
        }
        self.jadd_group(start, len);
        if let Some(last) = self.pending_free.last_mut() {
            if last.start + last.len == start && last.file == file {
                last.len += len;
                return;
            }
        }
        self.pending_free.push(PendingFree {
            start,
            len,
            file,
            class,
        });
    }

    /// Take up to `want` blocks near `goal` (see [`FreeSpace::find`]); on a full file system,
    /// commit (releasing blocks freed by the running transaction) and drop preallocations, then
    /// try again.
    pub(super) fn take(
        &mut self,
        goal: u64,
        want: u64,
        from_group: Option<u32>,
        sink: Sink,
    ) -> Result<(u64, u64), FsError> {
        for attempt in 0..2 {
            if let Some((s, n)) = self.free.find(goal, want, from_group) {
                self.free.take(s, n);
                self.jadd_group(s, n);
                return Ok((s, n));
            }
            if attempt == 0 {
                self.commit(sink);
                self.drop_all_preallocations();
            }
        }
        let what = match self.aged_free {
            Some((share, free)) => format!(
                "the aged file system is full: the program needs more than the {free} blocks ({} MiB) left free after aging {} blocks to {:.0} %; lower --age or raise --capacity",
                free / 256,
                self.opts.capacity_pages,
                share * 100.0
            ),
            None => format!(
                "the modelled file system is full ({} blocks of 4 KiB, {} MiB); raise --capacity",
                self.opts.capacity_pages,
                self.opts.capacity_pages / 256
            ),
        };
        Err(FsError {
            event: self.events.saturating_sub(1),
            what,
        })
    }

    pub(super) fn drop_all_preallocations(&mut self) {
        for i in 0..self.lg.len() {
            if let Some((s, n)) = self.lg[i].take() {
                self.release_now(s, n);
            }
        }
        for i in 0..self.files.len() {
            if let Some(pa) = self.files[i].as_mut().and_then(|f| f.pa.take()) {
                self.release_now(pa.pstart, pa.len);
            }
        }
    }

    pub(super) fn discard_pa(&mut self, f: &mut File) {
        if let Some(pa) = f.pa.take() {
            self.release_now(pa.pstart, pa.len);
        }
    }

    /// Allocation goal for logical block `l` of `f`: continue the previous extent, else the
    /// start of the group after the inode's flex group base (ext4 keeps data off the group that
    /// carries the flex group's metadata).
    pub(super) fn goal(&self, f: &File, l: u64) -> u64 {
        if let Some(g) = f.ext.goal_for(l) {
            return g;
        }
        let mut g = self.layout.inode_group(f.ino) & !(FLEX_GROUPS - 1);
        if g + 1 < self.layout.groups {
            g += 1;
        }
        self.layout.group_start(g)
    }

    /// Record a new mapping in `f` and the extent-tree blocks it may need.
    pub(super) fn map(
        &mut self,
        f: &mut File,
        l: u64,
        phys: u64,
        n: u64,
        unwritten: bool,
        sink: Sink,
    ) -> Result<(), FsError> {
        let idx = f.ext.insert(l, phys, n, unwritten);
        self.update_tree(f, idx, sink)
    }

    /// Keep `f.tree` as large as its extents need; dirty the leaf holding extent `idx`.
    pub(super) fn update_tree(
        &mut self,
        f: &mut File,
        idx: usize,
        sink: Sink,
    ) -> Result<(), FsError> {
        let need = tree_blocks(f.ext.len());
        while f.tree.len() < need {
            let goal = f.tree.last().map_or_else(|| self.goal(f, 0), |b| b + 1);
            let (b, _) = self.take(goal, 1, None, sink)?;
            f.tree.push(b);
        }
        while f.tree.len() > need {
            let b = f.tree.pop().expect("non-empty");
            self.free_later(b, 1, 0, 0);
        }
        if !f.tree.is_empty() {
            let leaf = (idx / EXTENTS_PER_BLOCK).min(f.tree.len() - 1);
            self.jadd(f.tree[leaf], meta::OTHER);
        }
        Ok(())
    }

    /// Allocate and map `[l, l + n)` (unmapped) of `f`, as mballoc would: from the inode's
    /// preallocation, from the locality group's window for small files, or a normalised window
    /// (the surplus kept as the inode's preallocation) for larger ones.
    pub(super) fn allocate(
        &mut self,
        f: &mut File,
        l: u64,
        n: u64,
        unwritten: bool,
        sink: Sink,
    ) -> Result<(), FsError> {
        let (mut l, mut rem) = (l, n);
        while rem > 0 {
            let k = match self.allocate_from_prealloc(f, l, rem, unwritten, sink)? {
                Some(k) => k,
                None => self.allocate_some(f, l, rem, unwritten, sink)?,
            };
            l += k;
            rem -= k;
        }
        Ok(())
    }

    /// Map the start of `[l, l + rem)` from the inode's preallocation when it holds `l`:
    /// the blocks mapped. A preallocation that does not hold `l` is discarded (`None`).
    fn allocate_from_prealloc(
        &mut self,
        f: &mut File,
        l: u64,
        rem: u64,
        unwritten: bool,
        sink: Sink,
    ) -> Result<Option<u64>, FsError> {
        let Some(pa) = f.pa else {
            return Ok(None);
        };
        if !(l >= pa.lstart && l < pa.lstart + pa.len) {
            self.discard_pa(f);
            return Ok(None);
        }
        let skip = l - pa.lstart;
        self.release_now(pa.pstart, skip);
        let k = rem.min(pa.len - skip);
        let phys = pa.pstart + skip;
        let left = pa.len - skip - k;
        f.pa = (left > 0).then_some(Prealloc {
            lstart: l + k,
            pstart: phys + k,
            len: left,
        });
        self.map(f, l, phys, k, unwritten, sink)?;
        Ok(Some(k))
    }

    /// Allocate and map the start of `[l, l + rem)` (no preallocation holds `l`): the blocks
    /// mapped.
    fn allocate_some(
        &mut self,
        f: &mut File,
        l: u64,
        rem: u64,
        unwritten: bool,
        sink: Sink,
    ) -> Result<u64, FsError> {
        let size_blocks = f.size.div_ceil(BLOCK).max(l + rem);
        let goal = self.goal(f, l);
        // ext4's `ext4_mb_group_or_file` sends a file of at most `stream_req` blocks to the
        // locality group's window whether or not it is open (measured on Linux 6.18: small
        // files written, closed and synced land one after another in a 512-block window, a
        // 32-block one apart).
        let small = size_blocks <= self.opts.stream_request_pages;
        if !small && f.open_fds == 0 && l + rem <= f.size.div_ceil(BLOCK) {
            // Writeback of a larger file no one has open (written, closed, flushed later):
            // NOPREALLOC — exactly the blocks asked for, at the goal or scanning on from the
            // goal's group, with no preallocation window or global stream goal. (Measured: a
            // real ext4 aged with closed files fills the groups after the goal and leaves the
            // flex group's first group, the one holding the metadata, for last.)
            let (s, k) = self.take(goal, rem, None, sink)?;
            self.map(f, l, s, k, unwritten, sink)?;
            return Ok(k);
        }
        if small {
            return self.allocate_small(f, l, rem, goal, unwritten, sink);
        }
        self.allocate_stream(f, l, rem, size_blocks, goal, unwritten, sink)
    }

    /// A small file: the start of `[l, l + rem)` from the locality group's window (a new
    /// window when the current one is too small; what is left of it stays the group's).
    fn allocate_small(
        &mut self,
        f: &mut File,
        l: u64,
        rem: u64,
        goal: u64,
        unwritten: bool,
        sink: Sink,
    ) -> Result<u64, FsError> {
        let lgi = (f.last_pid % self.lg.len() as u32) as usize;
        if let Some((s, k)) = self.lg[lgi] {
            if k >= rem {
                self.lg[lgi] = (k > rem).then_some((s + rem, k - rem));
                self.map(f, l, s, rem, unwritten, sink)?;
                return Ok(rem);
            }
            self.lg[lgi] = None;
            self.release_now(s, k);
        }
        let (s, k) = self.take(goal, self.opts.group_prealloc_pages.max(rem), None, sink)?;
        let used = k.min(rem);
        if k > used {
            self.lg[lgi] = Some((s + used, k - used));
        }
        self.map(f, l, s, used, unwritten, sink)?;
        Ok(used)
    }

    /// Stream allocation: a normalised window, tried at the goal only when it continues
    /// the file's previous extent (mballoc sets TRY_GOAL only to merge with a neighbour),
    /// then from the group of the last stream allocation of the inode's stream goal
    /// (`ino mod` the goal count; measured: RocksDB's flushes and compactions, files of
    /// different inodes, then keep to separate places as on ext4, docs/FSMODEL.md).
    /// A request reaching past its window gets the window now and the rest in the next
    /// round, as mballoc caps an allocation at its normalised window (measured: a 3.4 MiB
    /// table written back at once lands as two aligned 2 MiB windows on ext4). The surplus
    /// of the window becomes the inode's preallocation.
    #[allow(clippy::too_many_arguments)]
    fn allocate_stream(
        &mut self,
        f: &mut File,
        l: u64,
        rem: u64,
        size_blocks: u64,
        goal: u64,
        unwritten: bool,
        sink: Sink,
    ) -> Result<u64, FsError> {
        // fallocate asks for exactly its range (ext4 passes NO_NORMALIZE when the range fits
        // one unwritten extent): no window, so no power-of-two alignment either.
        let (ws, wl) = if unwritten && rem <= EXT_UNWRITTEN_MAX_LEN {
            (l, rem)
        } else {
            normalize(l, rem, size_blocks, self.opts.max_inode_prealloc_pages)
        };
        // (A window capped below its alignment by `max_inode_prealloc_pages` may not hold
        // the request's start: then the request itself.)
        let wend = if ws <= l && l < ws + wl {
            ws + wl
        } else {
            l + rem
        };
        let wend = wend.min(f.ext.next_mapped(l)).max(l + 1);
        let total = wend - l;
        let slot = f.ino as usize % self.stream_goals.len();
        let from = self.stream_goals[slot];
        let found = if f.ext.goal_for(l).is_some() {
            self.free.find(goal, total, Some(from))
        } else {
            self.free.find_in_groups(total, from)
        };
        let found = match found {
            Some((s, k)) if k >= total => Some((s, k)),
            _ => None,
        };
        let (s, k) = match found {
            Some((s, k)) => {
                self.free.take(s, k);
                self.jadd_group(s, k);
                (s, k)
            }
            None => self.take(goal, rem, Some(from), sink)?,
        };
        self.stream_goals[slot] = self.layout.group_of(s);
        let used = k.min(rem);
        if k > used {
            f.pa = Some(Prealloc {
                lstart: l + used,
                pstart: s + used,
                len: k - used,
            });
        }
        self.map(f, l, s, used, unwritten, sink)?;
        Ok(used)
    }
}
