//! Sizes of a device and of the engine state it needs, computed before anything is allocated.
//!
//! [`check_sizes`] runs first in the configuration's validation: every product of the geometry
//! (dies, pages per unit, units, physical pages) is computed in 64 bits and must fit the engine's
//! 32-bit page and unit numbers, so an absurd geometry is refused with its figures instead of
//! overflowing (a division by zero, or a silent wrap to a small device). [`estimate`] gives the
//! bytes the engine will allocate for a device; the driver compares them with the memory the
//! machine has (`pcstream-trace`'s `memory` module) before building the simulator, so a valid
//! but huge device is refused up front instead of aborting on a failed allocation.

use crate::config::{GcUnit, SsdConfig};
use crate::error::ConfigError;

/// Bytes of policy state per logical page the estimate allows (the largest per-page state of
/// any policy is 9 bytes: SepBIT's FIFO time and liveness bit; MiDAS, hot/cold and FileStream
/// keep 1–4 bytes).
pub const POLICY_BYTES_PER_LOGICAL_PAGE: u64 = 16;

/// The engine state a device needs, by part (bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// The L2P map: 4 bytes per logical page.
    pub l2p: u64,
    /// Per physical page: reverse map and metadata (24 bytes).
    pub page_meta: u64,
    /// The allocation units' tables and the dies' clocks.
    pub units: u64,
    /// Policy state, at most [`POLICY_BYTES_PER_LOGICAL_PAGE`] per logical page.
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
            "L2P {} MiB, page metadata {} MiB, units {} MiB, policy up to {} MiB",
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

/// The engine state `cfg` needs; `with_death`: the policy sees death times (the oracle).
/// Call on a validated configuration (its products fit 32 bits).
pub fn estimate(cfg: &SsdConfig, with_death: bool) -> Estimate {
    let logical = cfg.logical_pages();
    let physical = cfg.physical_pages();
    let units = cfg.units() as u64;
    let dies = cfg.dies() as u64;
    Estimate {
        l2p: logical * 4,
        page_meta: physical * 24,
        // state, valid count, times, erases, victim lists (`ftl::unit_pool`); a clock per die.
        units: units * 40 + dies * 8,
        policy: logical * POLICY_BYTES_PER_LOGICAL_PAGE,
        death: if with_death {
            physical * 8 + logical * 16
        } else {
            0
        },
    }
}

/// Refuse a geometry whose products do not fit the engine's 32-bit numbers (see the module
/// documentation). Runs before any other check that multiplies the geometry.
pub(crate) fn check_sizes(cfg: &SsdConfig) -> Result<(), ConfigError> {
    let g = &cfg.geometry;
    let limit = u32::MAX as u64 - 1;
    let dies = g.channels as u64 * g.ways as u64;
    let ppb = g.pages_per_block as u64;
    let (unit_pages, units) = match cfg.ftl.gc_unit {
        GcUnit::Line => (dies.checked_mul(ppb), Some(g.blocks_per_die as u64)),
        GcUnit::Block => (Some(ppb), dies.checked_mul(g.blocks_per_die as u64)),
    };
    let physical = dies
        .checked_mul(g.blocks_per_die as u64)
        .and_then(|b| b.checked_mul(ppb));
    let too_big = |what: &str, n: Option<u64>| -> Result<(), ConfigError> {
        match n {
            Some(n) if n <= limit => Ok(()),
            n => Err(ConfigError::Impossible(format!(
                "{}: channels {} × ways {} × blocks_per_die {} × pages_per_block {}: {what} = {} \
                 exceeds the engine's limit of {limit}; use a smaller geometry",
                cfg.name,
                g.channels,
                g.ways,
                g.blocks_per_die,
                g.pages_per_block,
                n.map_or("more than 2^64".to_string(), |n| n.to_string())
            ))),
        }
    };
    too_big("dies (channels × ways)", Some(dies))?;
    too_big("pages per GC unit", unit_pages)?;
    too_big("GC units", units)?;
    too_big("physical pages", physical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(channels: u64, ways: u64, blocks: u64, pages: u64, unit: &str) -> String {
        format!(
            "[geometry]\nchannels = {channels}\nways = {ways}\nblocks_per_die = {blocks}\n\
             pages_per_block = {pages}\n[ftl]\nop = 0.07\ngc_unit = \"{unit}\"\n"
        )
    }

    #[test]
    fn products_beyond_32_bits_are_refused_not_wrapped() {
        for (c, w, b, p, unit) in [
            (65536, 65537, 1, 256, "line"), // dies wrap to 65536 in 32 bits
            (65536, 65536, 4, 4, "line"),   // dies = 2^32: a division by zero once wrapped
            (4, 4, 1 << 30, 2, "block"),    // units overflow
            (1 << 20, 1 << 12, 2, 2, "line"),
            (1, 1, u32::MAX as u64, u32::MAX as u64, "line"),
        ] {
            let e = SsdConfig::from_toml("t", &toml(c, w, b, p, unit)).unwrap_err();
            let m = e.to_string();
            assert!(
                m.contains("exceeds the engine's limit"),
                "{c} {w} {b} {p}: {m}"
            );
            assert!(m.contains(&format!("channels {c} × ways {w}")), "{m}");
        }
    }

    #[test]
    fn estimate_follows_the_engine_state() {
        let cfg = SsdConfig::preset("small").unwrap();
        let e = estimate(&cfg, false);
        assert_eq!(e.l2p, cfg.logical_pages() * 4);
        assert_eq!(e.page_meta, cfg.physical_pages() * 24);
        assert_eq!(e.death, 0);
        assert!(estimate(&cfg, true).total() > e.total());
        assert!(e.breakdown().contains("L2P"));
    }
}
