//! # autostream-mq — AutoStream, Multi-Queue
//!
//! What it does: every LBA chunk sits in one of N−1 LRU queues, queue `min(floor(ln count), N−2)`
//! = its host stream (higher = hotter). A touched chunk moves to the MRU end of its queue with an
//! expiry of now + `dev_lifetime` (the last inter-write gap of the hottest chunk). After each
//! chunk touch, every queue's LRU head that has expired is demoted one queue. GC copies all go
//! to the reserved stream N−1.
//! Source: Yang et al., "AutoStream", SYSTOR'17, as re-implemented in the SepBIT artifact
//! (`MultiQueue.java`, "AutoStream.systor17: MultiQueue"), Variant A.
//! What it sees: LPN, request length.
//! State: per chunk count (u32), last access and expiry (u64 each), queue (u8) and the two LRU
//! links (u32 each): 29 B/chunk; per queue head/tail.
//! Parameters: `variant` = `a` (default) | `b`, `chunk` (A: 256 pages, B: 512), `log_base`
//! (A: `e`, B: 10).
//! Variant B (the MQ path of the bdbm_drv emulator's `autostream.c`): time counts request touches
//! (`dev_total`); only the request's first chunk is looked up; queues = streams 1..N−2, a new
//! chunk starts in queue 1; `qid = floor(log_b count) + 1` moves the chunk to the tail of queue
//! `qid` only when it changes (an unchanged chunk keeps its LRU position); the request is placed
//! in the queue the chunk had BEFORE this touch; after every touch the expired LRU heads of
//! queues N−2 … 3 drop one queue (queues 1 and 2 never do); no count decay.
//! Deviations (A): time is logical time in host pages (the re-implementation counts chunk
//! touches); a demotion updates the chunk's queue id (the re-implementation forgets to, so it
//! never affects placement there); no demotion while `dev_lifetime` is 0 (start-up).

use super::autostream_sfr::log_class;
use super::autostream_sfr::parse_base;
use super::{Attrs, GcMode, PageInfo, Placement, PolicyCtx, RequestInfo, WriteInfo};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

const NIL: u32 = u32::MAX;

pub struct AutoStreamMq {
    // Fixed at construction.
    chunk_pages: u64,
    log_base: f64,
    queues: usize,
    gc_stream: StreamId,
    // Per chunk.
    count: Vec<u32>,
    last: Vec<u64>,
    expire: Vec<u64>,
    queue: Vec<u8>,
    prev: Vec<u32>,
    next: Vec<u32>,
    // Per queue: LRU head (oldest) and MRU tail.
    head: Vec<u32>,
    tail: Vec<u32>,
    // Global.
    dev_max: u32,
    dev_lifetime: u64,
    hottest: u32,
    /// Variant B: touches so far, and the stream of the current request.
    variant_b: bool,
    dev_total: u64,
    req_stream: StreamId,
}

impl AutoStreamMq {
    pub fn new(ctx: &mut PolicyCtx) -> Result<AutoStreamMq, SimError> {
        if ctx.host_streams < 2 {
            return Err(SimError::BadParam(
                "autostream-mq needs at least 2 host streams (N−1 is the GC stream)".into(),
            ));
        }
        let variant_b = ctx.choice("variant", "a", &[("a", false), ("b", true)])?;
        if variant_b && ctx.host_streams < 3 {
            return Err(SimError::BadParam(
                "autostream-mq variant b needs at least 3 host streams (queues 1..N−2, GC N−1)"
                    .into(),
            ));
        }
        let chunk_pages: u64 = ctx.param("chunk", if variant_b { 512 } else { 256 })?;
        let base: String = ctx.param("log_base", if variant_b { "10" } else { "e" }.to_string())?;
        if chunk_pages == 0 {
            return Err(SimError::BadParam("chunk must be ≥ 1".into()));
        }
        let chunks = ctx.logical_pages.div_ceil(chunk_pages) as usize;
        assert!(chunks < NIL as usize);
        // A: queues 0..N−2. B: queues 1..N−2 (index 0 unused).
        let queues = (ctx.host_streams - 1) as usize;
        Ok(AutoStreamMq {
            chunk_pages,
            log_base: parse_base(&base)?,
            queues,
            gc_stream: StreamId((ctx.host_streams - 1) as u8),
            count: vec![0; chunks],
            last: vec![0; chunks],
            expire: vec![0; chunks],
            queue: vec![0; chunks],
            prev: vec![NIL; chunks],
            next: vec![NIL; chunks],
            head: vec![NIL; queues],
            tail: vec![NIL; queues],
            dev_max: 0,
            dev_lifetime: 0,
            hottest: NIL,
            variant_b,
            dev_total: 0,
            req_stream: StreamId(0),
        })
    }

