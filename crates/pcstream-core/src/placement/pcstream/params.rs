//! The parameters of `pcstream` and `pcstream-star`, their defaults, and how they are read.

use std::ops::Bound;

use super::substreams::Substreams;
use crate::error::SimError;
use crate::placement::lifetime_class::CLASS_RATIO;
use crate::placement::PolicyCtx;

/// The policies of this module, the ones that write and read a persistent PC table: the full
/// policy, then the one without GC substreams (their registry names).
pub(crate) const TABLE_POLICIES: [&str; 2] = ["pcstream", "pcstream-star"];

/// Default `n_min`: completed lifetimes a PC needs before it is clustered (our choice: enough
/// for a mean on the log2 scale, few enough that a PC leaves stream 0 early in a run).
const DEFAULT_N_MIN: u64 = 16;

/// Default `period`: host pages between two regular reclusterings, 2^18 (1 GiB of 4 KiB pages;
/// our choice: a clustering costs a sort of the table, rare enough per page).
const DEFAULT_PERIOD: u64 = 262_144;

/// Checks per period (`tick_period` = `period` / this): a PC that fits no cluster, or has
/// drifted from the one it joined, waits at most this fraction of a period for its
/// reclustering, and a check only visits the PCs that joined since the last one.
pub const CHECKS_PER_PERIOD: u64 = 16;

/// Default `max_pcs`: 2^20 table entries (72 MiB at most; our choice: bounded state, far more
/// PCs than any bundled trace has).
const DEFAULT_MAX_PCS: usize = 1 << 20;

/// Default `first_come_writes`: writes after which a PC takes the next free stream under
/// `pc_assign=first_come` (our choice: a PC that has written this much is no one-off).
const DEFAULT_FIRST_COME_WRITES: u64 = 1000;

/// Default `join_drift`: a PC that joined a cluster and whose mean lifetime has since doubled
/// or halved triggers a reclustering (docs/POLICIES.md, "A joined PC that drifts").
const DEFAULT_JOIN_DRIFT: f64 = 1.0;

/// Default `min_gain`: see docs/POLICIES.md for how it was chosen.
const DEFAULT_MIN_GAIN: f64 = 0.02;

/// Default `substreams` (M): two slots, each an open unit GC's spare space pays for.
const DEFAULT_SUBSTREAMS: usize = 2;

/// Default `hv_min_n`: young deaths (`hv_test=hazard`) or completed lifetimes (`hv_test=cv`) a
/// stream or PC needs before its rates or CV count (our choice: fewer say little).
const DEFAULT_HV_MIN_N: u64 = 32;

/// Default `hv_cv`: the CV of memoryless (exponential) lifetimes; only a wider spread is high.
const DEFAULT_HV_CV: f64 = 1.0;

/// Default `hv_ratio`: see docs/POLICIES.md for how it was chosen.
const DEFAULT_HV_RATIO: f64 = 2.0;

/// Default `hv_min_units`: two units in the count of copies halved at each reclustering, about
/// one unit per period, enough to fill the substream's open unit once (docs/POLICIES.md).
const DEFAULT_HV_MIN_UNITS: f64 = 2.0;

/// Default `hv_generations`: a substream keeps its own survivors (more generations were
/// measured, not kept: docs/POLICIES.md).
const DEFAULT_HV_GENERATIONS: usize = 1;

/// `merge`: when PCs share a stream.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Merge {
    /// As `FitFirst`, but two PCs (or clusters) adjacent in lifetime share a stream when the
    /// placement cost model (`placement::open_cost`) says the copies their separation saves do
    /// not pay for the spare space one more open unit takes; before GC has reclaimed a unit,
    /// merged as `MinGain` merges (docs/POLICIES.md, "When a stream pays": measured, not the
    /// default).
    Cost,
    /// While the known PCs number no more than the streams beside stream 0, each has a stream
    /// of its own, kept across reclusterings; only when they outnumber those streams are they
    /// clustered (and clusters merged as under `MinGain`). The papers' rule, whatever a stream
    /// costs: see docs/POLICIES.md, "A stream per PC: measured".
    FitFirst,
    /// Always clustered, adjacent clusters whose split says little merged (`min_gain`), and a
    /// lone cluster like stream 0's data in stream 0, even while streams are free (default).
    MinGain,
}

impl Merge {
    /// The `merge` parameter (default `min_gain`).
    fn parse(ctx: &mut PolicyCtx) -> Result<Merge, SimError> {
        ctx.choice(
            "merge",
            "min_gain",
            &[
                ("cost", Merge::Cost),
                ("fit_first", Merge::FitFirst),
                ("min_gain", Merge::MinGain),
            ],
        )
    }
}

