//! # pcstream-star / pcstream — program-context streams (two registry names)
//!
//! What it does: learns each program context's (PC's) mean data lifetime from overwrite/TRIM
//! feedback; stream 0 holds PC 0 and the PCs with fewer than `n_min` lifetimes. With
//! `merge=fit_first`, while the other PCs number at most N−1, each has a host stream of its own
//! and keeps it; when they outnumber the streams, or always with `merge=min_gain` (the
//! default), it clusters them by log2 lifetime into streams 1..N−1 every `period` host pages
//! (earlier when a new PC fits no cluster or a joined PC drifts). With `merge=cost`, as with
//! `fit_first`, but groups adjacent in lifetime share a stream where the placement cost model
//! (`placement::open_cost`) says a stream does not pay. Adjacent clusters whose split
//! says little share a stream; with `min_gain`, a lone cluster like stream 0's data shares
//! stream 0. `pcstream-star` leaves GC copies in their stream; `pcstream` adds substreams for GC
//! survivors (`substream_policy`: `high_variance`, `all`, `age`, `death`). The rules, their
//! reasons and their measurements: docs/POLICIES.md ("How `pcstream` places writes" and the sections it points to).
//! Source: Kim et al., "PCStream: Automatic Stream Allocation Using Program Contexts",
//! HotStorage'18, and "Fully Automatic Stream Management for Multi-Streamed SSDs Using Program
//! Contexts", FAST'19.
//! What it sees: PC, lifetime feedback (old version's write time, PC and host stream);
//! `high_variance` and `age` also GC victim information, `death` also death times.
//! State: per PC one `PcEntry` (72 B) + its hash index slot; K centroids. The per-page write
//! time/PC the feedback needs are the simulator's page metadata (a 4-byte write time in the page
//! record and a 4-byte PC index per physical page: docs/PERFORMANCE.md).
//! Parameters: `params.rs` (defaults and checks), listed in docs/POLICIES.md.
//! Deviations: lifetime statistics are cumulative (unless `stat_decay`); never-invalidated data
//! contribute no lifetime (right-censoring, as in the paper), but their pages count in the
//! weight of their PC's cluster when clusters are merged; PC 0 (unknown context) always goes to
//! stream 0.
//!
//! Files: `params.rs` (parameters), `fit.rs` (a stream per PC while they fit), `cost.rs`
//! (`merge=cost`), `table.rs` (PC
//! statistics, the bounded and persistent table), `recluster.rs` (the clustering),
//! `substreams.rs` (the substream modes), `substream_slots.rs` (slots and where survivors go),
//! `hazard.rs` (death rates of young and old pages, `hv_test=hazard`).

mod cost;
mod fit;
mod hazard;
mod params;
mod recluster;
mod substream_slots;
mod substreams;
mod table;

use cost::GcSeen;
use hazard::AgeHazard;
use params::{Params, CHECKS_PER_PERIOD};
use substream_slots::SubstreamSlots;
use substreams::Substreams;
use table::{PcEntry, PcTable, SavedTable, TABLE_FORMAT};

use super::cluster::{nearest, Moments};
use super::{
    Attrs, GcMode, Invalidation, PageInfo, Placement, PolicyCtx, Reclaimed, RequestInfo, WriteInfo,
};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

/// A newly known PC whose mean lifetime is more than this far (log2: 2×) from every centroid
/// deserves a stream of its own while streams are free.
const NEW_PC_GAP_LOG2: f64 = 1.0;

/// `hv_test=hazard`: a page older than this many writes of the logical space counts as old
/// even before its stream's first GC (our choice: it bounds the state; GC ages beyond are rare).
const MAX_YOUNG_SPACE_WRITES: u64 = 4;

