//! The `lsm` generator: a leveled LSM-tree key-value store (RocksDB-style), optionally next to a
//! build-like writer, one program context (PC) per activity.
//!
//! # The store
//!
//! Every record is one page (4 KiB values), so an SST of `sst_pages` pages holds that many keys.
//! The key space of K keys is sized to the device (below); puts draw keys from Zipf(`skew`) over
//! the key space (0 = uniform), hot ranks spread over it as in the `zipf` kind.
//!
//! - **Load** (PC `LOAD`): the store starts with every key once, written as sorted SSTs of the
//!   last level (a bulk load), before anything else.
//! - **WAL** (PC `WAL`): each put appends its page to the write-ahead log of the current
//!   memtable, a file in one half of a WAL region of two memtables.
//! - **Flush** (PC `FLUSH`): a memtable of `sst_pages` puts is written as one L0 SST of its
//!   distinct keys; its WAL file is then TRIMmed.
//! - **Compaction** (PC `COMPACTION`, one call path for every level, as in RocksDB): when L0
//!   holds `L0_TRIGGER` files, all of them and the L1 files they overlap are merged into L1; while
//!   a level Li (1 ≤ i < n) exceeds its target K / ratio^(n−i) (at least one SST), its next file
//!   in key order (a round-robin cursor) is merged with the files of Li+1 it overlaps, or moved
//!   down without I/O when it overlaps none (a trivial move). Outputs are split into SSTs of
//!   `sst_pages` keys; the input files are TRIMmed (deleted) once the outputs are written.
//!
//! Flushes and compactions are background jobs: their requests are queued and spread evenly
//! over the puts until the next flush; up to `BG_JOBS` jobs run at once, their writes taking
//! turns request by request, and a job's trims wait until every older job is done. A flush
//! waits for the jobs to drain (a write stall), so each file slot is trimmed before it is
//! reused.
//!
//! # The build writer (`build_share` > 0)
//!
//! A build tree in its own region (a tenth of the footprint): object files of `OBJ_PAGES` pages
//! (PC `CC`), each compiled through a temporary file (PC `TMP`, trimmed once the object is
//! written), and a binary (PC `LD`) linked at the end of each build into the other of two slots,
//! the previous one then deleted. The first build compiles every object; later builds recompile
//! a hot tenth of the objects with probability `HOT_RECOMPILE` and the others with
//! `COLD_RECOMPILE`. It writes `build_share` of the host pages after the load (deficit
//! round-robin on pages against the store).
//!
//! # Layout and sizing
//!
//! Within the footprint: the WAL region (2 × `sst_pages`), the build region, then SST slots of
//! `sst_pages` pages: a new SST takes the next free slot after the one taken last (`sst_alloc`
//! `next`, the default) or the lowest free one (`lowest`); see [`SstAlloc`]. K is chosen so
//! that the fully compacted store (K pages in the last level plus the upper levels' targets)
//! takes `LIVE_SHARE` of the SST slots left after a reserve for L0, rounding and the outputs of
//! one cascade of compactions; too small a footprint for the levels, ratio and SST size is an
//! error.
//!
//! `writes` is the number of host pages written (load included); rows carry pid 1 (store) or 2
//! (build), a file class per activity and the dense id of the file written. With `read_ratio`,
//! one-page reads (pid 1, no PC) follow the writes, uniform over the footprint.

use std::collections::{BTreeSet, VecDeque};

use pcstream_core::request::{Op, Request};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};

use super::{gen_err, spread, GenParams, Reads, TS_STEP_NS};
use crate::blocktrace::TraceMeta;
use crate::error::TraceError;

/// Base of the `lsm` PC signatures: one per activity, `LSM_PC_BASE + activity`.
pub const LSM_PC_BASE: u64 = 0x15e0_0000_0000;

/// Which free SST slot a new SST takes (`--sst-alloc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SstAlloc {
    /// The first free slot after the one taken last, wrapping at the end: the slots are used
    /// in turn, as a file system that moves its allocation goal on does with large files
    /// (ext4's stream goal), so where a file lands says little about how long it lives.
    Next,
    /// The lowest free slot: slots freed by short-lived files are taken again at once and the
    /// long-lived files keep the others, so the LBA tells lifetimes apart (what LBA-hotness
    /// schemes such as AutoStream feed on; docs/POLICIES.md).
    Lowest,
}

