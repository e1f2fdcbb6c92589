//! The size of the engine state a device needs, computed before anything is allocated.
//!
//! [`estimate`] gives the bytes the engine will allocate for a device; the driver compares them
//! with the memory the machine has (`pcstream-trace`'s memory check) before building the
//! simulator, so a valid but huge device is refused up front instead of aborting on a failed
//! allocation. The geometry's products themselves are checked by the configuration's validation
//! (`config::check_sizes`), which this estimate relies on.

use crate::config::SsdConfig;
use crate::ftl::page_map::PageLayout;

/// Bytes of policy state per logical page an estimate that does not know the policy allows
/// (the largest per-page state of any policy is 9 bytes: SepBIT's FIFO time and liveness bit;
/// MiDAS, hot/cold and FileStream keep 1–4 bytes).
pub const POLICY_BYTES_PER_LOGICAL_PAGE: u64 = 16;

/// The engine state a device needs, by part (bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// The L2P map: 4 bytes per logical page.
    pub l2p: u64,
    /// Per physical page: reverse map and write time (8 bytes), and as the layout says the host
    /// stream (1 byte where it is not packed) and a PC index (4 bytes; the table of distinct PCs
    /// comes on top as the trace shows them, 21 bytes each).
    pub page_meta: u64,
    /// The allocation units' tables and the dies' clocks.
    pub units: u64,
    /// Policy state: what the policy holds once built (its per-page tables).
    pub policy: u64,
    /// The oracle's death times: 8 bytes per physical page, and its pre-pass's 16 bytes per
    /// logical page (the 8 bytes per host page written come on top, as the trace is read).
    pub death: u64,
}

impl Estimate {
    pub fn total(&self) -> u64 {
        self.l2p + self.page_meta + self.units + self.policy + self.death
    }

    /// The parts as `name N MiB, ...` for messages.
    pub fn breakdown(&self) -> String {
        let mib = |b: u64| b.div_ceil(1 << 20);
        let mut s = format!(
            "L2P {} MiB, page metadata {} MiB, units {} MiB, policy {} MiB",
            mib(self.l2p),
            mib(self.page_meta),
            mib(self.units),
            mib(self.policy)
        );
        if self.death > 0 {
            s += &format!(", death times {} MiB", mib(self.death));
        }
        s
    }
}

/// The engine state `cfg` needs with the per-page `layout` of the run
/// (`Simulator::page_layout`) and `policy_bytes` of policy state. Call on a validated
/// configuration (its products fit 32 bits).
pub fn estimate(cfg: &SsdConfig, layout: &PageLayout, policy_bytes: u64) -> Estimate {
    if let Err(e) = crate::config::check_sizes(cfg) {
        panic!("state size of a device whose geometry does not fit 32 bits: {e}");
    }
    let logical = cfg.logical_pages();
    let physical = cfg.physical_pages();
    let units = cfg.units() as u64;
    let dies = cfg.dies() as u64;
    let with_death = layout.death;
    let death_bytes = if with_death { 8 } else { 0 };
    Estimate {
        l2p: logical * 4,
        page_meta: physical * (layout.bytes_per_physical_page() - death_bytes),
        // state, valid count, times, erases, victim lists (`ftl::unit_pool`); a clock per die.
        units: units * 40 + dies * 8,
        policy: policy_bytes,
        death: if with_death {
            physical * 8 + logical * 16
        } else {
            0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{Attrs, GcMode};

    #[test]
    fn estimate_follows_the_engine_state() {
        let cfg = SsdConfig::preset("small").unwrap();
        let logical = cfg.logical_pages();
        let layout = PageLayout::new(logical, Attrs::NONE, GcMode::SameStream, 8);
        let e = estimate(&cfg, &layout, 0);
        assert_eq!(e.l2p, logical * 4);
        assert_eq!(e.page_meta, cfg.physical_pages() * 8);
        assert_eq!(e.death, 0);
        let oracle = PageLayout::new(logical, Attrs::DEATH, GcMode::Policy, 12);
        assert_eq!(estimate(&cfg, &oracle, 0).page_meta, e.page_meta);
        assert!(estimate(&cfg, &oracle, 0).total() > e.total());
        let pcs = PageLayout::new(logical, Attrs::PC, GcMode::SameStream, 8);
        assert_eq!(estimate(&cfg, &pcs, 0).page_meta, cfg.physical_pages() * 12);
        assert!(e.breakdown().contains("L2P"));
    }
}
