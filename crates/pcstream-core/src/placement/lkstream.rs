//! # lkstream — predicted chunk temperature + 1-D k-means (LSTM replaced by EWMA)
//!
//! What it does: counts host page writes per LBA chunk in windows of `window` host pages; at the
//! end of each window predicts every chunk's next-window count with an EWMA
//! (`ŷ ← α·x + (1−α)·ŷ`) and clusters `ln(1 + ŷ)` of the chunks with `ŷ > 0` into N−1 groups by
//! optimal 1-D k-means; the hottest group → stream 1, the coldest → stream N−1. Chunks never
//! clustered (or predicted cold to zero) → stream 0.
//! Source: Yang et al., "Reducing Garbage Collection Overhead in SSD Based on Workload
//! Prediction", HotStorage'19 (named LKStream by the FileStream work); only the abstract is
//! known, so everything below the "predict, then k-means" structure is our choice.
//! What it sees: LPN.
//! State: per chunk a u32 window count, an f32 prediction and a u8 stream (9 B/chunk);
//! K centroids.
//! Parameters: `chunk` (512 pages), `window` (65536 pages), `alpha` (0.5), `predictor`
//! (`ewma`; the paper's LSTM is not implemented).
//! Deviations: EWMA instead of the LSTM; the re-clustering at each window end is O(C log C) in
//! the number of chunks C (the only non-O(1) step).

use super::cluster::kmeans_1d;
use super::{Attrs, Placement, PolicyCtx, WriteInfo};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

pub struct LkStream {
    // Fixed at construction.
    chunk_pages: u64,
    window: u64,
    alpha: f32,
    k: usize,
    // Per chunk.
    count: Vec<u32>,
    predicted: Vec<f32>,
    stream: Vec<u8>,
    centroids: Vec<f64>,
}

impl LkStream {
    pub fn new(ctx: &mut PolicyCtx) -> Result<LkStream, SimError> {
        if ctx.host_streams < 2 {
            return Err(SimError::BadParam(
                "lkstream needs at least 2 host streams (stream 0 is for unclustered chunks)"
                    .into(),
            ));
        }
        let chunk_pages: u64 = ctx.param("chunk", 512)?;
        let window: u64 = ctx.param("window", 65_536)?;
        let alpha: f32 = ctx.param("alpha", 0.5)?;
        let predictor: String = ctx.param("predictor", "ewma".to_string())?;
        if predictor != "ewma" {
            return Err(SimError::BadParam(format!(
                "predictor={predictor}: only ewma is implemented (the LSTM is not)"
            )));
        }
        if chunk_pages == 0 || window == 0 || !(alpha > 0.0 && alpha <= 1.0) {
            return Err(SimError::BadParam(
                "chunk and window must be ≥ 1 and 0 < alpha ≤ 1".into(),
            ));
        }
        let chunks = ctx.logical_pages.div_ceil(chunk_pages) as usize;
        Ok(LkStream {
            chunk_pages,
            window,
            alpha,
            k: (ctx.host_streams - 1) as usize,
            count: vec![0; chunks],
            predicted: vec![0.0; chunks],
            stream: vec![0; chunks],
            centroids: Vec::new(),
        })
    }

    /// Stream of the chunk holding `lpn`.
    pub fn stream_of(&self, lpn: u64) -> StreamId {
        StreamId(self.stream[(lpn / self.chunk_pages) as usize])
    }
}

impl Placement for LkStream {
    fn name(&self) -> &'static str {
        "lkstream"
    }
    fn sees(&self) -> Attrs {
        Attrs::LPN
    }
    fn on_write(&mut self, w: &WriteInfo, _now: LogicalTime) -> StreamId {
        let c = (w.lpn.0 / self.chunk_pages) as usize;
        self.count[c] = self.count[c].saturating_add(1);
        StreamId(self.stream[c])
    }
    fn tick_period(&self) -> Option<u64> {
        Some(self.window)
    }
    fn tick(&mut self, _now: LogicalTime) {
        let a = self.alpha;
        let mut hot: Vec<(f64, usize)> = Vec::new();
        for c in 0..self.count.len() {
            let y = a * self.count[c] as f32 + (1.0 - a) * self.predicted[c];
            // Below 1/1000 of a write per window a chunk is cold enough to forget.
            let y = if y < 1e-3 { 0.0 } else { y };
            self.predicted[c] = y;
            self.count[c] = 0;
            self.stream[c] = 0;
            if y > 0.0 {
                hot.push(((y as f64).ln_1p(), c));
            }
        }
        hot.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        let x: Vec<f64> = hot.iter().map(|h| h.0).collect();
        let cl = kmeans_1d(&x, self.k);
        let groups = cl.centroids.len() as u32;
        for (&(_, c), &g) in hot.iter().zip(&cl.labels) {
            // Hottest group (largest centroid) → stream 1.
            self.stream[c] = (groups - g) as u8;
        }
        self.centroids = cl.centroids;
    }
    fn state_bytes(&self) -> usize {
        self.count.len() * (4 + 4 + 1) + self.centroids.len() * 8
    }
}
