//! # sepbit — Separating data via Block Invalidation Time inference
//!
//! What it does: six classes, each its own write point. A user write of LPN x goes to class 1
//! (short-lived) if the version it invalidates was written less than `min(ℓ, FIFO length)` host
//! pages ago (found in a FIFO of recent user writes), else class 2. A GC copy from a class-1 unit
//! goes to class 3; others by age since their user write: `< 4ℓ` class 4, `< 16ℓ` class 5, else
//! class 6. `ℓ` = mean lifespan (erase time − open time) of the last 16 reclaimed class-1 units,
//! +∞ until the first 16. The FIFO keeps the last `min(ℓ, #valid pages)` user writes.
//! Source: Wang et al., "Separating Data via Block Invalidation Time Inference for Write
//! Amplification Reduction in Log-Structured Storage", FAST'22; artifact fallfish/sepbit
//! (`SepBIT.java`, `sepbit.cc`).
//! What it sees: LPN, user-vs-GC writes with the victim's class and creation time and the copied
//! page's user-write time, and invalidation events (only to count valid pages, via TRIMs).
//! State: per LPN its FIFO time (u64) and a live bit; 16 B per FIFO entry; scalars.
//! Classes → write points: paper class c is write point c−1 (0..5); with fewer than 6 host
//! streams the missing ones are internal write points (`internal_write_points`). A "segment" is
//! the simulator's GC unit.
//! Parameters: `sample` (16 reclaimed class-1 units per ℓ update), `age_base` (4: the GC class
//! boundaries are ℓ·4, ℓ·16).
//! Deviations: GC trigger and victim choice are the simulator's (watermarks, greedy by default)
//! rather than "15 % garbage of the whole log"; the FIFO pops at most 2 entries per write
//! (amortised O(1); the class test uses `min(ℓ, FIFO length)` so a long FIFO is harmless);
//! prefill pages (no user-write time) count as valid only once rewritten and are class 6 at GC.

use std::collections::VecDeque;

use super::{
    Attrs, Cause, GcMode, Invalidation, PageInfo, Placement, PolicyCtx, Reclaimed, WriteInfo,
};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

const CLASSES: u32 = 6;
const NOT_IN_FIFO: u64 = u64::MAX;

pub struct SepBit {
    // Fixed at construction.
    host_streams: u32,
    sample: u64,
    age_base: u64,
    // Per LPN.
    fifo_time: Vec<u64>,
    live: Vec<u64>,
    // FIFO of (lpn, user-write time), oldest first.
    fifo: VecDeque<(u64, u64)>,
    valid: u64,
    /// ℓ in host pages (`u64::MAX` = +∞ before the first update).
    ell: u64,
    sum_life: u64,
    n_collected: u64,
    updates: u64,
}

impl SepBit {
    pub fn new(ctx: &mut PolicyCtx) -> Result<SepBit, SimError> {
        let sample: u64 = ctx.param("sample", 16)?;
        let age_base: u64 = ctx.param("age_base", 4)?;
        if sample == 0 || age_base < 2 {
            return Err(SimError::BadParam(
                "sample must be ≥ 1 and age_base ≥ 2".into(),
            ));
        }
        let n = ctx.logical_pages as usize;
        Ok(SepBit {
            host_streams: ctx.host_streams,
            sample,
            age_base,
            fifo_time: vec![NOT_IN_FIFO; n],
            live: vec![0; n.div_ceil(64)],
            fifo: VecDeque::new(),
            valid: 0,
            ell: u64::MAX,
            sum_life: 0,
            n_collected: 0,
            updates: 0,
        })
    }

    /// Current threshold ℓ (`None` = +∞) and how many times it was updated.
    pub fn ell(&self) -> (Option<u64>, u64) {
        ((self.ell != u64::MAX).then_some(self.ell), self.updates)
    }

    fn is_live(&self, lpn: u64) -> bool {
        self.live[(lpn / 64) as usize] >> (lpn % 64) & 1 == 1
    }
    fn set_live(&mut self, lpn: u64, on: bool) {
        let w = &mut self.live[(lpn / 64) as usize];
        if on {
            *w |= 1 << (lpn % 64);
        } else {
            *w &= !(1 << (lpn % 64));
        }
    }
}

impl Placement for SepBit {
    fn name(&self) -> &'static str {
        "sepbit"
    }
    fn sees(&self) -> Attrs {
        Attrs::LPN.union(Attrs::GC_INFO).union(Attrs::LIFETIME)
    }
    fn gc_mode(&self) -> GcMode {
        GcMode::Policy
    }
    fn internal_write_points(&self) -> u32 {
        CLASSES.saturating_sub(self.host_streams)
    }
    fn on_write(&mut self, w: &WriteInfo, now: LogicalTime) -> StreamId {
        let x = w.lpn.0;
        let t = now.0;
        let prev = self.fifo_time[x as usize];
        let bound = self.ell.min(self.fifo.len() as u64);
        // Lifespan of the version being invalidated, if it is still in the FIFO.
        let class = if prev != NOT_IN_FIFO && t - prev < bound {
            0
        } else {
            1
        };
        if !self.is_live(x) {
            self.set_live(x, true);
            self.valid += 1;
        }
        self.fifo_time[x as usize] = t;
        self.fifo.push_back((x, t));
        let cap = self.ell.min(self.valid);
        for _ in 0..2 {
            if self.fifo.len() as u64 <= cap {
                break;
            }
            let (l, tl) = self.fifo.pop_front().expect("non-empty FIFO");
            if self.fifo_time[l as usize] == tl {
                self.fifo_time[l as usize] = NOT_IN_FIFO;
            }
        }
        StreamId(class)
    }
    fn on_invalidate(&mut self, inv: &Invalidation) {
        if inv.cause == Cause::Trim {
            // A later write of x invalidates nothing: it must not look short-lived.
            self.fifo_time[inv.lpn.0 as usize] = NOT_IN_FIFO;
            if self.is_live(inv.lpn.0) {
                self.set_live(inv.lpn.0, false);
                self.valid -= 1;
            }
        }
    }
    fn prefetch(&self, lpn: u64) {
        if let Some(t) = self.fifo_time.get(lpn as usize) {
            crate::prefetch::read(t);
        }
        // The FIFO pops about one entry per write and checks that LPN's time: fetch the entry
        // that will be popped a few writes from now.
        if let Some(&(l, _)) = self.fifo.get(16) {
            crate::prefetch::read(&self.fifo_time[l as usize]);
        }
    }
    fn gc_destination(&mut self, p: &PageInfo, now: LogicalTime) -> StreamId {
        if p.victim_wp == 0 {
            return StreamId(2);
        }
        let Some(tw) = p.t_write else {
            return StreamId(5);
        };
        let age = now.since(tw);
        let b1 = self.ell.saturating_mul(self.age_base);
        let b2 = b1.saturating_mul(self.age_base);
        StreamId(if age < b1 {
            3
        } else if age < b2 {
            4
        } else {
            5
        })
    }
    fn on_segment_reclaimed(&mut self, r: &Reclaimed, now: LogicalTime) {
        if r.wp != 0 {
            return;
        }
        self.sum_life += now.since(r.created);
        self.n_collected += 1;
        if self.n_collected == self.sample {
            self.ell = (self.sum_life / self.sample).max(1);
            self.updates += 1;
            self.sum_life = 0;
            self.n_collected = 0;
        }
    }
    fn state_bytes(&self) -> usize {
        self.fifo_time.len() * 8 + self.live.len() * 8 + self.fifo.capacity() * 16
    }
}
