//! The page cache's dirty data: per file, the dirty pages with the program context and pid of
//! the last write that dirtied each; globally, the queue of dirty inodes in the order they became
//! dirty (Linux's `b_dirty` list with `inode->dirtied_when`), which the periodic flusher walks to
//! find inodes dirty for longer than the expiry time, and the dirty-page total that triggers
//! background writeback.

use std::collections::{BTreeMap, VecDeque};

/// Who last dirtied a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyPage {
    pub pc: u64,
    pub pid: u32,
}

/// Pages a file's run has room for when it starts (16 bytes each).
const RUN_FIRST_PAGES: usize = 64;

/// An emptied run keeps its memory up to this many pages (for the file's next writes).
const RUN_KEPT_PAGES: usize = 1024;

/// Dirty pages of one file, by logical block.
///
/// Most files are written front to back, so the pages dirtied last usually extend a contiguous
/// run at its end: that run is a `Vec` (a push per page), the other pages a `BTreeMap` (an
/// insert per page, which was a ninth of the file-system model's instructions when every page
/// went there). Every key of `pages` lies below `run_start`, so the map's pages come before the
/// run's in logical order.
#[derive(Debug, Default)]
pub struct DirtyPages {
    /// The dirty pages below the run.
    pages: BTreeMap<u64, DirtyPage>,
    /// First logical block of `run` (meaningless while `run` is empty).
    run_start: u64,
    /// The dirty pages `run_start ..  run_start + run.len()`, one per block.
    run: Vec<DirtyPage>,
}

impl DirtyPages {
    pub fn len(&self) -> usize {
        self.pages.len() + self.run.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty() && self.run.is_empty()
    }

    fn run_end(&self) -> u64 {
        self.run_start + self.run.len() as u64
    }

    /// Dirty page `l` on behalf of `page`; returns false when it was dirty already (the earlier
    /// version is absorbed: it will never reach the disk).
    #[inline]
    pub fn dirty(&mut self, l: u64, page: DirtyPage) -> bool {
        if self.run.is_empty() {
            if self.pages.last_key_value().is_some_and(|(&k, _)| k >= l) {
                return self.pages.insert(l, page).is_none();
            }
            self.run_start = l;
            if self.run.capacity() == 0 {
                // Room for a small file at once instead of growing 4, 8, 16, …
                self.run.reserve(RUN_FIRST_PAGES);
            }
            self.run.push(page);
            return true;
        }
        let end = self.run_end();
        if l == end {
            self.run.push(page);
            true
        } else if l < self.run_start {
            self.pages.insert(l, page).is_none()
        } else if l < end {
            self.run[(l - self.run_start) as usize] = page;
            false
        } else {
            // A gap after the run: it joins the map, and a new run starts at `l`.
            self.spill(self.run.len());
            self.run_start = l;
            self.run.push(page);
            true
        }
    }

    /// Move the run's first `n` pages into the map (keys above all of the map's).
    fn spill(&mut self, n: usize) {
        let start = self.run_start;
        for (i, p) in self.run.drain(..n).enumerate() {
            self.pages.insert(start + i as u64, p);
        }
        self.run_start = start + n as u64;
    }

    pub fn contains(&self, l: u64) -> bool {
        (l >= self.run_start && l < self.run_end()) || self.pages.contains_key(&l)
    }

    /// Remove the run's pages in `[from, to)`, appending them to `out` when given; how many.
    fn cut_run(&mut self, from: u64, to: u64, out: Option<&mut Vec<(u64, DirtyPage)>>) -> u64 {
        let (start, end) = (self.run_start, self.run_end());
        let (lo, hi) = (from.max(start), to.min(end));
        if self.run.is_empty() || lo >= hi {
            return 0;
        }
        let (a, b) = ((lo - start) as usize, (hi - start) as usize);
        if let Some(out) = out {
            out.extend(
                self.run[a..b]
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| (lo + i as u64, p)),
            );
        }
        if hi == end {
            self.run.truncate(a);
            if a == 0 && self.run.capacity() > RUN_KEPT_PAGES {
                // A large file written back: its run's memory goes, as the map's nodes would.
                self.run = Vec::new();
            }
        } else {
            // Pages stay after the cut: they remain the run, those before it join the map.
            self.spill(a);
            self.run.drain(..b - a);
            self.run_start = hi;
        }
        hi - lo
    }

    /// Remove the map's pages in `[from, to)`: returns them as a map.
    fn cut_map(&mut self, from: u64, to: u64) -> BTreeMap<u64, DirtyPage> {
        if self.pages.is_empty() || from >= to {
            return BTreeMap::new();
        }
        if from == 0 && to == u64::MAX {
            return std::mem::take(&mut self.pages);
        }
        let mut tail = self.pages.split_off(&from);
        if to != u64::MAX {
            let mut after = tail.split_off(&to);
            self.pages.append(&mut after);
        }
        tail
    }

    /// Forget the dirty pages in `[from, to)` (truncated, punched, deleted); returns how many.
    pub fn drop_range(&mut self, from: u64, to: u64) -> u64 {
        if from >= to {
            return 0;
        }
        self.cut_run(from, to, None) + self.cut_map(from, to).len() as u64
    }

    /// Remove and return the dirty pages in `[from, to)`, in logical order.
    pub fn take_range(&mut self, from: u64, to: u64, out: &mut Vec<(u64, DirtyPage)>) {
        out.clear();
        if from >= to {
            return;
        }
        out.extend(self.cut_map(from, to));
        self.cut_run(from, to, Some(out));
    }
}

