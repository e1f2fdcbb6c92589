//! # filestream — file-characteristics streams (mapper, remapper, divider)
//!
//! What it does: file streams are 1..F (F = N−1; stream 0 takes writes without a file). A newly
//! created file is placed by the *mapper* into the stream `s ∈ 1..d` with the lowest
//! `score(s) = Σ_{open f_i in s} amount(f_i)·dif(f_i, f_o)`, `amount = m·max(0, wd − cd)` (m =
//! page writes per host page since open, cd = time open, wd = mean write duration of deleted
//! files of f_i's type), `dif` = mean `|l_a − l_b|/(l_a + l_b)` over the deleted-file lifetimes of
//! the two types (1 when either has no history); ties → lowest id. Every `period` host pages the
//! *divider* sets `d = floor(F·(FN_m/(FN_m+FN_r) + MN_m/(MN_m+MN_r))/2 + 1/2)` (clamped to
//! 1..F−1 when both sets are non-empty, F when there is no long-open file) and the *remapper*
//! clusters `ln(USM)` (USM = page writes since open / live pages) of the files open for at least
//! `period` into the streams d+1..F by optimal 1-D k-means (highest USM → d+1), keeping the old
//! assignment when every file is still nearest to its previous centre.
//! Source: Zhang, Xue, Zhou, "Automatic I/O stream management based on file characteristics"
//! (2021).
//! What it sees: file id and file class (type) of each write; LPN and TRIM
//! invalidations only to derive events from a block trace: the first write of a file id creates
//! (opens) it, and the file is deleted when TRIMs (or other files' overwrites) leave it no live
//! page.
//! State: per LPN the file id of its live version (4 B); per open file ≈ 60 B in a BTreeMap; per
//! type the last 64 lifetimes and write durations; remapper centroids.
//! Parameters: `period` (T in host pages; default 60 s × 25,600 pages/s = 1,536,000, §8.4),
//! `history` (64 per type).
//! Deviations: k-means++ is replaced by the deterministic DP k-means (on ln USM); with no
//! deleted-file history of f_i's type, `amount` = its page writes so far (our choice); mapper
//! files keep their stream when d shrinks until the remapper takes them; "open" = first write
//! and "delete" = no live page left (block traces carry no open, close or delete events).

use std::collections::{BTreeMap, VecDeque};

use super::cluster::{kmeans_1d, nearest};
use super::{Attrs, Cause, Invalidation, Placement, PolicyCtx, RequestInfo, WriteInfo};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

#[derive(Clone, Debug)]
struct OpenFile {
    class: u16,
    stream: u8,
    remapped: bool,
    opened: u64,
    last_write: u64,
    /// Page writes since open.
    mods: u64,
    /// Live pages.
    live: u64,
}

#[derive(Default)]
struct TypeHistory {
    lifetimes: VecDeque<u64>,
    durations: VecDeque<u64>,
}

pub struct FileStream {
    // Fixed at construction.
    file_streams: u32,
    period: u64,
    history: usize,
    // State.
    lpn_file: Vec<u32>,
    files: BTreeMap<u32, OpenFile>,
    types: BTreeMap<u16, TypeHistory>,
    d: u32,
    centroids: Vec<f64>,
    cur_file: u32,
    now: u64,
}

impl FileStream {
    pub fn new(ctx: &mut PolicyCtx) -> Result<FileStream, SimError> {
        if ctx.host_streams < 3 {
            return Err(SimError::BadParam(
                "filestream needs at least 3 host streams (0 for non-file writes, mapper, remapper)"
                    .into(),
            ));
        }
        let period: u64 = ctx.param("period", 60 * 25_600)?;
        let history: usize = ctx.param("history", 64)?;
        if period == 0 || history == 0 {
            return Err(SimError::BadParam("period and history must be ≥ 1".into()));
        }
        let file_streams = ctx.host_streams - 1;
        Ok(FileStream {
            file_streams,
            period,
            history,
            lpn_file: vec![0; ctx.logical_pages as usize],
            files: BTreeMap::new(),
            types: BTreeMap::new(),
            d: file_streams,
            centroids: Vec::new(),
            cur_file: 0,
            now: 0,
        })
    }

