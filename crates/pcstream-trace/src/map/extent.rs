//! A file's extent map: logical block → physical block runs, as ext4 keeps them (at most 32768
//! blocks per extent, an `unwritten` flag for fallocated space), and the extent-tree blocks a file
//! needs once its extents no longer fit the four slots of the inode.

use super::ranked::RankedSeq;

/// Longest extent ext4 records (initialised; unwritten extents hold one less, ignored here).
pub const MAX_EXTENT_BLOCKS: u64 = 32_768;
/// Extents stored in the inode itself.
pub const INODE_EXTENTS: usize = 4;
/// Entries of one extent-tree block ((4096 − 12) / 12).
pub const EXTENTS_PER_BLOCK: usize = 340;

/// One extent: `len` blocks from logical `logical` at physical `phys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub phys: u64,
    pub len: u64,
    pub unwritten: bool,
}

impl Extent {
    #[inline]
    pub fn end(&self) -> u64 {
        self.logical + self.len
    }

    /// Whether `next` continues this extent on disk, of the same kind, within one extent's length.
    #[inline]
    fn joins(&self, next: &Extent) -> bool {
        self.end() == next.logical
            && self.phys + self.len == next.phys
            && self.unwritten == next.unwritten
            && self.len + next.len <= MAX_EXTENT_BLOCKS
    }
}

/// The extents of one file, sorted by logical block, non-overlapping. Kept in a
/// [`RankedSeq`]: each write splits or merges in O(log n) and an extent's position (which
/// extent-tree leaf holds it) stays at hand.
#[derive(Clone, Debug, Default)]
pub struct ExtentMap {
    ext: RankedSeq<Extent>,
}

