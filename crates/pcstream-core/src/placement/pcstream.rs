//! # pcstream-star / pcstream — program-context streams (one file, two registry names)
//!
//! What it does: learns each program context's (PC's) average data lifetime from overwrite/TRIM
//! feedback and clusters the PCs by log2 lifetime into the host streams 1..N−1 every `R` host
//! pages; stream 0 holds writes of PCs with fewer than `n_min` completed lifetimes (and of PC 0).
//! A PC that becomes known between reclusterings joins the nearest centroid; once it has written
//! a unit's worth and its mean lifetime has moved more than 2^`join_drift`× from the one it
//! joined with (its first lifetimes are its short ones), the next check reclusters. `pcstream-star`
//! leaves GC copies in their stream (`same_stream`); `pcstream` adds internal substreams: with
//! `substream_policy=high_variance` (default) only the streams whose GC survivors outlive their
//! new writes send GC survivors to a substream: by default (`hv_test=hazard`) a stream whose
//! pages older than the age GC erases its units at die at least `hv_ratio` (2) times more
//! slowly per page and host page than its younger ones (death rates over the pages alive and
//! dead, `hazard::AgeHazard`; at least `hv_min_n` young deaths), ranked by the pages GC copied
//! out of it (then by its pages since the last reclustering), at most `M` of them, none out of
//! which GC has copied some pages but fewer than `hv_min_units` units' worth (in the count
//! halved at each reclustering), a stream that no longer qualifies keeping its slot until a
//! qualifying one needs it (its open unit is paid for either way);
//! `hv_test=cv` instead takes the streams holding a PC with n ≥ `hv_min_n` completed lifetimes
//! and CV > `hv_cv`, ranked by those PCs' pages since the last reclustering (completed
//! lifetimes are the short ones first, so that CV is low until the long ones end). The policy
//! places GC copies itself into internal
//! write points `host_streams + slot` (M slots; a stream keeps its slot while it stays
//! selected; a victim's copies all go to one place, so the GC reserve is one unit); a
//! substream unit's survivors stay in it, or with `hv_generations` G > 1 each slot is G write
//! points and they move one generation on per GC (M / G slots, G dividing M; measured, not the default:
//! docs/POLICIES.md). With `all`
//! every stream's survivors go to its own substream (the FTL's `substream` mode, N more open
//! units), which costs space where lifetimes do not vary (memoryless overwrites). With `age`
//! every stream's survivors go by age (time since their host write) into M classes on the
//! oracle's geometric boundaries (`class_base` · `class_ratio`^i, by default unit/2 · 4^i):
//! SepBIT's rule for GC writes. `death` sorts them
//! the same way by their true remaining lifetime (the oracle's pre-pass): not a device scheme but
//! a yardstick for rules that place GC copies on these classes (docs/POLICIES.md).
//! Streams are not free: each holds an open unit, space GC then lacks. After clustering,
//! adjacent clusters whose split says little about their pages' log2 lifetimes (Gaussian
//! log-likelihood gain below `min_gain` nats per lifetime sample, `cluster::merge_uninformative`;
//! each PC weighing by the pages it has written, `merge_weight=pages`, or by its completed
//! lifetimes, `lifetimes`) share a stream; a single cluster left whose mean lifetime is not told apart from that of
//! stream 0's data (PC 0 and PCs still unknown; `cluster::mean_gain`; where stream 0 holds only
//! the device's aged state and the group's early pages, the times aged pages died, or, none
//! having died, always) shares stream 0, baseline's layout, and may take a substream for it.
//! Source: Kim et al., "PCStream: Automatic Stream Allocation Using Program Contexts",
//! HotStorage'18, and "Fully Automatic Stream Management for Multi-Streamed SSDs Using Program
//! Contexts", FAST'19.
//! What it sees: PC, lifetime feedback (old version's write time, PC and host stream);
//! `high_variance` also the GC victim's write point and, per erased unit, its write point,
//! opening time and pages copied.
//! State: per PC one `PcEntry` (72 B) + its hash index slot; K centroids. The per-page write
//! time/PC the feedback needs are the simulator's page metadata (13 B per physical page).
//! Persistent table: `save_state`/`load_state` as JSON (signatures as decimal strings, lifetime
//! stats, stream ids, centroids); loading reclusters at once.
//! Parameters: `n_min` (16), `period` (R = 262144 pages; the first clustering happens at the
//! first check, every R/16 pages, where some PC has `n_min` lifetimes), `max_pcs` (PC-table
//! capacity, 2^20 entries; 0 = unbounded; a full table evicts by CLOCK, an O(1) LRU
//! approximation), `algorithm` = `dp` (optimal 1-D
//! k-means, default) | `agglomerative` (HotStorage'18), `scale` = `log2` (default) | `raw`,
//! `stat_decay` (false: halve n, Σℓ, Σℓ² at each reclustering when true), `join_drift` (1.0,
//! log2; 0 = a joined PC waits for the period), `pc_assign` =
//! `lifetime` (default) | `first_come` (the bdbm prototype: a PC seen more than
//! `first_come_writes` (1000) times takes the next free stream), and for `pcstream`:
//! `substream_policy` = `high_variance` | `all` | `age` | `death`, `substreams` (M = 2;
//! 1 ..= N − 1 for every policy but `all`), `hv_test` = `hazard` (default) | `cv`, `hv_ratio`
//! (2.0), `hv_min_units` (2.0), `hv_generations` (1), `hv_min_n` (32), `hv_cv` (1.0), `class_base` (pages, ≥ 1; half a unit) and
//! `class_ratio` (> 1; 4) for `age` and `death`; for both `min_gain` (0.02; 0 keeps every cluster in a
//! stream of its own) and `merge_weight` (`pages` | `lifetimes`).
//! Deviations: lifetime statistics are cumulative
//! (unless `stat_decay`); never-invalidated data contribute no lifetime (right-censoring, as in
//! the paper), but their pages count in the weight of their PC's cluster when clusters are
//! merged; PC 0 (unknown context) always goes to stream 0.

