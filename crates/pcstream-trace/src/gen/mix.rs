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

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use pcstream_core::request::{Op, Request};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal, Zipf};
use serde::{Deserialize, Serialize};

use super::{gen_err, spread, GenParams, Reads, TS_STEP_NS};
use crate::blocktrace::TraceMeta;
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
        let w = |name: &str, pc: u64, share: f64, region: f64, kind: WriterKind| WriterSpec {
            name: name.into(),
            pc,
            share,
            region_pages: None,
            region: Some(region),
            pool: None,
            lifetime_unit: LifetimeUnit::Region,
            kind,
        };
        let churn = |file_pages, lifetime_files| WriterKind::FileChurn {
            file_pages,
            lifetime_files,
        };
        match name {
            "rocksdb-like" => Some(MixSpec {
                writers: vec![
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
                ],
            }),
            "hotcold-files" => Some(MixSpec {
                writers: vec![
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
                ],
            }),
            "append-only" => {
                let pooled =
                    |name: &str, pc: u64, share: f64, region: f64, lifetime_files| WriterSpec {
                        pool: Some("fs".into()),
                        ..w(name, pc, share, region, churn(128, lifetime_files))
                    };
                Some(MixSpec {
                    writers: vec![
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
                    ],
                })
            }
            _ => None,
        }
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

    /// Emit the mix over a footprint of `n` pages (see [`super::generate`]).
    pub(crate) fn run(
        &self,
        p: &GenParams,
        n: u64,
        meta: &mut TraceMeta,
        sink: &mut dyn FnMut(Request) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        if self.writers.is_empty() || self.writers.len() > u16::MAX as usize - 1 {
            return Err(gen_err("mix: needs between 1 and 65534 writers".into()));
        }
        if self
            .writers
            .iter()
            .any(|w| !(w.share >= 0.0 && w.share.is_finite()))
        {
            return Err(gen_err("mix: every share must be a number ≥ 0".into()));
        }
        let total_share: f64 = self.writers.iter().map(|w| w.share).sum();
        if total_share <= 0.0 {
            return Err(gen_err("mix: the shares must not all be 0".into()));
        }
        let mut lens = Vec::with_capacity(self.writers.len());
        for w in &self.writers {
            lens.push(match (w.region_pages, w.region) {
                (Some(pages), None) => pages,
                (None, Some(f)) if (0.0..=1.0).contains(&f) => (f * n as f64).floor() as u64,
                _ => {
                    return Err(gen_err(format!(
                        "mix writer '{}': give exactly one of region_pages (pages) or region (a share of the footprint in [0, 1])",
                        w.name
                    )))
                }
            });
        }
        // A pool's region is the sum of its members' regions, laid out at its first member.
        let mut pool_of: BTreeMap<&str, (usize, u64, u32)> = BTreeMap::new(); // name → (first, len, file_pages)
        for (i, w) in self.writers.iter().enumerate() {
            let Some(name) = w.pool.as_deref() else {
                continue;
            };
            let WriterKind::FileChurn { file_pages, .. } = w.kind else {
                return Err(gen_err(format!(
                    "mix writer '{}': only file_churn writers can share a pool; drop `pool` or make it a file_churn writer",
                    w.name
                )));
            };
            let e = pool_of.entry(name).or_insert((i, 0, file_pages));
            if e.2 != file_pages {
                return Err(gen_err(format!(
                    "mix writer '{}': pool '{name}' holds files of {} pages but this writer's are {file_pages}; give the members of a pool the same file_pages",
                    w.name, e.2
                )));
            }
            e.1 += lens[i];
        }
        let mut writers = Vec::with_capacity(self.writers.len());
        let mut pools: Vec<BTreeSet<u64>> = Vec::new();
        let mut pool_idx: BTreeMap<&str, (usize, u64)> = BTreeMap::new(); // name → (pool, start)
        let mut start = 0u64;
        let mut next_file = 1u32;
        for (i, w) in self.writers.iter().enumerate() {
            let (at, len, pool) = match w.pool.as_deref() {
                None => {
                    let at = start;
                    start += lens[i];
                    (at, lens[i], pools.len())
                }
                Some(name) => {
                    let (_, len, _) = pool_of[name];
                    let (pool, at) = *pool_idx.entry(name).or_insert_with(|| {
                        let at = start;
                        start += len;
                        (pools.len(), at)
                    });
                    (at, len, pool)
                }
            };
            let region = Region {
                start: at,
                len,
                own_len: lens[i],
                pool,
            };
            let w = Writer::new(w, i, region, p.req_pages, &mut next_file, meta)?;
            if let State::Churn {
                file_pages, pool, ..
            } = &w.state
            {
                if *pool == pools.len() {
                    pools.push((0..len / *file_pages as u64).collect());
                }
            }
            writers.push(w);
            let w = &self.writers[i];
            meta.file_classes.insert(i as u16 + 1, w.name.clone());
            meta.pcs[w.pc.to_string()] =
                serde_json::json!([{"module": "synthetic", "offset": 0, "symbol": w.name}]);
        }
        if start > n {
            return Err(gen_err(format!(
                "mix: the writers' regions total {start} pages but the footprint has {n}; shrink the regions or raise capacity_pages"
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
        let mut reads = Reads::new(p.seed, p.read_ratio);
        let shares: Vec<f64> = self.writers.iter().map(|w| w.share / total_share).collect();
        let mut written = vec![0u64; writers.len()];
        let total = p.writes * p.req_pages as u64;
        let (mut done, mut idx) = (0u64, 0u64);
        let mut out = Vec::new();
        while done < total {
            let target = (done + 1) as f64;
            let mut k = 0;
            let mut best = f64::NEG_INFINITY;
            for (i, &s) in shares.iter().enumerate() {
                let d = s * target - written[i] as f64;
                if d > best {
                    best = d;
                    k = i;
                }
            }
            out.clear();
            let room = (total - done).min(p.req_pages as u64) as u32;
            writers[k].step(room, &mut rng, &mut pools, &mut next_file, meta, &mut out)?;
            let w = &writers[k];
            for r in out.drain(..) {
                if r.op == Op::Write as u8 {
                    written[k] += r.pages as u64;
                    done += r.pages as u64;
                }
                sink(Request {
                    ts_ns: idx * TS_STEP_NS,
                    ..r
                })?;
                idx += 1;
            }
            reads.after_write(w.base, w.start, w.len, p.req_pages, |r| {
                let r = Request {
                    ts_ns: idx * TS_STEP_NS,
                    ..r
                };
                idx += 1;
                sink(r)
            })?;
        }
        Ok(())
    }
}

/// Per-kind state of a writer.
enum State {
    Log {
        seg_pages: u32,
        live: usize,
        slots: u64,
        next_slot: u64,
        /// (first LPN, pages written, file) of the live segments, oldest first.
        segs: VecDeque<(u64, u32, u32)>,
    },
    Update {
        zipf: Option<Zipf<f64>>,
        file: u32,
    },
    Churn {
        file_pages: u32,
        lifetime: Lifetime,
        /// Files per lifetime unit (1, or the files the writer's own region holds).
        scale: f64,
        /// Index of its pool of free slot indices (the first is the first fit); writers sharing
        /// a `pool` share one.
        pool: usize,
        /// (expiry in files completed, file) → slot of the live files.
        live: BTreeMap<(u64, u32), u64>,
        /// (slot, pages written, file) of the file being written.
        cur: Option<(u64, u32, u32)>,
        files_done: u64,
    },
}

/// Where a writer writes: its LBA range (a pool's, when shared), its own region's size (the
/// unit of `lifetime_unit = "region"`) and its slot pool.
struct Region {
    start: u64,
    len: u64,
    own_len: u64,
    pool: usize,
}

struct Writer<'a> {
    spec: &'a WriterSpec,
    start: u64,
    len: u64,
    req: u32,
    base: Request,
    state: State,
}

fn new_file(next_file: &mut u32, name: String, meta: &mut TraceMeta) -> Result<u32, TraceError> {
    let f = *next_file;
    *next_file = next_file
        .checked_add(1)
        .ok_or_else(|| gen_err("mix: more than 2^32 − 1 files; generate fewer writes".into()))?;
    meta.files.insert(f, name);
    Ok(f)
}

impl<'a> Writer<'a> {
    fn new(
        spec: &'a WriterSpec,
        idx: usize,
        region: Region,
        req: u32,
        next_file: &mut u32,
        meta: &mut TraceMeta,
    ) -> Result<Writer<'a>, TraceError> {
        let Region {
            start,
            len,
            own_len,
            pool,
        } = region;
        let bad = |why: String| gen_err(format!("mix writer '{}': {why}", spec.name));
        let state = match &spec.kind {
            WriterKind::AppendLog {
                segment_pages,
                live_segments,
            } => {
                let slots = len / (*segment_pages).max(1) as u64;
                if *segment_pages == 0 || *live_segments == 0 || slots < *live_segments as u64 {
                    return Err(bad(format!(
                        "a region of {len} pages cannot hold {live_segments} segments of {segment_pages} pages (both must be ≥ 1); enlarge the region"
                    )));
                }
                State::Log {
                    seg_pages: *segment_pages,
                    live: *live_segments as usize,
                    slots,
                    next_slot: 0,
                    segs: VecDeque::new(),
                }
            }
            WriterKind::RandomUpdate { dist, theta } => {
                if len < req as u64 {
                    return Err(bad(format!(
                        "a region of {len} pages cannot hold a request of {req} pages; enlarge the region"
                    )));
                }
                let zipf =
                    match dist {
                        UpdateDist::Uniform => None,
                        UpdateDist::Zipf => {
                            let slots = len - req as u64 + 1;
                            Some(Zipf::new(slots as f64, *theta).map_err(|e| {
                                bad(format!("zipf theta {theta} must be ≥ 0 ({e})"))
                            })?)
                        }
                    };
                let file = new_file(next_file, format!("{}/table", spec.name), meta)?;
                State::Update { zipf, file }
            }
            WriterKind::FileChurn {
                file_pages,
                lifetime_files,
            } => {
                let slots = len / (*file_pages).max(1) as u64;
                if *file_pages == 0 || slots < 2 {
                    return Err(bad(format!(
                        "a region of {len} pages holds fewer than 2 files of {file_pages} pages (must be ≥ 1); enlarge the region or lower file_pages"
                    )));
                }
                let ok = match *lifetime_files {
                    Lifetime::Fixed { mean } | Lifetime::Exponential { mean } => mean > 0.0,
                    Lifetime::Uniform { min, max } => min >= 0.0 && max >= min,
                    Lifetime::Lognormal { mean, sigma } => mean > 0.0 && sigma >= 0.0,
                };
                if !ok {
                    return Err(bad(format!(
                        "lifetime_files {lifetime_files:?} needs mean > 0, sigma ≥ 0, 0 ≤ min ≤ max"
                    )));
                }
                let own_slots = (own_len / *file_pages as u64).max(1);
                State::Churn {
                    file_pages: *file_pages,
                    lifetime: lifetime_files.clone(),
                    scale: match spec.lifetime_unit {
                        LifetimeUnit::Files => 1.0,
                        LifetimeUnit::Region => own_slots as f64,
                    },
                    pool,
                    live: BTreeMap::new(),
                    cur: None,
                    files_done: 0,
                }
            }
        };
        let base = Request {
            pc: spec.pc,
            pid: idx as u32 + 1,
            file_class: idx as u16 + 1,
            hint: (idx + 1).min(5) as u8,
            ..Default::default()
        };
        Ok(Writer {
            spec,
            start,
            len,
            req,
            base,
            state,
        })
    }

    /// One write request of at most `room` (≤ `req`) pages, preceded by any trims it causes,
    /// into `out`.
    fn step(
        &mut self,
        room: u32,
        rng: &mut ChaCha8Rng,
        pools: &mut [BTreeSet<u64>],
        next_file: &mut u32,
        meta: &mut TraceMeta,
        out: &mut Vec<Request>,
    ) -> Result<(), TraceError> {
        let base = self.base;
        let write = |lpn, pages, file| Request {
            op: Op::Write as u8,
            lpn,
            pages,
            file,
            ..base
        };
        let trim = |lpn, pages, file| Request {
            op: Op::Trim as u8,
            lpn,
            pages,
            file,
            ..base
        };
        match &mut self.state {
            State::Log {
                seg_pages,
                live,
                slots,
                next_slot,
                segs,
            } => {
                if segs.back().is_none_or(|s| s.1 >= *seg_pages) {
                    if segs.len() >= *live {
                        let (lpn, used, f) = segs.pop_front().expect("live segments");
                        out.push(trim(lpn, used, f));
                    }
                    let lpn = self.start + *next_slot * *seg_pages as u64;
                    *next_slot = (*next_slot + 1) % *slots;
                    let f = new_file(
                        next_file,
                        format!("{}/{f:06}.log", self.spec.name, f = *next_file),
                        meta,
                    )?;
                    segs.push_back((lpn, 0, f));
                }
                let seg = segs.back_mut().expect("an open segment");
                let pages = room.min(*seg_pages - seg.1);
                out.push(write(seg.0 + seg.1 as u64, pages, seg.2));
                seg.1 += pages;
            }
            State::Update { zipf, file } => {
                let slots = self.len - self.req as u64 + 1;
                let off = match zipf {
                    Some(z) => spread((z.sample(rng) as u64).clamp(1, slots) - 1, slots),
                    None => rng.random_range(0..slots),
                };
                out.push(write(self.start + off, room, *file));
            }
            State::Churn {
                file_pages,
                lifetime,
                scale,
                pool,
                live,
                cur,
                files_done,
            } => {
                let fp = *file_pages as u64;
                let (slot, used, f) = match *cur {
                    Some(c) => c,
                    None => {
                        let free = &mut pools[*pool];
                        if free.is_empty() {
                            // Region full: the file due soonest goes early.
                            let ((_, f), slot) = live.pop_first().ok_or_else(|| {
                                gen_err(format!(
                                    "mix writer '{}': its pool is full of other writers' files; enlarge the pool members' regions",
                                    self.spec.name
                                ))
                            })?;
                            out.push(trim(self.start + slot * fp, *file_pages, f));
                            free.insert(slot);
                        }
                        let slot = free.pop_first().expect("a free slot");
                        let f = new_file(
                            next_file,
                            format!("{}/{f:06}.sst", self.spec.name, f = *next_file),
                            meta,
                        )?;
                        (slot, 0, f)
                    }
                };
                let pages = room.min(*file_pages - used);
                out.push(write(self.start + slot * fp + used as u64, pages, f));
                let used = used + pages;
                if used < *file_pages {
                    *cur = Some((slot, used, f));
                    return Ok(());
                }
                *cur = None;
                *files_done += 1;
                let l = match *lifetime {
                    Lifetime::Fixed { mean } => mean,
                    Lifetime::Uniform { min, max } => {
                        if max > min {
                            rng.random_range(min..=max)
                        } else {
                            min
                        }
                    }
                    Lifetime::Exponential { mean } => {
                        Exp::new(1.0 / mean).expect("mean > 0 checked").sample(rng)
                    }
                    Lifetime::Lognormal { mean, sigma } => {
                        LogNormal::new(mean.ln() - sigma * sigma / 2.0, sigma)
                            .expect("sigma ≥ 0 checked")
                            .sample(rng)
                    }
                };
                let life = (l * *scale).round().clamp(1.0, 1e15) as u64;
                live.insert((*files_done + life, f), slot);
                while let Some(entry) = live.first_entry() {
                    if entry.key().0 > *files_done {
                        break;
                    }
                    let ((_, f), slot) = entry.remove_entry();
                    out.push(trim(self.start + slot * fp, *file_pages, f));
                    pools[*pool].insert(slot);
                }
            }
        }
        Ok(())
    }
}