impl std::str::FromStr for SstAlloc {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "next" => Ok(SstAlloc::Next),
            "lowest" => Ok(SstAlloc::Lowest),
            o => Err(format!("sst_alloc={o}: use next or lowest")),
        }
    }
}

impl std::fmt::Display for SstAlloc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SstAlloc::Next => "next",
            SstAlloc::Lowest => "lowest",
        })
    }
}

/// The activities, each with its PC (`LSM_PC_BASE + value`) and file class (the value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Load = 1,
    Wal = 2,
    Flush = 3,
    Compaction = 4,
    Cc = 5,
    Tmp = 6,
    Ld = 7,
}

const ACTIVITIES: [(Activity, &str); 7] = [
    (Activity::Load, "load"),
    (Activity::Wal, "wal"),
    (Activity::Flush, "flush"),
    (Activity::Compaction, "compaction"),
    (Activity::Cc, "cc"),
    (Activity::Tmp, "tmp"),
    (Activity::Ld, "ld"),
];

impl Activity {
    pub fn pc(self) -> u64 {
        LSM_PC_BASE + self as u64
    }
}

/// Background jobs that run at once (RocksDB's `max_background_jobs`): their writes interleave
/// request by request, so a device unit holds the outputs of several levels, as on a real store.
const BG_JOBS: usize = 4;
/// Pages per SST write request (SSTs are written in large buffered chunks).
const SST_REQ_PAGES: u32 = 64;
/// L0 files that start an L0→L1 compaction (RocksDB's `level0_file_num_compaction_trigger`).
const L0_TRIGGER: usize = 4;
/// Share of the SST slots (after the reserve) that the fully compacted store takes: the rest
/// is the room a real store keeps for upper levels overshooting their targets.
const LIVE_SHARE: f64 = 0.85;
/// Share of the footprint given to the build writer's region when it writes.
const BUILD_REGION_SHARE: f64 = 0.1;
/// Pages of an object file and of a compiler temporary; temporaries rotate over a few slots (a
/// compiler's temporary directory).
const OBJ_PAGES: u32 = 16;
const TMP_PAGES: u32 = 8;
const TMP_SLOTS: u64 = 4;
/// Share of the objects that are hot, and how likely a build recompiles a hot or a cold one.
const HOT_OBJECTS: f64 = 0.1;
const HOT_RECOMPILE: f64 = 0.9;
const COLD_RECOMPILE: f64 = 0.1;
/// A binary is a quarter of the objects' pages, at most 256 MiB (so one request trims it).
const MAX_BIN_PAGES: u64 = 1 << 16;

/// Largest key space the generator takes (keys are `u32`).
const MAX_KEYS: u64 = u32::MAX as u64;

