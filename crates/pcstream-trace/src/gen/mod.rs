//! Seeded synthetic workloads. The same (kind, parameters, seed) always yields the same rows: one
//! `ChaCha8Rng` per stream of decisions, no hash-map iteration anywhere.
//!
//! Every single-kind generator issues `writes` write requests of `req_pages` pages whose first
//! page lies in the *footprint*, the first `n = ⌊capacity_pages × footprint⌋` pages, so every
//! request fits in it (start positions `0 ..= n − req_pages`, called slots below):
//!
//! - `uniform`: every slot equally likely.
//! - `zipf`: a rank `r` ~ Zipf(`theta`) over the slots (rank 0 hottest), mapped to a slot by the
//!   multiplicative permutation `r ↦ r·p mod slots` with `p` a large prime that does not divide
//!   `slots`. Hot pages are therefore spread over the footprint instead of adjacent, as hot
//!   records of a real table are; the mapping is a bijection, so the per-page skew is exactly
//!   Zipf's.
//! - `pareto`: a page index from a Pareto(scale 1, shape `alpha`) truncated to the footprint by
//!   inverse-CDF sampling, `X = (1 − u·(1 − (n'+1)^−α))^(−1/α)`, index `⌊X⌋ − 1`, where `n'` is
//!   the number of slots, so `P(index ≥ k) = ((k+1)^−α − (n'+1)^−α) / (1 − (n'+1)^−α)`. The
//!   index is used as the LPN directly: low LPNs are hot and the hot set is contiguous (unlike
//!   `zipf`). A larger `alpha` concentrates the writes more (α = 0.5: ~29 % go to LPN 0).
//! - `normal`: LPN ~ N(slots/2, (`sigma`·slots)²), rounded down and clamped to the slots (with
//!   the default σ = 0.1 the clamp is hit with probability ≈ 6·10⁻⁷).
//! - `hotcold`: the first `hot_fraction` of the slots are hot; a write goes to a uniform hot slot
//!   with probability `hot_ratio`, else to a uniform cold slot.
//! - `seq`: sequential overwrite of the footprint in a loop: LPN 0, req, 2·req, …, wrapping to 0
//!   when the next request would not fit.
//! - `mix`: several writers with their own PC, pid, files, LBA region and lifetime behaviour; see
//!   [`MixSpec`], the `mix` module (the spec) and `mix_run` (the writers as they run).
//! - `lsm`: a leveled LSM-tree store (WAL, flushes, compactions over `levels` levels of size
//!   `ratio`, keys skewed by `skew`), optionally beside a build-like writer (`build_share`), one
//!   PC per activity; see the `lsm` module. `writes` counts host pages there.
//!
//! Rows carry `ts_ns` = request index × 10 µs, pid 1, file 0, meta 0 and a fixed PC per kind.
//! With `read_ratio` = ρ > 0, ρ read requests per write (accumulated fractionally) are interleaved
//! after the writes, uniform over the footprint, from a separate random stream so that adding
//! reads never changes the writes.

mod lsm;
mod mix;
mod mix_run;
mod top_pc;

use std::path::Path;

use pcstream_core::request::{Op, Request};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal, Zipf};

use crate::blocktrace::{BlockTraceWriter, TraceMeta, DEFAULT_ROW_GROUP_ROWS};
use crate::error::TraceError;

pub use lsm::{Activity as LsmActivity, SstAlloc, LSM_PC_BASE};
pub use mix::{Lifetime, MixSpec, UpdateDist, WriterKind, WriterSpec, MIX_PRESETS};
pub use top_pc::TopPc;

/// Generator errors are trace errors; bad parameters are [`TraceError::Gen`].
pub type GenError = TraceError;

/// Generator kinds accepted by [`generate`].
pub const KINDS: &[&str] = &[
    "uniform", "zipf", "pareto", "normal", "hotcold", "seq", "mix", "lsm",
];

/// Time between consecutive requests (10 µs).
pub const TS_STEP_NS: u64 = 10_000;

