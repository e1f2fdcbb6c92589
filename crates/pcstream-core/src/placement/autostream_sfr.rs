//! # autostream-sfr — AutoStream, Sequentiality–Frequency–Recency
//!
//! What it does: keeps a decayed write count per LBA chunk; a request that starts where the
//! previous one ended (sequential) inherits the previous stream, otherwise a page goes to stream
//! `floor(log_b(count))` of its chunk, clamped to the host streams 0..N−2 (higher = hotter). Counts
//! halve once per `decay` host pages since the chunk's last touch (lazily, integer arithmetic).
//! GC copies all go to the reserved stream N−1.
//! Source: Yang et al., "AutoStream", SYSTOR'17, as re-implemented in the SepBIT artifact
//! (`SFR.java`, Variant A, default) and in the bdbm_drv emulator (`autostream.c`, Variant B).
//! What it sees: LPN, request length (and request order).
//! State: per chunk a u32 count, a u64 last-touch time and a u8 stored stream (13 B/chunk);
//! previous request end, previous stream.
//! Parameters: `variant` = `a` (default) | `b` (sets the other defaults to the emulator's:
//! log10, first chunk only, classify then update, decay 30 s); `chunk` (512 pages), `log_base`
//! (`e` or a number; A: e, B: 10), `decay` (A: 16384 pages; B: 30 s × `pages_per_second`,
//! default 25600 pages/s = 100 MiB/s), `order` = `update_then_classify` (A)
//! | `classify_then_update` (B), `scope` = `all_chunks` (A) | `first_chunk` (B).
//! Deviations: Variant B divides by 2^min(k, 63) (the C code's k ≥ 64 case divides by 63);
//! its 30 s wall-clock decay is converted to logical time with a fixed host rate.

use super::{Attrs, GcMode, PageInfo, Placement, PolicyCtx, RequestInfo, WriteInfo};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

/// `floor(log_base(count))` without floating-point rounding at exact powers, capped at `max`.
pub(crate) fn log_class(count: u64, base: f64, max: u32) -> u32 {
    let mut s = 0u32;
    let mut p = base;
    while s < max && count as f64 >= p {
        s += 1;
        p *= base;
    }
    s
}

pub(crate) fn parse_base(v: &str) -> Result<f64, SimError> {
    let b = if v == "e" {
        std::f64::consts::E
    } else {
        v.parse::<f64>()
            .map_err(|_| SimError::BadParam(format!("log_base={v}: use e or a number")))?
    };
    if b > 1.0 {
        Ok(b)
    } else {
        Err(SimError::BadParam(format!("log_base={v}: must be > 1")))
    }
}

pub struct AutoStreamSfr {
    // Fixed at construction.
    chunk_pages: u64,
    log_base: f64,
    decay: u64,
    classify_first: bool,
    first_only: bool,
    /// Highest host stream for data (N−2); N−1 takes GC copies.
    max_stream: u32,
    gc_stream: StreamId,
    // Per chunk.
    count: Vec<u32>,
    last: Vec<u64>,
    sid: Vec<u8>,
    // Per request.
    prev_end: u64,
    prev_stream: StreamId,
    sequential: bool,
    first_chunk: u64,
    /// Stream per chunk overlapped by the current request (Variant B: one entry).
    req_streams: Vec<StreamId>,
}

impl AutoStreamSfr {
    pub fn new(ctx: &mut PolicyCtx) -> Result<AutoStreamSfr, SimError> {
        if ctx.host_streams < 2 {
            return Err(SimError::BadParam(
                "autostream-sfr needs at least 2 host streams (N−1 is the GC stream)".into(),
            ));
        }
        let b = ctx.choice("variant", "a", &[("a", false), ("b", true)])?;
        let chunk_pages: u64 = ctx.param("chunk", 512)?;
        let base: String = ctx.param("log_base", if b { "10" } else { "e" }.to_string())?;
        let pages_per_second: u64 = ctx.param("pages_per_second", 25_600)?;
        let decay: u64 = ctx.param("decay", if b { 30 * pages_per_second } else { 16_384 })?;
        let classify_first = ctx.choice(
            "order",
            if b {
                "classify_then_update"
            } else {
                "update_then_classify"
            },
            &[
                ("update_then_classify", false),
                ("classify_then_update", true),
            ],
        )?;
        let first_only = ctx.choice(
            "scope",
            if b { "first_chunk" } else { "all_chunks" },
            &[("all_chunks", false), ("first_chunk", true)],
        )?;
        if chunk_pages == 0 || decay == 0 {
            return Err(SimError::BadParam("chunk and decay must be ≥ 1".into()));
        }
        let chunks = ctx.logical_pages.div_ceil(chunk_pages) as usize;
        Ok(AutoStreamSfr {
            chunk_pages,
            log_base: parse_base(&base)?,
            decay,
            classify_first,
            first_only,
            max_stream: ctx.host_streams - 2,
            gc_stream: StreamId((ctx.host_streams - 1) as u8),
            count: vec![0; chunks],
            last: vec![0; chunks],
            sid: vec![0; chunks],
            prev_end: u64::MAX,
            prev_stream: StreamId(0),
            sequential: false,
            first_chunk: 0,
            req_streams: Vec::new(),
        })
    }