/// One entry of the dirty-inode queue: the file slot, its generation (slots are reused) and
/// the time it became dirty. Stale entries (the file was cleaned or deleted since) are skipped.
#[derive(Clone, Copy, Debug)]
pub struct Queued {
    pub dirtied_ns: u64,
    pub slot: u32,
    pub gen: u32,
}

/// Dirty inodes in the order they became dirty.
#[derive(Debug, Default)]
pub struct DirtyQueue {
    q: VecDeque<Queued>,
}

impl DirtyQueue {
    pub fn push(&mut self, e: Queued) {
        self.q.push_back(e);
    }
    /// The oldest entry, if any.
    pub fn front(&self) -> Option<Queued> {
        self.q.front().copied()
    }
    pub fn pop(&mut self) -> Option<Queued> {
        self.q.pop_front()
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dirty_absorb_and_ranges() {
        let p = DirtyPage { pc: 1, pid: 2 };
        let mut d = DirtyPages::default();
        assert!(d.dirty(5, p));
        assert!(!d.dirty(5, DirtyPage { pc: 9, pid: 2 }));
        for l in 6..10 {
            d.dirty(l, p);
        }
        assert_eq!(d.drop_range(8, u64::MAX), 2);
        let mut out = Vec::new();
        d.take_range(0, 7, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], (5, DirtyPage { pc: 9, pid: 2 }));
        assert_eq!(d.len(), 1);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Dirty(u64, u64),
        Drop(u64, u64),
        Take(u64, u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Small blocks and ranges ending at u64::MAX or starting at 0 (truncate, delete).
        let block = prop_oneof![0u64..64, Just(0u64)];
        let end = prop_oneof![0u64..64, Just(u64::MAX)];
        prop_oneof![
            4 => (0u64..64, 0u64..4).prop_map(|(l, pc)| Op::Dirty(l, pc)),
            // Appends dominate real traces: a run of them.
            2 => (0u64..64, 1u64..20).prop_map(|(l, n)| Op::Dirty(l | (n << 32), 7)),
            1 => (block.clone(), end.clone()).prop_map(|(a, b)| Op::Drop(a, b)),
            1 => (block, end).prop_map(|(a, b)| Op::Take(a, b)),
        ]
    }

    proptest! {
        /// The run and the map together hold exactly what one map of every page would.
        #[test]
        fn same_as_one_map(ops in proptest::collection::vec(op(), 1..200)) {
            let mut d = DirtyPages::default();
            let mut model: BTreeMap<u64, DirtyPage> = BTreeMap::new();
            let mut out = Vec::new();
            for op in ops {
                match op {
                    Op::Dirty(packed, pc) => {
                        let (l, n) = (packed & 0xffff_ffff, (packed >> 32).max(1));
                        for b in l..l + n {
                            let p = DirtyPage { pc: pc + b, pid: 1 };
                            prop_assert_eq!(d.dirty(b, p), model.insert(b, p).is_none());
                        }
                    }
                    Op::Drop(a, b) => {
                        let want = model.range(a..b.max(a)).count() as u64;
                        model.retain(|&k, _| !(a <= k && k < b));
                        prop_assert_eq!(d.drop_range(a, b), want);
                    }
                    Op::Take(a, b) => {
                        let want: Vec<_> = model.range(a..b.max(a)).map(|(&k, &v)| (k, v)).collect();
                        model.retain(|&k, _| !(a <= k && k < b));
                        d.take_range(a, b, &mut out);
                        prop_assert_eq!(&out, &want);
                    }
                }
                prop_assert_eq!(d.len(), model.len());
                prop_assert_eq!(d.is_empty(), model.is_empty());
                for b in 0..90 {
                    prop_assert_eq!(d.contains(b), model.contains_key(&b));
                }
            }
        }
    }
}