/// Parameters of [`generate`]; fields a kind does not use are ignored.
#[derive(Clone, Debug)]
pub struct GenParams {
    /// Logical pages the trace addresses (`pcstream.capacity_pages`). Default 65 536 (256 MiB).
    pub capacity_pages: u64,
    /// Share of the capacity addressed, in (0, 1]. Default 1.
    pub footprint: f64,
    /// Number of write requests (`mix`: `writes × req_pages` host pages are written, in requests
    /// of at most `req_pages` that may be cut short at segment and file ends). Default 100 000.
    pub writes: u64,
    /// Pages per request. Default 1.
    pub req_pages: u32,
    pub seed: u64,
    /// Read requests interleaved per write request (0.25: one read every four writes). Default 0.
    pub read_ratio: f64,
    /// `zipf` exponent. Default 0.99.
    pub theta: f64,
    /// `pareto` shape. Default 0.5.
    pub alpha: f64,
    /// `normal` standard deviation as a fraction of the footprint. Default 0.1.
    pub sigma: f64,
    /// `hotcold`: share of the footprint that is hot. Default 0.1.
    pub hot_fraction: f64,
    /// `hotcold`: share of the writes that go to the hot pages. Default 0.9.
    pub hot_ratio: f64,
    /// `mix`: a preset name (see [`MixSpec::preset`]) or a spec in JSON or TOML.
    pub mix: String,
    /// `lsm`: levels below L0. Default 4.
    pub levels: u32,
    /// `lsm`: size ratio between adjacent levels. Default 10.
    pub ratio: u32,
    /// `lsm`: Zipf θ of the keys put (0 = uniform). Default 0.
    pub skew: f64,
    /// `lsm`: share of the host pages from the build-like writer, in [0, 1). Default 0.
    pub build_share: f64,
    /// `lsm`: pages per SST (and puts per memtable). Default 256 (1 MiB).
    pub sst_pages: u32,
    /// `lsm`: which free SST slot a new SST takes. Default [`SstAlloc::Next`].
    pub sst_alloc: SstAlloc,
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
            levels: 4,
            ratio: 10,
            skew: 0.0,
            build_share: 0.0,
            sst_pages: 256,
            sst_alloc: SstAlloc::Next,
        }
    }
}

/// Base of the per-kind PC signatures (`PC_BASE + 1 + index in KINDS`).
pub const PC_BASE: u64 = 0x5eed_0000_0000;
/// Mixes `seed` for the read stream, so reads come from their own random sequence.
const READ_SEED_SALT: u64 = 0x9e37_79b9_7f4a_7c15;

pub(crate) fn gen_err(s: String) -> TraceError {
    TraceError::Gen(s)
}

/// The PC signature the single-kind generator `kind` puts on its rows.
pub fn kind_pc(kind: &str) -> u64 {
    PC_BASE + 1 + KINDS.iter().position(|k| *k == kind).unwrap_or(0) as u64
}

/// A permutation of `0..n`: `r ↦ r·p mod n` with `p` prime and not dividing `n` (hence coprime).
pub(crate) fn spread(r: u64, n: u64) -> u64 {
    const P: [u64; 3] = [2_654_435_761, 2_246_822_519, 3_266_489_917];
    let p = P
        .iter()
        .copied()
        .find(|p| !n.is_multiple_of(*p))
        .unwrap_or(1);
    ((r as u128 * p as u128) % n as u128) as u64
}

/// Footprint in pages after checking the parameters every kind shares.
fn footprint_pages(p: &GenParams) -> Result<u64, TraceError> {
    if p.capacity_pages == 0 {
        return Err(gen_err("capacity_pages must be ≥ 1".into()));
    }
    if !(p.footprint > 0.0 && p.footprint <= 1.0) {
        return Err(gen_err(format!(
            "footprint {} must be in (0, 1] (a share of capacity_pages)",
            p.footprint
        )));
    }
    if !(0.0..=100.0).contains(&p.read_ratio) {
        return Err(gen_err(format!(
            "read_ratio {} must be in [0, 100] (reads per write)",
            p.read_ratio
        )));
    }
    let n = ((p.capacity_pages as f64 * p.footprint).floor() as u64).min(p.capacity_pages);
    if p.req_pages == 0 || n < p.req_pages as u64 {
        return Err(gen_err(format!(
            "a footprint of {n} pages cannot hold requests of {} pages; raise capacity_pages or footprint, or lower req_pages (≥ 1)",
            p.req_pages
        )));
    }
    Ok(n)
}

fn base_meta(kind: &str, p: &GenParams) -> TraceMeta {
    let mix = match kind {
        "mix" if MixSpec::preset(p.mix.trim()).is_some() => format!(" mix={}", p.mix.trim()),
        "mix" => " mix=custom".to_string(),
        "lsm" => format!(
            " levels={} ratio={} skew={} build_share={} sst_pages={} sst_alloc={}",
            p.levels, p.ratio, p.skew, p.build_share, p.sst_pages, p.sst_alloc
        ),
        _ => String::new(),
    };
    TraceMeta {
        capacity_pages: Some(p.capacity_pages),
        source: format!(
            "pcstream gen {kind}{mix} seed={} writes={} capacity_pages={} footprint={} req_pages={} read_ratio={}",
            p.seed, p.writes, p.capacity_pages, p.footprint, p.req_pages, p.read_ratio
        ),
        ..Default::default()
    }
}

/// Interleaves reads: `ratio` reads per write, uniform over `[lo, lo + len − pages]`.
pub(crate) struct Reads {
    rng: ChaCha8Rng,
    ratio: f64,
    debt: f64,
}

