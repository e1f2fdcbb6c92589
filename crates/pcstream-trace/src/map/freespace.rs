//! Block and inode allocation: the free extents of every block group (the on-disk bitmaps'
//! content), the search mballoc does for a goal, mballoc's request normalisation (how large a
//! preallocation window a file gets), and the inode bitmaps.
//!
//! Free extents never cross a group boundary, as ext4 allocates inside one group. Each group
//! keeps its free-block count and an upper bound of its largest free extent so that searches skip
//! groups that cannot satisfy a request; the bound becomes exact whenever a whole group is scanned.
//! The preallocation windows themselves (per inode, per locality group) belong to the model
//! (`mod.rs`): this module only hands out and takes back blocks.

use std::collections::BTreeMap;

use super::layout::{Layout, BLOCKS_PER_GROUP, FIRST_INO, INODES_PER_GROUP};

/// Free blocks of the file system as extents (start → length), per group statistics.
///
/// # Invariants
/// Extents are disjoint, non-adjacent within a group, and never cross a group boundary;
/// `group_free[g]` is the sum of the lengths in group g; `group_max[g]` ≥ its largest extent.
pub struct FreeSpace {
    ext: BTreeMap<u64, u64>,
    group_free: Vec<u64>,
    group_max: Vec<u64>,
    free: u64,
    blocks: u64,
}

impl FreeSpace {
    /// Every block of `layout` free except its reserved metadata.
    pub fn new(layout: &Layout) -> FreeSpace {
        let mut fs = FreeSpace {
            ext: BTreeMap::new(),
            group_free: vec![0; layout.groups as usize],
            group_max: vec![0; layout.groups as usize],
            free: 0,
            blocks: layout.blocks,
        };
        for g in 0..layout.groups {
            fs.release(
                layout.group_start(g),
                layout.group_end(g) - layout.group_start(g),
            );
        }
        for &(s, l) in &layout.reserved {
            fs.take(s, l);
        }
        fs
    }

    /// The free extents (start, length) in block order.
    pub fn extents(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ext.iter().map(|(&s, &l)| (s, l))
    }

    /// The free extents (start, length) that start in `[from, to)`.
    pub fn extents_in(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ext.range(from..to).map(|(&s, &l)| (s, l))
    }

    /// Free blocks in all.
    pub fn free_blocks(&self) -> u64 {
        self.free
    }

    #[inline]
    fn group(b: u64) -> usize {
        (b / BLOCKS_PER_GROUP) as usize
    }

    /// Return `[start, start+len)` (all in use) to the free space, merging with neighbours.
    pub fn release(&mut self, start: u64, len: u64) {
        let mut s = start;
        let end = start + len;
        // Split at group boundaries.
        while s < end {
            let g = Self::group(s);
            let gend = ((g as u64 + 1) * BLOCKS_PER_GROUP).min(end);
            self.release_in_group(s, gend - s, g);
            s = gend;
        }
    }

    fn release_in_group(&mut self, start: u64, len: u64, g: usize) {
        debug_assert!(len > 0 && start + len <= self.blocks);
        let gstart = g as u64 * BLOCKS_PER_GROUP;
        let mut s = start;
        let mut l = len;
        if let Some((&ps, &pl)) = self.ext.range(..start).next_back() {
            debug_assert!(ps + pl <= start, "double free at {start}");
            if ps + pl == start && ps >= gstart {
                self.ext.remove(&ps);
                s = ps;
                l += pl;
            }
        }
        let gend = gstart + BLOCKS_PER_GROUP;
        if let Some((&ns, &nl)) = self.ext.range(start..).next() {
            debug_assert!(ns >= start + len, "double free at {ns}");
            if ns == start + len && ns < gend {
                self.ext.remove(&ns);
                l += nl;
            }
        }
        self.ext.insert(s, l);
        self.group_free[g] += len;
        self.free += len;
        if l > self.group_max[g] {
            self.group_max[g] = l;
        }
    }

    /// Mark `[start, start+len)` (all free, inside one free extent) as used.
    pub fn take(&mut self, start: u64, len: u64) {
        let mut s = start;
        let end = start + len;
        while s < end {
            let (&es, &el) = self
                .ext
                .range(..=s)
                .next_back()
                .expect("taking blocks that are free");
            debug_assert!(es + el > s, "taking used block {s}");
            let take_end = end.min(es + el);
            self.ext.remove(&es);
            if es < s {
                self.ext.insert(es, s - es);
            }
            if take_end < es + el {
                self.ext.insert(take_end, es + el - take_end);
            }
            let g = Self::group(s);
            self.group_free[g] -= take_end - s;
            self.free -= take_end - s;
            s = take_end;
        }
    }