// No adversary picks the PC signatures: a fast non-keyed hasher is enough.
use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};

use super::cluster::{
    agglomerative_1d, kmeans_1d, mean_gain, merge_uninformative, nearest, Moments,
};
use super::hazard::AgeHazard;
use super::oracle::{geometric_class, CLASS_RATIO};
use super::substream_slots::SubstreamSlots;
use super::{
    Attrs, GcMode, Invalidation, PageInfo, Placement, PolicyCtx, Reclaimed, RequestInfo, WriteInfo,
};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId, NEVER};

/// One PC-stream table entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct PcEntry {
    #[serde(with = "sig_string")]
    sig: u64,
    /// Completed lifetimes.
    n: u64,
    /// Σℓ and Σℓ² in host pages.
    sum_l: u64,
    sum_l2: f64,
    /// Σ log2 ℓ and Σ (log2 ℓ)² (ℓ ≥ 1): the spread of this PC's lifetimes on the clustering's
    /// scale, which decides whether two clusters are worth two streams.
    #[serde(default)]
    sum_lg: f64,
    #[serde(default)]
    sum_lg2: f64,
    stream: u8,
    /// Placed by the last clustering or by nearest centroid since (else stream 0).
    #[serde(skip)]
    clustered: bool,
    /// Host pages written by this PC (all time, and since the last reclustering).
    #[serde(skip)]
    writes: u64,
    #[serde(skip)]
    recent_pages: u64,
    /// log2 of the mean lifetime with which the PC joined the nearest centroid since the last
    /// reclustering (NaN: placed by the reclustering itself, or not yet).
    #[serde(skip)]
    joined_lg: f32,
    /// CLOCK reference bit: set when the PC writes, cleared by the eviction hand.
    #[serde(skip)]
    referenced: bool,
}

