//! SSD configuration (TOML; presets are such files) and its validation.
//!
//! Keys are a fixed contract (`[geometry]`, `[ftl]`, `[timing]`); unknown keys are rejected so a
//! typo never silently falls back to a default.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::units::PAGE_BYTES;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    pub channels: u32,
    /// Dies per channel.
    pub ways: u32,
    pub blocks_per_die: u32,
    pub pages_per_block: u32,
    #[serde(default = "default_page_bytes")]
    pub page_bytes: u32,
}

fn default_page_bytes() -> u32 {
    PAGE_BYTES as u32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GcUnit {
    /// Same block index on every die (FEMU's line).
    Line,
    /// One block.
    Block,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcVictim {
    Greedy,
    CostBenefit,
    Fifo,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ftl {
    /// Over-provisioning: (physical − logical) / logical.
    pub op: f64,
    /// Streams a host may address, stream 0 included.
    #[serde(default = "default_streams")]
    pub host_streams: u32,
    #[serde(default = "default_unit")]
    pub gc_unit: GcUnit,
    #[serde(default = "default_victim")]
    pub gc_victim: GcVictim,
    /// Share of units free that starts GC (at least 2 units).
    #[serde(default = "default_low")]
    pub gc_low_watermark: f64,
    /// Share of units free that stops GC.
    #[serde(default = "default_high")]
    pub gc_high_watermark: f64,
}

fn default_streams() -> u32 {
    8
}
fn default_unit() -> GcUnit {
    GcUnit::Line
}
fn default_victim() -> GcVictim {
    GcVictim::Greedy
}
fn default_low() -> f64 {
    0.01
}
fn default_high() -> f64 {
    0.02
}

/// Longest read, program or erase latency a configuration may give (1 s): real NAND takes µs to
/// ms. The die clocks add latencies in ns in 64 bits; this bound keeps any trace a machine can
/// hold far from overflowing them.
pub const MAX_LATENCY_US: f64 = 1e6;
/// Largest over-provisioning accepted: 4 (a fifth of the flash exposed). More is no SSD
/// anyone builds, and a huge `op` leaves a device of almost no logical pages, which is far
/// more likely a typo (`op = 7` for 0.07) than a wish.
pub const MAX_OP: f64 = 4.0;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    #[serde(default = "default_read")]
    pub read_us: f64,
    #[serde(default = "default_program")]
    pub program_us: f64,
    #[serde(default = "default_erase")]
    pub erase_us: f64,
    #[serde(default = "default_qd")]
    pub queue_depth: u32,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            read_us: 40.0,
            program_us: 200.0,
            erase_us: 2000.0,
            queue_depth: 32,
        }
    }
}

fn default_read() -> f64 {
    40.0
}
fn default_program() -> f64 {
    200.0
}
fn default_erase() -> f64 {
    2000.0
}
fn default_qd() -> u32 {
    32
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdConfig {
    /// Name shown in results (preset name or file stem); not part of the TOML.
    #[serde(skip)]
    pub name: String,
    pub geometry: Geometry,
    pub ftl: Ftl,
    #[serde(default)]
    pub timing: Timing,
}

/// Names of the built-in presets.
pub const PRESETS: &[&str] = &["paper", "medium", "small"];

/// TOML text of a built-in preset.
pub fn preset_toml(name: &str) -> Option<&'static str> {
    match name {
        "paper" => Some(include_str!("../presets/paper.toml")),
        "medium" => Some(include_str!("../presets/medium.toml")),
        "small" => Some(include_str!("../presets/small.toml")),
        _ => None,
    }
}

impl SsdConfig {
    /// Parse and validate a TOML configuration. `name` labels results.
    pub fn from_toml(name: &str, text: &str) -> Result<SsdConfig, ConfigError> {
        let mut cfg: SsdConfig = toml::from_str(text)
            .map_err(|e| ConfigError::Parse(name.to_string(), one_line(&e.to_string())))?;
        cfg.name = name.to_string();
        cfg.validate()?;
        Ok(cfg)
    }

