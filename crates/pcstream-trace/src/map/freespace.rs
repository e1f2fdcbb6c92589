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

use super::layout::{Layout, BLOCKS_PER_GROUP, FIRST_INO, FLEX_GROUPS, INODES_PER_GROUP};

/// Largest chunk of mballoc's buddy bitmaps: 2^13 blocks (32 MiB) with 4 KiB blocks
/// (`MB_NUM_ORDERS` = block size bits + 2 orders, 0 ..= 13).
const MAX_BUDDY_ORDER: u32 = 13;

/// Fewest groups for which mballoc files groups by order (`mb_optimize_scan` on by default,
/// `MB_DEFAULT_LINEAR_SCAN_THRESHOLD`); below, it scans groups one after another from the goal.
const LINEAR_SCAN_THRESHOLD: usize = 16;

/// The buddy chunk at free block `p` of a free run ending at `end` (`p < end`): the largest
/// chunk aligned to its size (at most 2^[`MAX_BUDDY_ORDER`]) that starts at `p` and ends by
/// `end` — the smaller of the alignment of `p` and the largest power of two up to `end - p`.
#[inline]
fn chunk_at(p: u64, end: u64) -> u64 {
    debug_assert!(p < end);
    let align = 1u64 << p.trailing_zeros().min(MAX_BUDDY_ORDER);
    let fits = 1u64 << (63 - (end - p).leading_zeros());
    align.min(fits)
}

/// Chunks of each buddy order (0 ..= [`MAX_BUDDY_ORDER`]) in a group's free runs.
type OrderCounts = [u32; MAX_BUDDY_ORDER as usize + 1];

/// How many extents mballoc measures before it settles for the best one so far
/// (`mb_min_to_scan`).
const MIN_TO_SCAN: u32 = 10;

/// The order under which mballoc files an average fragment of `len` blocks, and from which it
/// looks for a request of `len` blocks (`mb_avg_fragment_size_order`: `fls(len) - 2`).
fn fragment_order(len: u64) -> u32 {
    (64 - len.leading_zeros())
        .saturating_sub(2)
        .min(MAX_BUDDY_ORDER)
}

