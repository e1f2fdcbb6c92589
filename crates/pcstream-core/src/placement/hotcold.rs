//! # hotcold — FTL write-count threshold (FEMU hot/cold patch)
//!
//! What it does: counts host writes per LPN; an LPN written at least `threshold` times goes to the
//! hot write point (stream 1), others to the cold one (stream 0). GC copies are placed by the same
//! rule (the patch's `get_new_page(ssd, lpn)` is shared by host and GC writes; GC does not count).
//! Source: a hot/cold separation patch for the FTL of FEMU's bbssd (black-box SSD) mode.
//! What it sees: LPN. State: one saturating 16-bit counter per logical page.
//! Deviations: counters saturate at 65535 (the patch uses u64); counters never decay, and TRIM
//! does not reset them (as in the patch).
//! Parameters: `threshold` (θ, default 5).

use super::{Attrs, GcMode, PageInfo, Placement, PolicyCtx, WriteInfo};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

pub struct HotCold {
    counts: Vec<u16>,
    threshold: u16,
}

const HOT: StreamId = StreamId(1);
const COLD: StreamId = StreamId(0);

impl HotCold {
    pub fn new(ctx: &mut PolicyCtx) -> Result<HotCold, SimError> {
        let threshold: u16 = ctx.param("threshold", 5)?;
        if threshold == 0 {
            return Err(SimError::BadParam("threshold=0: must be ≥ 1".into()));
        }
        if ctx.host_streams < 2 {
            return Err(SimError::BadParam(
                "hotcold needs at least 2 host streams".into(),
            ));
        }
        Ok(HotCold {
            counts: vec![0; ctx.logical_pages as usize],
            threshold,
        })
    }

    fn class(&self, lpn: u64) -> StreamId {
        if self.counts[lpn as usize] >= self.threshold {
            HOT
        } else {
            COLD
        }
    }
}

impl Placement for HotCold {
    fn name(&self) -> &'static str {
        "hotcold"
    }
    fn sees(&self) -> Attrs {
        Attrs::LPN
    }
    fn gc_mode(&self) -> GcMode {
        GcMode::Policy
    }
    fn on_write(&mut self, w: &WriteInfo, _now: LogicalTime) -> StreamId {
        let c = &mut self.counts[w.lpn.0 as usize];
        *c = c.saturating_add(1);
        self.class(w.lpn.0)
    }
    fn gc_destination(&mut self, p: &PageInfo, _now: LogicalTime) -> StreamId {
        self.class(p.lpn.0)
    }
    fn prefetch(&self, lpn: u64) {
        if let Some(c) = self.counts.get(lpn as usize) {
            crate::prefetch::read(c);
        }
    }
    fn prefetch_gc(&self, lpn: u64) {
        if let Some(c) = self.counts.get(lpn as usize) {
            crate::prefetch::read(c);
        }
    }
    fn state_bytes(&self) -> usize {
        self.counts.len() * 2
    }
}