/// Check the `lsm` parameters against a footprint of `n` pages; returns the layout.
pub(crate) fn plan(p: &GenParams, n: u64) -> Result<Plan, TraceError> {
    let bad = |s: String| Err(gen_err(format!("lsm: {s}")));
    if !(1..=16).contains(&p.levels) {
        return bad(format!("levels={} must be in 1 ..= 16", p.levels));
    }
    if !(2..=1000).contains(&p.ratio) {
        return bad(format!("ratio={} must be in 2 ..= 1000", p.ratio));
    }
    if !(p.skew >= 0.0 && p.skew.is_finite()) {
        return bad(format!("skew={} must be ≥ 0 (0 = uniform keys)", p.skew));
    }
    if !(0.0..1.0).contains(&p.build_share) {
        return bad(format!(
            "build_share={} must be in [0, 1) (the build writer's share of the pages)",
            p.build_share
        ));
    }
    if p.sst_pages == 0 {
        return bad("sst_pages must be ≥ 1".into());
    }
    let sst = p.sst_pages as u64;
    let wal = 2 * sst;
    let build = if p.build_share > 0.0 {
        (n as f64 * BUILD_REGION_SHARE).floor() as u64
    } else {
        0
    };
    let objs = build / 2 / OBJ_PAGES as u64;
    let bin = (objs * OBJ_PAGES as u64 / 4).min(MAX_BIN_PAGES);
    let build_need = objs * OBJ_PAGES as u64 + 2 * bin + TMP_SLOTS * TMP_PAGES as u64;
    if p.build_share > 0.0 && (objs == 0 || bin == 0 || build_need > build) {
        return bad(format!(
            "a footprint of {n} pages leaves no room for the build writer; raise capacity_pages"
        ));
    }
    let slots = n.saturating_sub(wal + build) / sst;
    // Levels below L0: n; the upper levels' targets sum to K·Σ ratio^−j.
    let (levels, ratio) = (p.levels as u64, p.ratio as u64);
    let upper: f64 = (1..levels).map(|j| (ratio as f64).powi(-(j as i32))).sum();
    // Files: L0 (trigger + the flush that fills it), one of rounding per level, and the outputs
    // of one cascade of compactions (each merges one file with the ≤ ratio + 1 it overlaps).
    let reserve = L0_TRIGGER as u64 + 1 + levels + levels * (ratio + 2);
    let keys =
        ((slots.saturating_sub(reserve) * sst) as f64 * LIVE_SHARE / (1.0 + upper)).floor() as u64;
    if keys < sst {
        let need = (reserve + 2) * sst + wal + build;
        return bad(format!(
            "a footprint of {n} pages is too small for {levels} levels, ratio {ratio} and SSTs of {sst} pages (about {need} needed); raise capacity_pages or lower levels, ratio or sst_pages"
        ));
    }
    Ok(Plan {
        keys: keys.min(MAX_KEYS),
        wal_base: 0,
        build_base: wal,
        objs,
        bin,
        sst_base: wal + build,
        slots,
    })
}

/// Where things are and how many keys the store holds.
pub(crate) struct Plan {
    keys: u64,
    wal_base: u64,
    build_base: u64,
    objs: u64,
    bin: u64,
    sst_base: u64,
    slots: u64,
}

struct Files<'m> {
    meta: &'m mut TraceMeta,
    next: u32,
}

impl Files<'_> {
    fn create(&mut self, name: String) -> Result<u32, TraceError> {
        let f = self.next;
        self.next = f
            .checked_add(1)
            .ok_or_else(|| gen_err("lsm: more than 2^32 − 1 files; write fewer pages".into()))?;
        self.meta.files.insert(f, name);
        Ok(f)
    }
}

fn request(op: Op, lpn: u64, pages: u32, a: Activity, pid: u32, file: u32) -> Request {
    Request {
        op: op as u8,
        lpn,
        pages,
        pc: a.pc(),
        pid,
        file,
        file_class: a as u16,
        ..Default::default()
    }
}

/// One background job (a flush or a compaction): its writes, then its trims, each with the SST
/// slot it frees. The trims wait until every older job is done, so no trim overtakes the write
/// of a file it deletes.
#[derive(Default)]
struct BgJob {
    writes: VecDeque<Request>,
    trims: VecDeque<(Request, Option<u64>)>,
}

struct Sst {
    slot: u64,
    file: u32,
    /// Sorted, distinct.
    keys: Vec<u32>,
}

impl Sst {
    fn min(&self) -> u32 {
        self.keys[0]
    }
    fn max(&self) -> u32 {
        self.keys[self.keys.len() - 1]
    }
}

struct Store {
    sst: u64,
    sst_base: u64,
    wal_base: u64,
    keys: u64,
    zipf: Option<Zipf<f64>>,
    /// `levels[0]` is L0 in flush order; the others are sorted by key and disjoint.
    levels: Vec<Vec<Sst>>,
    /// Target pages of L1 ..= Ln−1 (index = level); the last level has none.
    targets: Vec<u64>,
    sizes: Vec<u64>,
    cursor: Vec<u32>,
    free: BTreeSet<u64>,
    alloc: SstAlloc,
    /// `SstAlloc::Next`: the slot after the one taken last.
    next_slot: u64,
    mem: Vec<u32>,
    /// WAL file of the memtable and its first LPN.
    wal: Option<(u32, u64)>,
    wal_half: u64,
    jobs: VecDeque<BgJob>,
    /// Round-robin position among the running jobs.
    rr: usize,
    /// Pages the queued jobs have yet to write.
    queued_pages: u64,
    /// Background pages to emit before the next put.
    owed: u64,
}

