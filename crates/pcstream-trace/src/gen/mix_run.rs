//! A [`MixSpec`] as it runs: the writers laid out over the footprint, each with the state of its
//! kind (the segments of an `append_log`, the page choice of a `random_update`, the live files
//! of a `file_churn`), taking turns by their share of the pages written; each step emits one
//! write request, with the trims it causes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use pcstream_core::request::{Op, Request};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal, Zipf};

use super::mix::{Lifetime, LifetimeUnit, MixSpec, UpdateDist, WriterKind, WriterSpec};
use super::{gen_err, spread, GenParams, Reads, TS_STEP_NS};
use crate::blocktrace::TraceMeta;
use crate::error::TraceError;

impl MixSpec {
    /// Emit the mix over a footprint of `n` pages (see [`super::generate`]).
    pub(crate) fn run(
        &self,
        p: &GenParams,
        n: u64,
        meta: &mut TraceMeta,
        sink: &mut dyn FnMut(Request) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        let total_share = self.total_share()?;
        let lens = self.region_lens(n)?;
        let mut next_file = 1u32;
        let (mut writers, mut pools, end) = self.writers(p, &lens, &mut next_file, meta)?;
        if end > n {
            return Err(gen_err(format!(
                "mix: the writers' regions total {end} pages but the footprint has {n}; shrink the regions or raise capacity_pages"
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
            // The writer furthest behind its share of the pages written so far goes next.
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

    /// The sum of the writers' shares, after checking there are 1..=65534 writers and every
    /// share is a number ≥ 0, not all 0.
    fn total_share(&self) -> Result<f64, TraceError> {
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
        Ok(total_share)
    }

    /// Each writer's own region in pages, over a footprint of `n` pages.
    fn region_lens(&self, n: u64) -> Result<Vec<u64>, TraceError> {
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
        Ok(lens)
    }

    /// The pools, by name: (first member, pages, file_pages). A pool's region is the sum of its
    /// members' regions (`lens`), laid out at its first member.
    fn pools(&self, lens: &[u64]) -> Result<BTreeMap<&str, (usize, u64, u32)>, TraceError> {
        let mut pool_of: BTreeMap<&str, (usize, u64, u32)> = BTreeMap::new();
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
        Ok(pool_of)
    }

    /// The writers laid out one after the other (a pool's members share its region), their
    /// file classes and PCs in `meta`; with the free file slots of every pool and the end of
    /// the last region.
    #[allow(clippy::type_complexity)]
    fn writers(
        &self,
        p: &GenParams,
        lens: &[u64],
        next_file: &mut u32,
        meta: &mut TraceMeta,
    ) -> Result<(Vec<Writer<'_>>, Vec<BTreeSet<u64>>, u64), TraceError> {
        let pool_of = self.pools(lens)?;
        let mut writers = Vec::with_capacity(self.writers.len());
        let mut pools: Vec<BTreeSet<u64>> = Vec::new();
        let mut pool_idx: BTreeMap<&str, (usize, u64)> = BTreeMap::new(); // name → (pool, start)
        let mut start = 0u64;
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
            let w = Writer::new(w, i, region, p.req_pages, next_file, meta)?;
            if let State::Churn(c) = &w.state {
                if c.pool == pools.len() {
                    pools.push((0..len / c.file_pages as u64).collect());
                }
            }
            writers.push(w);
            let w = &self.writers[i];
            meta.file_classes.insert(i as u16 + 1, w.name.clone());
            meta.pcs[w.pc.to_string()] =
                serde_json::json!([{"module": "synthetic", "offset": 0, "symbol": w.name}]);
        }
        Ok((writers, pools, start))
    }
}

/// Per-kind state of a writer.
enum State {
    Log(LogState),
    Update(UpdateState),
    Churn(ChurnState),
}

struct LogState {
    seg_pages: u32,
    live: usize,
    slots: u64,
    next_slot: u64,
    /// (first LPN, pages written, file) of the live segments, oldest first.
    segs: VecDeque<(u64, u32, u32)>,
}

struct UpdateState {
    zipf: Option<Zipf<f64>>,
    file: u32,
}

struct ChurnState {
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

/// What a step needs of its writer besides the state of its kind: where it writes and the
/// rows it makes.
struct Place<'a> {
    name: &'a str,
    start: u64,
    len: u64,
    req: u32,
    base: Request,
}

impl Place<'_> {
    fn write(&self, lpn: u64, pages: u32, file: u32) -> Request {
        Request {
            op: Op::Write as u8,
            lpn,
            pages,
            file,
            ..self.base
        }
    }

    fn trim(&self, lpn: u64, pages: u32, file: u32) -> Request {
        Request {
            op: Op::Trim as u8,
            lpn,
            pages,
            file,
            ..self.base
        }
    }
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
            } => State::Log(LogState::new(len, *segment_pages, *live_segments).map_err(bad)?),
            WriterKind::RandomUpdate { dist, theta } => {
                let (dist, theta) = (*dist, *theta);
                let zipf = UpdateState::zipf(len, req, dist, theta).map_err(bad)?;
                let file = new_file(next_file, format!("{}/table", spec.name), meta)?;
                State::Update(UpdateState { zipf, file })
            }
            WriterKind::FileChurn {
                file_pages,
                lifetime_files,
            } => {
                let scale_of = |own_slots: u64| match spec.lifetime_unit {
                    LifetimeUnit::Files => 1.0,
                    LifetimeUnit::Region => own_slots as f64,
                };
                let c = ChurnState::new(len, own_len, *file_pages, lifetime_files, pool, scale_of);
                State::Churn(c.map_err(bad)?)
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
        let at = Place {
            name: &self.spec.name,
            start: self.start,
            len: self.len,
            req: self.req,
            base: self.base,
        };
        match &mut self.state {
            State::Log(s) => s.step(&at, room, next_file, meta, out),
            State::Update(s) => {
                s.step(&at, room, rng, out);
                Ok(())
            }
            State::Churn(s) => s.step(&at, room, rng, pools, next_file, meta, out),
        }
    }
}

impl LogState {
    fn new(len: u64, segment_pages: u32, live_segments: u32) -> Result<LogState, String> {
        let slots = len / segment_pages.max(1) as u64;
        if segment_pages == 0 || live_segments == 0 || slots < live_segments as u64 {
            return Err(format!(
                "a region of {len} pages cannot hold {live_segments} segments of {segment_pages} pages (both must be ≥ 1); enlarge the region"
            ));
        }
        Ok(LogState {
            seg_pages: segment_pages,
            live: live_segments as usize,
            slots,
            next_slot: 0,
            segs: VecDeque::new(),
        })
    }

    /// Append to the open segment; a full one is followed by a new segment in the next slot,
    /// the oldest live segment trimmed first when there are `live` of them.
    fn step(
        &mut self,
        at: &Place,
        room: u32,
        next_file: &mut u32,
        meta: &mut TraceMeta,
        out: &mut Vec<Request>,
    ) -> Result<(), TraceError> {
        if self.segs.back().is_none_or(|s| s.1 >= self.seg_pages) {
            if self.segs.len() >= self.live {
                let (lpn, used, f) = self.segs.pop_front().expect("live segments");
                out.push(at.trim(lpn, used, f));
            }
            let lpn = at.start + self.next_slot * self.seg_pages as u64;
            self.next_slot = (self.next_slot + 1) % self.slots;
            let f = new_file(
                next_file,
                format!("{}/{f:06}.log", at.name, f = *next_file),
                meta,
            )?;
            self.segs.push_back((lpn, 0, f));
        }
        let seg = self.segs.back_mut().expect("an open segment");
        let pages = room.min(self.seg_pages - seg.1);
        out.push(at.write(seg.0 + seg.1 as u64, pages, seg.2));
        seg.1 += pages;
        Ok(())
    }
}

impl UpdateState {
    /// The rank distribution over the request slots of a region of `len` pages (`None`:
    /// uniform).
    fn zipf(len: u64, req: u32, dist: UpdateDist, theta: f64) -> Result<Option<Zipf<f64>>, String> {
        if len < req as u64 {
            return Err(format!(
                "a region of {len} pages cannot hold a request of {req} pages; enlarge the region"
            ));
        }
        match dist {
            UpdateDist::Uniform => Ok(None),
            UpdateDist::Zipf => {
                let slots = len - req as u64 + 1;
                Zipf::new(slots as f64, theta)
                    .map(Some)
                    .map_err(|e| format!("zipf theta {theta} must be ≥ 0 ({e})"))
            }
        }
    }

    /// Overwrite one request slot of the region.
    fn step(&mut self, at: &Place, room: u32, rng: &mut ChaCha8Rng, out: &mut Vec<Request>) {
        let slots = at.len - at.req as u64 + 1;
        let off = match &self.zipf {
            Some(z) => spread((z.sample(rng) as u64).clamp(1, slots) - 1, slots),
            None => rng.random_range(0..slots),
        };
        out.push(at.write(at.start + off, room, self.file));
    }
}

impl Lifetime {
    /// A lifetime drawn from the distribution (its parameters checked by [`ChurnState::new`]).
    fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match *self {
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
        }
    }
}

impl ChurnState {
    /// `scale_of(files the writer's own region holds)`: files per lifetime unit.
    fn new(
        len: u64,
        own_len: u64,
        file_pages: u32,
        lifetime_files: &Lifetime,
        pool: usize,
        scale_of: impl Fn(u64) -> f64,
    ) -> Result<ChurnState, String> {
        let slots = len / file_pages.max(1) as u64;
        if file_pages == 0 || slots < 2 {
            return Err(format!(
                "a region of {len} pages holds fewer than 2 files of {file_pages} pages (must be ≥ 1); enlarge the region or lower file_pages"
            ));
        }
        let ok = match *lifetime_files {
            Lifetime::Fixed { mean } | Lifetime::Exponential { mean } => mean > 0.0,
            Lifetime::Uniform { min, max } => min >= 0.0 && max >= min,
            Lifetime::Lognormal { mean, sigma } => mean > 0.0 && sigma >= 0.0,
        };
        if !ok {
            return Err(format!(
                "lifetime_files {lifetime_files:?} needs mean > 0, sigma ≥ 0, 0 ≤ min ≤ max"
            ));
        }
        let own_slots = (own_len / file_pages as u64).max(1);
        Ok(ChurnState {
            file_pages,
            lifetime: lifetime_files.clone(),
            scale: scale_of(own_slots),
            pool,
            live: BTreeMap::new(),
            cur: None,
            files_done: 0,
        })
    }

