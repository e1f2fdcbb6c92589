//! # midas — REDUCED fixed-chain stand-in for MiDAS (not the full scheme)
//!
//! What it does: a chain of `groups` groups, each its own write point. User writes go to the HOT
//! group 0 if the LPN's hot-filter counter is ≥ 3, else to group 1. GC survivors of group g move
//! to group `min(g + 1, G − 1)` (the hot group's to group 1), so data are segregated by age. Hot
//! filter (after a cold start of `cold_start` host pages): on a user write, +1 (max 3) if the
//! previous version still sat in group 1 and was younger than `tw`, else −1; a GC survivor of
//! group 1 loses 1, of group 0 loses 2. `tw` starts at the number of logical pages and becomes
//! the mean age of the last 16 reclaimed hot-group units.
//! Source: Oh et al., "MiDAS: Minimizing Write Amplification in Log-Structured Systems through
//! Adaptive Group Number and Size Configuration", FAST'24; dgist-datalab/MiDAS (`hot.c`,
//! `gc.c`). This is a "fixed-chain" reduction of it (no model-driven reconfiguration),
//! labelled as such.
//! What it sees: LPN, user-vs-GC writes with the victim's group, lifetime feedback (the previous
//! version's write time, to age it).
//! State: per LPN a u8 (hot counter 2 bits + current group); 16 scalars for `tw`.
//! Parameters: `groups` (G, default N; groups beyond the host streams are internal write
//! points), `hot_val` (3), `cold_start` (logical pages).
//! Deviations: NO MCAM/GCS model: the number and sizes of groups are fixed, and no epoch
//! re-configuration, merging or runaway guard happens; victims are chosen by the simulator's
//! victim policy (greedy by default) rather than "first over-budget group, oldest segment"; the
//! previous version's segment age is approximated by the version's own age (now − write time).
//! Compare at equal open write points (G vs N).

use super::{
    Attrs, Cause, GcMode, Invalidation, PageInfo, Placement, PolicyCtx, Reclaimed, WriteInfo,
};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

/// Per-LPN byte: low 2 bits hot counter, high 6 bits current group.
const HF_MASK: u8 = 0b11;

pub struct Midas {
    // Fixed at construction.
    host_streams: u32,
    groups: u8,
    hot_val: u8,
    cold_start: u64,
    // Per LPN.
    lpn_state: Vec<u8>,
    // Hot-window estimate.
    tw: u64,
    hot_ages: u64,
    hot_n: u64,
    /// Set by `on_invalidate` for the write that follows it (same LPN).
    prev_young_in_1: Option<bool>,
}

impl Midas {
    pub fn new(ctx: &mut PolicyCtx) -> Result<Midas, SimError> {
        let groups: u32 = ctx.param("groups", ctx.host_streams)?;
        let hot_val: u8 = ctx.param("hot_val", 3)?;
        let cold_start: u64 = ctx.param("cold_start", ctx.logical_pages)?;
        if !(3..=63).contains(&groups) || !(1..=3).contains(&hot_val) {
            return Err(SimError::BadParam(format!(
                "groups={groups}, hot_val={hot_val}: need 3 ≤ groups ≤ 63 and 1 ≤ hot_val ≤ 3"
            )));
        }
        Ok(Midas {
            host_streams: ctx.host_streams,
            groups: groups as u8,
            hot_val,
            cold_start,
            lpn_state: vec![1 << 2; ctx.logical_pages as usize],
            tw: ctx.logical_pages,
            hot_ages: 0,
            hot_n: 0,
            prev_young_in_1: None,
        })
    }

    fn hf(&self, lpn: u64) -> u8 {
        self.lpn_state[lpn as usize] & HF_MASK
    }
    fn set(&mut self, lpn: u64, hf: u8, group: u8) {
        debug_assert!(hf <= 3 && group < self.groups);
        self.lpn_state[lpn as usize] = group << 2 | hf;
    }

    /// Hot-filter counter of `lpn` (for tests).
    pub fn hot_counter(&self, lpn: u64) -> u8 {
        self.hf(lpn)
    }
}

impl Placement for Midas {
    fn name(&self) -> &'static str {
        "midas"
    }
    fn sees(&self) -> Attrs {
        Attrs::LPN.union(Attrs::GC_INFO).union(Attrs::LIFETIME)
    }
    fn gc_mode(&self) -> GcMode {
        GcMode::Policy
    }
    fn internal_write_points(&self) -> u32 {
        (self.groups as u32).saturating_sub(self.host_streams)
    }
    fn on_invalidate(&mut self, inv: &Invalidation) {
        if inv.cause != Cause::Overwrite {
            return;
        }
        let in_1 = self.lpn_state[inv.lpn.0 as usize] >> 2 == 1;
        let young = inv.lifetime().is_some_and(|l| l <= self.tw);
        self.prev_young_in_1 = Some(in_1 && young);
    }
    fn on_write(&mut self, w: &WriteInfo, now: LogicalTime) -> StreamId {
        let x = w.lpn.0;
        let mut hf = self.hf(x);
        // The simulator invalidates the previous version just before this call.
        let prev = self.prev_young_in_1.take();
        if now.0 >= self.cold_start {
            if let Some(hit) = prev {
                hf = if hit {
                    (hf + 1).min(3)
                } else {
                    hf.saturating_sub(1)
                };
            }
        }
        let group = if hf >= self.hot_val { 0 } else { 1 };
        self.set(x, hf, group);
        StreamId(group)
    }
    fn prefetch(&self, lpn: u64) {
        if let Some(s) = self.lpn_state.get(lpn as usize) {
            crate::prefetch::read(s);
        }
    }
    fn prefetch_gc(&self, lpn: u64) {
        if let Some(s) = self.lpn_state.get(lpn as usize) {
            crate::prefetch::read(s);
        }
    }
    fn gc_destination(&mut self, p: &PageInfo, _now: LogicalTime) -> StreamId {
        let g = p.victim_wp.min(self.groups - 1);
        let x = p.lpn.0;
        let hf = match g {
            0 => self.hf(x).saturating_sub(2),
            1 => self.hf(x).saturating_sub(1),
            _ => self.hf(x),
        };
        let to = (g + 1).min(self.groups - 1);
        self.set(x, hf, to);
        StreamId(to)
    }
    fn on_segment_reclaimed(&mut self, r: &Reclaimed, now: LogicalTime) {
        if r.wp != 0 {
            return;
        }
        self.hot_ages += now.since(r.created);
        self.hot_n += 1;
        if self.hot_n == 16 {
            self.tw = (self.hot_ages / 16).max(1);
            self.hot_ages = 0;
            self.hot_n = 0;
        }
    }
    fn state_bytes(&self) -> usize {
        self.lpn_state.len()
    }
}