    /// Length of the free run starting exactly at `b` (0 if `b` is used).
    pub fn free_run_at(&self, b: u64) -> u64 {
        match self.ext.range(..=b).next_back() {
            Some((&s, &l)) if s + l > b => s + l - b,
            _ => 0,
        }
    }

    /// First free extent of group `g` at or after `from` with at least `want` blocks: its start.
    /// When the whole group was scanned, `group_max` is made exact.
    fn scan_group(&mut self, g: usize, from: u64, want: u64) -> Option<u64> {
        if self.group_free[g] < want || self.group_max[g] < want {
            return None;
        }
        let gstart = g as u64 * BLOCKS_PER_GROUP;
        let gend = gstart + BLOCKS_PER_GROUP;
        let from = from.max(gstart);
        // An extent that began before `from` may still reach past it.
        if let Some((&s, &l)) = self.ext.range(gstart..from).next_back() {
            if s + l > from && s + l - from >= want {
                return Some(from);
            }
        }
        let mut largest = 0;
        for (&s, &l) in self.ext.range(from..gend) {
            if l >= want {
                return Some(s);
            }
            largest = largest.max(l);
        }
        if from == gstart {
            self.group_max[g] = largest;
        }
        None
    }

    /// Where to put `want` blocks: at `goal` itself when `want` blocks are free there (mballoc
    /// tries the goal first), else the first extent of at least `want` blocks scanning group by
    /// group from `from_group` (default: the goal's group), each group from its start, wrapping;
    /// else the first free extent of any size from the goal on (a partial allocation).
    /// Returns (start, length); the blocks are not taken yet.
    pub fn find(&mut self, goal: u64, want: u64, from_group: Option<u32>) -> Option<(u64, u64)> {
        if self.free == 0 || want == 0 {
            return None;
        }
        let want = want.min(BLOCKS_PER_GROUP);
        let goal = if goal >= self.blocks { 0 } else { goal };
        if self.free_run_at(goal) >= want {
            return Some((goal, want));
        }
        let groups = self.group_free.len();
        let g0 = from_group.map_or(Self::group(goal), |g| g as usize % groups);
        for i in 0..groups {
            let g = (g0 + i) % groups;
            if let Some(s) = self.scan_group(g, g as u64 * BLOCKS_PER_GROUP, want) {
                return Some((s, want));
            }
        }
        // Nothing large enough anywhere: the first free extent after the goal, any length.
        let (&s, &l) = self
            .ext
            .range(goal..)
            .next()
            .or_else(|| self.ext.iter().next())?;
        Some((s, l.min(want)))
    }
}

/// mballoc's normalisation of a request of `want` blocks at logical block `logical` of a file
/// whose size is (at least) `size_blocks` after the write: the logical window
/// (start, length) to allocate, as `ext4_mb_normalize_request` sizes it (16 KiB … 1 MiB windows
/// from logical 0, then 2, 4 and 8 MiB windows aligned to their size, else the request itself),
/// capped at `max_window` blocks. The caller clips the window to unmapped space around the
/// request.
pub fn normalize(logical: u64, want: u64, size_blocks: u64, max_window: u64) -> (u64, u64) {
    const KB: u64 = 1024;
    let size = size_blocks.max(logical + want) * 4 * KB;
    let (start_bytes, win) = if size <= 16 * KB {
        (0, 16 * KB)
    } else if size <= 1024 * KB {
        (0, size.next_power_of_two())
    } else if size <= 4096 * KB {
        ((logical * 4 * KB) & !(2048 * KB - 1), 2048 * KB)
    } else if size <= 8192 * KB {
        ((logical * 4 * KB) & !(4096 * KB - 1), 4096 * KB)
    } else if want * 4 * KB <= 8192 * KB {
        ((logical * 4 * KB) & !(8192 * KB - 1), 8192 * KB)
    } else {
        (logical * 4 * KB, want * 4 * KB)
    };
    let start = start_bytes / (4 * KB);
    let len = (win / (4 * KB)).min(max_window.max(want));
    (start, len)
}

/// The inode bitmaps: which inode numbers are in use. Allocation takes the lowest free inode
/// of the preferred group (then the following groups), as a bitmap scan does.
pub struct InodeMap {
    words: Vec<Vec<u64>>,
    free: Vec<u32>,
}

