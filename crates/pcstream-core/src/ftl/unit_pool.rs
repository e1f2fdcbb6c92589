//! The allocation units (lines or blocks): their state, valid-page counts, the free pool and
//! the index the victim policies choose from.
//!
//! # Invariants
//! - every unit is exactly one of: free (in `free`), open (owned by one write point), sealed;
//! - `valid[u]` = number of valid pages in `u`; a free unit has 0;
//! - a sealed unit is in exactly one greedy bucket, the one of its valid count.

use std::collections::VecDeque;

use crate::config::GcVictim;
use crate::units::{LogicalTime, UnitId};

pub const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitState {
    Free,
    /// Open for writing by write point `wp`.
    Open(u8),
    /// Full; owned by write point `wp` (the stream or class that filled it).
    Sealed(u8),
    /// Chosen as GC victim: out of the victim index while its valid pages are copied out.
    Collecting(u8),
}

pub struct Units {
    pub state: Vec<UnitState>,
    pub valid: Vec<u32>,
    /// Logical time the unit was opened (SepBIT's segment creation time).
    pub created: Vec<LogicalTime>,
    /// Logical time the unit was sealed (cost-benefit age).
    pub sealed_at: Vec<LogicalTime>,
    pub erases: Vec<u32>,
    pub free: VecDeque<u32>,
    victim: GcVictim,
    // Greedy: doubly linked lists of sealed units per valid count, oldest first.
    next: Vec<u32>,
    prev: Vec<u32>,
    head: Vec<u32>,
    tail: Vec<u32>,
    min_bucket: usize,
    // FIFO: sealed units in seal order.
    fifo: VecDeque<u32>,
}