pub struct PcStream {
    /// Fixed at construction.
    p: Params,
    // Learned.
    /// Table entries that joined the nearest centroid since the last reclustering.
    joined: Vec<u32>,
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
    table: PcTable,
    centroids: Vec<f64>,
    /// `high_variance`: which host streams currently send GC copies to a substream slot, and
    /// where each victim's copies go.
    sub: SubstreamSlots,
    /// `merge=fit_first`: the last reclustering gave each known PC a stream of its own. Not
    /// before the first: the first PC known waits in stream 0 for it, as under `min_gain`.
    own_streams: bool,
    /// PCs with `n_min` lifetimes at the last reclustering.
    known_last: usize,
    /// While `own_streams`: which host streams a PC holds (stream 0 always counts as held).
    owned: Vec<bool>,
    /// `pc_assign=first_come`: the next stream a PC takes.
    next_free: u8,
    /// Table entry of the current request's PC (looked up once in `on_request`).
    req_entry: Option<usize>,
    reclusterings: u64,
    /// Logical time of the last reclustering (the first one may come early, see `tick`).
    last_recluster: u64,
    /// A newly known PC fits no current cluster and a stream is free: recluster at the next check.
    recluster_soon: bool,
    /// `hv_test=hazard` (else `high_variance` goes by the CV of completed lifetimes): young
    /// and old death rates per host stream.
    hazard: Option<AgeHazard>,
    /// `merge=cost`: what GC is seen doing (copies per host page, age of the units it reclaims).
    gc_seen: GcSeen,
}

impl PcStream {
    /// `full`: `pcstream` (substreams) rather than `pcstream-star`.
    pub fn new(ctx: &mut PolicyCtx, full: bool) -> Result<PcStream, SimError> {
        let p = Params::parse(ctx, full)?;
        let streams = ctx.host_streams as usize;
        let hv_slots = if p.substreams == Substreams::HighVariance {
            p.max_substreams
        } else {
            0
        };
        let max_young = MAX_YOUNG_SPACE_WRITES * ctx.logical_pages.max(1);
        Ok(PcStream {
            joined: Vec::new(),
            first_stream: 1,
            pc0: Moments::default(),
            aged: Moments::default(),
            pc0_writes: 0,
            kmeans_groups: 0,
            table: PcTable::new(p.max_pcs),
            centroids: Vec::new(),
            sub: SubstreamSlots::new(streams, hv_slots, p.generations),
            own_streams: false,
            known_last: 0,
            owned: (0..streams).map(|s| s == 0).collect(),
            next_free: 1,
            req_entry: None,
            reclusterings: 0,
            last_recluster: 0,
            recluster_soon: false,
            hazard: p.by_hazard.then(|| AgeHazard::new(streams, max_young)),
            gc_seen: GcSeen::default(),
            p,
        })
    }

    /// A PC's mean lifetime on the clustering's scale.
    fn scaled(&self, e: &PcEntry) -> f64 {
        let m = e.mean().max(1.0);
        if self.p.log2 {
            m.log2()
        } else {
            m
        }
    }

    /// Whether a PC that joined the nearest centroid since the last reclustering, and has written
    /// a unit's worth since, now has a mean lifetime more than `join_drift` (log2) away from
    /// the one it joined with. It joined on its first completed lifetimes, the short ones
    /// (right-censoring), and may belong elsewhere by now.
    fn drifted(&self) -> bool {
        // Only the PCs that joined since the last reclustering: a check need not visit the whole
        // table (up to `max_pcs` entries). An entry evicted and reused since has no join value.
        self.joined
            .iter()
            .map(|&i| &self.table.pcs[i as usize])
            .any(|e| {
                e.clustered
                    && e.recent_pages >= self.p.unit_pages
                    && (e.mean().max(1.0).log2() - e.joined_lg as f64).abs() > self.p.join_drift
            })
    }

    /// True when streams are still unused and mean lifetime `m` is more than 2× off every
    /// centroid (a PC that deserves a stream of its own).
    fn fits_no_cluster(&self, m: f64) -> bool {
        // Streams are free when k-means found fewer groups than it may form, not when merging
        // left fewer: merged clusters stay merged, and reclustering for every new PC would cost
        // a full clustering per check.
        self.kmeans_groups < (self.p.host_streams - 1) as usize
            && self.centroids.iter().all(|&c| {
                let c = if self.p.log2 { c } else { c.max(1.0).log2() };
                (m.log2() - c).abs() > NEW_PC_GAP_LOG2
            })
    }

    /// Whether PC `sig` has a table entry (tests).
    pub fn tracks(&self, sig: u64) -> bool {
        self.table.get(sig).is_some()
    }

    /// PCs evicted from the bounded table so far.
    pub fn evictions(&self) -> u64 {
        self.table.evictions()
    }