/// Everything fixed when the policy is built.
pub struct Params {
    /// Registry name: `pcstream` (substreams) or `pcstream-star`.
    pub name: &'static str,
    pub host_streams: u32,
    pub n_min: u64,
    pub period: u64,
    pub agglomerative: bool,
    pub log2: bool,
    pub stat_decay: bool,
    /// `pc_assign=first_come`: writes after which a PC takes the next free stream.
    pub first_come: Option<u64>,
    pub substreams: Substreams,
    pub max_substreams: usize,
    pub hv_min_n: u64,
    pub hv_cv: f64,
    /// `hv_test=hazard`: young over old death rate a stream needs for a substream.
    pub hv_ratio: f64,
    /// `high_variance` by death rates (`hv_test=hazard`) rather than by the CV of lifetimes.
    pub by_hazard: bool,
    /// Write points per substream slot (GC generations).
    pub generations: usize,
    /// Adjacent clusters whose split tells less than this (nats per lifetime sample, see
    /// `cluster::merge_uninformative`) about their pages' log2 lifetimes share a stream (0: never
    /// merge).
    pub min_gain: f64,
    /// Recluster at the next check when a PC that joined the nearest centroid has moved more
    /// than this (log2 of its mean lifetime) since; 0 = wait for the period.
    pub join_drift: f64,
    /// Pages of a device unit: what a joined PC must have written before its drift counts.
    pub unit_pages: u64,
    /// Table capacity in PCs (0: unbounded).
    pub max_pcs: usize,
    /// `age` / `death`: the first class boundary (half a unit, in pages).
    pub class_base: f64,
    /// `age` / `death`: ratio between adjacent class boundaries.
    pub class_ratio: f64,
    /// `hv_test=hazard`: pages GC must have copied out of a stream (in the count halved at each
    /// reclustering), if any, for it to get a substream slot.
    pub hv_min_copies: f64,
    /// `merge_weight=pages`: clusters are merged with each PC weighing by its pages written
    /// (else by its completed lifetimes).
    pub weigh_by_pages: bool,
    pub merge: Merge,
    /// Write points the device holds open without cutting its GC watermarks
    /// (`PolicyCtx::write_point_budget`): what the slack of `merge=cost` is counted from.
    pub write_point_budget: u32,
}

/// The `pcstream`-only parameters (`pcstream-star` has no substreams).
struct SubstreamParams {
    substreams: Substreams,
    max_substreams: usize,
    hv_min_n: u64,
    hv_cv: f64,
    by_hazard: bool,
    hv_ratio: f64,
    generations: usize,
}

impl Params {
    /// Read every parameter from `ctx`; `full`: `pcstream` rather than `pcstream-star`.
    pub fn parse(ctx: &mut PolicyCtx, full: bool) -> Result<Params, SimError> {
        if ctx.host_streams < 2 {
            return Err(SimError::BadParam(
                "pcstream needs at least 2 host streams (stream 0 is for unknown PCs)".into(),
            ));
        }
        let n_min: u64 = ctx.param("n_min", DEFAULT_N_MIN)?;
        let period: u64 = ctx.param("period", DEFAULT_PERIOD)?;
        if n_min == 0 || period == 0 {
            return Err(SimError::BadParam("n_min and period must be ≥ 1".into()));
        }
        let agglomerative =
            ctx.choice("algorithm", "dp", &[("dp", false), ("agglomerative", true)])?;
        let log2 = ctx.choice("scale", "log2", &[("log2", true), ("raw", false)])?;
        let stat_decay: bool = ctx.param("stat_decay", false)?;
        let first_come = ctx.choice(
            "pc_assign",
            "lifetime",
            &[("lifetime", false), ("first_come", true)],
        )?;
        let first_come_writes: u64 = ctx.param("first_come_writes", DEFAULT_FIRST_COME_WRITES)?;
        let max_pcs: usize = ctx.param("max_pcs", DEFAULT_MAX_PCS)?;
        let min_gain = ctx.range(
            "min_gain",
            DEFAULT_MIN_GAIN,
            0.0..,
            "a number ≥ 0 (0 keeps every cluster)",
        )?;
        let join_drift = ctx.range(
            "join_drift",
            DEFAULT_JOIN_DRIFT,
            0.0..,
            "a number ≥ 0 (log2 of a lifetime ratio; 0 = never)",
        )?;
        let weigh_by_pages = ctx.choice(
            "merge_weight",
            "pages",
            &[("pages", true), ("lifetimes", false)],
        )?;
        let merge = Merge::parse(ctx)?;
        // `pcstream-star` takes these three as well, and has no use for them.
        let (hv_min_units, class_base, class_ratio) = shared_substream_params(ctx)?;
        let sub = if full {
            SubstreamParams::parse(ctx)?
        } else {
            SubstreamParams::none()
        };
        Ok(Params {
            name: TABLE_POLICIES[usize::from(!full)], // pcstream, pcstream-star
            host_streams: ctx.host_streams,
            n_min,
            period,
            agglomerative,
            log2,
            stat_decay,
            first_come: first_come.then_some(first_come_writes),
            substreams: sub.substreams,
            max_substreams: sub.max_substreams,
            hv_min_n: sub.hv_min_n,
            hv_cv: sub.hv_cv,
            hv_ratio: sub.hv_ratio,
            by_hazard: sub.substreams == Substreams::HighVariance && sub.by_hazard,
            generations: sub.generations,
            min_gain,
            join_drift,
            unit_pages: ctx.unit_pages as u64,
            max_pcs,
            class_base,
            class_ratio,
            hv_min_copies: hv_min_units * ctx.unit_pages as f64,
            weigh_by_pages,
            merge,
            write_point_budget: ctx.write_point_budget,
        })
    }
}