/// Free blocks of the file system as extents (start → length), per group statistics.
///
/// # Invariants
/// Extents are disjoint, non-adjacent within a group, and never cross a group boundary;
/// `group_free[g]` is the sum of the lengths in group g; `group_max[g]` ≥ its largest extent.
pub struct FreeSpace {
    ext: BTreeMap<u64, u64>,
    group_free: Vec<u64>,
    group_max: Vec<u64>,
    /// Each group's buddy chunks by order (see [`FreeSpace::largest_order`]), kept as free
    /// runs come and go: the group scan asks every group for its largest order at each
    /// allocation, and walking a fragmented group's runs for it was a tenth of the model's time.
    group_orders: Vec<OrderCounts>,
    /// Each group's orders with at least one chunk, one bit each: its largest order at once.
    group_order_bits: Vec<u16>,
    /// Each group's count of free extents (see [`FreeSpace::avg_fragment`]), kept likewise.
    group_frags: Vec<u64>,
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
            group_orders: vec![[0; MAX_BUDDY_ORDER as usize + 1]; layout.groups as usize],
            group_order_bits: vec![0; layout.groups as usize],
            group_frags: vec![0; layout.groups as usize],
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
                self.remove_run(ps, pl);
                s = ps;
                l += pl;
            }
        }
        let gend = gstart + BLOCKS_PER_GROUP;
        if let Some((&ns, &nl)) = self.ext.range(start..).next() {
            debug_assert!(ns >= start + len, "double free at {ns}");
            if ns == start + len && ns < gend {
                self.remove_run(ns, nl);
                l += nl;
            }
        }
        self.add_run(s, l);
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
            self.remove_run(es, el);
            if es < s {
                self.add_run(es, s - es);
            }
            if take_end < es + el {
                self.add_run(take_end, es + el - take_end);
            }
            let g = Self::group(s);
            self.group_free[g] -= take_end - s;
            self.free -= take_end - s;
            s = take_end;
        }
    }

    /// Add the free run `[s, s + l)` (inside one group) to the extents and its group's counts.
    fn add_run(&mut self, s: u64, l: u64) {
        self.ext.insert(s, l);
        self.count_run(s, l, true);
    }

    /// Remove the free run `[s, s + l)`, as held in the extents, and its counts.
    fn remove_run(&mut self, s: u64, l: u64) {
        self.ext.remove(&s);
        self.count_run(s, l, false);
    }

    /// Count the run `[s, s + l)` into its group's fragments and buddy chunks (`add`), or out.
    fn count_run(&mut self, s: u64, l: u64, add: bool) {
        let g = Self::group(s);
        let orders = &mut self.group_orders[g];
        let bits = &mut self.group_order_bits[g];
        let (mut p, end) = (s, s + l);
        while p < end {
            let size = chunk_at(p, end);
            let k = size.trailing_zeros();
            let o = &mut orders[k as usize];
            *o = if add { *o + 1 } else { *o - 1 };
            if *o == 0 {
                *bits &= !(1 << k);
            } else {
                *bits |= 1 << k;
            }
            p += size;
        }
        let n = &mut self.group_frags[g];
        *n = if add { *n + 1 } else { *n - 1 };
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
        let g0 = from_group.unwrap_or(Self::group(goal) as u32);
        if let Some(found) = self.scan_groups(want, g0) {
            return Some(found);
        }
        // Nothing large enough anywhere: the first free extent after the goal, any length.
        self.partial_from(goal, want)
    }

    /// A partial allocation when nothing holds `want` blocks: the first free extent at or after
    /// `start` (wrapping to the first of the file system), at most `want` of it.
    fn partial_from(&self, start: u64, want: u64) -> Option<(u64, u64)> {
        let (&s, &l) = self
            .ext
            .range(start..)
            .next()
            .or_else(|| self.ext.iter().next())?;
        Some((s, l.min(want)))
    }

    /// Where mke2fs puts `want` blocks near `goal` (the journal, the root directory: not
    /// mballoc's criteria): at `goal` when `want` blocks are free there, else the first extent of
    /// at least `want` blocks group by group from the goal's group, each from its start,
    /// wrapping; else the first free extent from the goal on, any length. Nothing is taken yet.
    pub fn first_fit(&mut self, goal: u64, want: u64) -> Option<(u64, u64)> {
        if self.free == 0 || want == 0 {
            return None;
        }
        let want = want.min(BLOCKS_PER_GROUP);
        let goal = if goal >= self.blocks { 0 } else { goal };
        if self.free_run_at(goal) >= want {
            return Some((goal, want));
        }
        let groups = self.group_free.len();
        let g0 = Self::group(goal);
        let found = (0..groups).find_map(|i| {
            let g = (g0 + i) % groups;
            self.scan_group(g, g as u64 * BLOCKS_PER_GROUP, want)
        });
        if let Some(s) = found {
            return Some((s, want));
        }
        self.partial_from(goal, want)
    }

    /// Where mballoc's group scan puts `want` blocks, from group `from_group` on, wrapping; the
    /// criteria in turn, each over every group before the next (`ext4_mb_regular_allocator`):
    ///
    /// 1. a power-of-two request (2 ..= 2^[`MAX_BUDDY_ORDER`] blocks): a group whose largest
    ///    free buddy chunk holds it, never the first group of a flex group (mballoc keeps data
    ///    off the group carrying the flex group's metadata for this criterion only); in that
    ///    group the smallest sufficient chunk ([`Self::buddy_in_group`]);
    /// 2. a group whose average free fragment (free blocks / free extents) is at least `want`;
    /// 3. a group with `want` free blocks;
    ///
    /// in 2 and 3 the best fit of the group's first runs ([`Self::best_fit_in_group`]). With
    /// fewer than
    /// [`LINEAR_SCAN_THRESHOLD`] groups mballoc takes the first suitable group from the goal on
    /// (its default there, `mb_optimize_scan=0`); with more, it files groups by order and takes
    /// one of the smallest sufficient order first: largest chunk for 1, average fragment
    /// (`fls(average) - 2`, from `fls(want) - 2`) for 2. Returns (start, `want`); nothing is
    /// taken yet.
    fn scan_groups(&mut self, want: u64, from_group: u32) -> Option<(u64, u64)> {
        let groups = self.group_free.len();
        let g0 = from_group as usize % groups;
        let order_of = |g: usize| (g0 + g) % groups;
        let optimize = groups >= LINEAR_SCAN_THRESHOLD;
        if want >= 2 && want.is_power_of_two() && want <= 1 << MAX_BUDDY_ORDER {
            let need = want.trailing_zeros();
            // With order lists: the group of the smallest sufficient order, the first from the
            // goal on among equals (one pass, as the lists give it); else the first group.
            let mut pick: Option<(u32, usize)> = None; // (order, group)
            for i in 0..groups {
                let g = order_of(i);
                if (g as u32).is_multiple_of(FLEX_GROUPS) || self.group_free[g] < want {
                    continue;
                }
                let Some(largest) = self.largest_order(g) else {
                    continue;
                };
                if largest >= need && pick.is_none_or(|(o, _)| largest < o) {
                    pick = Some((largest, g));
                    if !optimize || largest == need {
                        break;
                    }
                }
            }
            if let Some((_, g)) = pick {
                if let Some(s) = self.buddy_in_group(g, want) {
                    return Some((s, want));
                }
            }
        }
        let mut pick: Option<(u32, usize)> = None; // (average fragment's order, group)
        for i in 0..groups {
            let g = order_of(i);
            if self.group_free[g] < want {
                continue;
            }
            let avg = self.avg_fragment(g);
            if avg < want {
                continue;
            }
            let order = fragment_order(avg);
            if pick.is_none_or(|(o, _)| order < o) {
                pick = Some((order, g));
                if !optimize || order <= fragment_order(want) {
                    break;
                }
            }
        }
        if let Some((_, g)) = pick {
            let mut measured = 0;
            if let Some(s) = self.best_fit_in_group(g, want, false, &mut measured) {
                return Some((s, want));
            }
        }
        let mut measured = 0;
        (0..groups).find_map(|i| {
            let g = order_of(i);
            self.best_fit_in_group(g, want, true, &mut measured)
                .map(|s| (s, want))
        })
    }

    /// Where mballoc's extent scan of group `g` puts `want` blocks (criteria 2 and 3,
    /// `ext4_mb_complex_scan_group`): the free runs in address order, each measured as the
    /// buddy chunks from its start up to `want` blocks or more (`mb_find_extent`); a run
    /// measuring exactly `want` is taken at once, else the one measuring least that holds
    /// `want`, when the group ends or more than [`MIN_TO_SCAN`] runs have been measured in this
    /// allocation (`measured`, counted across groups). Runs shorter than `want` are measured
    /// only with `measure_short` (criterion 3); criterion 2 skips them.
    fn best_fit_in_group(
        &mut self,
        g: usize,
        want: u64,
        measure_short: bool,
        measured: &mut u32,
    ) -> Option<u64> {
        if self.group_free[g] < want || self.group_max[g] < want {
            return None;
        }
        let gstart = g as u64 * BLOCKS_PER_GROUP;
        let mut best: Option<(u64, u64)> = None; // (measured length, start)
        let mut largest = 0;
        for (&s, &l) in self.ext.range(gstart..gstart + BLOCKS_PER_GROUP) {
            largest = largest.max(l);
            if l < want {
                if measure_short {
                    *measured += 1;
                }
                continue;
            }
            let end = s + l;
            let mut len = 0;
            while len < want {
                len += chunk_at(s + len, end);
            }
            *measured += 1;
            if len == want {
                return Some(s);
            }
            if best.is_none_or(|(b, _)| len < b) {
                best = Some((len, s));
            }
            if *measured > MIN_TO_SCAN {
                break;
            }
        }
        if best.is_none() {
            self.group_max[g] = largest;
        }
        best.map(|(_, s)| s)
    }

    /// Group `g`'s average free fragment: its free blocks over its free extents (mballoc's
    /// `bb_free / bb_fragments`); 0 with no free block.
    fn avg_fragment(&self, g: usize) -> u64 {
        if self.group_free[g] == 0 {
            return 0;
        }
        self.group_free[g] / self.group_frags[g].max(1)
    }

    /// The buddy chunk mballoc's power-of-two search takes in group `g` for `want` (a power of
    /// two) blocks: the free space as the buddy allocator holds it — each free extent split into
    /// maximal chunks aligned to their size, at most 2^[`MAX_BUDDY_ORDER`] — and of the chunks of
    /// at least `want` blocks the smallest, the lowest of those. So a freed hole of exactly the
    /// request's size is reused before a larger free region is split (measured on ext4: a
    /// database's flushed tables land on the blocks of the tables freed last, docs/FSMODEL.md).
    fn buddy_in_group(&self, g: usize, want: u64) -> Option<u64> {
        if self.group_free[g] < want || self.group_max[g] < want {
            return None;
        }
        let gstart = g as u64 * BLOCKS_PER_GROUP;
        let mut best: Option<(u64, u64)> = None; // (chunk size, start)
        for (&s, &l) in self.ext.range(gstart..gstart + BLOCKS_PER_GROUP) {
            let (mut p, end) = (s, s + l);
            while p < end {
                let size = chunk_at(p, end);
                if size >= want && best.is_none_or(|(bs, _)| size < bs) {
                    if size == want {
                        return Some(p);
                    }
                    best = Some((size, p));
                }
                p += size;
            }
        }
        best.map(|(_, s)| s)
    }

    /// The order of group `g`'s largest free buddy chunk (its free extents split into maximal
    /// chunks aligned to their size, at most 2^[`MAX_BUDDY_ORDER`]); `None` with no free block.
    fn largest_order(&self, g: usize) -> Option<u32> {
        if self.group_free[g] == 0 {
            return None;
        }
        let bits = self.group_order_bits[g];
        (bits != 0).then(|| 15 - bits.leading_zeros())
    }

    /// [`FreeSpace::find`] without trying a goal block: a request with no neighbouring extent
    /// to merge with, which mballoc starts at a group (the stream goal's), not at a block.
    pub fn find_in_groups(&mut self, want: u64, from_group: u32) -> Option<(u64, u64)> {
        if self.free == 0 || want == 0 {
            return None;
        }
        let want = want.min(BLOCKS_PER_GROUP);
        if let Some(found) = self.scan_groups(want, from_group) {
            return Some(found);
        }
        // Nothing large enough anywhere: the first free extent from that group on, any length.
        let start = from_group as u64 % self.group_free.len() as u64 * BLOCKS_PER_GROUP;
        self.partial_from(start, want)
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

    /// The group counts kept as runs change equal the counts taken afresh from the runs, after
    /// random takes and releases; and a chunk is what the halving of the aligned size gives.
    #[test]
    fn group_counts_follow_the_runs() {
        let layout = Layout::new(8 * BLOCKS_PER_GROUP, 0).unwrap();
        let mut f = FreeSpace::new(&layout);
        let mut used: Vec<(u64, u64)> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for step in 0..4000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(3) && !used.is_empty() {
                let (s, n) = used.swap_remove((x >> 8) as usize % used.len());
                f.release(s, n);
            } else if let Some((s, n)) = f.find(x >> 20, 1 + (x >> 4) % 300, None) {
                f.take(s, n);
                used.push((s, n));
            }
            for g in 0..layout.groups as usize {
                let gstart = g as u64 * BLOCKS_PER_GROUP;
                let mut orders = [0u32; MAX_BUDDY_ORDER as usize + 1];
                let mut frags = 0;
                for (s, l) in f.extents_in(gstart, gstart + BLOCKS_PER_GROUP) {
                    frags += 1;
                    let (mut p, end) = (s, s + l);
                    while p < end {
                        let mut size = 1u64 << p.trailing_zeros().min(MAX_BUDDY_ORDER);
                        while p + size > end {
                            size >>= 1;
                        }
                        assert_eq!(chunk_at(p, end), size, "chunk at {p} of a run to {end}");
                        orders[size.trailing_zeros() as usize] += 1;
                        p += size;
                    }
                }
                assert_eq!(f.group_frags[g], frags, "step {step}, group {g}");
                assert_eq!(f.group_orders[g], orders, "step {step}, group {g}");
                let top = orders.iter().rposition(|&n| n > 0).map(|o| o as u32);
                assert_eq!(f.largest_order(g), top, "step {step}, group {g}");
            }
        }
    }

    /// Block `off` of group `g`.
    fn at(g: u64, off: u64) -> u64 {
        g * BLOCKS_PER_GROUP + off
    }

    /// A free space of `groups` groups where group g (g > 0) is used except for `holes[g]`
    /// (start offset in the group, length).
    fn shaped(groups: u64, holes: &[(usize, u64, u64)]) -> FreeSpace {
        let l = Layout::new(groups * BLOCKS_PER_GROUP, 0).unwrap();
        let mut f = FreeSpace::new(&l);
        for g in 1..groups {
            let start = g * BLOCKS_PER_GROUP;
            let ext: Vec<(u64, u64)> = f.extents_in(start, start + BLOCKS_PER_GROUP).collect();
            for (s, n) in ext {
                f.take(s, n);
            }
        }
        for &(g, off, len) in holes {
            f.release(g as u64 * BLOCKS_PER_GROUP + off, len);
        }
        f
    }

    #[test]
    fn power_of_two_requests_take_the_smallest_buddy_chunk_off_the_flex_groups_first_group() {
        // Linear scan (12 groups): group 0 (large free space, the flex group's first) is
        // skipped; group 2 is the first from the goal with a chunk of 512, and of its chunks
        // the smallest that holds 512 is taken, not the first free extent.
        let mut f = shaped(12, &[(2, 1024, 1024), (2, 8192, 512), (3, 0, 512)]);
        let (s, n) = f.find_in_groups(512, 1).unwrap();
        assert_eq!((s, n), (at(2, 8192), 512));
        // From group 0 itself as the goal: still not group 0.
        assert_eq!(f.find_in_groups(512, 0).unwrap().0, at(2, 8192));
        // From group 3 on, group 3's chunk.
        assert_eq!(f.find_in_groups(512, 3).unwrap().0, at(3, 0));
        // Nothing off group 0 holds 4096 aligned blocks: the next criterion (average fragment)
        // finds group 0, whose free space is one large extent.
        assert!(f.find_in_groups(4096, 1).unwrap().0 < BLOCKS_PER_GROUP);
    }

    #[test]
    fn other_requests_go_to_a_group_whose_average_fragment_holds_them() {
        // Group 2: 1,200 free blocks in one extent, but with ten 10-block holes its average
        // fragment is 120; group 3 has one free extent of 1,200. A request of 1,126 blocks
        // skips group 2 for group 3; a request of 100 takes group 2's first large extent.
        let mut holes = vec![(2, 0, 1200), (3, 5000, 1200)];
        holes.extend((0..10).map(|i| (2, 2000 + i * 100, 10)));
        let mut f = shaped(12, &holes);
        assert_eq!(f.find_in_groups(1126, 2).unwrap().0, at(3, 5000));
        assert_eq!(f.find_in_groups(100, 2).unwrap().0, at(2, 0));
    }

    #[test]
    fn inside_a_group_the_best_fit_of_the_first_runs_wins() {
        // Group 2 has a run of 4,096 blocks, then one of 512: a request of 300 blocks (not a
        // power of two) measures them as 4,096 and 512 and takes the smaller, where first fit
        // would split the large run.
        let mut f = shaped(12, &[(2, 0, 4096), (2, 8192, 512)]);
        assert_eq!(f.find_in_groups(300, 2).unwrap().0, at(2, 8192));
        // Eleven runs of 400 blocks before a run of exactly 300: after ten runs measured
        // mballoc settles for the best so far.
        let mut holes: Vec<(usize, u64, u64)> = (0..11).map(|i| (2, i * 1024, 400)).collect();
        holes.push((2, 16_384, 300));
        let mut f = shaped(12, &holes);
        let s = f.find_in_groups(300, 2).unwrap().0 - at(2, 0);
        assert!(s < 16_384 && s.is_multiple_of(1024), "{s}");
        // With fewer runs before it, the exact one is found.
        let mut f = shaped(12, &[(2, 0, 400), (2, 1024, 400), (2, 16_384, 300)]);
        assert_eq!(f.find_in_groups(300, 2).unwrap().0, at(2, 16_384));
    }

    #[test]
    fn with_order_lists_the_smallest_sufficient_order_wins_over_the_goal() {
        // 20 groups (order lists on): group 5 has a 2048-block chunk, group 9 one of exactly
        // 512. From the goal group 4, the linear scan would take group 5; the lists take the
        // group whose largest chunk is the smallest that fits.
        let mut f = shaped(20, &[(5, 0, 2048), (9, 4096, 512)]);
        assert_eq!(f.find_in_groups(512, 4).unwrap().0, at(9, 4096));
        let mut linear = shaped(12, &[(5, 0, 2048), (9, 4096, 512)]);
        assert_eq!(linear.find_in_groups(512, 4).unwrap().0, at(5, 0));
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