    /// A built-in preset by name.
    pub fn preset(name: &str) -> Result<SsdConfig, ConfigError> {
        let text = preset_toml(name).ok_or_else(|| ConfigError::UnknownPreset(name.to_string()))?;
        SsdConfig::from_toml(name, text)
    }

    pub fn dies(&self) -> u32 {
        self.geometry.channels * self.geometry.ways
    }

    /// Pages per allocation/GC unit.
    pub fn unit_pages(&self) -> u32 {
        match self.ftl.gc_unit {
            GcUnit::Line => self.geometry.pages_per_block * self.dies(),
            GcUnit::Block => self.geometry.pages_per_block,
        }
    }

    pub fn units(&self) -> u32 {
        match self.ftl.gc_unit {
            GcUnit::Line => self.geometry.blocks_per_die,
            GcUnit::Block => self.geometry.blocks_per_die * self.dies(),
        }
    }

    pub fn physical_pages(&self) -> u64 {
        self.units() as u64 * self.unit_pages() as u64
    }

    /// Logical pages = floor(physical / (1 + op)).
    pub fn logical_pages(&self) -> u64 {
        (self.physical_pages() as f64 / (1.0 + self.ftl.op)).floor() as u64
    }

    /// Free units at which GC starts (at least 2).
    pub fn gc_low_units(&self) -> u32 {
        ((self.ftl.gc_low_watermark * self.units() as f64).ceil() as u32).max(2)
    }

    /// Free units at which GC stops (above the low watermark).
    pub fn gc_high_units(&self) -> u32 {
        ((self.ftl.gc_high_watermark * self.units() as f64).ceil() as u32)
            .max(self.gc_low_units() + 1)
    }

    /// Units beyond those that hold the whole logical space packed full: what GC and the open
    /// write points can use.
    pub fn spare_units(&self) -> u32 {
        let packed = self.logical_pages().div_ceil(self.unit_pages() as u64);
        (self.units() as u64).saturating_sub(packed) as u32
    }

    /// Check that the device can work with `write_points` open units at once, GC copying each
    /// victim to one write point (every GC mode but `Policy`).
    pub fn validate_for(&self, write_points: u32) -> Result<(), ConfigError> {
        self.validate_with(write_points, 1)
    }