mod sig_string {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl PcEntry {
    fn mean(&self) -> f64 {
        self.sum_l as f64 / self.n as f64
    }
    /// Count and moments of the log2 lifetimes.
    fn moments(&self) -> Moments {
        Moments {
            n: self.n as f64,
            s1: self.sum_lg,
            s2: self.sum_lg2,
        }
    }
    /// Coefficient of variation of the lifetimes (0 if undefined).
    fn cv(&self) -> f64 {
        if self.n == 0 || self.sum_l == 0 {
            return 0.0;
        }
        let m = self.mean();
        let var = (self.sum_l2 / self.n as f64 - m * m).max(0.0);
        var.sqrt() / m
    }
}

#[derive(Serialize, Deserialize)]
struct SavedTable {
    format: u32,
    policy: String,
    centroids: Vec<f64>,
    pcs: Vec<PcEntry>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Substreams {
    None,
    All,
    HighVariance,
    /// Every stream's survivors by age (time since the host write) into the M slots.
    Age,
    /// Every stream's survivors by remaining lifetime into the M slots (needs death times).
    Death,
}

impl Substreams {
    /// The policy places GC copies into its own M internal write points.
    fn policy_slots(self) -> bool {
        matches!(
            self,
            Substreams::HighVariance | Substreams::Age | Substreams::Death
        )
    }
}

/// Default `join_drift`: a PC that joined a cluster and whose mean lifetime has since doubled
/// or halved triggers a reclustering (docs/POLICIES.md, "A joined PC that drifts").
const DEFAULT_JOIN_DRIFT: f64 = 1.0;

/// Default `min_gain`: see docs/POLICIES.md for how it was chosen.
const DEFAULT_MIN_GAIN: f64 = 0.02;

/// Default `hv_ratio`: see docs/POLICIES.md for how it was chosen.
const DEFAULT_HV_RATIO: f64 = 2.0;

/// Default `hv_min_units`: two units in the count of copies halved at each reclustering, about
/// one unit per period, enough to fill the substream's open unit once (docs/POLICIES.md).
const DEFAULT_HV_MIN_UNITS: f64 = 2.0;

pub struct PcStream {
    // Fixed at construction.
    name: &'static str,
    host_streams: u32,
    n_min: u64,
    period: u64,
    agglomerative: bool,
    log2: bool,
    stat_decay: bool,
    first_come: Option<u64>,
    substreams: Substreams,
    max_substreams: usize,
    hv_min_n: u64,
    hv_cv: f64,
    /// `hv_test=hazard`: young over old death rate a stream needs for a substream.
    hv_ratio: f64,
    /// Adjacent clusters whose split tells less than this (nats per lifetime sample, see
    /// `cluster::merge_uninformative`) about their pages' log2 lifetimes share a stream (0: never
    /// merge).
    min_gain: f64,
    /// Recluster at the next check when a PC that joined the nearest centroid has moved more
    /// than this (log2 of its mean lifetime) since; 0 = wait for the period.
    join_drift: f64,
    /// Pages of a device unit: what a joined PC must have written before its drift counts.
    unit_pages: u64,
    /// Table entries that joined the nearest centroid since the last reclustering.
    joined: Vec<u32>,
    // Learned.
    /// Stream of the first centroid: 1, or 0 when one cluster is left and its lifetimes look
    /// like stream 0's.
    first_stream: u8,
    /// Log2 lifetimes of PC 0's pages (unknown context: always stream 0).
    pc0: Moments,
    /// Log2 of the death times (host pages since the start) of the aged state's pages, born
    /// before the trace: for data dying at a steady rate, distributed like lifetimes.
    aged: Moments,
    /// Host pages written by PC 0 (unknown context).
    pc0_writes: u64,
    /// Groups the last k-means formed, before merging.
    kmeans_groups: usize,
    index: FxHashMap<u64, u32>,
    pcs: Vec<PcEntry>,
    centroids: Vec<f64>,
    /// `high_variance`: which host streams currently send GC copies to a substream slot, and
    /// where each victim's copies go.
    sub: SubstreamSlots,
    next_free: u8,
    /// Table entry of the current request's PC (looked up once in `on_request`).
    req_entry: Option<usize>,
    reclusterings: u64,
    /// Logical time of the last reclustering (the first one may come early, see `tick`).
    last_recluster: u64,
    /// A newly known PC fits no current cluster and a stream is free: recluster at the next check.
    recluster_soon: bool,
    /// Table capacity in PCs (0: unbounded) and the CLOCK hand over `pcs`.
    max_pcs: usize,
    hand: usize,
    evictions: u64,
    /// `age` / `death`: the first class boundary (half a unit, in pages).
    class_base: f64,
    /// `hv_test=hazard`: pages GC must have copied out of a stream (in the count halved at each
    /// reclustering), if any, for it to get a substream slot.
    hv_min_copies: f64,
    /// `merge_weight=pages`: clusters are merged with each PC weighing by its pages written
    /// (else by its completed lifetimes).
    weigh_by_pages: bool,
    /// `age` / `death`: ratio between adjacent class boundaries.
    class_ratio: f64,
    /// `hv_test=hazard` (else `high_variance` goes by the CV of completed lifetimes): young
    /// and old death rates per host stream.
    hazard: Option<AgeHazard>,
}

impl PcStream {
    /// `full`: `pcstream` (substreams) rather than `pcstream-star`.
    pub fn new(ctx: &mut PolicyCtx, full: bool) -> Result<PcStream, SimError> {
        if ctx.host_streams < 2 {
            return Err(SimError::BadParam(
                "pcstream needs at least 2 host streams (stream 0 is for unknown PCs)".into(),
            ));
        }
        let n_min: u64 = ctx.param("n_min", 16)?;
        let period: u64 = ctx.param("period", 262_144)?;
        let algorithm: String = ctx.param("algorithm", "dp".to_string())?;
        let scale: String = ctx.param("scale", "log2".to_string())?;
        let stat_decay: bool = ctx.param("stat_decay", false)?;
        let assign: String = ctx.param("pc_assign", "lifetime".to_string())?;
        let first_come_writes: u64 = ctx.param("first_come_writes", 1000)?;
        let max_pcs: usize = ctx.param("max_pcs", 1usize << 20)?;
        let min_gain: f64 = ctx.param("min_gain", DEFAULT_MIN_GAIN)?;
        let join_drift: f64 = ctx.param("join_drift", DEFAULT_JOIN_DRIFT)?;
        if !(join_drift.is_finite() && join_drift >= 0.0) {
            return Err(SimError::BadParam(format!(
                "join_drift={join_drift}: use a number ≥ 0 (log2 of a lifetime ratio; 0 = never)"
            )));
        }
        if !(min_gain.is_finite() && min_gain >= 0.0) {
            return Err(SimError::BadParam(format!(
                "min_gain={min_gain}: use a number ≥ 0 (0 keeps every cluster)"
            )));
        }
        let (substreams, max_substreams, hv_min_n, hv_cv, hv_test, hv_ratio) = if full {
            let p: String = ctx.param("substream_policy", "high_variance".to_string())?;
            let s = match p.as_str() {
                "all" => Substreams::All,
                "high_variance" => Substreams::HighVariance,
                "age" => Substreams::Age,
                "death" => Substreams::Death,
                o => {
                    return Err(SimError::BadParam(format!(
                        "substream_policy={o}: use high_variance, all, age or death"
                    )))
                }
            };
            (
                s,
                ctx.param("substreams", 2usize)?,
                ctx.param("hv_min_n", 32u64)?,
                ctx.param("hv_cv", 1.0f64)?,
                ctx.param("hv_test", "hazard".to_string())?,
                ctx.param("hv_ratio", DEFAULT_HV_RATIO)?,
            )
        } else {
            (Substreams::None, 0, 0, 0.0, String::new(), 0.0)
        };
        let by_hazard = match hv_test.as_str() {
            "hazard" => true,
            "cv" | "" => false,
            o => return Err(SimError::BadParam(format!("hv_test={o}: use hazard or cv"))),
        };
        if !(hv_ratio.is_finite() && hv_ratio >= 0.0) {
            return Err(SimError::BadParam(format!(
                "hv_ratio={hv_ratio}: use a number ≥ 0"
            )));
        }
        let by_hazard = substreams == Substreams::HighVariance && by_hazard;
        let weigh_by_pages = match ctx.param("merge_weight", "pages".to_string())?.as_str() {
            "pages" => true,
            "lifetimes" => false,
            o => {
                return Err(SimError::BadParam(format!(
                    "merge_weight={o}: use pages or lifetimes"
                )))
            }
        };
        let hv_min_units: f64 = ctx.param("hv_min_units", DEFAULT_HV_MIN_UNITS)?;
        if !(hv_min_units.is_finite() && hv_min_units >= 0.0) {
            return Err(SimError::BadParam(format!(
                "hv_min_units={hv_min_units}: use a number of units ≥ 0"
            )));
        }
        let hv_min_copies = hv_min_units * ctx.unit_pages as f64;
        // `pcstream-star` has no substreams, hence no such parameter.
        let generations: usize = if full {
            ctx.param("hv_generations", 1usize)?
        } else {
            1
        };
        let hv_slots = substreams == Substreams::HighVariance;
        // Slots of G write points each: G must divide M, or a write point would be reserved
        // for GC and never written.
        if generations == 0 || hv_slots && max_substreams % generations != 0 {
            return Err(SimError::BadParam(format!(
                "hv_generations={generations}: use a divisor of substreams ({})",
                max_substreams.max(1)
            )));
        }
        let class_base: f64 = ctx.param("class_base", (ctx.unit_pages as f64 / 2.0).max(1.0))?;
        let class_ratio: f64 = ctx.param("class_ratio", CLASS_RATIO)?;
        if !(class_base.is_finite() && class_base >= 1.0) {
            return Err(SimError::BadParam(format!(
                "class_base={class_base}: use a number of pages ≥ 1"
            )));
        }
        if !(class_ratio.is_finite() && class_ratio > 1.0) {
            return Err(SimError::BadParam(format!(
                "class_ratio={class_ratio}: use a number > 1"
            )));
        }
        if n_min == 0 || period == 0 {
            return Err(SimError::BadParam("n_min and period must be ≥ 1".into()));
        }
        if substreams.policy_slots() && !(1..ctx.host_streams as usize).contains(&max_substreams) {
            return Err(SimError::BadParam(format!(
                "substreams={max_substreams}: use 1 ..= {} (host streams − 1)",
                ctx.host_streams - 1
            )));
        }
        let agglomerative = match algorithm.as_str() {
            "dp" => false,
            "agglomerative" => true,
            o => {
                return Err(SimError::BadParam(format!(
                    "algorithm={o}: use dp or agglomerative"
                )))
            }
        };
        let log2 = match scale.as_str() {
            "log2" => true,
            "raw" => false,
            o => return Err(SimError::BadParam(format!("scale={o}: use log2 or raw"))),
        };
        let first_come = match assign.as_str() {
            "lifetime" => None,
            "first_come" => Some(first_come_writes),
            o => {
                return Err(SimError::BadParam(format!(
                    "pc_assign={o}: use lifetime or first_come"
                )))
            }
        };
        Ok(PcStream {
            name: if full { "pcstream" } else { "pcstream-star" },
            host_streams: ctx.host_streams,
            n_min,
            period,
            agglomerative,
            log2,
            stat_decay,
            first_come,
            substreams,
            max_substreams,
            hv_min_n,
            hv_cv,
            hv_ratio,
            min_gain,
            join_drift,
            unit_pages: ctx.unit_pages as u64,
            joined: Vec::new(),
            first_stream: 1,
            pc0: Moments::default(),
            aged: Moments::default(),
            pc0_writes: 0,
            kmeans_groups: 0,
            index: FxHashMap::default(),
            pcs: Vec::new(),
            centroids: Vec::new(),
            sub: SubstreamSlots::new(
                ctx.host_streams as usize,
                if hv_slots { max_substreams } else { 0 },
                generations,
            ),
            next_free: 1,
            req_entry: None,
            reclusterings: 0,
            last_recluster: 0,
            recluster_soon: false,
            max_pcs,
            hand: 0,
            evictions: 0,
            class_base,
            hv_min_copies,
            weigh_by_pages,
            class_ratio,
            // A page older than four writes of the logical space counts as old even before its
            // stream's first GC (our choice: it bounds the state; GC ages beyond are rare).
            hazard: by_hazard
                .then(|| AgeHazard::new(ctx.host_streams as usize, 4 * ctx.logical_pages.max(1))),
        })
    }

