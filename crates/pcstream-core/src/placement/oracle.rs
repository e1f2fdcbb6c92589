//! # oracle — future knowledge (lower bound)
//!
//! What it does: every page version knows its death time `d` (the logical time of the next
//! overwrite or TRIM of its LPN, from a pre-pass over the trace); host and GC writes are placed by
//! remaining lifetime `r = d − now` into K = host-stream classes, so data dying together share
//! units. GC copies are re-bucketed with their *remaining* lifetime.
//! Source: FK of the SepBIT artifact (FAST'22) and the "future update time" argument of PCStream.
//! What it sees: the death time (and nothing else).
//! State: none beyond the simulator's per-page death time (8 B per physical page) and the
//! pre-pass tables (8 B per host page written + 16 B per logical page).
//! Parameters: `buckets` = `geometric` (default: boundaries b0·q^i, b0 = unit/2, q = 4) or
//! `linear` (SepBIT FK: one unit wide); `base` (b0 in pages), `ratio` (q).
//! Deviations: a lifetime also ends at a TRIM (our choice, matching the lifetime statistics).

use super::lifetime_class::{geometric_class, CLASS_RATIO};
use super::{Attrs, GcMode, PageInfo, Placement, PolicyCtx, WriteInfo};
use crate::error::SimError;
use crate::request::{Op, Request};
use crate::units::{LogicalTime, StreamId, NEVER};

pub struct Oracle {
    classes: u32,
    linear: bool,
    base: f64,
    ratio: f64,
    unit_pages: u64,
}

impl Oracle {
    pub fn new(ctx: &mut PolicyCtx) -> Result<Oracle, SimError> {
        let linear = ctx.choice(
            "buckets",
            "geometric",
            &[("geometric", false), ("linear", true)],
        )?;
        let base: f64 = ctx.param("base", ctx.unit_pages as f64 / 2.0)?;
        let ratio: f64 = ctx.param("ratio", CLASS_RATIO)?;
        if !(base >= 1.0 && ratio > 1.0) {
            return Err(SimError::BadParam(format!(
                "base={base}, ratio={ratio}: need base ≥ 1 and ratio > 1"
            )));
        }
        Ok(Oracle {
            classes: ctx.host_streams,
            linear,
            base,
            ratio,
            unit_pages: ctx.unit_pages as u64,
        })
    }

    /// Class of a page that dies at `death`, seen at `now`.
    pub fn class(&self, death: u64, now: LogicalTime) -> StreamId {
        let last = self.classes - 1;
        if death == NEVER {
            return StreamId(last as u8);
        }
        let r = death.saturating_sub(now.0);
        let c = if self.linear {
            (r / self.unit_pages).min(last as u64) as u32
        } else {
            geometric_class(r, self.base, self.ratio, last)
        };
        StreamId(c as u8)
    }
}

impl Placement for Oracle {
    fn name(&self) -> &'static str {
        "oracle"
    }
    fn sees(&self) -> Attrs {
        Attrs::DEATH
    }
    fn gc_mode(&self) -> GcMode {
        GcMode::Policy
    }
    fn on_write(&mut self, w: &WriteInfo, now: LogicalTime) -> StreamId {
        self.class(w.death, now)
    }
    fn gc_destination(&mut self, p: &PageInfo, now: LogicalTime) -> StreamId {
        self.class(p.death, now)
    }
    fn state_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

const UNSET: u64 = u64::MAX;
const PREFILLED: u64 = u64::MAX - 1;

/// Pre-pass computing the death time of every host page write (indexed by its logical write
/// time) and of every prefilled LPN. Feed it the same requests, in the same order, as the
/// simulation.
pub struct DeathPass {
    last: Vec<u64>,
    deaths: Vec<u64>,
    prefill_death: Vec<u64>,
    t: u64,
}

/// Result of [`DeathPass`].
pub struct DeathTimes {
    /// `per_write[t]` = death time of the host page written at logical time `t`.
    pub per_write: Vec<u64>,
    /// Death time of the prefill version of each LPN (`NEVER` if it survives).
    pub prefill: Vec<u64>,
}