impl Store {
    fn new(p: &GenParams, plan: &Plan) -> Result<Store, TraceError> {
        let zipf = if p.skew > 0.0 {
            Some(
                Zipf::new(plan.keys as f64, p.skew)
                    .map_err(|e| gen_err(format!("lsm: skew {} ({e})", p.skew)))?,
            )
        } else {
            None
        };
        let levels = p.levels as usize;
        let targets = (0..levels)
            .map(|i| {
                let t = plan.keys as f64 / (p.ratio as f64).powi((levels - i) as i32);
                (t as u64).max(p.sst_pages as u64)
            })
            .collect();
        Ok(Store {
            sst: p.sst_pages as u64,
            sst_base: plan.sst_base,
            wal_base: plan.wal_base,
            keys: plan.keys,
            zipf,
            levels: (0..=levels).map(|_| Vec::new()).collect(),
            targets,
            sizes: vec![0; levels + 1],
            cursor: vec![0; levels + 1],
            free: (0..plan.slots).collect(),
            alloc: p.sst_alloc,
            next_slot: 0,
            mem: Vec::new(),
            wal: None,
            wal_half: 0,
            jobs: VecDeque::new(),
            rr: 0,
            queued_pages: 0,
            owed: 0,
        })
    }

    /// A new SST of `keys` written by `a`: its writes join the newest job.
    fn write_sst(
        &mut self,
        keys: Vec<u32>,
        a: Activity,
        files: &mut Files,
    ) -> Result<Sst, TraceError> {
        let slot = match self.alloc {
            SstAlloc::Lowest => self.free.first(),
            SstAlloc::Next => self
                .free
                .range(self.next_slot..)
                .next()
                .or(self.free.first()),
        }
        .copied()
        .ok_or_else(|| {
            gen_err(
                "lsm: the SST area is full; raise capacity_pages or lower levels or ratio".into(),
            )
        })?;
        self.free.remove(&slot);
        self.next_slot = slot + 1;
        let file = files.create(format!("db/{:06}.sst", files.next))?;
        let lpn = self.sst_base + slot * self.sst;
        let pages = keys.len() as u64;
        let mut off = 0;
        while off < pages {
            let n = (pages - off).min(SST_REQ_PAGES as u64) as u32;
            self.job()
                .writes
                .push_back(request(Op::Write, lpn + off, n, a, 1, file));
            off += n as u64;
        }
        self.queued_pages += pages;
        Ok(Sst { slot, file, keys })
    }

    /// The newest job.
    fn job(&mut self) -> &mut BgJob {
        if self.jobs.is_empty() {
            self.jobs.push_back(BgJob::default());
        }
        self.jobs.back_mut().expect("a job")
    }

    /// Delete `f` once the newest job has written its outputs.
    fn delete(&mut self, f: Sst) {
        let lpn = self.sst_base + f.slot * self.sst;
        let req = request(
            Op::Trim,
            lpn,
            f.keys.len() as u32,
            Activity::Compaction,
            1,
            f.file,
        );
        self.job().trims.push_back((req, Some(f.slot)));
    }

    /// The bulk load: every key once, sorted, as last-level SSTs (written at once, not queued).
    fn load(&mut self, files: &mut Files, out: &mut Vec<Request>) -> Result<(), TraceError> {
        let last = self.levels.len() - 1;
        let mut k = 0u64;
        self.jobs.push_back(BgJob::default());
        while k < self.keys {
            let end = (k + self.sst).min(self.keys);
            let f = self.write_sst((k as u32..end as u32).collect(), Activity::Load, files)?;
            self.sizes[last] += f.keys.len() as u64;
            self.levels[last].push(f);
            k = end;
        }
        out.extend(self.jobs.drain(..).flat_map(|j| j.writes));
        self.queued_pages = 0;
        Ok(())
    }

