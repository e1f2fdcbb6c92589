//! Seeded synthetic workloads. Same (kind, parameters, seed) → the same rows, always.
//!
//! Kinds (LPNs within `footprint × capacity_pages`, one request of `req_pages` each):
//! - `uniform`: every page equally likely;
//! - `zipf`: rank r ~ Zipf(θ) over the footprint; rank → LPN by a multiplicative permutation
//!   (r·p mod n, p a large prime not dividing n) so hot pages are spread, not adjacent;
//! - `pareto`: rank = ⌊n·u^(1/α)⌋ for u uniform (small α → strong skew), then the same permutation;
//! - `normal`: N(n/2, σ·n), resampled outside [0, n);
//! - `hotcold`: `hot_ratio` of the writes go uniformly to the first `hot_fraction` of the footprint;
//! - `seq`: sequential overwrite of the footprint, wrapping around;
//! - `mix`: several writers, each with its own PC, files, LBA region and lifetime behaviour
//!   ([`MixSpec`]).
//!
//! Rows carry ts_ns = index × 10 µs and pid 1; single-kind generators use one PC per kind.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use pcstream_core::request::{Op, Request};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal, Normal, Zipf};
use serde::{Deserialize, Serialize};

use crate::error::TraceError;
use crate::format::TraceMeta;
use crate::writer::{BlockTraceWriter, DEFAULT_ROW_GROUP_ROWS};

pub const KINDS: &[&str] = &[
    "uniform", "zipf", "pareto", "normal", "hotcold", "seq", "mix",
];

#[derive(Clone, Debug)]
pub struct GenParams {
    /// Logical pages the trace addresses (`pcstream.capacity_pages`).
    pub capacity_pages: u64,
    /// Share of the capacity addressed.
    pub footprint: f64,
    /// Number of write requests.
    pub writes: u64,
    pub req_pages: u32,
    pub seed: u64,
    /// Extra read requests per write (0 = none).
    pub read_ratio: f64,
    pub theta: f64,
    pub alpha: f64,
    pub sigma: f64,
    pub hot_fraction: f64,
    pub hot_ratio: f64,
    /// `mix`: a preset name or a JSON spec.
    pub mix: String,
}

impl Default for GenParams {
    fn default() -> Self {
        GenParams {
            capacity_pages: 65_536,
            footprint: 1.0,
            writes: 100_000,
            req_pages: 1,
            seed: 1,
            read_ratio: 0.0,
            theta: 0.99,
            alpha: 0.5,
            sigma: 0.1,
            hot_fraction: 0.1,
            hot_ratio: 0.9,
            mix: "rocksdb-like".into(),
        }
    }
}

const PC_BASE: u64 = 0x5eed_0000_0000;

fn gen_err(s: String) -> TraceError {
    TraceError::Gen(s)
}

/// A permutation of 0..n: r ↦ r·p mod n with p prime and coprime to n.
fn spread(r: u64, n: u64) -> u64 {
    const P: [u64; 3] = [2_654_435_761, 2_246_822_519, 3_266_489_917];
    let p = P.iter().copied().find(|p| n % p != 0).unwrap_or(1);
    ((r as u128 * p as u128) % n as u128) as u64
}