impl ExtentMap {
    pub fn len(&self) -> usize {
        self.ext.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ext.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Extent> {
        self.ext.iter()
    }

    /// Index of the first extent ending after `l`.
    #[inline]
    fn first_ending_after(&self, l: u64) -> usize {
        self.ext.partition_point(|e| e.end() <= l)
    }

    /// Extent index holding logical block `l`, if mapped.
    pub fn find(&self, l: u64) -> Option<usize> {
        let i = self.first_ending_after(l);
        self.ext
            .get_opt(i)
            .is_some_and(|e| e.logical <= l)
            .then_some(i)
    }

    pub fn get(&self, i: usize) -> Extent {
        self.ext.get(i)
    }

    /// Logical start of the first extent at or after `l` (`u64::MAX` if none).
    pub fn next_mapped(&self, l: u64) -> u64 {
        let i = self.first_ending_after(l);
        self.ext.get_opt(i).map_or(u64::MAX, |e| e.logical.max(l))
    }

    /// The physical block logical `l` would have if it continued the extent before it
    /// (ext4's allocation goal), if there is one.
    pub fn goal_for(&self, l: u64) -> Option<u64> {
        let i = self.first_ending_after(l);
        let at = self.ext.get_opt(i);
        let prev = match at {
            Some(e) if e.logical <= l => Some(e),
            _ if i > 0 => Some(self.ext.get(i - 1)),
            _ => at,
        }?;
        Some(if prev.logical <= l {
            prev.phys + (l - prev.logical)
        } else {
            prev.phys.saturating_sub(prev.logical - l)
        })
    }

    /// Map the unmapped logical range `[logical, logical+len)` to `phys..`. Merges with
    /// contiguous neighbours of the same kind. Returns the index of the extent that now holds
    /// `logical`.
    pub fn insert(&mut self, logical: u64, phys: u64, len: u64, unwritten: bool) -> usize {
        let i = self.first_ending_after(logical);
        let next = self.ext.get_opt(i);
        debug_assert!(
            next.is_none_or(|e| e.logical >= logical + len),
            "mapping over a mapped block"
        );
        let new = Extent {
            logical,
            phys,
            len,
            unwritten,
        };
        if i > 0 {
            let mut prev = self.ext.get(i - 1);
            if prev.joins(&new) {
                prev.len += len;
                match next {
                    Some(n) if prev.joins(&n) => {
                        prev.len += n.len;
                        self.ext.splice(i - 1, i + 1, [prev]);
                    }
                    _ => self.ext.set(i - 1, prev),
                }
                return i - 1;
            }
        }
        match next {
            Some(n) if new.joins(&n) => self.ext.set(
                i,
                Extent {
                    len: len + n.len,
                    ..new
                },
            ),
            _ => self.ext.insert(i, new),
        }
        i
    }

    /// Unmap `[from, to)`; calls `freed(phys, len)` for every physical run released.
    pub fn remove_range(&mut self, from: u64, to: u64, mut freed: impl FnMut(u64, u64)) {
        if from >= to {
            return;
        }
        let first = self.first_ending_after(from);
        let last = self.ext.partition_point(|e| e.logical < to);
        if first >= last {
            return;
        }
        // The extents cut, in order; what is left of the first (its head) and of the last (its
        // tail) put back.
        let (mut head, mut tail) = (None, None);
        for e in (first..last).map(|i| self.ext.get(i)) {
            let cut_from = from.max(e.logical);
            let cut_to = to.min(e.end());
            freed(e.phys + (cut_from - e.logical), cut_to - cut_from);
            if cut_from > e.logical {
                head = Some(Extent {
                    len: cut_from - e.logical,
                    ..e
                });
            }
            if cut_to < e.end() {
                tail = Some(Extent {
                    logical: cut_to,
                    phys: e.phys + (cut_to - e.logical),
                    len: e.end() - cut_to,
                    unwritten: e.unwritten,
                });
            }
        }
        self.ext.splice(first, last, head.into_iter().chain(tail));
    }

    /// Mark `[from, to)` written (converting unwritten extents, splitting them as needed);
    /// returns whether anything changed.
    pub fn mark_written(&mut self, from: u64, to: u64) -> bool {
        let first = self.first_ending_after(from);
        let last = self.ext.partition_point(|e| e.logical < to);
        // The run from the first to the last unwritten extent of the range: what is rewritten
        // (written extents inside it kept), and merged with the one extent on either side.
        let touched: Vec<Extent> = (first..last).map(|i| self.ext.get(i)).collect();
        let Some(lo) = touched.iter().position(|e| e.unwritten) else {
            return false;
        };
        let hi = touched
            .iter()
            .rposition(|e| e.unwritten)
            .expect("one unwritten")
            + 1;
        let mut parts: Vec<Extent> = Vec::with_capacity(hi - lo + 2);
        for &e in &touched[lo..hi] {
            if !e.unwritten {
                parts.push(e);
                continue;
            }
            let a = from.max(e.logical);
            let b = to.min(e.end());
            if a > e.logical {
                parts.push(Extent {
                    len: a - e.logical,
                    ..e
                });
            }
            parts.push(Extent {
                logical: a,
                phys: e.phys + (a - e.logical),
                len: b - a,
                unwritten: false,
            });
            if b < e.end() {
                parts.push(Extent {
                    logical: b,
                    phys: e.phys + (b - e.logical),
                    len: e.end() - b,
                    unwritten: true,
                });
            }
        }
        self.merge_around(first + lo, first + hi, parts);
        true
    }

    /// Replace `ext[lo..hi]` with `parts`, merging contiguous extents of the same kind among
    /// them and their two neighbours, as ext4 merges a converted extent with the extents beside
    /// it. Only the rewritten run is visited: a whole-map pass per write made random writes into
    /// a fallocated file quadratic (a 1000 MiB fio file: 3 minutes to map).
    fn merge_around(&mut self, lo: usize, hi: usize, parts: Vec<Extent>) {
        let start = lo.saturating_sub(1);
        let end = (hi + 1).min(self.ext.len());
        let before = (start < lo).then(|| self.ext.get(start));
        let after = (hi < end).then(|| self.ext.get(hi));
        let mut out: Vec<Extent> = Vec::with_capacity(parts.len() + 2);
        for e in before.into_iter().chain(parts).chain(after) {
            if let Some(p) = out.last_mut() {
                if p.joins(&e) {
                    p.len += e.len;
                    continue;
                }
            }
            out.push(e);
        }
        self.ext.splice(start, end, out);
    }

    /// Blocks mapped.
    pub fn mapped_blocks(&self) -> u64 {
        self.ext.iter().map(|e| e.len).sum()
    }
}

/// Extent-tree blocks a file with `extents` extents needs (leaves, plus index blocks above
/// four leaves).
pub fn tree_blocks(extents: usize) -> usize {
    if extents <= INODE_EXTENTS {
        return 0;
    }
    let leaves = extents.div_ceil(EXTENTS_PER_BLOCK);
    let index = if leaves > INODE_EXTENTS {
        leaves.div_ceil(EXTENTS_PER_BLOCK)
    } else {
        0
    };
    leaves + index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_remove_splits() {
        let mut m = ExtentMap::default();
        m.insert(0, 100, 4, false);
        m.insert(4, 104, 4, false);
        assert_eq!(m.len(), 1);
        m.insert(10, 200, 2, false);
        assert_eq!(m.len(), 2);
        assert_eq!(m.goal_for(8), Some(108));
        assert_eq!(m.next_mapped(8), 10);
        let mut freed = Vec::new();
        m.remove_range(2, 11, |p, l| freed.push((p, l)));
        assert_eq!(freed, vec![(102, 6), (200, 1)]);
        assert_eq!(m.find(11).map(|i| m.get(i).phys), Some(201));
        assert_eq!(m.mapped_blocks(), 3);
    }

    #[test]
    fn unwritten_conversion() {
        let mut m = ExtentMap::default();
        m.insert(0, 50, 10, true);
        assert!(m.mark_written(3, 5));
        let v: Vec<_> = m.iter().map(|e| (e.logical, e.len, e.unwritten)).collect();
        assert_eq!(v, vec![(0, 3, true), (3, 2, false), (5, 5, true)]);
        assert!(m.mark_written(0, 10));
        assert_eq!(m.len(), 1);
        assert!(!m.mark_written(0, 10));
    }

    #[test]
    fn random_writes_into_fallocated_space_stay_merged() {
        // A fallocated file written at random, as fio lays out and writes its file: after every
        // write the map must say which blocks are written and hold no two extents that join.
        const BLOCKS: u64 = 4096;
        let mut m = ExtentMap::default();
        m.insert(0, 10_000, BLOCKS, true);
        let mut written = vec![false; BLOCKS as usize];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for step in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let from = x % BLOCKS;
            let to = (from + 1 + (x >> 40) % 4).min(BLOCKS);
            let fresh = written[from as usize..to as usize].iter().any(|w| !w);
            assert_eq!(m.mark_written(from, to), fresh, "step {step}");
            written[from as usize..to as usize].fill(true);
            let ext: Vec<Extent> = m.iter().copied().collect();
            assert!(
                ext.windows(2).all(|w| !w[0].joins(&w[1])),
                "step {step}: unmerged {ext:?}"
            );
            for e in &ext {
                assert_eq!(e.phys - 10_000, e.logical, "step {step}");
                let w = &written[e.logical as usize..e.end() as usize];
                assert!(w.iter().all(|&b| b != e.unwritten), "step {step}: {e:?}");
            }
            assert_eq!(m.mapped_blocks(), BLOCKS);
        }
        assert!(written.iter().all(|&w| w), "the walk wrote every block");
        assert_eq!(m.len(), 1, "every block written: one extent");
    }

    #[test]
    fn tree_sizes() {
        assert_eq!(tree_blocks(4), 0);
        assert_eq!(tree_blocks(5), 1);
        assert_eq!(tree_blocks(341), 2);
        assert_eq!(tree_blocks(340 * 5), 6);
    }
}