    /// The next request of the store: queued background work when owed (or when the memtable is
    /// full and must wait for it), else a put.
    fn next(&mut self, rng: &mut ChaCha8Rng, files: &mut Files) -> Result<Request, TraceError> {
        loop {
            let full = self.mem.len() as u64 == self.sst;
            // Trims cost no pages: emit them as soon as they may go, so their slots are free.
            if let Some(t) = self.pop_background(true) {
                return Ok(t);
            }
            if self.owed > 0 || full {
                if let Some(r) = self.pop_background(false) {
                    return Ok(r);
                }
            }
            if full {
                self.flush(files)?;
                continue;
            }
            let key = match &self.zipf {
                Some(z) => {
                    let rank = (z.sample(rng) as u64).clamp(1, self.keys) - 1;
                    spread(rank, self.keys) as u32
                }
                None => rng.random_range(0..self.keys) as u32,
            };
            let (file, base) = match self.wal {
                Some(w) => w,
                None => {
                    let f = files.create(format!("db/{:06}.log", files.next))?;
                    let w = (f, self.wal_base + self.wal_half * self.sst);
                    self.wal = Some(w);
                    w
                }
            };
            let lpn = base + self.mem.len() as u64;
            self.mem.push(key);
            // Spread the queued background pages over the puts left before the next flush.
            let left = self.sst - self.mem.len() as u64;
            self.owed = if left == 0 {
                self.queued_pages
            } else {
                self.queued_pages.div_ceil(left)
            };
            return Ok(request(Op::Write, lpn, 1, Activity::Wal, 1, file));
        }
    }

    /// The next background request: the trims of the oldest job once it has written everything,
    /// else (unless `trims_only`) the next write of the running jobs in turn, one request each.
    fn pop_background(&mut self, trims_only: bool) -> Option<Request> {
        while let Some(front) = self.jobs.front_mut() {
            if !front.writes.is_empty() {
                break;
            }
            if let Some((req, frees)) = front.trims.pop_front() {
                if let Some(s) = frees {
                    self.free.insert(s);
                }
                return Some(req);
            }
            self.jobs.pop_front();
        }
        if trims_only {
            return None;
        }
        let running = self.jobs.len().min(BG_JOBS);
        for step in 0..running {
            let i = (self.rr + step) % running;
            if let Some(w) = self.jobs[i].writes.pop_front() {
                self.rr = i + 1;
                let n = w.pages as u64;
                self.queued_pages -= n;
                self.owed = self.owed.saturating_sub(n);
                return Some(w);
            }
        }
        None
    }

    /// Flush the full memtable to L0, delete its WAL file, and run the compactions it causes.
    fn flush(&mut self, files: &mut Files) -> Result<(), TraceError> {
        debug_assert!(
            self.jobs.is_empty(),
            "a flush waits for the background jobs"
        );
        self.jobs.push_back(BgJob::default());
        let mut keys = std::mem::take(&mut self.mem);
        keys.sort_unstable();
        keys.dedup();
        let f = self.write_sst(keys, Activity::Flush, files)?;
        self.sizes[0] += f.keys.len() as u64;
        self.levels[0].push(f);
        if let Some((file, base)) = self.wal.take() {
            let req = request(Op::Trim, base, self.sst as u32, Activity::Wal, 1, file);
            self.job().trims.push_back((req, None));
        }
        self.wal_half ^= 1;
        if self.levels[0].len() >= L0_TRIGGER {
            let inputs = std::mem::take(&mut self.levels[0]);
            self.sizes[0] = 0;
            self.merge_into(1, inputs, files)?;
        }
        let last = self.levels.len() - 1;
        for i in 1..last {
            while self.sizes[i] > self.targets[i] {
                let lv = &self.levels[i];
                let at = lv
                    .iter()
                    .position(|f| f.min() >= self.cursor[i])
                    .unwrap_or(0);
                let f = self.levels[i].remove(at);
                self.sizes[i] -= f.keys.len() as u64;
                self.cursor[i] = f.max().wrapping_add(1);
                self.merge_into(i + 1, vec![f], files)?;
            }
        }
        Ok(())
    }