    fn unlink(&mut self, c: u32) {
        let q = self.queue[c as usize] as usize;
        let (p, n) = (self.prev[c as usize], self.next[c as usize]);
        if p == NIL {
            debug_assert_eq!(self.head[q], c);
            self.head[q] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            debug_assert_eq!(self.tail[q], c);
            self.tail[q] = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[c as usize] = NIL;
        self.next[c as usize] = NIL;
    }

    fn push_mru(&mut self, c: u32, q: usize) {
        self.queue[c as usize] = q as u8;
        let t = self.tail[q];
        self.prev[c as usize] = t;
        self.next[c as usize] = NIL;
        if t == NIL {
            self.head[q] = c;
        } else {
            self.next[t as usize] = c;
        }
        self.tail[q] = c;
    }

    fn promote(&mut self, c: u32, t: u64) {
        let ci = c as usize;
        let known = self.count[ci] > 0;
        if known {
            self.unlink(c);
            self.count[ci] = self.count[ci].saturating_add(1);
        } else {
            self.count[ci] = 1;
            self.last[ci] = 0;
        }
        let q = log_class(
            self.count[ci] as u64,
            self.log_base,
            (self.queues - 1) as u32,
        ) as usize;
        if self.count[ci] > self.dev_max {
            self.hottest = c;
            self.dev_lifetime = t.saturating_sub(self.last[ci]);
            self.dev_max = self.count[ci];
        }
        self.push_mru(c, q);
        self.last[ci] = t;
        self.expire[ci] = t + self.dev_lifetime;
    }

    fn demote(&mut self, t: u64) {
        if self.dev_lifetime == 0 {
            return;
        }
        for i in 0..self.queues {
            let h = self.head[i];
            if h == NIL || self.expire[h as usize] >= t {
                continue;
            }
            self.expire[h as usize] = t + self.dev_lifetime;
            let h2 = self.next[h as usize];
            self.unlink(h);
            if h == self.hottest && h2 != NIL {
                self.hottest = h2;
                self.dev_max = self.count[h2 as usize];
            }
            self.push_mru(h, i.saturating_sub(1));
        }
    }

    /// Variant B: one touch of chunk `c`; returns the chunk's queue before it.
    fn touch_b(&mut self, c: u32) -> u8 {
        let ci = c as usize;
        let top = self.queues - 1; // highest queue = stream N−2
        self.dev_total += 1;
        let t = self.dev_total;
        let before = if self.count[ci] == 0 {
            self.push_mru(c, 1);
            1
        } else {
            self.queue[ci]
        };
        self.count[ci] = self.count[ci].saturating_add(1);
        if self.count[ci] > self.dev_max {
            self.dev_lifetime = t - self.last[ci];
            self.dev_max = self.count[ci];
            self.hottest = c;
        }
        self.last[ci] = t;
        self.expire[ci] = t + self.dev_lifetime;
        let qid =
            (log_class(self.count[ci] as u64, self.log_base, top as u32) as usize + 1).min(top);
        if qid != self.queue[ci] as usize {
            self.unlink(c);
            self.push_mru(c, qid);
        }
        for q in (3..=top).rev() {
            let h = self.head[q];
            if h != NIL && self.expire[h as usize] < t {
                self.unlink(h);
                self.push_mru(h, q - 1);
                self.expire[h as usize] = t + self.dev_lifetime;
            }
        }
        before
    }

    /// Queue (= stream) of the chunk holding `lpn`.
    pub fn queue_of(&self, lpn: u64) -> u8 {
        self.queue[(lpn / self.chunk_pages) as usize]
    }
}

impl Placement for AutoStreamMq {
    fn name(&self) -> &'static str {
        "autostream-mq"
    }
    fn sees(&self) -> Attrs {
        Attrs::LPN.union(Attrs::LEN)
    }
    fn gc_mode(&self) -> GcMode {
        GcMode::Policy
    }
    fn on_request(&mut self, req: &RequestInfo, now: LogicalTime) {
        if self.variant_b {
            let c = (req.lpn.0 / self.chunk_pages) as u32;
            self.req_stream = StreamId(self.touch_b(c));
            return;
        }
        let lba = req.lpn.0;
        let pages = req.pages.max(1) as u64;
        let (first, last) = (lba / self.chunk_pages, (lba + pages - 1) / self.chunk_pages);
        for c in first..=last {
            // Time of the request's first page in this chunk.
            let t = now.0 + (c * self.chunk_pages).saturating_sub(lba);
            self.promote(c as u32, t);
            self.demote(t);
        }
    }
    fn on_write(&mut self, w: &WriteInfo, _now: LogicalTime) -> StreamId {
        if self.variant_b {
            return self.req_stream;
        }
        StreamId(self.queue[(w.lpn.0 / self.chunk_pages) as usize])
    }
    fn gc_destination(&mut self, _p: &PageInfo, _now: LogicalTime) -> StreamId {
        self.gc_stream
    }
    fn gc_fanout(&self) -> Option<u32> {
        Some(1) // every GC copy goes to the one GC stream
    }
    fn state_bytes(&self) -> usize {
        self.count.len() * (4 + 8 + 8 + 1 + 4 + 4) + self.head.len() * 8
    }
}
