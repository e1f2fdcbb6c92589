//! The `mix` generator: several synthetic writers, each with its own program context (PC), pid,
//! files, LBA region and data-lifetime behaviour, interleaved by their share of host pages. This
//! is the workload shape PC-based stream separation is about: one PC per writer, and lifetimes
//! that differ between writers far more than within most of them.
//!
//! # Spec format
//!
//! A [`MixSpec`] is given as JSON or TOML (or a preset name, see [`MixSpec::preset`]):
//!
//! ```toml
//! [[writers]]
//! name = "wal"           # also the file-class name and the directory of its files
//! pc = 2577              # PC signature on its rows (TOML integers stop at 2^63 − 1)
//! share = 0.2            # share of host pages written (shares are normalised by their sum)
//! region = 0.04          # its LBA region as a share of the footprint, or region_pages = 4096
//! kind = { type = "append_log", segment_pages = 64, live_segments = 4 }
//!
//! [[writers]]
//! name = "sst"
//! pc = 3
//! share = 0.8
//! region_pages = 40000
//! kind = { type = "file_churn", file_pages = 256, lifetime_files = { dist = "lognormal", mean = 40, sigma = 1.4 } }
//! ```
//!
//! The same in JSON: `{"writers": [{"name": "wal", "pc": 2577, "share": 0.2, "region": 0.04,
//! "kind": {"type": "append_log", "segment_pages": 64, "live_segments": 4}}, …]}`.
//!
//! Regions are laid out contiguously in declaration order from LPN 0 and must fit in the
//! footprint. Writer `i` (0-based) writes rows with its `pc`, pid `i + 1`, file class `i + 1`
//! (named after the writer in `pcstream.file_classes`), hint `min(i + 1, 5)` and the dense id of
//! the file it writes (listed in `pcstream.files`).
//!
//! # Writer kinds
//!
//! - `append_log { segment_pages, live_segments }`: a circular log over the region, written in
//!   segments of `segment_pages` pages, each a file `NAME/000042.log`. Opening a segment when
//!   `live_segments` already exist first TRIMs the oldest (a WAL deleted once flushed): short,
//!   very regular lifetimes. Needs room for `live_segments` segments.
//! - `random_update { dist }`: in-place overwrites of `req_pages` pages in the region (a database
//!   table, one file `NAME/table`); `dist` is `"uniform"` (the default) or `"zipf"` with
//!   `theta` (default 0.99; ranks spread over the region as in the `zipf` kind).
//! - `file_churn { file_pages, lifetime_files }`: whole files of `file_pages` pages written
//!   sequentially (`NAME/000042.sst`) into free extents of the region, chosen first-fit (lowest
//!   address; files are equally sized so extents are aligned slots). When a file is complete its
//!   lifetime L is sampled, counted in files this writer completes: it is TRIMmed and its extent
//!   freed once L more files are complete (SST files, compaction outputs, objects). If the region
//!   is full when a file must start, the live file due soonest is deleted early. `lifetime_files`
//!   is one of `{"dist": "fixed", "mean": m}`, `{"dist": "uniform", "min": a, "max": b}`,
//!   `{"dist": "exponential", "mean": m}`, `{"dist": "lognormal", "mean": m, "sigma": s}`
//!   (mean of the distribution itself, σ of the underlying normal); samples are rounded, min 1.
//!   Writers that name the same `pool = "NAME"` draw their files from one shared region (the sum
//!   of their regions, at the first member's place), so a slot freed by one writer is reused by
//!   whichever writer starts a file next; they must have equal `file_pages`.
//!
//! # Interleaving
//!
//! Deterministic deficit round-robin on pages: the next request comes from the writer furthest
//! below its share of the pages written so far (ties: the earlier writer), so every writer's
//! share of pages is exact up to one request. Trims do not count as pages written.

use serde::{Deserialize, Serialize};

use super::gen_err;
use crate::error::TraceError;

/// Names accepted by [`MixSpec::preset`].
pub const MIX_PRESETS: &[&str] = &["rocksdb-like", "hotcold-files", "append-only"];

