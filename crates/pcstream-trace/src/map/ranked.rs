//! A sequence with O(log n) access, insertion and removal by position: a treap whose nodes count
//! their subtrees, stored in one `Vec` (indices, no pointers). The extent map keeps a file's
//! extents in it: a file written at random into fallocated space has tens of thousands of
//! extents, and a `Vec` moves all the ones after each split; the extent map also needs each
//! extent's position (the extent-tree leaf that holds it), which a map keyed by block lacks.
//!
//! Priorities come from a counter through a fixed mix, so the shape is the same on every run;
//! nothing read from the sequence depends on its shape anyway.
//!
//! Most files have a handful of extents: a short sequence stays a plain `Vec` (a binary search
//! and a move of at most [`FLAT_MAX`] items is cheaper than a walk down the tree), becomes a
//! tree past [`FLAT_MAX`] items and a `Vec` again at [`FLAT_MIN`] (apart, so a length going up
//! and down by one does not rebuild it each time).

/// No node.
const NIL: u32 = u32::MAX;
/// Longest sequence kept as a `Vec`.
const FLAT_MAX: usize = 64;
/// Length at which a tree becomes a `Vec` again.
const FLAT_MIN: usize = 16;

#[derive(Clone, Debug)]
struct Node<T> {
    item: T,
    left: u32,
    right: u32,
    /// Nodes in this subtree, this one included.
    size: u32,
    prio: u32,
}

/// A sequence of `T` indexed by position, each operation O(log n) expected.
#[derive(Clone, Debug)]
pub struct RankedSeq<T> {
    /// The items while the sequence is short (then `root` is `NIL` and `nodes` empty).
    flat: Vec<T>,
    nodes: Vec<Node<T>>,
    /// Slots of removed nodes, reused before the arena grows.
    free: Vec<u32>,
    root: u32,
    /// Nodes made so far: the source of the next priority.
    made: u32,
}

impl<T> Default for RankedSeq<T> {
    fn default() -> Self {
        Self {
            flat: Vec::new(),
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            made: 0,
        }
    }
}

impl<T: Copy> RankedSeq<T> {
    pub fn len(&self) -> usize {
        if self.root == NIL {
            self.flat.len()
        } else {
            self.size(self.root) as usize
        }
    }

    pub fn is_empty(&self) -> bool {
        self.root == NIL && self.flat.is_empty()
    }

    #[inline]
    fn size(&self, t: u32) -> u32 {
        if t == NIL {
            0
        } else {
            self.nodes[t as usize].size
        }
    }

    #[inline]
    fn update(&mut self, t: u32) {
        let n = &self.nodes[t as usize];
        let size = 1 + self.size(n.left) + self.size(n.right);
        self.nodes[t as usize].size = size;
    }

    /// The node at position `i` (`i < len`).
    fn node_at(&self, mut i: usize) -> u32 {
        let mut t = self.root;
        loop {
            let n = &self.nodes[t as usize];
            let ls = self.size(n.left) as usize;
            match i.cmp(&ls) {
                std::cmp::Ordering::Less => t = n.left,
                std::cmp::Ordering::Equal => return t,
                std::cmp::Ordering::Greater => {
                    i -= ls + 1;
                    t = n.right;
                }
            }
        }
    }

    /// The item at position `i`; panics past the end, as a slice does.
    pub fn get(&self, i: usize) -> T {
        if self.root == NIL {
            return self.flat[i];
        }
        assert!(i < self.len(), "position {i} past the end ({})", self.len());
        self.nodes[self.node_at(i) as usize].item
    }

    /// The item at position `i`, if any.
    pub fn get_opt(&self, i: usize) -> Option<T> {
        (i < self.len()).then(|| self.get(i))
    }

    /// Replace the item at position `i` (the caller keeps the order it relies on).
    pub fn set(&mut self, i: usize, item: T) {
        if self.root == NIL {
            self.flat[i] = item;
            return;
        }
        assert!(i < self.len(), "position {i} past the end ({})", self.len());
        let t = self.node_at(i);
        self.nodes[t as usize].item = item;
    }