    /// Stream currently assigned to PC `sig` (0 if unknown); for tests and reports.
    pub fn stream_of(&self, sig: u64) -> StreamId {
        self.table
            .get(sig)
            .map_or(StreamId(0), |i| StreamId(self.table.pcs[i].stream))
    }

    /// Host streams whose GC copies currently go to a substream (`high_variance`).
    pub fn substreamed(&self) -> Vec<u8> {
        self.sub.substreamed()
    }

    pub fn reclusterings(&self) -> u64 {
        self.reclusterings
    }

    /// Stream of one page written by table entry `i` (`None`: PC 0).
    fn decide(&mut self, i: Option<usize>) -> StreamId {
        let Some(i) = i else {
            self.pc0_writes += 1;
            return StreamId(0);
        };
        let e = &mut self.table.pcs[i];
        e.writes += 1;
        e.recent_pages += 1;
        if let Some(threshold) = self.p.first_come {
            if e.stream == 0
                && e.writes > threshold
                && (self.next_free as u32) < self.p.host_streams
            {
                e.stream = self.next_free;
                self.next_free += 1;
            }
            return StreamId(e.stream);
        }
        if e.n < self.p.n_min {
            return StreamId(0);
        }
        if !e.clustered {
            if self.own_streams {
                self.take_free_stream(i);
            } else {
                self.join_nearest(i);
            }
        }
        StreamId(self.table.pcs[i].stream)
    }

    /// Table entry `i`, known since the last reclustering, joins the nearest centroid, unless
    /// streams are still unused and its mean lifetime is more than 2× off every centroid: then
    /// it waits in stream 0 for a reclustering at the next check (it would otherwise share a
    /// stream with data of another lifetime until the next period).
    fn join_nearest(&mut self, i: usize) {
        let m = self.table.pcs[i].mean().max(1.0);
        let x = if self.p.log2 { m.log2() } else { m };
        if self.fits_no_cluster(m) {
            self.recluster_soon = true;
            return;
        }
        if let Some(g) = nearest(&self.centroids, x) {
            let e = &mut self.table.pcs[i];
            e.stream = g as u8 + self.first_stream;
            e.clustered = true;
            e.joined_lg = m.log2() as f32;
            self.joined.push(i as u32);
        }
    }

    /// Lifetime feedback of one dead page version: its PC's statistics, or PC 0's.
    fn learn_lifetime(&mut self, l: u64, sig: u64) {
        let lg = (l.max(1) as f64).log2();
        if sig == 0 {
            self.pc0 = self.pc0 + Moments::one(lg);
            return;
        }
        if let Some(i) = self.table.get(sig) {
            let e = &mut self.table.pcs[i];
            e.add_lifetime(l, lg);
            // With a stream each, a newly known PC takes a free one at its next write. Else
            // it reclusters soon if it is far from every cluster while streams are free, or if
            // with it the known PCs would fit (`fit_first`: one PC shared stream 0 until now).
            if e.n == self.p.n_min
                && !e.clustered
                && self.p.first_come.is_none()
                && !self.own_streams
            {
                let m = e.mean().max(1.0);
                if self.fits_no_cluster(m) || self.fits(self.known_last + 1) {
                    self.recluster_soon = true;
                }
            }
        }
    }
}