impl Reads {
    pub(crate) fn new(seed: u64, ratio: f64) -> Reads {
        Reads {
            rng: ChaCha8Rng::seed_from_u64(seed ^ READ_SEED_SALT),
            ratio,
            debt: 0.0,
        }
    }

    /// Reads due after one more write, as requests cloned from `base` (ts_ns left to the caller).
    pub(crate) fn after_write(
        &mut self,
        base: Request,
        lo: u64,
        len: u64,
        pages: u32,
        mut emit: impl FnMut(Request) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        self.debt += self.ratio;
        while self.debt >= 1.0 {
            self.debt -= 1.0;
            let slots = len.saturating_sub(pages as u64) + 1;
            let lpn = lo + self.rng.random_range(0..slots);
            emit(Request {
                op: Op::Read as u8,
                lpn,
                pages,
                ..base
            })?;
        }
        Ok(())
    }
}

/// Generate the workload `kind` with parameters `p`, handing every row to `sink` in order;
/// returns the trace metadata (complete only once every row has been emitted: a mix fills its
/// file tables as it goes). Unknown kinds and impossible parameters are [`TraceError::Gen`];
/// errors returned by `sink` are passed through.
pub fn generate(
    kind: &str,
    p: &GenParams,
    sink: &mut dyn FnMut(Request) -> Result<(), TraceError>,
) -> Result<TraceMeta, GenError> {
    if !KINDS.contains(&kind) {
        return Err(gen_err(format!(
            "unknown generator '{kind}'; use one of: {}",
            KINDS.join(", ")
        )));
    }
    let n = footprint_pages(p)?;
    let mut meta = base_meta(kind, p);
    match kind {
        "mix" => MixSpec::parse(&p.mix)?.run(p, n, &mut meta, sink)?,
        "lsm" => lsm::run(p, n, &mut meta, sink)?,
        _ => single(kind, p, n, sink)?,
    }
    Ok(meta)
}