    /// Touch chunk `c` at time `t`; returns its stream (before or after the update, by `order`).
    fn touch(&mut self, c: usize, t: u64) -> StreamId {
        let before = StreamId(self.sid[c]);
        let k = if self.count[c] == 0 {
            0
        } else {
            (t - self.last[c]) / self.decay
        };
        // Variant A decays then adds; B adds then decays (both integer halving per period).
        let cnt = if self.classify_first {
            (self.count[c] as u64 + 1) >> k.min(63)
        } else {
            (self.count[c] as u64 >> k.min(63)) + 1
        };
        self.count[c] = cnt.min(u32::MAX as u64) as u32;
        self.last[c] = t;
        self.sid[c] = log_class(cnt, self.log_base, self.max_stream) as u8;
        if self.classify_first {
            before
        } else {
            StreamId(self.sid[c])
        }
    }

    /// Decayed write count of the chunk holding `lpn` (for tests and reports).
    pub fn count_of(&self, lpn: u64) -> u32 {
        self.count[(lpn / self.chunk_pages) as usize]
    }
}

impl Placement for AutoStreamSfr {
    fn name(&self) -> &'static str {
        "autostream-sfr"
    }
    fn sees(&self) -> Attrs {
        Attrs::LPN.union(Attrs::LEN)
    }
    fn gc_mode(&self) -> GcMode {
        GcMode::Policy
    }
    fn on_request(&mut self, req: &RequestInfo, now: LogicalTime) {
        let lba = req.lpn.0;
        let pages = req.pages.max(1) as u64;
        self.sequential = lba == self.prev_end;
        self.prev_end = lba + pages;
        let first = lba / self.chunk_pages;
        let last = if self.first_only {
            first
        } else {
            (lba + pages - 1) / self.chunk_pages
        };
        self.first_chunk = first;
        self.req_streams.clear();
        for c in first..=last {
            let s = self.touch(c as usize, now.0);
            self.req_streams.push(s);
        }
    }
    fn on_write(&mut self, w: &WriteInfo, _now: LogicalTime) -> StreamId {
        if !self.sequential {
            let i = if self.first_only {
                0
            } else {
                (w.lpn.0 / self.chunk_pages - self.first_chunk) as usize
            };
            self.prev_stream = self.req_streams[i];
        }
        debug_assert!(self.prev_stream.0 as u32 <= self.max_stream);
        self.prev_stream
    }
    fn gc_destination(&mut self, _p: &PageInfo, _now: LogicalTime) -> StreamId {
        self.gc_stream
    }
    fn gc_fanout(&self) -> Option<u32> {
        Some(1) // every GC copy goes to the one GC stream
    }
    fn state_bytes(&self) -> usize {
        self.count.len() * (4 + 8 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::log_class;

    #[test]
    fn log_classes_are_exact_at_powers() {
        assert_eq!(log_class(999, 10.0, 8), 2);
        assert_eq!(log_class(1000, 10.0, 8), 3);
        let e = std::f64::consts::E;
        // ln: 1–2 → 0, 3–7 → 1, 8–20 → 2, 21–54 → 3 (⌊ln count⌋, counts from 1).
        let c: Vec<u32> = [1, 2, 3, 7, 8, 20, 21, 54, 55]
            .map(|n| log_class(n, e, 9))
            .to_vec();
        assert_eq!(c, vec![0, 0, 1, 1, 2, 2, 3, 3, 4]);
        assert_eq!(log_class(1 << 30, e, 6), 6, "capped");
    }
}