impl Units {
    pub fn new(units: u32, unit_pages: u32, victim: GcVictim) -> Units {
        let n = units as usize;
        let buckets = if victim == GcVictim::Greedy {
            unit_pages as usize + 1
        } else {
            0
        };
        Units {
            state: vec![UnitState::Free; n],
            valid: vec![0; n],
            created: vec![LogicalTime(0); n],
            sealed_at: vec![LogicalTime(0); n],
            erases: vec![0; n],
            free: (0..units).collect(),
            victim,
            next: vec![NIL; if buckets > 0 { n } else { 0 }],
            prev: vec![NIL; if buckets > 0 { n } else { 0 }],
            head: vec![NIL; buckets],
            tail: vec![NIL; buckets],
            min_bucket: 0,
            fifo: VecDeque::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.state.len()
    }

    pub fn is_empty(&self) -> bool {
        self.state.is_empty()
    }

    pub fn free_count(&self) -> u32 {
        self.free.len() as u32
    }

    /// Take a free unit for write point `wp`.
    pub fn open(&mut self, wp: u8, now: LogicalTime) -> Option<UnitId> {
        let u = self.free.pop_front()?;
        debug_assert_eq!(self.state[u as usize], UnitState::Free);
        debug_assert_eq!(self.valid[u as usize], 0);
        self.state[u as usize] = UnitState::Open(wp);
        self.created[u as usize] = now;
        Some(UnitId(u))
    }

    /// A page of `u` was programmed.
    #[inline]
    pub fn add_valid(&mut self, u: UnitId) {
        debug_assert!(matches!(self.state[u.0 as usize], UnitState::Open(_)));
        self.valid[u.0 as usize] += 1;
    }

    /// `n` pages programmed into open unit `u` at once.
    #[inline]
    pub fn add_valid_n(&mut self, u: UnitId, n: u32) {
        debug_assert!(matches!(self.state[u.0 as usize], UnitState::Open(_)));
        self.valid[u.0 as usize] += n;
    }

    /// A page of `u` became invalid.
    #[inline]
    pub fn remove_valid(&mut self, u: UnitId) {
        let i = u.0 as usize;
        debug_assert!(
            self.valid[i] > 0,
            "invalidating a page of unit {i} that has no valid pages"
        );
        let v = self.valid[i];
        self.valid[i] = v - 1;
        if !self.head.is_empty() && matches!(self.state[i], UnitState::Sealed(_)) {
            self.unlink(u.0, v as usize);
            self.link(u.0, v as usize - 1);
            if (v as usize - 1) < self.min_bucket {
                self.min_bucket = v as usize - 1;
            }
        }
    }

    /// The open unit `u` is full.
    pub fn seal(&mut self, u: UnitId, now: LogicalTime) {
        let i = u.0 as usize;
        let UnitState::Open(wp) = self.state[i] else {
            panic!("sealing unit {i} that is not open: {:?}", self.state[i])
        };
        self.state[i] = UnitState::Sealed(wp);
        self.sealed_at[i] = now;
        match self.victim {
            GcVictim::Greedy => {
                let v = self.valid[i] as usize;
                self.link(u.0, v);
                self.min_bucket = self.min_bucket.min(v);
            }
            GcVictim::Fifo => self.fifo.push_back(u.0),
            GcVictim::CostBenefit => {}
        }
    }

    /// Choose a victim among sealed units; `None` if there is none.
    pub fn pick_victim(&mut self, now: LogicalTime, unit_pages: u32) -> Option<UnitId> {
        match self.victim {
            GcVictim::Greedy => {
                while self.min_bucket < self.head.len() && self.head[self.min_bucket] == NIL {
                    self.min_bucket += 1;
                }
                (self.min_bucket < self.head.len()).then(|| UnitId(self.head[self.min_bucket]))
            }
            GcVictim::Fifo => self.fifo.front().map(|&u| UnitId(u)),
            GcVictim::CostBenefit => {
                // LFS cost-benefit: maximise (1 − u)·age / (1 + u); ties → lowest unit id.
                let mut best: Option<(f64, u32)> = None;
                for (i, s) in self.state.iter().enumerate() {
                    if !matches!(s, UnitState::Sealed(_)) {
                        continue;
                    }
                    let u = self.valid[i] as f64 / unit_pages as f64;
                    let age = now.since(self.sealed_at[i]) as f64 + 1.0;
                    let score = (1.0 - u) * age / (1.0 + u);
                    if best.is_none_or(|(b, _)| score > b) {
                        best = Some((score, i as u32));
                    }
                }
                best.map(|(_, i)| UnitId(i))
            }
        }
    }

    /// Take the sealed unit `u` out of the victim index before its pages are copied out.
    pub fn begin_collect(&mut self, u: UnitId) -> u8 {
        let i = u.0 as usize;
        let UnitState::Sealed(wp) = self.state[i] else {
            panic!(
                "collecting unit {i} that is not sealed: {:?}",
                self.state[i]
            )
        };
        match self.victim {
            GcVictim::Greedy => self.unlink(u.0, self.valid[i] as usize),
            GcVictim::Fifo => {
                let pos = self
                    .fifo
                    .iter()
                    .position(|&x| x == u.0)
                    .expect("sealed unit in FIFO");
                self.fifo.remove(pos);
            }
            GcVictim::CostBenefit => {}
        }
        self.state[i] = UnitState::Collecting(wp);
        wp
    }

    /// Erase the collected victim `u` (all its pages moved or invalid) and free it.
    pub fn erase(&mut self, u: UnitId) -> u8 {
        let i = u.0 as usize;
        let UnitState::Collecting(wp) = self.state[i] else {
            panic!(
                "erasing unit {i} that is not being collected: {:?}",
                self.state[i]
            )
        };
        debug_assert_eq!(self.valid[i], 0, "erasing unit {i} with valid pages");
        self.state[i] = UnitState::Free;
        self.erases[i] += 1;
        self.free.push_back(u.0);
        wp
    }

    fn link(&mut self, u: u32, b: usize) {
        let t = self.tail[b];
        self.prev[u as usize] = t;
        self.next[u as usize] = NIL;
        if t == NIL {
            self.head[b] = u;
        } else {
            self.next[t as usize] = u;
        }
        self.tail[b] = u;
    }

    fn unlink(&mut self, u: u32, b: usize) {
        let (p, n) = (self.prev[u as usize], self.next[u as usize]);
        if p == NIL {
            debug_assert_eq!(self.head[b], u, "unit {u} not at the head of bucket {b}");
            self.head[b] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail[b] = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    /// Units in the greedy bucket of valid count `b` (verification only).
    pub fn bucket_members(&self, b: usize) -> Vec<u32> {
        let mut out = Vec::new();
        if self.head.is_empty() {
            return out;
        }
        let mut u = self.head[b];
        while u != NIL {
            out.push(u);
            u = self.next[u as usize];
        }
        out
    }

    pub fn uses_buckets(&self) -> bool {
        !self.head.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.len() * (std::mem::size_of::<UnitState>() + 4 + 8 + 8 + 4 + 4)
            + (self.next.len() + self.prev.len() + self.head.len() + self.tail.len()) * 4
    }
}