/// Lifetime of a `file_churn` file, in files the same writer completes after it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum Lifetime {
    Fixed { mean: f64 },
    Uniform { min: f64, max: f64 },
    Exponential { mean: f64 },
    Lognormal { mean: f64, sigma: f64 },
}

/// What a `file_churn` lifetime sample counts in.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LifetimeUnit {
    /// Files the writer completes after this one.
    #[default]
    Files,
    /// Multiples of the number of files the writer's own region holds, so a mix keeps the same
    /// device utilisation at any capacity (0.5 = half the region's worth of files).
    Region,
}

/// Page choice of a `random_update` writer (`theta` applies to `zipf`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum UpdateDist {
    #[default]
    Uniform,
    Zipf,
}

fn default_theta() -> f64 {
    0.99
}

/// What a writer does; see the module documentation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum WriterKind {
    AppendLog {
        segment_pages: u32,
        live_segments: u32,
    },
    RandomUpdate {
        #[serde(default)]
        dist: UpdateDist,
        #[serde(default = "default_theta")]
        theta: f64,
    },
    FileChurn {
        file_pages: u32,
        lifetime_files: Lifetime,
    },
}

/// One writer of a mix.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WriterSpec {
    pub name: String,
    /// PC signature on this writer's rows.
    pub pc: u64,
    /// Share of the host pages written (normalised over the writers).
    pub share: f64,
    /// Size of its LBA region in pages (give this or `region`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_pages: Option<u64>,
    /// Size of its LBA region as a share of the footprint (give this or `region_pages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<f64>,
    /// `file_churn` writers naming the same pool allocate their files from one shared LBA region
    /// (the sum of their regions, placed at the first member), so freed space is reused across
    /// writers as a file system does. Members of a pool must use the same `file_pages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Unit of a `file_churn` writer's `lifetime_files` samples (default `files`).
    #[serde(default, skip_serializing_if = "is_default_unit")]
    pub lifetime_unit: LifetimeUnit,
    pub kind: WriterKind,
}

fn is_default_unit(u: &LifetimeUnit) -> bool {
    *u == LifetimeUnit::Files
}

/// Several writers interleaved by page share; see the module documentation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    pub writers: Vec<WriterSpec>,
}

impl MixSpec {
    /// Built-in mixes. Regions are shares of the footprint and file lifetimes are counted in
    /// multiples of the files the writer's own region holds (`lifetime_unit = "region"`), so a
    /// preset keeps its device utilisation at any capacity (file sizes are fixed: footprints of
    /// ≥ 32 768 pages suit them):
    ///
    /// - `rocksdb-like`: `wal` (append_log, 64-page segments, 4 live: short, regular lifetime,
    ///   20 % of pages), `flush` (file_churn of 128-page files living 0.3–0.9 regions: medium,
    ///   20 %), `compaction` (file_churn of 256-page files with lognormal lifetimes, mean 0.7
    ///   regions, σ 1.4: the 5th–95th percentiles span ~2 orders of magnitude, 57 %) and
    ///   `manifest` (uniform random_update of a small region, 3 %).
    /// - `hotcold-files`: `hot-table` (uniform random_update of 10 % of the footprint, 80 % of
    ///   the pages) and `cold-files` (file_churn of 256-page files living 0.6–0.95 regions over
    ///   85 % of the footprint, 20 % of the pages).
    /// - `append-only`: every file is written once, sequentially, and deleted whole, and all
    ///   writers share one pool of LBAs (`pool = "fs"`, 128-page files), so freed space is reused
    ///   by whichever writer comes next, as on a file system: `wal` (lives 4 of its own files,
    ///   25 %), `flush` (0.5–1 regions, 25 %) and `compaction` (lognormal, mean 0.8 regions,
    ///   σ 0.8, 50 %). LBA hotness says little here (every LBA is written once per file), the
    ///   writer's PC says a lot: the case where the papers find AutoStream losing to PC-based
    ///   placement.
    pub fn preset(name: &str) -> Option<MixSpec> {
        let writers = match name {
            "rocksdb-like" => rocksdb_like(),
            "hotcold-files" => hotcold_files(),
            "append-only" => append_only(),
            _ => return None,
        };
        Some(MixSpec { writers })
    }