/// Generate `kind` into `sink`; returns the trace metadata.
pub fn generate(
    kind: &str,
    p: &GenParams,
    sink: &mut dyn FnMut(Request) -> Result<(), TraceError>,
) -> Result<TraceMeta, TraceError> {
    if !KINDS.contains(&kind) {
        return Err(gen_err(format!(
            "unknown generator '{kind}'; use one of: {}",
            KINDS.join(", ")
        )));
    }
    let n = ((p.capacity_pages as f64 * p.footprint).floor() as u64).min(p.capacity_pages);
    if p.capacity_pages == 0 || n < p.req_pages as u64 || p.req_pages == 0 {
        return Err(gen_err(format!(
            "footprint of {n} pages cannot hold requests of {} pages; raise --capacity-pages or --footprint",
            p.req_pages
        )));
    }
    if !(0.0..=1.0).contains(&p.footprint) || !(0.0..=16.0).contains(&p.read_ratio) {
        return Err(gen_err(
            "footprint must be in (0, 1] and read-ratio in [0, 16]".into(),
        ));
    }
    let mut meta = TraceMeta {
        capacity_pages: Some(p.capacity_pages),
        source: format!("pcstream gen {kind} seed={} writes={}", p.seed, p.writes),
        ..Default::default()
    };
    if kind == "mix" {
        let spec = MixSpec::parse(&p.mix)?;
        spec.run(p, &mut meta, sink)?;
        return Ok(meta);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let slots = n - p.req_pages as u64 + 1; // valid start positions
    let pc = PC_BASE + KINDS.iter().position(|k| *k == kind).unwrap_or(0) as u64 + 1;
    let zipf = if kind == "zipf" {
        Some(
            Zipf::new(slots as f64, p.theta)
                .map_err(|e| gen_err(format!("zipf theta {}: {e}", p.theta)))?,
        )
    } else {
        None
    };
    let normal = if kind == "normal" {
        Some(
            Normal::new(slots as f64 / 2.0, p.sigma * slots as f64)
                .map_err(|e| gen_err(format!("normal sigma {}: {e}", p.sigma)))?,
        )
    } else {
        None
    };
    if kind == "pareto" && p.alpha <= 0.0 {
        return Err(gen_err(format!("pareto alpha {} must be > 0", p.alpha)));
    }
    if kind == "hotcold"
        && !(p.hot_fraction > 0.0 && p.hot_fraction < 1.0 && (0.0..=1.0).contains(&p.hot_ratio))
    {
        return Err(gen_err(
            "hotcold needs 0 < hot-fraction < 1 and 0 ≤ hot-ratio ≤ 1".into(),
        ));
    }
    let hot = ((slots as f64 * p.hot_fraction) as u64).clamp(1, slots.saturating_sub(1).max(1));
    let mut seq = 0u64;
    let mut idx = 0u64;
    let mut read_debt = 0.0f64;
    for _ in 0..p.writes {
        let lpn = match kind {
            "uniform" => rng.random_range(0..slots),
            "zipf" => spread(
                zipf.as_ref().expect("zipf built").sample(&mut rng) as u64 - 1,
                slots,
            ),
            "pareto" => {
                let u: f64 = rng.random();
                spread(
                    ((slots as f64 * u.powf(1.0 / p.alpha)) as u64).min(slots - 1),
                    slots,
                )
            }
            "normal" => loop {
                let x = normal.as_ref().expect("normal built").sample(&mut rng);
                if x >= 0.0 && x < slots as f64 {
                    break x as u64;
                }
            },
            "hotcold" => {
                if rng.random_bool(p.hot_ratio) {
                    rng.random_range(0..hot)
                } else {
                    rng.random_range(hot..slots.max(hot + 1))
                }
            }
            _ => {
                let l = seq;
                seq += p.req_pages as u64;
                if seq + p.req_pages as u64 > n {
                    seq = 0;
                }
                l
            }
        };
        sink(Request {
            ts_ns: idx * 10_000,
            op: Op::Write as u8,
            lpn,
            pages: p.req_pages,
            pc,
            pid: 1,
            ..Default::default()
        })?;
        idx += 1;
        read_debt += p.read_ratio;
        while read_debt >= 1.0 {
            read_debt -= 1.0;
            let l = rng.random_range(0..slots);
            sink(Request {
                ts_ns: idx * 10_000,
                op: Op::Read as u8,
                lpn: l,
                pages: p.req_pages,
                pid: 1,
                ..Default::default()
            })?;
            idx += 1;
        }
    }
    Ok(meta)
}

/// Generate into a Parquet file; returns a JSON summary.
pub fn generate_to_file(
    kind: &str,
    p: &GenParams,
    out: &Path,
) -> Result<serde_json::Value, TraceError> {
    // Metadata goes in the footer, which is written last: generate into a buffer-free first
    // pass only for the metadata of mixes (file tables), then stream the rows.
    let mut meta_probe = None;
    if kind == "mix" {
        meta_probe = Some(generate(kind, p, &mut |_| Ok(()))?);
    }
    let meta = match meta_probe {
        Some(m) => m,
        None => TraceMeta {
            capacity_pages: Some(p.capacity_pages),
            source: format!("pcstream gen {kind} seed={} writes={}", p.seed, p.writes),
            ..Default::default()
        },
    };
    let mut w = BlockTraceWriter::create(out, &meta, DEFAULT_ROW_GROUP_ROWS)?;
    let (mut rows, mut pages) = (0u64, 0u64);
    generate(kind, p, &mut |r| {
        rows += 1;
        if r.op == Op::Write as u8 {
            pages += r.pages as u64;
        }
        w.push(&r)
    })?;
    w.finish()?;
    Ok(
        serde_json::json!({"path": out.display().to_string(), "kind": kind, "rows": rows, "write_pages": pages,
        "capacity_pages": p.capacity_pages, "seed": p.seed}),
    )
}

/// Lifetime of a file, in files this writer completes after it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "dist", rename_all = "lowercase")]
pub enum Lifetime {
    Fixed { files: f64 },
    Exponential { mean: f64 },
    Lognormal { median: f64, sigma: f64 },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WriterKind {
    /// A circular log written in segments; the oldest segment beyond `live_segments` is trimmed.
    AppendLog {
        segment_pages: u32,
        live_segments: u32,
    },
    /// In-place page overwrites in the region (`theta` 0 = uniform, else Zipf).
    RandomUpdate { theta: f64 },
    /// Whole files written sequentially into free slots; trimmed when their lifetime expires.
    FileChurn { file_pages: u32, lifetime: Lifetime },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WriterSpec {
    pub name: String,
    /// Program-context signature of the writer.
    pub pc: u64,
    /// Share of the host pages written.
    pub share: f64,
    /// Share of the footprint that is this writer's LBA region (regions are laid out in order).
    pub region: f64,
    #[serde(flatten)]
    pub kind: WriterKind,
}

/// Several synthetic writers interleaved by page share (deterministic deficit round-robin).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MixSpec {
    pub writers: Vec<WriterSpec>,
}

impl MixSpec {
    pub fn preset(name: &str) -> Option<MixSpec> {
        let w = |name: &str, pc: u64, share: f64, region: f64, kind: WriterKind| WriterSpec {
            name: name.into(),
            pc,
            share,
            region,
            kind,
        };
        match name {
            // WAL (short, regular), flush output (medium), compaction output (lognormal, spanning
            // orders of magnitude: the high-variance PC) and a small metadata file.
            "rocksdb-like" => Some(MixSpec {
                writers: vec![
                    w(
                        "wal",
                        0xa11,
                        0.15,
                        0.04,
                        WriterKind::AppendLog {
                            segment_pages: 64,
                            live_segments: 4,
                        },
                    ),
                    w(
                        "flush",
                        0xf1,
                        0.25,
                        0.25,
                        WriterKind::FileChurn {
                            file_pages: 128,
                            lifetime: Lifetime::Exponential { mean: 20.0 },
                        },
                    ),
                    w(
                        "compaction",
                        0xc0,
                        0.55,
                        0.62,
                        WriterKind::FileChurn {
                            file_pages: 256,
                            lifetime: Lifetime::Lognormal {
                                median: 12.0,
                                sigma: 1.2,
                            },
                        },
                    ),
                    w(
                        "manifest",
                        0x3e7a,
                        0.05,
                        0.01,
                        WriterKind::RandomUpdate { theta: 0.0 },
                    ),
                ],
            }),
            "hotcold-files" => Some(MixSpec {
                writers: vec![
                    w(
                        "hot-table",
                        0x407,
                        0.8,
                        0.1,
                        WriterKind::RandomUpdate { theta: 0.0 },
                    ),
                    w(
                        "cold-files",
                        0xc01d,
                        0.2,
                        0.85,
                        WriterKind::FileChurn {
                            file_pages: 256,
                            lifetime: Lifetime::Fixed { files: 40.0 },
                        },
                    ),
                ],
            }),
            _ => None,
        }
    }

    /// A preset name, or a JSON spec.
    pub fn parse(s: &str) -> Result<MixSpec, TraceError> {
        if let Some(m) = MixSpec::preset(s) {
            return Ok(m);
        }
        serde_json::from_str(s).map_err(|e| {
            gen_err(format!("mix '{s:.40}': not a preset (rocksdb-like, hotcold-files) nor a valid JSON spec ({e})"))
        })
    }

    fn run(
        &self,
        p: &GenParams,
        meta: &mut TraceMeta,
        sink: &mut dyn FnMut(Request) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        let n = (p.capacity_pages as f64 * p.footprint).floor() as u64;
        let total_share: f64 = self.writers.iter().map(|w| w.share).sum();
        let total_region: f64 = self.writers.iter().map(|w| w.region).sum();
        if self.writers.is_empty() || total_share <= 0.0 || total_region > 1.0 + 1e-9 {
            return Err(gen_err(format!(
                "mix: needs ≥ 1 writer, shares > 0, regions summing to ≤ 1 (got {total_region})"
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
        let mut states = Vec::new();
        let mut start = 0u64;
        for (i, w) in self.writers.iter().enumerate() {
            let len = (w.region * n as f64).floor() as u64;
            states.push(WriterState::new(w, i, start, len, p.req_pages)?);
            meta.file_classes.insert(i as u16 + 1, w.name.clone());
            start += len;
        }
        let mut written = vec![0f64; self.writers.len()];
        let mut next_file = 1u32;
        let mut idx = 0u64;
        let total_pages = p.writes * p.req_pages as u64;
        let mut done = 0u64;
        while done < total_pages {
            // Deficit round-robin on pages: the writer furthest below its share goes next.
            let k = (0..self.writers.len())
                .max_by(|&a, &b| {
                    let da = self.writers[a].share / total_share * (done + 1) as f64 - written[a];
                    let db = self.writers[b].share / total_share * (done + 1) as f64 - written[b];
                    da.partial_cmp(&db).expect("finite").then(b.cmp(&a))
                })
                .expect("writers");
            let mut out = Vec::new();
            states[k].step(&self.writers[k], &mut rng, &mut next_file, meta, &mut out);
            for mut r in out {
                r.ts_ns = idx * 10_000;
                idx += 1;
                if r.op == Op::Write as u8 {
                    written[k] += r.pages as f64;
                    done += r.pages as u64;
                }
                sink(r)?;
            }
        }
        Ok(())
    }
}

struct WriterState {
    idx: usize,
    start: u64,
    len: u64,
    req: u32,
    // append log
    head: u64,
    segments: VecDeque<(u64, u32, u32)>, // (start offset, pages, file)
    // file churn
    free_slots: VecDeque<u64>,
    live: BTreeMap<(u64, u32), (u64, u32)>, // (expiry, file) → (slot, file)
    cur: Option<(u64, u32, u32)>,           // (slot, pages written, file)
    files_done: u64,
    zipf: Option<Zipf<f64>>,
}

impl WriterState {
    fn new(
        w: &WriterSpec,
        idx: usize,
        start: u64,
        len: u64,
        req: u32,
    ) -> Result<WriterState, TraceError> {
        let bad = |why: &str| Err(gen_err(format!("mix writer '{}': {why}", w.name)));
        let mut s = WriterState {
            idx,
            start,
            len,
            req,
            head: 0,
            segments: VecDeque::new(),
            free_slots: VecDeque::new(),
            live: BTreeMap::new(),
            cur: None,
            files_done: 0,
            zipf: None,
        };
        match &w.kind {
            WriterKind::AppendLog {
                segment_pages,
                live_segments,
            } => {
                if *segment_pages == 0 || (*live_segments as u64 + 2) * *segment_pages as u64 > len
                {
                    return bad(
                        "region too small for live_segments + 2 segments; raise region or capacity",
                    );
                }
            }
            WriterKind::RandomUpdate { theta } => {
                if len == 0 {
                    return bad("empty region; raise region or capacity");
                }
                if *theta > 0.0 {
                    s.zipf = Some(
                        Zipf::new(len as f64, *theta)
                            .map_err(|e| gen_err(format!("{}: {e}", w.name)))?,
                    );
                }
            }
            WriterKind::FileChurn { file_pages, .. } => {
                let slots = len / (*file_pages).max(1) as u64;
                if *file_pages == 0 || slots < 2 {
                    return bad("region holds fewer than 2 files; raise region or capacity, or lower file_pages");
                }
                s.free_slots = (0..slots).map(|i| start + i * *file_pages as u64).collect();
            }
        }
        Ok(s)
    }

    fn class(&self) -> u16 {
        self.idx as u16 + 1
    }

    fn base(&self, w: &WriterSpec) -> Request {
        Request {
            pc: w.pc,
            pid: self.idx as u32 + 1,
            file_class: self.class(),
            hint: (self.idx as u8 + 1).min(5),
            ..Default::default()
        }
    }

    fn step(
        &mut self,
        w: &WriterSpec,
        rng: &mut ChaCha8Rng,
        next_file: &mut u32,
        meta: &mut TraceMeta,
        out: &mut Vec<Request>,
    ) {
        let base = self.base(w);
        match &w.kind {
            WriterKind::AppendLog {
                segment_pages,
                live_segments,
            } => {
                let seg = *segment_pages;
                let need_new = self.segments.back().is_none_or(|&(_, used, _)| used >= seg);
                if need_new {
                    if self.head + seg as u64 > self.len {
                        self.head = 0;
                    }
                    let f = *next_file;
                    *next_file += 1;
                    meta.files.insert(f, format!("{}/{:06}.log", w.name, f));
                    self.segments.push_back((self.head, 0, f));
                    self.head += seg as u64;
                    while self.segments.len() > *live_segments as usize + 1 {
                        let (off, used, _) = self.segments.pop_front().expect("non-empty");
                        out.push(Request {
                            op: Op::Trim as u8,
                            lpn: self.start + off,
                            pages: used,
                            ..base
                        });
                    }
                }
                let last = self.segments.back_mut().expect("segment open");
                let pages = self.req.min(seg - last.1);
                out.push(Request {
                    op: Op::Write as u8,
                    lpn: self.start + last.0 + last.1 as u64,
                    pages,
                    file: last.2,
                    ..base
                });
                last.1 += pages;
            }
            WriterKind::RandomUpdate { .. } => {
                let pages = (self.req as u64).min(self.len) as u32;
                let slots = self.len - pages as u64 + 1;
                let off = match &self.zipf {
                    Some(z) => spread(z.sample(rng) as u64 - 1, self.len).min(slots - 1),
                    None => rng.random_range(0..slots),
                };
                out.push(Request {
                    op: Op::Write as u8,
                    lpn: self.start + off,
                    pages,
                    ..base
                });
            }
            WriterKind::FileChurn {
                file_pages,
                lifetime,
            } => {
                if self.cur.is_none() {
                    if self.free_slots.is_empty() {
                        // Out of space: the file due soonest is deleted early.
                        let (&key, _) = self
                            .live
                            .iter()
                            .next()
                            .expect("live files when no slot is free");
                        self.delete(key, *file_pages, base, out);
                    }
                    let slot = self.free_slots.pop_front().expect("a free slot");
                    let f = *next_file;
                    *next_file += 1;
                    meta.files.insert(f, format!("{}/{:06}.sst", w.name, f));
                    self.cur = Some((slot, 0, f));
                }
                let (slot, used, f) = self.cur.expect("file open");
                let pages = self.req.min(*file_pages - used);
                out.push(Request {
                    op: Op::Write as u8,
                    lpn: slot + used as u64,
                    pages,
                    file: f,
                    ..base
                });
                let used = used + pages;
                if used < *file_pages {
                    self.cur = Some((slot, used, f));
                    return;
                }
                self.cur = None;
                self.files_done += 1;
                let life = match lifetime {
                    Lifetime::Fixed { files } => *files,
                    Lifetime::Exponential { mean } => {
                        Exp::new(1.0 / mean.max(1e-9)).map_or(*mean, |d| d.sample(rng))
                    }
                    Lifetime::Lognormal { median, sigma } => {
                        LogNormal::new(median.max(1e-9).ln(), *sigma)
                            .map_or(*median, |d| d.sample(rng))
                    }
                };
                let expiry = self.files_done + life.round().max(1.0) as u64;
                self.live.insert((expiry, f), (slot, f));
                while let Some((&key, _)) = self.live.iter().next() {
                    if key.0 > self.files_done {
                        break;
                    }
                    self.delete(key, *file_pages, base, out);
                }
            }
        }
    }

    fn delete(&mut self, key: (u64, u32), file_pages: u32, base: Request, out: &mut Vec<Request>) {
        let (slot, f) = self.live.remove(&key).expect("live file");
        out.push(Request {
            op: Op::Trim as u8,
            lpn: slot,
            pages: file_pages,
            file: f,
            ..base
        });
        self.free_slots.push_back(slot);
    }
}