    /// Write the next pages of the current file (a new one in the first free slot of the pool,
    /// or, the pool full, in the slot of the live file due soonest, trimmed early); a file
    /// written whole gets its lifetime, and the files whose lifetime ends are trimmed.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        at: &Place,
        room: u32,
        rng: &mut ChaCha8Rng,
        pools: &mut [BTreeSet<u64>],
        next_file: &mut u32,
        meta: &mut TraceMeta,
        out: &mut Vec<Request>,
    ) -> Result<(), TraceError> {
        let fp = self.file_pages as u64;
        let (slot, used, f) = match self.cur {
            Some(c) => c,
            None => {
                let free = &mut pools[self.pool];
                if free.is_empty() {
                    // Region full: the file due soonest goes early.
                    let ((_, f), slot) = self.live.pop_first().ok_or_else(|| {
                        gen_err(format!(
                            "mix writer '{}': its pool is full of other writers' files; enlarge the pool members' regions",
                            at.name
                        ))
                    })?;
                    out.push(at.trim(at.start + slot * fp, self.file_pages, f));
                    free.insert(slot);
                }
                let slot = free.pop_first().expect("a free slot");
                let f = new_file(
                    next_file,
                    format!("{}/{f:06}.sst", at.name, f = *next_file),
                    meta,
                )?;
                (slot, 0, f)
            }
        };
        let pages = room.min(self.file_pages - used);
        out.push(at.write(at.start + slot * fp + used as u64, pages, f));
        let used = used + pages;
        if used < self.file_pages {
            self.cur = Some((slot, used, f));
            return Ok(());
        }
        self.cur = None;
        self.files_done += 1;
        let l = self.lifetime.sample(rng);
        let life = (l * self.scale).round().clamp(1.0, 1e15) as u64;
        self.live.insert((self.files_done + life, f), slot);
        while let Some(entry) = self.live.first_entry() {
            if entry.key().0 > self.files_done {
                break;
            }
            let ((_, f), slot) = entry.remove_entry();
            out.push(at.trim(at.start + slot * fp, self.file_pages, f));
            pools[self.pool].insert(slot);
        }
        Ok(())
    }
}