    /// A preset name, a JSON spec (starting with `{`) or a TOML spec.
    pub fn parse(s: &str) -> Result<MixSpec, TraceError> {
        if let Some(m) = MixSpec::preset(s.trim()) {
            return Ok(m);
        }
        let t = s.trim_start();
        let parsed = if t.starts_with('{') {
            serde_json::from_str(t).map_err(|e| format!("invalid JSON spec: {e}"))
        } else {
            toml::from_str(t).map_err(|e| format!("invalid TOML spec: {e}"))
        };
        parsed.map_err(|why| {
            gen_err(crate::error::one_line(format!(
                "mix '{:.40}' is neither a preset ({}) nor a valid spec ({why}); see the mix format in the docs",
                s.trim(),
                MIX_PRESETS.join(", ")
            )))
        })
    }
}

/// A preset's writer: its region a share of the footprint, lifetimes in units of it.
fn preset_writer(name: &str, pc: u64, share: f64, region: f64, kind: WriterKind) -> WriterSpec {
    WriterSpec {
        name: name.into(),
        pc,
        share,
        region_pages: None,
        region: Some(region),
        pool: None,
        lifetime_unit: LifetimeUnit::Region,
        kind,
    }
}

fn churn(file_pages: u32, lifetime_files: Lifetime) -> WriterKind {
    WriterKind::FileChurn {
        file_pages,
        lifetime_files,
    }
}

/// `rocksdb-like` (see [`MixSpec::preset`]).
fn rocksdb_like() -> Vec<WriterSpec> {
    let w = preset_writer;
    vec![
        w(
            "wal",
            0x7a1_0001,
            0.20,
            0.04,
            WriterKind::AppendLog {
                segment_pages: 64,
                live_segments: 4,
            },
        ),
        w(
            "flush",
            0x7a1_0002,
            0.20,
            0.15,
            churn(128, Lifetime::Uniform { min: 0.3, max: 0.9 }),
        ),
        w(
            "compaction",
            0x7a1_0003,
            0.57,
            0.75,
            churn(
                256,
                Lifetime::Lognormal {
                    mean: 0.7,
                    sigma: 1.4,
                },
            ),
        ),
        w(
            "manifest",
            0x7a1_0004,
            0.03,
            0.01,
            WriterKind::RandomUpdate {
                dist: UpdateDist::Uniform,
                theta: 0.99,
            },
        ),
    ]
}

/// `hotcold-files` (see [`MixSpec::preset`]).
fn hotcold_files() -> Vec<WriterSpec> {
    let w = preset_writer;
    vec![
        w(
            "hot-table",
            0x7a2_0001,
            0.8,
            0.10,
            WriterKind::RandomUpdate {
                dist: UpdateDist::Uniform,
                theta: 0.99,
            },
        ),
        w(
            "cold-files",
            0x7a2_0002,
            0.2,
            0.85,
            churn(
                256,
                Lifetime::Uniform {
                    min: 0.6,
                    max: 0.95,
                },
            ),
        ),
    ]
}

/// `append-only` (see [`MixSpec::preset`]): every writer in the pool "fs".
fn append_only() -> Vec<WriterSpec> {
    let pooled = |name: &str, pc: u64, share: f64, region: f64, lifetime_files| WriterSpec {
        pool: Some("fs".into()),
        ..preset_writer(name, pc, share, region, churn(128, lifetime_files))
    };
    vec![
        WriterSpec {
            lifetime_unit: LifetimeUnit::Files,
            ..pooled("wal", 0x7a3_0001, 0.25, 0.02, Lifetime::Fixed { mean: 4.0 })
        },
        pooled(
            "flush",
            0x7a3_0002,
            0.25,
            0.08,
            Lifetime::Uniform { min: 0.5, max: 1.0 },
        ),
        pooled(
            "compaction",
            0x7a3_0003,
            0.50,
            0.75,
            Lifetime::Lognormal {
                mean: 0.8,
                sigma: 0.8,
            },
        ),
    ]
}