    /// Stream of open file `file` (`None` if not open).
    pub fn stream_of(&self, file: u32) -> Option<StreamId> {
        self.files.get(&file).map(|f| StreamId(f.stream))
    }

    fn dif(&self, a: u16, b: u16) -> f64 {
        let (Some(ha), Some(hb)) = (self.types.get(&a), self.types.get(&b)) else {
            return 1.0;
        };
        if ha.lifetimes.is_empty() || hb.lifetimes.is_empty() {
            return 1.0;
        }
        let mut s = 0.0;
        for &la in &ha.lifetimes {
            for &lb in &hb.lifetimes {
                let sum = (la + lb) as f64;
                if sum > 0.0 {
                    s += (la as f64 - lb as f64).abs() / sum;
                }
            }
        }
        s / (ha.lifetimes.len() * hb.lifetimes.len()) as f64
    }

    fn amount(&self, f: &OpenFile) -> f64 {
        let cd = self.now.saturating_sub(f.opened).max(1) as f64;
        let wd = self
            .types
            .get(&f.class)
            .filter(|h| !h.durations.is_empty())
            .map(|h| h.durations.iter().sum::<u64>() as f64 / h.durations.len() as f64);
        match wd {
            Some(wd) => f.mods as f64 / cd * (wd - cd).max(0.0),
            None => f.mods as f64,
        }
    }

    /// Mapper: the stream in 1..=d with the lowest score for a new file of type `class`.
    fn map_new(&self, class: u16) -> u8 {
        let mut score = vec![0.0f64; self.d as usize + 1];
        let mut dif_cache: BTreeMap<u16, f64> = BTreeMap::new();
        for f in self.files.values() {
            if f.remapped || f.stream as u32 > self.d {
                continue;
            }
            let dif = *dif_cache
                .entry(f.class)
                .or_insert_with(|| self.dif(f.class, class));
            score[f.stream as usize] += self.amount(f) * dif;
        }
        let mut best = 1usize;
        for s in 2..=self.d as usize {
            if score[s] < score[best] {
                best = s;
            }
        }
        best as u8
    }

    fn create(&mut self, file: u32, class: u16) {
        let stream = self.map_new(class);
        self.files.insert(
            file,
            OpenFile {
                class,
                stream,
                remapped: false,
                opened: self.now,
                last_write: self.now,
                mods: 0,
                live: 0,
            },
        );
    }

    fn delete(&mut self, file: u32) {
        let Some(f) = self.files.remove(&file) else {
            return;
        };
        let h = self.types.entry(f.class).or_default();
        h.lifetimes.push_back(self.now.saturating_sub(f.opened));
        h.durations.push_back(f.last_write.saturating_sub(f.opened));
        while h.lifetimes.len() > self.history {
            h.lifetimes.pop_front();
            h.durations.pop_front();
        }
    }