    /// Check that GC can always make room with `write_points` write points, the copies of one
    /// victim going to at most `gc_dests` of them; `Simulator::new` checks this.
    ///
    /// The reserve is [`gc_reserve`] units: while GC runs, the other write points hold one open
    /// unit each (the one whose write started GC holds none), each GC destination may seal its
    /// unit and open one more before the victim is erased, and the waiting write point then
    /// takes one. Whenever fewer units than that are free, the sealed units exceed the packed
    /// logical space, so some victim has an invalid page and GC gains ground. The configured
    /// watermarks are then fitted into what is left (`ftl::gc_watermarks`).
    pub fn validate_with(&self, write_points: u32, gc_dests: u32) -> Result<(), ConfigError> {
        let reserve = gc_reserve(write_points, gc_dests);
        let spare = self.spare_units();
        if reserve > spare {
            return Err(ConfigError::Impossible(format!(
                "{}: {} units of {} pages hold {} logical pages with {} spare units, fewer than the {} \
                 that {} open write points and {} GC destination(s) need; raise op or \
                 blocks_per_die, or use fewer streams",
                self.name,
                self.units(),
                self.unit_pages(),
                self.logical_pages(),
                spare,
                reserve,
                write_points,
                gc_dests
            )));
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let g = &self.geometry;
        let bad = |what: String| Err(ConfigError::Impossible(format!("{}: {what}", self.name)));
        if g.channels == 0 || g.ways == 0 || g.blocks_per_die == 0 || g.pages_per_block == 0 {
            return bad(
                "channels, ways, blocks_per_die and pages_per_block must all be ≥ 1".into(),
            );
        }
        check_sizes(self)?;
        if g.page_bytes as u64 != PAGE_BYTES {
            return bad(format!(
                "page_bytes = {} is not supported; the engine models {PAGE_BYTES}-byte pages",
                g.page_bytes
            ));
        }
        if self.physical_pages() >= u32::MAX as u64 {
            return bad(format!(
                "{} physical pages exceed the engine's limit of {} (16 TiB); use a smaller geometry",
                self.physical_pages(),
                u32::MAX - 1
            ));
        }
        if !(self.ftl.op.is_finite() && self.ftl.op > 0.0 && self.ftl.op <= MAX_OP) {
            return bad(format!(
                "op = {} must be > 0 and at most {MAX_OP} (over-provisioning = (physical − logical) / logical, e.g. 0.07)",
                self.ftl.op
            ));
        }
        if self.ftl.host_streams == 0 || self.ftl.host_streams > 64 {
            return bad(format!(
                "host_streams = {} must be between 1 and 64",
                self.ftl.host_streams
            ));
        }
        let (lo, hi) = (self.ftl.gc_low_watermark, self.ftl.gc_high_watermark);
        if !(lo >= 0.0 && hi >= lo && hi < 0.5) {
            return bad(format!(
                "gc watermarks low = {lo}, high = {hi}: need 0 ≤ low ≤ high < 0.5 (shares of all units)"
            ));
        }
        let t = &self.timing;
        let ok = |us: f64| (0.0..=MAX_LATENCY_US).contains(&us);
        if !(ok(t.read_us) && ok(t.program_us) && t.program_us > 0.0 && ok(t.erase_us))
            || t.queue_depth == 0
        {
            return bad(format!(
                "timing: read_us = {}, program_us = {}, erase_us = {}, queue_depth = {}: \
                 latencies must be between 0 and {MAX_LATENCY_US} µs (program > 0) and \
                 queue_depth ≥ 1",
                t.read_us, t.program_us, t.erase_us, t.queue_depth
            ));
        }
        self.validate_for(self.ftl.host_streams)
    }
}

/// Units GC needs beyond the packed logical space, with `write_points` write points and the
/// copies of one victim going to at most `gc_dests` of them (`SsdConfig::validate_with`): the
/// open units of the other write points, one new unit per GC destination before the victim is
/// erased, plus one for the write point that started GC.
pub fn gc_reserve(write_points: u32, gc_dests: u32) -> u32 {
    write_points.saturating_sub(1) + gc_dests + 1
}

/// The most write points a device with `spare` spare units can hold with `gc_dests` GC
/// destinations per victim: the largest n with `gc_reserve(n, gc_dests)` ≤ `spare`.
pub fn max_write_points(spare: u32, gc_dests: u32) -> u32 {
    spare.saturating_sub(gc_dests)
}

/// Refuse a geometry whose products do not fit the engine's 32-bit numbers: every product of
/// the geometry (dies, pages per unit, units, physical pages) is computed in 64 bits and must
/// fit the engine's 32-bit page and unit numbers, so an absurd geometry is refused with its
/// figures instead of overflowing (a division by zero, or a silent wrap to a small device).
/// Runs first in the validation, before any other check that multiplies the geometry.
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

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
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
    fn op_beyond_its_range_is_refused() {
        let with_op =
            |op: &str| toml(4, 4, 64, 64, "line").replace("op = 0.07", &format!("op = {op}"));
        for op in ["0", "-0.1", "4.01", "7", "nan", "inf"] {
            let e = SsdConfig::from_toml("t", &with_op(op))
                .unwrap_err()
                .to_string();
            assert!(e.contains("must be > 0 and at most 4"), "{op}: {e}");
        }
        for op in ["0.5", "1", "4"] {
            SsdConfig::from_toml("t", &with_op(op)).unwrap();
        }
    }
}