impl DeathPass {
    pub fn new(logical_pages: u64, prefill_pages: u64) -> DeathPass {
        let mut last = vec![UNSET; logical_pages as usize];
        last[..prefill_pages as usize].fill(PREFILLED);
        DeathPass {
            last,
            deaths: Vec::new(),
            prefill_death: vec![NEVER; logical_pages as usize],
            t: 0,
        }
    }

    /// The LPNs `lpn..lpn + pages` hold cold data before the trace (an aged state).
    pub fn mark_prefilled(&mut self, lpn: u64, pages: u64) {
        self.last[lpn as usize..(lpn + pages) as usize].fill(PREFILLED);
    }

    fn end(&mut self, lpn: usize) {
        match self.last[lpn] {
            UNSET => {}
            PREFILLED => self.prefill_death[lpn] = self.t,
            w => self.deaths[w as usize] = self.t,
        }
    }

    /// Requires: the request was validated (in range), as the simulator does.
    pub fn feed(&mut self, r: &Request) {
        debug_assert!(
            r.lpn + r.pages as u64 <= self.last.len() as u64,
            "request beyond the logical space"
        );
        let range = r.lpn as usize..(r.lpn + r.pages as u64) as usize;
        match Op::from_u8(r.op) {
            Some(Op::Write) => {
                for lpn in range {
                    self.end(lpn);
                    self.deaths.push(NEVER);
                    self.last[lpn] = self.t;
                    self.t += 1;
                }
            }
            Some(Op::Trim) => {
                for lpn in range {
                    self.end(lpn);
                    self.last[lpn] = UNSET;
                }
            }
            _ => {}
        }
    }

    /// [`feed`](Self::feed) a batch, with the two dependent cache misses of each write (the
    /// LPN's last write, then that write's death slot) prefetched a few requests ahead.
    pub fn feed_batch(&mut self, batch: &[Request]) {
        const LAST_AHEAD: usize = 16;
        const DEATH_AHEAD: usize = 8;
        for (i, r) in batch.iter().enumerate() {
            if let Some(f) = batch.get(i + LAST_AHEAD) {
                if let Some(x) = self.last.get(f.lpn as usize) {
                    crate::prefetch::read(x);
                }
            }
            if let Some(f) = batch.get(i + DEATH_AHEAD) {
                if let Some(&w) = self.last.get(f.lpn as usize) {
                    if let Some(d) = self.deaths.get(w as usize) {
                        crate::prefetch::read(d);
                    }
                }
            }
            self.feed(r);
        }
    }

    pub fn finish(self) -> DeathTimes {
        DeathTimes {
            per_write: self.deaths,
            prefill: self.prefill_death,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn death_times_end_at_overwrite_and_trim() {
        let mut p = DeathPass::new(16, 4);
        p.feed(&Request::write(2, 2)); // t0: lpn2, t1: lpn3 (prefilled versions die at 0 and 1)
        p.feed(&Request::write(8, 1)); // t2
        p.feed(&Request::write(2, 1)); // t3 kills t0
        p.feed(&Request::trim(8, 1)); // at t=4 kills t2
        let d = p.finish();
        assert_eq!(d.per_write, vec![3, NEVER, 4, NEVER]);
        assert_eq!(d.prefill[2], 0);
        assert_eq!(d.prefill[3], 1);
        assert_eq!(d.prefill[0], NEVER);
    }

    #[test]
    fn geometric_buckets() {
        let mut ctx = PolicyCtx {
            host_streams: 4,
            logical_pages: 100,
            unit_pages: 8,
            units: 10,
            write_point_budget: 4,
            seed: 0,
            params: BTreeMap::new(),
        };
        let o = Oracle::new(&mut ctx).unwrap();
        // b0 = 4, q = 4: [0,4) → 0, [4,16) → 1, [16,64) → 2, ≥ 64 → 3.
        let now = LogicalTime(100);
        assert_eq!(o.class(103, now), StreamId(0));
        assert_eq!(o.class(104, now), StreamId(1));
        assert_eq!(o.class(130, now), StreamId(2));
        assert_eq!(o.class(1000, now), StreamId(3));
        assert_eq!(o.class(NEVER, now), StreamId(3));
    }
}