    fn scaled(&self, e: &PcEntry) -> f64 {
        let m = e.mean().max(1.0);
        if self.log2 {
            m.log2()
        } else {
            m
        }
    }

    fn entry(&mut self, sig: u64) -> usize {
        if let Some(&i) = self.index.get(&sig) {
            self.pcs[i as usize].referenced = true;
            return i as usize;
        }
        let fresh = PcEntry {
            sig,
            n: 0,
            sum_l: 0,
            sum_l2: 0.0,
            sum_lg: 0.0,
            sum_lg2: 0.0,
            stream: 0,
            clustered: false,
            writes: 0,
            recent_pages: 0,
            joined_lg: f32::NAN,
            // Unreferenced until used again: one-off PCs are the first to go.
            referenced: false,
        };
        let i = if self.max_pcs == 0 || self.pcs.len() < self.max_pcs {
            self.pcs.push(fresh);
            self.pcs.len() - 1
        } else {
            // Table full: CLOCK (second chance) approximates LRU in O(1) amortised. The evicted
            // PC's pages still in flight give no lifetime feedback any more (its entry is gone).
            let i = loop {
                let h = self.hand;
                self.hand = (self.hand + 1) % self.pcs.len();
                if std::mem::take(&mut self.pcs[h].referenced) {
                    continue;
                }
                break h;
            };
            self.index.remove(&self.pcs[i].sig);
            self.pcs[i] = fresh;
            self.evictions += 1;
            i
        };
        self.index.insert(sig, i as u32);
        debug_assert_eq!(self.index.len(), self.pcs.len());
        i
    }