    /// Merge `inputs` with the files of level `to` they overlap; outputs replace those files.
    fn merge_into(
        &mut self,
        to: usize,
        inputs: Vec<Sst>,
        files: &mut Files,
    ) -> Result<(), TraceError> {
        let lo = inputs.iter().map(Sst::min).min().expect("inputs");
        let hi = inputs.iter().map(Sst::max).max().expect("inputs");
        let lv = &self.levels[to];
        let a = lv.partition_point(|f| f.max() < lo);
        let b = lv.partition_point(|f| f.min() <= hi);
        if a == b && inputs.len() == 1 {
            // A trivial move: no overlap, the file changes level without I/O.
            let f = inputs.into_iter().next().expect("one input");
            self.sizes[to] += f.keys.len() as u64;
            self.levels[to].insert(a, f);
            return Ok(());
        }
        self.jobs.push_back(BgJob::default());
        let overlapped: Vec<Sst> = self.levels[to].drain(a..b).collect();
        let mut keys: Vec<u32> = inputs
            .iter()
            .chain(overlapped.iter())
            .flat_map(|f| f.keys.iter().copied())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let mut outputs = Vec::new();
        for chunk in keys.chunks(self.sst as usize) {
            outputs.push(self.write_sst(chunk.to_vec(), Activity::Compaction, files)?);
        }
        for f in overlapped {
            self.sizes[to] -= f.keys.len() as u64;
            self.delete(f);
        }
        for f in inputs {
            self.delete(f);
        }
        self.sizes[to] += keys.len() as u64;
        self.levels[to].splice(a..a, outputs);
        Ok(())
    }
}

struct Build {
    base: u64,
    objs: u64,
    bin: u64,
    hot: Vec<bool>,
    /// Live object file per object slot, and the binary's (file, slot).
    live: Vec<Option<u32>>,
    binary: Option<(u32, u64)>,
    tmp_next: u64,
    builds: u64,
    queue: VecDeque<Request>,
}

impl Build {
    fn new(plan: &Plan, rng: &mut ChaCha8Rng) -> Build {
        Build {
            base: plan.build_base,
            objs: plan.objs,
            bin: plan.bin,
            hot: (0..plan.objs)
                .map(|_| rng.random_bool(HOT_OBJECTS))
                .collect(),
            live: vec![None; plan.objs as usize],
            binary: None,
            tmp_next: 0,
            builds: 0,
            queue: VecDeque::new(),
        }
    }

    fn next(&mut self, rng: &mut ChaCha8Rng, files: &mut Files) -> Result<Request, TraceError> {
        while self.queue.is_empty() {
            self.plan_build(rng, files)?;
        }
        Ok(self.queue.pop_front().expect("a planned build"))
    }

    /// Queue one build: recompile objects (through temporaries), then link.
    fn plan_build(&mut self, rng: &mut ChaCha8Rng, files: &mut Files) -> Result<(), TraceError> {
        let tmp_base = self.base + self.objs * OBJ_PAGES as u64 + 2 * self.bin;
        for j in 0..self.objs as usize {
            let p = if self.hot[j] {
                HOT_RECOMPILE
            } else {
                COLD_RECOMPILE
            };
            if self.builds > 0 && !rng.random_bool(p) {
                continue;
            }
            let t = files.create(format!("build/tmp/cc{:06}.s", files.next))?;
            let tmp = tmp_base + self.tmp_next % TMP_SLOTS * TMP_PAGES as u64;
            self.tmp_next += 1;
            let q = &mut self.queue;
            q.push_back(request(Op::Write, tmp, TMP_PAGES, Activity::Tmp, 2, t));
            let lpn = self.base + j as u64 * OBJ_PAGES as u64;
            if let Some(old) = self.live[j].take() {
                q.push_back(request(Op::Trim, lpn, OBJ_PAGES, Activity::Cc, 2, old));
            }
            let o = files.create(format!("build/obj/{j:06}.o"))?;
            let q = &mut self.queue;
            q.push_back(request(Op::Write, lpn, OBJ_PAGES, Activity::Cc, 2, o));
            q.push_back(request(Op::Trim, tmp, TMP_PAGES, Activity::Tmp, 2, t));
            self.live[j] = Some(o);
        }
        let slot = self.binary.map_or(0, |(_, s)| s ^ 1);
        let lpn = self.base + self.objs * OBJ_PAGES as u64 + slot * self.bin;
        let b = files.create(format!("build/bin/app.{}", self.builds))?;
        let mut off = 0;
        while off < self.bin {
            let n = (self.bin - off).min(SST_REQ_PAGES as u64) as u32;
            self.queue
                .push_back(request(Op::Write, lpn + off, n, Activity::Ld, 2, b));
            off += n as u64;
        }
        if let Some((old, s)) = self.binary.replace((b, slot)) {
            let at = self.base + self.objs * OBJ_PAGES as u64 + s * self.bin;
            self.queue
                .push_back(request(Op::Trim, at, self.bin as u32, Activity::Ld, 2, old));
        }
        self.builds += 1;
        Ok(())
    }
}