impl InodeMap {
    pub fn new(groups: u32) -> InodeMap {
        let mut m = InodeMap {
            words: vec![Vec::new(); groups as usize],
            free: vec![INODES_PER_GROUP; groups as usize],
        };
        for ino in 1..FIRST_INO {
            m.set(ino);
        }
        m
    }

    fn set(&mut self, ino: u32) {
        let (g, i) = (
            ((ino - 1) / INODES_PER_GROUP) as usize,
            (ino - 1) % INODES_PER_GROUP,
        );
        let w = &mut self.words[g];
        if w.is_empty() {
            w.resize((INODES_PER_GROUP / 64) as usize, 0);
        }
        debug_assert!(w[(i / 64) as usize] & (1 << (i % 64)) == 0);
        w[(i / 64) as usize] |= 1 << (i % 64);
        self.free[g] -= 1;
    }

    /// Allocate an inode, preferring group `pref`; `None` when every inode is in use.
    pub fn alloc(&mut self, pref: u32) -> Option<u32> {
        let n = self.words.len();
        for k in 0..n {
            let g = (pref as usize + k) % n;
            if self.free[g] == 0 {
                continue;
            }
            let w = &self.words[g];
            let i = if w.is_empty() {
                0
            } else {
                let (wi, word) = w
                    .iter()
                    .enumerate()
                    .find(|(_, &x)| x != u64::MAX)
                    .expect("a free bit in a group with free inodes");
                wi as u32 * 64 + word.trailing_ones()
            };
            let ino = g as u32 * INODES_PER_GROUP + i + 1;
            self.set(ino);
            return Some(ino);
        }
        None
    }

    /// Free inode `ino`.
    pub fn release(&mut self, ino: u32) {
        let (g, i) = (
            ((ino - 1) / INODES_PER_GROUP) as usize,
            (ino - 1) % INODES_PER_GROUP,
        );
        let w = &mut self.words[g];
        debug_assert!(w[(i / 64) as usize] & (1 << (i % 64)) != 0);
        w[(i / 64) as usize] &= !(1 << (i % 64));
        self.free[g] += 1;
    }

    /// Free inodes of group `g`.
    pub fn free_in(&self, g: u32) -> u32 {
        self.free[g as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_merges_and_finds() {
        let l = Layout::new(65_536, 0).unwrap();
        let mut f = FreeSpace::new(&l);
        let total = f.free_blocks();
        let (s, n) = f.find(10_000, 100, None).unwrap();
        assert_eq!((s, n), (10_000, 100));
        f.take(s, n);
        assert_eq!(f.free_run_at(10_000), 0);
        assert_eq!(f.find(10_100, 10, None).unwrap(), (10_100, 10));
        // not at the goal: first fit from the start of the goal's group
        let first = f.find(10_050, 10, None).unwrap().0;
        assert!(first < 10_000, "{first}");
        f.release(s, n);
        assert_eq!(f.free_blocks(), total);
        assert_eq!(f.free_run_at(10_000), 32_768 - 10_000);
        // never across the group boundary
        assert_eq!(
            f.find(32_000, 1000, Some(1)).unwrap().0,
            32_768 + f_first(&l, 1)
        );
    }

    fn f_first(l: &Layout, g: u32) -> u64 {
        // group 1 starts with a superblock copy and descriptors
        let _ = g;
        1 + l.gdt_blocks + l.reserved_gdt_blocks
    }

    #[test]
    fn normalisation_windows() {
        assert_eq!(normalize(0, 1, 1, 2048), (0, 4));
        assert_eq!(normalize(16, 16, 32, 2048), (0, 32));
        assert_eq!(normalize(300, 10, 310, 2048), (0, 512));
        assert_eq!(normalize(600, 10, 610, 2048), (512, 512));
        assert_eq!(normalize(5000, 10, 5010, 2048), (4096, 2048));
        assert_eq!(normalize(100_000, 4096, 104_096, 2048), (100_000, 4096));
    }

    #[test]
    fn inodes_lowest_first() {
        let mut m = InodeMap::new(2);
        assert_eq!(m.alloc(0), Some(FIRST_INO));
        assert_eq!(m.alloc(0), Some(FIRST_INO + 1));
        m.release(FIRST_INO);
        assert_eq!(m.alloc(0), Some(FIRST_INO));
        assert_eq!(m.alloc(1), Some(INODES_PER_GROUP + 1));
    }
}
