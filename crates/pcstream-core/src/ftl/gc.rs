//! Garbage collection: when free units fall to the low watermark, collect victims (greedy,
//! cost-benefit or FIFO) until the high watermark is reached. Valid pages are copied to the
//! write point chosen by the GC mode; the victim's dies are busy reading, the destination's
//! programming (both from the GC's start, as FEMU does), and the victim erase occupies every die of the unit.

use super::Ftl;
use crate::config::GcUnit;
use crate::placement::{GcMode, PageInfo, Placement, Reclaimed};
use crate::units::{DieId, LogicalTime, Lpn, PcSig, Ppn, StreamId, UnitId};

/// How many pages ahead of the copy loop the L2P entries are prefetched.
const COPY_AHEAD: u32 = 16;

impl Ftl {
    /// Run GC until `gc_high` units are free.
    pub(crate) fn collect(&mut self, now: LogicalTime, policy: &mut dyn Placement) {
        self.counters.gc_runs += 1;
        // FIFO and cost-benefit may pick fully valid units (no gain, but they move on); a run of
        // more fruitless victims than there are units means the data cannot fit: a bug, since
        // configurations are validated.
        let mut fruitless = 0u32;
        while self.units.free_count() < self.gc_high {
            let Some(victim) = self.units.pick_victim(now, self.geo.unit_pages) else {
                // Nothing sealed yet (all data in open units): nothing to collect.
                break;
            };
            let copied = self.collect_unit(victim, now, policy);
            if self.verify_each_gc {
                self.verify()
                    .unwrap_or_else(|e| panic!("FTL state check after GC failed: {e}"));
            }
            if copied == self.geo.unit_pages {
                fruitless += 1;
                assert!(
                    fruitless <= self.geo.units,
                    "GC makes no progress: every unit is fully valid"
                );
            } else {
                fruitless = 0;
            }
        }
    }

    /// Copy the valid pages of `victim` out, erase it, and tell the policy.
    fn collect_unit(
        &mut self,
        victim: UnitId,
        now: LogicalTime,
        policy: &mut dyn Placement,
    ) -> u32 {
        let victim_wp = self.units.begin_collect(victim);
        let victim_created = self.units.created[victim.0 as usize];
        let unit_pages = self.geo.unit_pages;
        let base = victim.0 * unit_pages;
        let mut copied = 0u32;
        let mut remaining = self.units.valid[victim.0 as usize];
        // A policy whose choice depends on the victim only answers once for all its copies.
        let whole = if self.gc_mode == GcMode::Policy {
            policy
                .gc_victim_destination(victim_wp)
                .map(|s| self.checked_wp(policy, s))
        } else {
            None
        };
        let mut off = 0u32;
        while remaining > 0 {
            debug_assert!(off < unit_pages);
            let from = Ppn(base + off);
            // Each copy stores to a random L2P entry; start fetching the one a few pages ahead
            // so those misses overlap instead of filling the store buffer one by one.
            if off + COPY_AHEAD < unit_pages {
                let ahead = Ppn(base + off + COPY_AHEAD);
                self.map.prefetch_l2p_of_page(ahead);
                if self.gc_mode == GcMode::Policy && whole.is_none() {
                    let l = self.map.lpn_at(ahead);
                    if l != super::page_map::NONE {
                        policy.prefetch_gc(l as u64);
                    }
                }
            }
            let lpn = self.map.lpn_at(from);
            if lpn != super::page_map::NONE {
                let dest = match whole {
                    Some(d) => d,
                    None => self.gc_dest(
                        from,
                        Lpn(lpn as u64),
                        victim,
                        victim_wp,
                        victim_created,
                        now,
                        policy,
                    ),
                };
                let to = self.alloc(dest, now);
                self.map.relocate(from, to);
                self.units.remove_valid(victim);
                // As in FEMU, the copy's read and program both start at the GC's start time on
                // their own dies (the controller buffers the page); chaining the program to the
                // read would leave idle gaps on the destination dies that list scheduling never
                // fills.
                if let Some(t) = self.timer.as_mut() {
                    t.read(self.geo.die_of(victim, off), self.now_ns);
                }
                self.program_done(to, self.now_ns);
                self.seal_if_full(dest, now);
                copied += 1;
                remaining -= 1;
            }
            off += 1;
        }
        self.counters.gc_pages += copied as u64;
        self.erase(victim);
        policy.on_segment_reclaimed(
            &Reclaimed {
                unit: victim,
                wp: victim_wp,
                created: victim_created,
                valid_copied: copied,
            },
            now,
        );
        copied
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn gc_dest(
        &self,
        from: Ppn,
        lpn: Lpn,
        victim: UnitId,
        victim_wp: u8,
        victim_created: LogicalTime,
        now: LogicalTime,
        policy: &mut dyn Placement,
    ) -> u8 {
        let hs = self.host_streams as u8;
        match self.gc_mode {
            GcMode::SameStream => victim_wp,
            // A substream's own victims go back to that substream.
            GcMode::Substream => {
                if victim_wp < hs {
                    hs + victim_wp
                } else {
                    victim_wp
                }
            }
            GcMode::SingleGc => hs,
            GcMode::Policy => {
                let m = self.page_meta(from);
                let info = PageInfo {
                    lpn,
                    t_write: (m.t_write != super::page_map::PREFILL_TIME)
                        .then_some(LogicalTime(m.t_write)),
                    pc: PcSig(m.pc),
                    stream: StreamId(m.stream),
                    victim_wp,
                    victim,
                    victim_created,
                    death: self.map.death.as_ref().map_or(0, |d| d[from.0 as usize]),
                };
                let s = policy.gc_destination(&info, now);
                self.checked_wp(policy, s)
            }
        }
    }

    /// A write point a policy chose for GC copies, checked to exist.
    fn checked_wp(&self, policy: &dyn Placement, s: StreamId) -> u8 {
        assert!(
            (s.0 as usize) < self.wps.len(),
            "policy {} sent a GC copy to write point {} of {}",
            policy.name(),
            s.0,
            self.wps.len()
        );
        s.0
    }

    fn erase(&mut self, victim: UnitId) {
        self.units.erase(victim);
        self.counters.erases += 1;
        if let Some(t) = self.timer.as_mut() {
            match self.geo.gc_unit {
                GcUnit::Line => {
                    for d in 0..self.geo.dies {
                        t.erase(DieId(d), self.now_ns);
                    }
                }
                GcUnit::Block => {
                    t.erase(self.geo.die_of(victim, 0), self.now_ns);
                }
            }
        }
    }
}