    /// Whether a PC that joined the nearest centroid since the last reclustering, and has written
    /// a unit's worth since, now has a mean lifetime more than `join_drift` (log2) away from
    /// the one it joined with. It joined on its first completed lifetimes, the short ones
    /// (right-censoring), and may belong elsewhere by now.
    fn drifted(&self) -> bool {
        // Only the PCs that joined since the last reclustering: a check need not visit the whole
        // table (up to `max_pcs` entries). An entry evicted and reused since has no join value.
        self.joined.iter().map(|&i| &self.pcs[i as usize]).any(|e| {
            e.clustered
                && e.recent_pages >= self.unit_pages
                && (e.mean().max(1.0).log2() - e.joined_lg as f64).abs() > self.join_drift
        })
    }

    /// True when streams are still unused and mean lifetime `m` is more than 2× off every
    /// centroid (a PC that deserves a stream of its own).
    fn fits_no_cluster(&self, m: f64) -> bool {
        // Streams are free when k-means found fewer groups than it may form, not when merging
        // left fewer: merged clusters stay merged, and reclustering for every new PC would cost
        // a full clustering per check.
        self.kmeans_groups < (self.host_streams - 1) as usize
            && self.centroids.iter().all(|&c| {
                let c = if self.log2 { c } else { c.max(1.0).log2() };
                (m.log2() - c).abs() > 1.0
            })
    }

    /// Whether PC `sig` has a table entry (tests).
    pub fn tracks(&self, sig: u64) -> bool {
        self.index.contains_key(&sig)
    }

    /// PCs evicted from the bounded table so far.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Stream currently assigned to PC `sig` (0 if unknown); for tests and reports.
    pub fn stream_of(&self, sig: u64) -> StreamId {
        self.index
            .get(&sig)
            .map_or(StreamId(0), |&i| StreamId(self.pcs[i as usize].stream))
    }

    /// Host streams whose GC copies currently go to a substream (`high_variance`).
    pub fn substreamed(&self) -> Vec<u8> {
        self.sub.substreamed()
    }

    pub fn reclusterings(&self) -> u64 {
        self.reclusterings
    }