/// `hv_min_units`, `class_base` and `class_ratio`: read for both policies.
fn shared_substream_params(ctx: &mut PolicyCtx) -> Result<(f64, f64, f64), SimError> {
    let hv_min_units = ctx.range(
        "hv_min_units",
        DEFAULT_HV_MIN_UNITS,
        0.0..,
        "a number of units ≥ 0",
    )?;
    let class_base = ctx.range(
        "class_base",
        default_class_base(ctx),
        1.0..,
        "a number of pages ≥ 1",
    )?;
    let class_ratio = ctx.range(
        "class_ratio",
        CLASS_RATIO,
        (Bound::Excluded(1.0), Bound::Unbounded),
        "a number > 1",
    )?;
    Ok((hv_min_units, class_base, class_ratio))
}

/// `age` / `death`: the first class boundary by default, half a unit (at least a page): a GC
/// copy younger than that is as young as GC copies come.
fn default_class_base(ctx: &PolicyCtx) -> f64 {
    (ctx.unit_pages as f64 / 2.0).max(1.0)
}

impl SubstreamParams {
    fn parse(ctx: &mut PolicyCtx) -> Result<SubstreamParams, SimError> {
        let substreams = ctx.choice(
            "substream_policy",
            "high_variance",
            &[
                ("high_variance", Substreams::HighVariance),
                ("all", Substreams::All),
                ("age", Substreams::Age),
                ("death", Substreams::Death),
            ],
        )?;
        let max_substreams = if substreams.policy_slots() {
            ctx.range(
                "substreams",
                DEFAULT_SUBSTREAMS,
                1..=ctx.host_streams as usize - 1,
                &format!("1 ..= {} (host streams − 1)", ctx.host_streams - 1),
            )?
        } else {
            ctx.param("substreams", DEFAULT_SUBSTREAMS)?
        };
        let hv_min_n: u64 = ctx.param("hv_min_n", DEFAULT_HV_MIN_N)?;
        let hv_cv: f64 = ctx.param("hv_cv", DEFAULT_HV_CV)?;
        // An empty `hv_test=` has always read as `cv`.
        let by_hazard = if ctx.params.get("hv_test").is_some_and(|v| v.is_empty()) {
            ctx.params.remove("hv_test");
            false
        } else {
            ctx.choice("hv_test", "hazard", &[("hazard", true), ("cv", false)])?
        };
        let hv_ratio = ctx.range("hv_ratio", DEFAULT_HV_RATIO, 0.0.., "a number ≥ 0")?;
        let generations: usize = ctx.param("hv_generations", DEFAULT_HV_GENERATIONS)?;
        // Slots of G write points each: G must divide M, or a write point would be reserved
        // for GC and never written.
        let hv_slots = substreams == Substreams::HighVariance;
        if generations == 0 || hv_slots && max_substreams % generations != 0 {
            return Err(SimError::BadParam(format!(
                "hv_generations={generations}: use a divisor of substreams ({})",
                max_substreams.max(1)
            )));
        }
        Ok(SubstreamParams {
            substreams,
            max_substreams,
            hv_min_n,
            hv_cv,
            by_hazard,
            hv_ratio,
            generations,
        })
    }

    /// `pcstream-star`: no substreams, and none of their parameters taken.
    fn none() -> SubstreamParams {
        SubstreamParams {
            substreams: Substreams::None,
            max_substreams: 0,
            hv_min_n: 0,
            hv_cv: 0.0,
            by_hazard: false,
            hv_ratio: 0.0,
            generations: 1,
        }
    }
}