    /// Number of leading items for which `pred` holds (`pred` true then false along the
    /// sequence), as `slice::partition_point`.
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        if self.root == NIL {
            return self.flat.partition_point(pred);
        }
        let mut t = self.root;
        let mut before = 0usize;
        while t != NIL {
            let n = &self.nodes[t as usize];
            if pred(&n.item) {
                before += self.size(n.left) as usize + 1;
                t = n.right;
            } else {
                t = n.left;
            }
        }
        before
    }

    fn new_node(&mut self, item: T) -> u32 {
        self.made = self.made.wrapping_add(1);
        // A 32-bit finaliser of the counter (murmur3's): spread priorities, fixed sequence.
        let mut p = self.made;
        p ^= p >> 16;
        p = p.wrapping_mul(0x85eb_ca6b);
        p ^= p >> 13;
        p = p.wrapping_mul(0xc2b2_ae35);
        p ^= p >> 16;
        let node = Node {
            item,
            left: NIL,
            right: NIL,
            size: 1,
            prio: p,
        };
        if let Some(t) = self.free.pop() {
            self.nodes[t as usize] = node;
            t
        } else {
            let t = u32::try_from(self.nodes.len()).expect("fewer than 2^32 items");
            assert!(t != NIL, "fewer than 2^32 - 1 items");
            self.nodes.push(node);
            t
        }
    }

    /// Split `t` into its first `k` items and the rest.
    fn split(&mut self, t: u32, k: usize) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let left = self.nodes[t as usize].left;
        let ls = self.size(left) as usize;
        if k <= ls {
            let (a, b) = self.split(left, k);
            self.nodes[t as usize].left = b;
            self.update(t);
            (a, t)
        } else {
            let right = self.nodes[t as usize].right;
            let (a, b) = self.split(right, k - ls - 1);
            self.nodes[t as usize].right = a;
            self.update(t);
            (t, b)
        }
    }

    /// `a` followed by `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.nodes[a as usize].right = m;
            self.update(a);
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.nodes[b as usize].left = m;
            self.update(b);
            b
        }
    }

    /// Put the nodes of subtree `t` back on the free list.
    fn release(&mut self, t: u32) {
        let mut stack = vec![t];
        while let Some(t) = stack.pop() {
            if t == NIL {
                continue;
            }
            let n = &self.nodes[t as usize];
            stack.push(n.left);
            stack.push(n.right);
            self.free.push(t);
        }
    }

    /// Insert `item` at position `i` (`i <= len`), after the items before it.
    pub fn insert(&mut self, i: usize, item: T) {
        assert!(
            i <= self.len(),
            "insertion at {i} past the end ({})",
            self.len()
        );
        self.splice(i, i, std::iter::once(item));
    }

    /// Replace positions `[from, to)` with `items`, in their order: O((k + m) log n) for k items
    /// removed and m inserted.
    pub fn splice(&mut self, from: usize, to: usize, items: impl IntoIterator<Item = T>) {
        assert!(from <= to && to <= self.len(), "bad range {from}..{to}");
        if self.root == NIL {
            self.flat.splice(from..to, items);
            if self.flat.len() > FLAT_MAX {
                for item in std::mem::take(&mut self.flat) {
                    let n = self.new_node(item);
                    self.root = self.merge(self.root, n);
                }
            }
            return;
        }
        // An append or a pure insertion splits once (or not at all): most edits are one of them.
        let (head, rest) = if from == self.len() {
            (self.root, NIL)
        } else {
            self.split(self.root, from)
        };
        let (gone, tail) = if to == from {
            (NIL, rest)
        } else {
            self.split(rest, to - from)
        };
        if gone != NIL {
            self.release(gone);
        }
        let mut mid = NIL;
        for item in items {
            let n = self.new_node(item);
            mid = self.merge(mid, n);
        }
        let left = self.merge(head, mid);
        self.root = self.merge(left, tail);
        if self.len() <= FLAT_MIN {
            // Short again (an unlinked file's map may have been large): a `Vec`, the arena let go.
            let flat = self.iter().copied().collect();
            *self = Self {
                flat,
                ..Self::default()
            };
        }
    }

    /// The items in order.
    pub fn iter(&self) -> Iter<'_, T> {
        let mut it = Iter {
            seq: self,
            flat: self.flat.iter(),
            stack: Vec::new(),
        };
        it.descend(self.root);
        it
    }
}

/// In-order walk of a [`RankedSeq`].
pub struct Iter<'a, T> {
    seq: &'a RankedSeq<T>,
    /// The items of a short sequence (empty for a tree).
    flat: std::slice::Iter<'a, T>,
    stack: Vec<u32>,
}

impl<T> Iter<'_, T> {
    fn descend(&mut self, mut t: u32) {
        while t != NIL {
            self.stack.push(t);
            t = self.seq.nodes[t as usize].left;
        }
    }
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        if let Some(item) = self.flat.next() {
            return Some(item);
        }
        let t = self.stack.pop()?;
        let seq: &'a RankedSeq<T> = self.seq;
        let n = &seq.nodes[t as usize];
        self.descend(n.right);
        Some(&n.item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random edits against a `Vec` doing the same: every position, search and walk agree.
    #[test]
    fn agrees_with_a_vec() {
        let mut s = RankedSeq::default();
        let mut v: Vec<u64> = Vec::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x >> 8) as usize % (v.len() + 1);
            match x % 10 {
                0..=4 => {
                    s.insert(at, step);
                    v.insert(at, step);
                }
                5 | 6 if !v.is_empty() => {
                    let i = at.min(v.len() - 1);
                    s.splice(i, i + 1, std::iter::empty());
                    v.remove(i);
                }
                7 if !v.is_empty() => {
                    let i = at.min(v.len() - 1);
                    s.set(i, step + 1_000_000);
                    v[i] = step + 1_000_000;
                }
                8 => {
                    let to = (at + (x >> 40) as usize % 4).min(v.len());
                    let new = [step, step + 1];
                    s.splice(at, to, new);
                    v.splice(at..to, new);
                }
                _ => {
                    let i = at.min(v.len());
                    assert_eq!(s.get_opt(i), v.get(i).copied(), "step {step}");
                }
            }
            assert_eq!(s.len(), v.len(), "step {step}");
            if step.is_multiple_of(997) {
                assert!(s.iter().copied().eq(v.iter().copied()), "step {step}");
                let mut sorted = v.clone();
                sorted.sort_unstable();
                let mut t = RankedSeq::default();
                t.splice(0, 0, sorted.iter().copied());
                let k = sorted[sorted.len() / 2];
                assert_eq!(
                    t.partition_point(|&e| e < k),
                    sorted.partition_point(|&e| e < k)
                );
            }
        }
        assert!(s.root != NIL, "the walk grew a tree");
        // Shrink one item at a time: a tree to a `Vec` at FLAT_MIN, agreeing all the way.
        while v.len() > 3 {
            let i = v.len() / 2;
            s.splice(i, i + 1, std::iter::empty());
            v.remove(i);
            assert!(s.iter().copied().eq(v.iter().copied()), "{} left", v.len());
            assert_eq!(s.get(v.len() - 1), v[v.len() - 1]);
        }
        assert!(
            s.root == NIL && s.nodes.is_empty(),
            "a short sequence lets its arena go"
        );
        s.splice(0, s.len(), std::iter::empty());
        assert!(s.is_empty());
    }
}