    /// Re-cluster every PC with at least `n_min` lifetimes into streams 1..N−1.
    fn recluster(&mut self, now: u64) {
        self.reclusterings += 1;
        self.joined.clear();
        self.last_recluster = now;
        self.recluster_soon = false;
        if self.first_come.is_some() {
            return;
        }
        let k = (self.host_streams - 1) as usize;
        // Sort by (value, signature): the order, hence the result, is independent of the hash map.
        let mut known: Vec<(f64, u64, usize)> = self
            .pcs
            .iter()
            .enumerate()
            .filter(|(_, e)| e.n >= self.n_min)
            .map(|(i, e)| (self.scaled(e), e.sig, i))
            .collect();
        known.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let x: Vec<f64> = known.iter().map(|k| k.0).collect();
        let c = if self.agglomerative {
            agglomerative_1d(&x, k)
        } else {
            kmeans_1d(&x, k)
        };
        // Clusters whose pages' lifetimes overlap are not worth two streams: each stream holds an
        // open unit, space that GC then lacks, and mixing two such clusters costs nothing more
        // than the spread inside each already does.
        //
        // Each PC weighs by the pages it has written (`merge_weight=pages`, our choice), its
        // lifetimes' mean and spread kept: long-lived data completes few lifetimes while it is
        // written (right-censoring), so weighed by completed lifetimes a cold writer that has
        // written a fifth of the pages but seen one file die weighs next to nothing and joins the
        // hot stream until the next period (`gen mix hotcold-files`, seed 2: 2.02 against
        // `per-pc`'s 1.07; docs/POLICIES.md).
        let mut moments = vec![Moments::default(); c.centroids.len()];
        let mut samples = Moments::default();
        for (&(_, _, i), &g) in known.iter().zip(&c.labels) {
            let e = &self.pcs[i];
            let m = e.moments();
            samples = samples + m;
            let m = if self.weigh_by_pages {
                m.scaled(e.writes.max(e.n) as f64 / m.n)
            } else {
                m
            };
            moments[g as usize] = moments[g as usize] + m;
        }
        let merged = merge_uninformative(&moments, self.min_gain);
        let groups = merged.last().map_or(0, |&m| m as usize + 1);
        let mut sums = vec![(0.0f64, 0usize); groups];
        for e in &mut self.pcs {
            e.clustered = false;
            e.stream = 0;
        }
        // One group left: if its pages' lifetimes look like those of the data that stays in
        // stream 0 (PC 0 and the PCs still unknown), a stream of its own would only hold a
        // second unit open beside stream 0's; it shares stream 0, baseline's layout. Decided
        // from the first clustering on, before a second unit is ever opened. Stream 0's data
        // with no lifetime yet (e.g. written once) counts as unlike anything, except where
        // stream 0 holds only the device's aged state and the group's own early pages: then
        // the aged pages' times of death stand for their lifetimes, or, none having died, the
        // group shares stream 0 (one writer overwriting a device uniformly: a stream beside
        // stream 0 cost 2.8 % over baseline on `medium` prefilled, 3.9 % fresh).
        // Only a difference of mean lifetimes counts here (`mean_gain`): stream 0's data (the
        // file system's journal and metadata) narrower than the group but at its mean leave
        // stream 0's units no emptier when GC comes (fio's one PC on the bundled fio-pareto0.5
        // without discard: 2.5 % above baseline with the split, 3.3 % below without).
        // No PC-0 writes and no PC still unknown that has written: stream 0 holds only the aged
        // state and the pages the clustered PCs wrote before they were known.
        let only_aged = groups == 1
            && self.pc0_writes == 0
            && !self.pcs.iter().any(|e| e.n < self.n_min && e.writes > 0);
        let lone = groups == 1 && {
            let zero = self
                .pcs
                .iter()
                .filter(|e| e.n < self.n_min)
                .fold(self.pc0, |m, e| m + e.moments());
            let alike = |z: &Moments| mean_gain(z, &samples) / (z.n + samples.n) < self.min_gain;
            if zero.n > 0.0 || !only_aged {
                alike(&zero)
            } else if self.aged.n > 0.0 {
                // The aged pages' deaths are the only evidence of how the rest of them die.
                alike(&self.aged)
            } else {
                // No aged page has died: stream 0's data are the group's own early pages (or an
                // aged state that never dies, which baseline mixes in the same way).
                true
            }
        };
        let first = if lone { 0 } else { 1 };
        // The one group shares stream 0 with nothing but the aged state: stream 0 is its
        // stream, and may have its substream (elsewhere stream 0 mixes PC 0's data, the PCs
        // still unknown and the group: fio-pareto0.5 without discard, 4.3 % worse with one).
        let zero_is_group = lone && only_aged;
        self.first_stream = first;
        for (&(x, _, i), &g) in known.iter().zip(&c.labels) {
            let m = merged[g as usize];
            let e = &mut self.pcs[i];
            e.stream = m as u8 + first;
            e.clustered = true;
            e.joined_lg = f32::NAN;
            sums[m as usize].0 += x;
            sums[m as usize].1 += 1;
        }
        self.centroids = sums.iter().map(|&(s, n)| s / n as f64).collect();
        self.kmeans_groups = c.centroids.len();
        if self.substreams == Substreams::HighVariance {
            let mut pages = vec![0u64; self.host_streams as usize];
            let mut copied = vec![0u64; self.host_streams as usize];
            let by_hazard = self.hazard.is_some();
            if let Some(h) = &mut self.hazard {
                // Pages per stream since the last reclustering, of the streams whose pages
                // past the age GC erases their units at die `ratio` times slower than younger
                // ones (rates of the pages written to the stream so far).
                for e in &self.pcs {
                    pages[e.stream as usize] += e.recent_pages;
                }
                for (s, p) in pages.iter_mut().enumerate() {
                    let r = h.rates(s);
                    let slower = r.young_deaths >= self.hv_min_n as f64
                        && r.ratio.is_some_and(|x| x > self.hv_ratio);
                    // GC has copied few pages out of the stream, but some: its substream unit
                    // would stay open, mostly empty, for more than a period, space GC lacks
                    // (sqlite-tpcc-wal without discard: the WAL's stream, 6,710 copies against
                    // the database stream's 246,731, took the second slot, 3.6 % above
                    // `pcstream-star`). None yet costs nothing until copies come.
                    let few = r.copied > 0.0 && r.copied < self.hv_min_copies;
                    if (s == 0 && !zero_is_group) || !slower || few {
                        *p = 0;
                    }
                    copied[s] = r.copied as u64;
                }
                h.decay();
            } else {
                // Pages of high-variance PCs per stream since the last reclustering.
                for e in &self.pcs {
                    if (e.stream > 0 || zero_is_group)
                        && e.clustered
                        && e.n >= self.hv_min_n
                        && e.cv() > self.hv_cv
                    {
                        pages[e.stream as usize] += e.recent_pages;
                    }
                }
            }
            let mut ranked: Vec<usize> = (0..pages.len()).filter(|&s| pages[s] > 0).collect();
            ranked.sort_by_key(|&s| (std::cmp::Reverse((copied[s], pages[s])), s));
            let slots = self.sub.slots();
            ranked.truncate(slots);
            // A slot once used holds an open unit whether or not a stream sends it survivors:
            // a stream that no longer qualifies keeps its slot until a qualifying stream needs
            // it, rather than leave that unit open and idle (rocksdb-fr without discard: a
            // stream substreamed for one period left its slot's unit idle for the rest of the
            // run, 2.7 % above `pcstream-star`; kept, 0.4 %). `hv_test=cv` stays the rule it was.
            for s in 0..self.host_streams as usize {
                if by_hazard && ranked.len() < slots && self.sub.has(s) && !ranked.contains(&s) {
                    ranked.push(s);
                }
            }
            self.sub.assign(&ranked);
        }
        for e in &mut self.pcs {
            e.recent_pages = 0;
            if self.stat_decay {
                e.n /= 2;
                e.sum_l /= 2;
                e.sum_l2 /= 2.0;
                e.sum_lg /= 2.0;
                e.sum_lg2 /= 2.0;
            }
        }
        if self.stat_decay {
            self.pc0 = self.pc0.scaled(0.5);
            self.aged = self.aged.scaled(0.5);
        }
    }

