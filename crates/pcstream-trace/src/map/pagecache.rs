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

/// Dirty pages of one file, by logical block.
#[derive(Debug, Default)]
pub struct DirtyPages {
    pages: BTreeMap<u64, DirtyPage>,
}

impl DirtyPages {
    pub fn len(&self) -> usize {
        self.pages.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Dirty page `l` on behalf of `page`; returns false when it was dirty already (the earlier
    /// version is absorbed: it will never reach the disk).
    #[inline]
    pub fn dirty(&mut self, l: u64, page: DirtyPage) -> bool {
        self.pages.insert(l, page).is_none()
    }

    pub fn contains(&self, l: u64) -> bool {
        self.pages.contains_key(&l)
    }

    /// Forget the dirty pages in `[from, to)` (truncated, punched, deleted); returns how many.
    pub fn drop_range(&mut self, from: u64, to: u64) -> u64 {
        if from >= to {
            return 0;
        }
        if from == 0 && to == u64::MAX {
            let n = self.pages.len() as u64;
            self.pages.clear();
            return n;
        }
        let mut tail = self.pages.split_off(&from);
        let mut after = if to == u64::MAX {
            BTreeMap::new()
        } else {
            tail.split_off(&to)
        };
        let n = tail.len() as u64;
        self.pages.append(&mut after);
        n
    }

    /// Remove and return the dirty pages in `[from, to)`, in logical order.
    pub fn take_range(&mut self, from: u64, to: u64, out: &mut Vec<(u64, DirtyPage)>) {
        out.clear();
        if from == 0 && to == u64::MAX {
            out.extend(std::mem::take(&mut self.pages));
            return;
        }
        let mut tail = self.pages.split_off(&from);
        let mut after = if to == u64::MAX {
            BTreeMap::new()
        } else {
            tail.split_off(&to)
        };
        out.extend(tail);
        self.pages.append(&mut after);
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
}