    /// Divider, then remapper (every `period`).
    fn rebalance(&mut self) {
        let now = self.now;
        let long = |f: &OpenFile| now.saturating_sub(f.opened) >= self.period;
        let (mut fn_m, mut fn_r, mut mn_m, mut mn_r) = (0u64, 0u64, 0u64, 0u64);
        for f in self.files.values() {
            if long(f) {
                fn_r += 1;
                mn_r += f.mods;
            } else {
                fn_m += 1;
                mn_m += f.mods;
            }
        }
        let nf = self.file_streams;
        self.d = if fn_r == 0 {
            nf
        } else if fn_m == 0 {
            1
        } else {
            let share = |m: u64, r: u64| {
                if m + r == 0 {
                    0.5
                } else {
                    m as f64 / (m + r) as f64
                }
            };
            let prop = (share(fn_m, fn_r) + share(mn_m, mn_r)) / 2.0;
            ((nf as f64 * prop + 0.5).floor() as u32).clamp(1, nf - 1)
        };
        if fn_r == 0 || self.d >= nf {
            return;
        }
        let k = (nf - self.d) as usize;
        // (−ln USM, file id): highest USM first, so group 0 → stream d+1.
        let mut usm: Vec<(f64, u32)> = self
            .files
            .iter()
            .filter(|(_, f)| long(f))
            .map(|(&id, f)| (-((f.mods.max(1) as f64) / f.live.max(1) as f64).ln(), id))
            .collect();
        usm.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // Skip rule: every long-open file already remapped and nearest to its own centre.
        let keep = self.centroids.len() == k
            && usm.iter().all(|&(x, id)| {
                let f = &self.files[&id];
                f.remapped
                    && nearest(&self.centroids, x).map(|g| g as u32 + self.d + 1)
                        == Some(f.stream as u32)
            });
        if keep {
            return;
        }
        let x: Vec<f64> = usm.iter().map(|u| u.0).collect();
        let c = kmeans_1d(&x, k);
        for (&(_, id), &g) in usm.iter().zip(&c.labels) {
            let f = self.files.get_mut(&id).expect("open file");
            f.stream = (self.d + 1 + g) as u8;
            f.remapped = true;
        }
        self.centroids = c.centroids;
    }
}

impl Placement for FileStream {
    fn name(&self) -> &'static str {
        "filestream"
    }
    fn sees(&self) -> Attrs {
        Attrs::FILE
            .union(Attrs::FILE_CLASS)
            .union(Attrs::LPN)
            .union(Attrs::LIFETIME)
    }
    fn on_request(&mut self, req: &RequestInfo, now: LogicalTime) {
        self.now = now.0;
        self.cur_file = req.file;
        if req.file != 0 && !self.files.contains_key(&req.file) {
            self.create(req.file, req.file_class);
        }
    }
    fn on_invalidate(&mut self, inv: &Invalidation) {
        let l = inv.lpn.0 as usize;
        let f = self.lpn_file[l];
        if f == 0 || (inv.cause == Cause::Overwrite && f == self.cur_file) {
            return;
        }
        self.lpn_file[l] = 0;
        self.now = inv.now.0;
        if let Some(of) = self.files.get_mut(&f) {
            of.live = of.live.saturating_sub(1);
            if of.live == 0 {
                self.delete(f);
            }
        }
    }
    fn on_write(&mut self, w: &WriteInfo, now: LogicalTime) -> StreamId {
        let file = w.req.file;
        if file == 0 {
            self.lpn_file[w.lpn.0 as usize] = 0;
            return StreamId(0);
        }
        let l = w.lpn.0 as usize;
        let f = self.files.get_mut(&file).expect("created in on_request");
        if self.lpn_file[l] != file {
            f.live += 1;
            self.lpn_file[l] = file;
        }
        f.mods += 1;
        f.last_write = now.0;
        debug_assert!((1..=self.file_streams).contains(&(f.stream as u32)));
        StreamId(f.stream)
    }
    fn tick_period(&self) -> Option<u64> {
        Some(self.period)
    }
    fn tick(&mut self, now: LogicalTime) {
        self.now = now.0;
        self.rebalance();
    }
    fn prefetch(&self, lpn: u64) {
        if let Some(f) = self.lpn_file.get(lpn as usize) {
            crate::prefetch::read(f);
        }
    }
    fn state_bytes(&self) -> usize {
        self.lpn_file.len() * 4
            + self.files.len() * (std::mem::size_of::<OpenFile>() + 4 + 16)
            + self
                .types
                .values()
                .map(|h| 2 + 16 * h.lifetimes.len())
                .sum::<usize>()
            + self.centroids.len() * 8
    }
}