    /// Stream of one page written by table entry `i` (`None`: PC 0).
    fn decide(&mut self, i: Option<usize>) -> StreamId {
        let Some(i) = i else {
            self.pc0_writes += 1;
            return StreamId(0);
        };
        let e = &mut self.pcs[i];
        e.writes += 1;
        e.recent_pages += 1;
        if let Some(threshold) = self.first_come {
            if e.stream == 0 && e.writes > threshold && (self.next_free as u32) < self.host_streams
            {
                e.stream = self.next_free;
                self.next_free += 1;
            }
            return StreamId(e.stream);
        }
        if e.n < self.n_min {
            return StreamId(0);
        }
        if !e.clustered {
            // Known since the last reclustering: join the nearest centroid, unless streams are
            // still unused and its mean lifetime is more than 2× off every centroid: then it
            // waits in stream 0 for a reclustering at the next check (it would otherwise share a
            // stream with data of another lifetime until the next period).
            let m = e.mean().max(1.0);
            let x = if self.log2 { m.log2() } else { m };
            if self.fits_no_cluster(m) {
                self.recluster_soon = true;
                return StreamId(0);
            }
            if let Some(g) = nearest(&self.centroids, x) {
                let e = &mut self.pcs[i];
                e.stream = g as u8 + self.first_stream;
                e.clustered = true;
                e.joined_lg = m.log2() as f32;
                self.joined.push(i as u32);
            }
        }
        StreamId(self.pcs[i].stream)
    }
}

impl Placement for PcStream {
    fn name(&self) -> &'static str {
        self.name
    }
    fn sees(&self) -> Attrs {
        let a = Attrs::PC.union(Attrs::LIFETIME);
        match self.substreams {
            Substreams::HighVariance | Substreams::Age => a.union(Attrs::GC_INFO),
            Substreams::Death => a.union(Attrs::GC_INFO).union(Attrs::DEATH),
            Substreams::None | Substreams::All => a,
        }
    }
    fn gc_mode(&self) -> GcMode {
        match self.substreams {
            Substreams::None => GcMode::SameStream,
            Substreams::All => GcMode::Substream,
            Substreams::HighVariance | Substreams::Age | Substreams::Death => GcMode::Policy,
        }
    }
    fn internal_write_points(&self) -> u32 {
        if self.substreams.policy_slots() {
            self.max_substreams as u32
        } else {
            0
        }
    }
    fn gc_fanout(&self) -> Option<u32> {
        // `high_variance`: a victim's survivors all go to one place, its stream's substream slot
        // or back; `age` and `death` spread them over every class.
        match self.substreams {
            Substreams::Age | Substreams::Death => Some(self.max_substreams as u32),
            _ => Some(1),
        }
    }
    fn on_request(&mut self, req: &RequestInfo, _now: LogicalTime) {
        // One table lookup per request: every page of a request has the same PC.
        self.req_entry = (req.pc.0 != 0).then(|| self.entry(req.pc.0));
    }
    fn on_write(&mut self, _w: &WriteInfo, now: LogicalTime) -> StreamId {
        let s = self.decide(self.req_entry);
        debug_assert!((s.0 as u32) < self.host_streams);
        if let Some(h) = &mut self.hazard {
            h.write(s.0 as usize, now.0);
        }
        s
    }
    fn on_segment_reclaimed(&mut self, r: &Reclaimed, now: LogicalTime) {
        if let Some(h) = &mut self.hazard {
            let hs = self.host_streams as usize;
            if (r.wp as usize) < hs {
                h.reclaimed(r.wp as usize, r.created.0, r.valid_copied, now.0);
            } else if let Some(s) = self.sub.owner(r.wp) {
                h.copied_from_substream(s, r.valid_copied);
            }
        }
    }
    fn on_invalidate(&mut self, inv: &Invalidation) {
        if let (Some(h), Some(t)) = (&mut self.hazard, inv.t_write) {
            h.death(inv.stream.0 as usize, t.0, inv.now.0);
        }
        if inv.t_write.is_none() {
            let lg = (inv.now.0.max(1) as f64).log2();
            self.aged = self.aged
                + Moments {
                    n: 1.0,
                    s1: lg,
                    s2: lg * lg,
                };
        }
        let (Some(l), sig) = (inv.lifetime(), inv.pc.0) else {
            return;
        };
        let lg = (l.max(1) as f64).log2();
        if sig == 0 {
            self.pc0 = self.pc0
                + Moments {
                    n: 1.0,
                    s1: lg,
                    s2: lg * lg,
                };
            return;
        }
        if let Some(&i) = self.index.get(&sig) {
            let e = &mut self.pcs[i as usize];
            e.n += 1;
            e.sum_l = e.sum_l.saturating_add(l);
            e.sum_l2 += (l as f64) * (l as f64);
            e.sum_lg += lg;
            e.sum_lg2 += lg * lg;
            if e.n == self.n_min && !e.clustered && self.first_come.is_none() {
                let m = e.mean().max(1.0);
                if self.fits_no_cluster(m) {
                    self.recluster_soon = true;
                }
            }
        }
    }
    fn gc_destination(&mut self, p: &PageInfo, now: LogicalTime) -> StreamId {
        let hs = self.host_streams as u8;
        let last = self.max_substreams as u32 - 1;
        // Data of the aged state (no host write time) and data that never dies: the oldest class.
        let span = match self.substreams {
            Substreams::Age => p.t_write.map(|t| now.0.saturating_sub(t.0)),
            Substreams::Death => (p.death != NEVER).then(|| p.death.saturating_sub(now.0)),
            _ => return self.sub.destination(p.victim_wp),
        };
        let c = span.map_or(last, |r| {
            geometric_class(r, self.class_base, self.class_ratio, last)
        });
        StreamId(hs + c as u8)
    }
    fn gc_victim_destination(&mut self, victim_wp: u8) -> Option<StreamId> {
        (self.substreams == Substreams::HighVariance).then(|| self.sub.destination(victim_wp))
    }
    fn tick_period(&self) -> Option<u64> {
        Some((self.period / 16).max(1))
    }
    fn tick(&mut self, now: LogicalTime) {
        // Every `period` pages; early when a PC fits no cluster while streams are free or a PC
        // that joined a cluster has drifted from it (`join_drift`), and before the first
        // clustering as soon as some PC has `n_min` lifetimes, so a run shorter than a few
        // periods is not spent all in stream 0.
        let due = now.0 >= self.last_recluster + self.period
            || self.recluster_soon
            || (self.centroids.is_empty() && self.pcs.iter().any(|e| e.n >= self.n_min))
            || (self.join_drift > 0.0 && self.first_come.is_none() && self.drifted());
        if due {
            self.recluster(now.0);
        }
    }
    fn save_state(&self) -> Option<String> {
        let mut pcs = self.pcs.clone();
        pcs.sort_by_key(|e| e.sig);
        let t = SavedTable {
            format: 1,
            policy: self.name.to_string(),
            centroids: self.centroids.clone(),
            pcs,
        };
        Some(serde_json::to_string(&t).expect("the PC table serialises"))
    }
    fn load_state(&mut self, state: &str) -> Result<(), SimError> {
        let t: SavedTable = serde_json::from_str(state)
            .map_err(|e| SimError::BadParam(format!("PC-stream table: {e}")))?;
        if t.format != 1 {
            return Err(SimError::BadParam(format!(
                "PC-stream table: format {} (this build reads 1)",
                t.format
            )));
        }
        self.index.clear();
        self.pcs.clear();
        for mut e in t.pcs {
            if (e.stream as u32) >= self.host_streams {
                e.stream = 0;
            }
            let i = self.entry(e.sig);
            let writes = self.pcs[i].writes;
            self.pcs[i] = PcEntry { writes, ..e };
        }
        self.centroids = t.centroids;
        // A loaded table is re-clustered at once (the device may have another stream count).
        self.recluster(0);
        self.reclusterings = 0;
        Ok(())
    }
    fn state_bytes(&self) -> usize {
        // Entries + hash index slots (key, value) + centroids.
        self.pcs.capacity() * std::mem::size_of::<PcEntry>()
            + self.index.capacity() * (8 + 4)
            + self.centroids.len() * 8
            + self.joined.capacity() * 4
            + self.sub.state_bytes()
            + self.hazard.as_ref().map_or(0, AgeHazard::state_bytes)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_table_entry_is_the_72_bytes_the_docs_give() {
        // docs/POLICIES.md and the module's "State" line quote 72 B per PC.
        assert_eq!(std::mem::size_of::<super::PcEntry>(), 72);
    }
}