/// A single-kind workload (`uniform` … `seq`) over a footprint of `n` pages: `writes` writes
/// of `req_pages` pages, each followed by the reads it is due.
fn single(
    kind: &str,
    p: &GenParams,
    n: u64,
    sink: &mut dyn FnMut(Request) -> Result<(), TraceError>,
) -> Result<(), TraceError> {
    let mut lpns = Lpns::new(kind, p, n)?;
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let mut reads = Reads::new(p.seed, p.read_ratio);
    let base = Request {
        pc: kind_pc(kind),
        pid: 1,
        ..Default::default()
    };
    // Rows are numbered (their time stamps) across writes and the reads that follow them.
    let mut idx = 0u64;
    #[allow(clippy::explicit_counter_loop)] // the reads' closure counts too
    for _ in 0..p.writes {
        let lpn = lpns.next(&mut rng);
        sink(Request {
            ts_ns: idx * TS_STEP_NS,
            op: Op::Write as u8,
            lpn,
            pages: p.req_pages,
            ..base
        })?;
        idx += 1;
        reads.after_write(base, 0, n, p.req_pages, |r| {
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

/// The first pages of the writes of a single-kind workload, one draw after another.
struct Lpns<'a> {
    kind: &'a str,
    p: &'a GenParams,
    /// Footprint pages, and the request start positions in it.
    n: u64,
    slots: u64,
    zipf: Option<Zipf<f64>>,
    normal: Option<Normal<f64>>,
    /// `hotcold`: the hot slots are `0..hot`.
    hot: u64,
    /// 1 − (n'+1)^−α, the truncation factor of the Pareto inverse CDF.
    pareto_mass: f64,
    /// `seq`: the next start.
    seq: u64,
}

impl<'a> Lpns<'a> {
    /// Check the parameters of `kind` and build its distribution.
    fn new(kind: &'a str, p: &'a GenParams, n: u64) -> Result<Lpns<'a>, TraceError> {
        let slots = n - p.req_pages as u64 + 1;
        let zipf = match kind {
            "zipf" => Some(
                Zipf::new(slots as f64, p.theta)
                    .map_err(|e| gen_err(format!("zipf theta {} must be ≥ 0 ({e})", p.theta)))?,
            ),
            _ => None,
        };
        let normal = match kind {
            "normal" => Some(
                Normal::new(slots as f64 / 2.0, p.sigma * slots as f64)
                    .ok()
                    .filter(|_| p.sigma > 0.0)
                    .ok_or_else(|| gen_err(format!("normal sigma {} must be > 0", p.sigma)))?,
            ),
            _ => None,
        };
        if kind == "pareto" && !(p.alpha > 0.0 && p.alpha.is_finite()) {
            return Err(gen_err(format!("pareto alpha {} must be > 0", p.alpha)));
        }
        if kind == "hotcold"
            && !(p.hot_fraction > 0.0 && p.hot_fraction < 1.0 && (0.0..=1.0).contains(&p.hot_ratio))
        {
            return Err(gen_err(format!(
                "hotcold needs 0 < hot_fraction < 1 and 0 ≤ hot_ratio ≤ 1 (got {} and {})",
                p.hot_fraction, p.hot_ratio
            )));
        }
        if kind == "hotcold" && slots < 2 {
            return Err(gen_err(
                "hotcold needs at least 2 request slots in the footprint; raise capacity_pages"
                    .into(),
            ));
        }
        Ok(Lpns {
            kind,
            p,
            n,
            slots,
            zipf,
            normal,
            // Only hotcold has hot slots (it needs two slots, checked above); one slot is a
            // valid footprint for every other kind.
            hot: if kind == "hotcold" {
                ((slots as f64 * p.hot_fraction).round() as u64).clamp(1, slots - 1)
            } else {
                0
            },
            pareto_mass: 1.0 - (slots as f64 + 1.0).powf(-p.alpha),
            seq: 0,
        })
    }

    /// The next write's first page.
    fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        let (p, slots) = (self.p, self.slots);
        match self.kind {
            "uniform" => rng.random_range(0..slots),
            "zipf" => {
                let rank = self.zipf.as_ref().expect("built for zipf").sample(rng) as u64;
                spread(rank.clamp(1, slots) - 1, slots)
            }
            "pareto" => {
                let u: f64 = rng.random();
                let x = (1.0 - u * self.pareto_mass).powf(-1.0 / p.alpha);
                ((x.floor() as u64).max(1) - 1).min(slots - 1)
            }
            "normal" => {
                let x = self.normal.as_ref().expect("built for normal").sample(rng);
                x.clamp(0.0, (slots - 1) as f64) as u64
            }
            "hotcold" => {
                if rng.random_bool(p.hot_ratio) {
                    rng.random_range(0..self.hot)
                } else {
                    rng.random_range(self.hot..slots)
                }
            }
            _ => {
                let l = self.seq;
                self.seq += p.req_pages as u64;
                if self.seq + p.req_pages as u64 > self.n {
                    self.seq = 0;
                }
                l
            }
        }
    }
}

/// Generate `kind` into the Parquet file `out` (written atomically) in one pass; returns a short
/// JSON summary: path, kind, seed, rows, writes/trims/reads (requests and pages),
/// capacity_pages, files.
pub fn generate_to_file(
    kind: &str,
    p: &GenParams,
    out: &Path,
) -> Result<serde_json::Value, TraceError> {
    // Check the parameters before creating any file.
    if !KINDS.contains(&kind) {
        return generate(kind, p, &mut |_| Ok(())).map(|_| serde_json::Value::Null);
    }
    let n = footprint_pages(p)?;
    if kind == "mix" {
        MixSpec::parse(&p.mix)?;
    }
    if kind == "lsm" {
        lsm::plan(p, n)?;
    }
    let mut w = BlockTraceWriter::create(out, &base_meta(kind, p), DEFAULT_ROW_GROUP_ROWS)?;
    let mut ops = [(0u64, 0u64); 4];
    let meta = generate(kind, p, &mut |r| {
        // Every generator hands each row over as it makes it: a stop is seen within a row.
        crate::cancel::check()?;
        let o = &mut ops[(r.op as usize).min(Op::Flush as usize)];
        o.0 += 1;
        o.1 += r.pages as u64;
        w.push(&r)
    })?;
    w.set_meta(&meta);
    let rows = w.finish()?;
    let pair = |o: (u64, u64)| serde_json::json!({"requests": o.0, "pages": o.1});
    Ok(serde_json::json!({
        "path": out.display().to_string(),
        "kind": kind,
        "seed": p.seed,
        "rows": rows,
        "writes": pair(ops[Op::Write as usize]),
        "trims": pair(ops[Op::Trim as usize]),
        "reads": pair(ops[Op::Read as usize]),
        "capacity_pages": p.capacity_pages,
        "files": meta.files.len(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_a_permutation() {
        // Including sizes that are multiples of the first candidate prime.
        for n in [1u64, 2, 10, 4096, 65_537, 2_654_435_761 * 2] {
            let k = n.min(5_000);
            let mut seen = std::collections::BTreeSet::new();
            for r in 0..k {
                let x = spread(r, n);
                assert!(x < n);
                assert!(seen.insert(x), "n = {n}: {r} collides");
            }
        }
        let all: std::collections::BTreeSet<u64> = (0..4096).map(|r| spread(r, 4096)).collect();
        assert_eq!(all.len(), 4096);
        assert_ne!(spread(1, 4096), 1, "ranks are moved");
    }
}