impl Placement for PcStream {
    fn name(&self) -> &'static str {
        self.p.name
    }
    fn sees(&self) -> Attrs {
        Attrs::PC
            .union(Attrs::LIFETIME)
            .union(self.p.substreams.sees())
    }
    fn gc_mode(&self) -> GcMode {
        self.p.substreams.gc_mode()
    }
    fn internal_write_points(&self) -> u32 {
        if self.p.substreams.policy_slots() {
            self.p.max_substreams as u32
        } else {
            0
        }
    }
    fn gc_fanout(&self) -> Option<u32> {
        // `high_variance`: a victim's survivors all go to one place, its stream's substream slot
        // or back; `age` and `death` spread them over every class.
        match self.p.substreams {
            Substreams::Age | Substreams::Death => Some(self.p.max_substreams as u32),
            _ => Some(1),
        }
    }
    fn on_request(&mut self, req: &RequestInfo, _now: LogicalTime) {
        // One table lookup per request: every page of a request has the same PC.
        self.req_entry = (req.pc.0 != 0).then(|| self.table.entry(req.pc.0));
    }
    fn on_write(&mut self, _w: &WriteInfo, now: LogicalTime) -> StreamId {
        let s = self.decide(self.req_entry);
        self.gc_seen.host_page();
        debug_assert!((s.0 as u32) < self.p.host_streams);
        if let Some(h) = &mut self.hazard {
            h.write(s.0 as usize, now.0);
        }
        s
    }
    fn on_segment_reclaimed(&mut self, r: &Reclaimed, now: LogicalTime) {
        self.gc_seen
            .reclaimed(r.valid_copied, now.0.saturating_sub(r.created.0));
        if let Some(h) = &mut self.hazard {
            let hs = self.p.host_streams as usize;
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
            self.aged = self.aged + Moments::one((inv.now.0.max(1) as f64).log2());
        }
        if let Some(l) = inv.lifetime() {
            self.learn_lifetime(l, inv.pc.0);
        }
    }
    fn gc_destination(&mut self, p: &PageInfo, now: LogicalTime) -> StreamId {
        self.gc_copy_destination(p, now)
    }
    fn gc_victim_destination(&mut self, victim_wp: u8) -> Option<StreamId> {
        (self.p.substreams == Substreams::HighVariance).then(|| self.sub.destination(victim_wp))
    }
    fn tick_period(&self) -> Option<u64> {
        Some((self.p.period / CHECKS_PER_PERIOD).max(1))
    }
    fn tick(&mut self, now: LogicalTime) {
        // Every `period` pages; early when a PC fits no cluster while streams are free or a PC
        // that joined a cluster has drifted from it (`join_drift`), and before the first
        // clustering as soon as some PC has `n_min` lifetimes, so a run shorter than a few
        // periods is not spent all in stream 0.
        let due = now.0 >= self.last_recluster + self.p.period
            || self.recluster_soon
            || (self.centroids.is_empty() && self.table.pcs.iter().any(|e| e.n >= self.p.n_min))
            || (self.p.join_drift > 0.0 && self.p.first_come.is_none() && self.drifted());
        if due {
            self.recluster(now.0);
        }
    }
    fn save_state(&self) -> Option<String> {
        let mut pcs = self.table.pcs.clone();
        pcs.sort_by_key(|e| e.sig);
        let t = SavedTable {
            format: TABLE_FORMAT,
            policy: self.p.name.to_string(),
            centroids: self.centroids.clone(),
            pcs,
        };
        Some(serde_json::to_string(&t).expect("the PC table serialises"))
    }
    fn load_state(&mut self, state: &str) -> Result<(), SimError> {
        let t: SavedTable = serde_json::from_str(state)
            .map_err(|e| SimError::BadParam(format!("PC-stream table: {e}")))?;
        if t.format != TABLE_FORMAT {
            return Err(SimError::BadParam(format!(
                "PC-stream table: format {} (this build reads {TABLE_FORMAT})",
                t.format
            )));
        }
        if !params::TABLE_POLICIES.contains(&t.policy.as_str()) {
            return Err(SimError::BadParam(format!(
                "PC-stream table: policy '{}' writes no PC table (only {} do)",
                t.policy,
                params::TABLE_POLICIES.join(" and ")
            )));
        }
        self.table.clear();
        for mut e in t.pcs {
            if (e.stream as u32) >= self.p.host_streams {
                e.stream = 0;
            }
            // `merge=fit_first` keeps the saved streams where the PCs still fit.
            e.clustered = e.stream != 0;
            let i = self.table.entry(e.sig);
            let writes = self.table.pcs[i].writes;
            self.table.pcs[i] = PcEntry { writes, ..e };
        }
        self.centroids = t.centroids;
        // A loaded table is re-clustered at once (the device may have another stream count).
        self.recluster(0);
        self.reclusterings = 0;
        Ok(())
    }
    fn state_bytes(&self) -> usize {
        // Entries + hash index slots + centroids.
        self.table.state_bytes()
            + self.centroids.len() * std::mem::size_of::<f64>()
            + self.joined.capacity() * std::mem::size_of::<u32>()
            + self.sub.state_bytes()
            + self.hazard.as_ref().map_or(0, AgeHazard::state_bytes)
    }
}