/// Generate the `lsm` workload over a footprint of `n` pages (see the module documentation).
pub(crate) fn run(
    p: &GenParams,
    n: u64,
    meta: &mut TraceMeta,
    sink: &mut dyn FnMut(Request) -> Result<(), TraceError>,
) -> Result<(), TraceError> {
    let plan = plan(p, n)?;
    for (a, name) in ACTIVITIES {
        meta.file_classes.insert(a as u16, name.to_string());
        meta.pcs[a.pc().to_string()] =
            serde_json::json!([{"module": "synthetic-lsm", "offset": 0, "symbol": name}]);
    }
    let mut files = Files { meta, next: 0 };
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let mut build_rng = ChaCha8Rng::seed_from_u64(p.seed ^ BUILD_SEED_SALT);
    let mut store = Store::new(p, &plan)?;
    let mut build = (p.build_share > 0.0).then(|| Build::new(&plan, &mut build_rng));
    let mut out = Emitter {
        sink,
        total: p.writes,
        done: 0,
        idx: 0,
        reads: Reads::new(p.seed, p.read_ratio),
        footprint: n,
    };
    let mut load = Vec::new();
    store.load(&mut files, &mut load)?;
    for r in load {
        if !out.emit(r)? {
            return Ok(());
        }
    }
    // Deficit round-robin on the pages written after the load.
    let shares = [1.0 - p.build_share, p.build_share];
    let mut written = [0u64; 2];
    while out.done < out.total {
        let after = (written[0] + written[1] + 1) as f64;
        let behind = |k: usize| shares[k] * after - written[k] as f64;
        let k = usize::from(build.is_some() && behind(1) > behind(0));
        let r = match (k, build.as_mut()) {
            (1, Some(b)) => b.next(&mut build_rng, &mut files)?,
            _ => store.next(&mut rng, &mut files)?,
        };
        let before = out.done;
        let more = out.emit(r)?;
        written[k] += out.done - before;
        if !more {
            break;
        }
    }
    Ok(())
}

/// Hands rows to the sink with their timestamps, interleaves reads, and stops at `total`
/// written pages (cutting the last write short).
struct Emitter<'s> {
    sink: &'s mut dyn FnMut(Request) -> Result<(), TraceError>,
    total: u64,
    done: u64,
    idx: u64,
    reads: Reads,
    footprint: u64,
}

impl Emitter<'_> {
    /// Emit `r`; false once `total` pages are written.
    fn emit(&mut self, mut r: Request) -> Result<bool, TraceError> {
        if self.done >= self.total {
            return Ok(false);
        }
        let write = r.op == Op::Write as u8;
        if write {
            r.pages = (r.pages as u64).min(self.total - self.done) as u32;
            self.done += r.pages as u64;
        }
        (self.sink)(Request {
            ts_ns: self.idx * TS_STEP_NS,
            ..r
        })?;
        self.idx += 1;
        if write {
            // Point lookups of one record, anywhere in the footprint.
            let base = Request {
                pid: 1,
                ..Default::default()
            };
            let (sink, idx) = (&mut self.sink, &mut self.idx);
            self.reads.after_write(base, 0, self.footprint, 1, |r| {
                let r = Request {
                    ts_ns: *idx * TS_STEP_NS,
                    ..r
                };
                *idx += 1;
                sink(r)
            })?;
        }
        Ok(self.done < self.total)
    }
}

/// Mixes `seed` for the build writer, so its choices do not shift the store's.
const BUILD_SEED_SALT: u64 = 0xb0b1_d5ee_d000_0001;
