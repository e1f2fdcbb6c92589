//! `pcstream`'s `merge` rule: with `fit_first` each PC with `n_min` lifetimes has
//! a stream of its own while they fit in the streams beside stream 0, and keeps it; they are
//! clustered only when they outnumber those streams. `min_gain` (the default) clusters (and
//! merges) always.

use pcstream_core::placement::pcstream::PcStream;
use pcstream_core::placement::{
    registry, Cause, Invalidation, Placement, PolicyCtx, Reclaimed, RequestInfo, WriteInfo,
};
use pcstream_core::units::{LogicalTime, Lpn, PcSig, StreamId, UnitId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Host streams of the policy under test: 7 beside stream 0.
const STREAMS: u32 = 8;

/// Pages each PC writes (and sees die) per `learn`: more than `n_min` (16) lifetimes.
const PAGES_PER_PC: u64 = 64;

fn ctx(params: &[(&str, &str)]) -> PolicyCtx {
    ctx_with_budget(params, STREAMS)
}

fn ctx_with_budget(params: &[(&str, &str)], write_point_budget: u32) -> PolicyCtx {
    PolicyCtx {
        host_streams: STREAMS,
        logical_pages: 1 << 20,
        unit_pages: 64,
        units: 64,
        write_point_budget,
        seed: 1,
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// `pcstream-star` fed by hand: writes of one page each, and the death of each.
struct Fed {
    p: PcStream,
    t: u64,
    rng: ChaCha8Rng,
}

impl Fed {
    fn new(params: &[(&str, &str)]) -> Fed {
        Fed::with_budget(params, STREAMS)
    }

    fn with_budget(params: &[(&str, &str)], budget: u32) -> Fed {
        Fed {
            p: PcStream::new(&mut ctx_with_budget(params, budget), false)
                .expect("valid parameters"),
            t: 1 << 40,
            rng: ChaCha8Rng::seed_from_u64(7),
        }
    }

    /// One page written by `pc`; its stream.
    fn write(&mut self, pc: u64, lpn: u64) -> StreamId {
        let req = RequestInfo {
            lpn: Lpn(lpn),
            pages: 1,
            pc: PcSig(pc),
            ..Default::default()
        };
        self.p.on_request(&req, LogicalTime(self.t));
        let w = WriteInfo {
            lpn: Lpn(lpn),
            page_in_request: 0,
            req,
            death: 0,
        };
        let s = self.p.on_write(&w, LogicalTime(self.t));
        self.t += 1;
        s
    }

    /// Each PC in `pcs` writes `PAGES_PER_PC` pages, each dying after `base · 2^z` pages, z
    /// uniform in [−1.5, 1.5].
    fn learn(&mut self, pcs: &[(u64, f64)]) {
        for i in 0..PAGES_PER_PC {
            for &(pc, base) in pcs {
                self.write(pc, i);
                let l = (base * 2f64.powf(self.rng.random_range(-1.5..1.5))) as u64;
                self.p.on_invalidate(&Invalidation {
                    lpn: Lpn(i),
                    t_write: Some(LogicalTime(self.t - l)),
                    pc: PcSig(pc),
                    stream: StreamId(0),
                    cause: Cause::Overwrite,
                    now: LogicalTime(self.t),
                });
            }
        }
    }

    /// The next check, `period` pages after the last reclustering: a reclustering.
    fn recluster(&mut self) {
        let before = self.p.reclusterings();
        self.t += 262_144;
        self.p.tick(LogicalTime(self.t));
        assert_eq!(self.p.reclusterings(), before + 1);
    }

    fn streams(&self, pcs: &[(u64, f64)]) -> Vec<u8> {
        pcs.iter().map(|&(pc, _)| self.p.stream_of(pc).0).collect()
    }
}

/// The streams of `pcs` after learning their lifetimes and one reclustering.
fn streams_after_learning(pcs: &[(u64, f64)], params: &[(&str, &str)]) -> Vec<u8> {
    let mut f = Fed::new(params);
    f.learn(pcs);
    f.recluster();
    f.streams(pcs)
}

/// `n` PCs (signatures 1..=n) whose lifetimes are 2^10 · 4^i pages, except PCs 1 and 2: equal.
fn pcs(n: u64) -> Vec<(u64, f64)> {
    (1..=n)
        .map(|pc| (pc, 1024.0 * 4f64.powi(pc.saturating_sub(2) as i32)))
        .collect()
}

const MIN_GAIN: &[(&str, &str)] = &[("merge", "min_gain")];
const FIT_FIRST: &[(&str, &str)] = &[("merge", "fit_first")];

#[test]
fn fit_first_gives_each_of_up_to_n_minus_1_pcs_a_stream_of_its_own() {
    for n in 2..STREAMS as u64 {
        let pcs = pcs(n);
        let mut s = streams_after_learning(&pcs, FIT_FIRST);
        s.sort_unstable();
        let own: Vec<u8> = (1..=n as u8).collect();
        assert_eq!(s, own, "{n} PCs, each its own stream beside stream 0");
    }
    // `min_gain` puts PCs 1 and 2 (lifetimes alike) in one stream, and a lone PC in stream 0
    // (its data alone there).
    let s = streams_after_learning(&pcs(7), MIN_GAIN);
    assert_eq!(s[0], s[1], "min_gain merges PCs 1 and 2: {s:?}");
    assert_eq!(streams_after_learning(&pcs(1), MIN_GAIN), vec![0]);
}

#[test]
fn one_known_pc_shares_stream_0_only_with_data_like_its_own() {
    // Stream 0 holds nothing but the PC's own early pages: it shares stream 0, under either
    // rule (a stream of its own would only hold a second unit open).
    assert_eq!(streams_after_learning(&pcs(1), FIT_FIRST), vec![0]);
    // PC 0's data live 256× longer: a stream of its own.
    let with_pc0 = [(0, 262_144.0), (1, 1024.0)];
    assert_eq!(streams_after_learning(&with_pc0, FIT_FIRST)[1], 1);
}

#[test]
fn fit_first_clusters_when_the_pcs_outnumber_the_streams() {
    for n in [STREAMS as u64, 12] {
        let pcs = pcs(n);
        let s = streams_after_learning(&pcs, FIT_FIRST);
        assert!(s.iter().all(|&s| (1..STREAMS as u8).contains(&s)), "{s:?}");
        let mut distinct = s.clone();
        distinct.dedup();
        assert!(distinct.len() < n as usize, "{n} PCs share streams: {s:?}");
        // Clustered as `min_gain` clusters, lifetimes in stream order.
        assert_eq!(s, streams_after_learning(&pcs, MIN_GAIN), "{n} PCs");
        assert!(s.windows(2).all(|w| w[0] <= w[1]), "{s:?}");
    }
}

#[test]
fn a_pc_keeps_its_stream_while_the_pcs_fit() {
    let long = [(1, 262_144.0), (2, 16_384.0)];
    let mut f = Fed::new(FIT_FIRST);
    f.learn(&long);
    f.recluster();
    let before = f.streams(&long);
    // A PC with shorter lifetimes than both becomes known: it takes a free stream at its next
    // write, before any reclustering, and a reclustering moves none of them.
    let short = [(3, 64.0)];
    f.learn(&short);
    let s3 = f.write(3, 1000);
    assert!(s3.0 >= 1 && !before.contains(&s3.0), "PC 3 → {s3:?}");
    f.recluster();
    assert_eq!(f.streams(&long), before, "PCs 1 and 2 keep their streams");
    assert_eq!(f.p.stream_of(3), s3);
    assert_eq!(f.write(3, 1001), s3);
    // A new PC 0 write and an unknown PC stay in stream 0.
    assert_eq!(f.write(0, 2000), StreamId(0));
    assert_eq!(f.write(99, 2001), StreamId(0));
}

#[test]
fn a_pc_beyond_the_free_streams_waits_in_stream_0_until_the_pcs_are_clustered() {
    let seven = pcs(7);
    let mut f = Fed::new(FIT_FIRST);
    f.learn(&seven);
    f.recluster();
    // The eighth known PC finds no free stream: stream 0 until the next check clusters all.
    let eighth = [(8, 1.0e9)];
    f.learn(&eighth);
    assert_eq!(f.write(8, 3000), StreamId(0));
    let before = f.p.reclusterings();
    f.p.tick(LogicalTime(f.t));
    assert_eq!(
        f.p.reclusterings(),
        before + 1,
        "reclustered at the next check"
    );
    let all: Vec<(u64, f64)> = seven.iter().chain(&eighth).copied().collect();
    let s = f.streams(&all);
    assert!(s.iter().all(|&s| s >= 1), "{s:?}");
    assert!(
        s[7] >= s[6],
        "the longest-lived PC in the last stream: {s:?}"
    );
}

/// `merge=cost` after learning `pcs` and seeing GC reclaim one unit of 64 pages, `copied` of
/// them valid, opened `age` host pages before; the streams after the next reclustering.
fn streams_by_cost(pcs: &[(u64, f64)], budget: u32, copied: u32, age: u64) -> Vec<u8> {
    let mut f = Fed::with_budget(COST, budget);
    f.learn(pcs);
    f.p.on_segment_reclaimed(
        &Reclaimed {
            unit: UnitId(0),
            wp: 1,
            created: LogicalTime(f.t - age),
            valid_copied: copied,
        },
        LogicalTime(f.t),
    );
    f.recluster();
    f.streams(pcs)
}

const COST: &[(&str, &str)] = &[("merge", "cost")];

#[test]
fn cost_opens_a_stream_only_where_it_pays() {
    // Two PCs writing half the pages each, one dying after ~2^10 host pages, one after ~2^20;
    // GC reclaims units at age 2^19 and copies 0.25 pages per host page (32 of a 64-page unit
    // after the 128 pages written). Apart, the long-lived PC's units may age to ~2^20 (the
    // short-lived one's die by 2^12): the copies saved are ~0.2 per host page (the model's
    // two-group case in `open_cost`), against 0.25 / (6 − 1) = 0.05 for one more unit of the
    // 6 of slack (budget 8, open: stream 0 and the two groups, plus the one to open).
    let apart = [(1, 1024.0), (2, 1_048_576.0)];
    let s = streams_by_cost(&apart, STREAMS, 32, 1 << 19);
    assert_ne!(s[0], s[1], "{s:?}");
    assert!(s.iter().all(|&s| s >= 1), "{s:?}");
    // The same lifetimes: nothing saved, so they share a stream.
    let alike = [(1, 4096.0), (2, 4096.0)];
    let s = streams_by_cost(&alike, STREAMS, 32, 1 << 19);
    assert_eq!(s[0], s[1], "{s:?}");
    // No slack for one more unit (budget 3: stream 0 and the two groups): it costs more than
    // anything saves, so even the PCs worth separating share a stream.
    let s = streams_by_cost(&apart, 3, 32, 1 << 19);
    assert_eq!(s[0], s[1], "{s:?}");
}

#[test]
fn cost_merges_as_min_gain_before_any_gc() {
    for n in [3, 7] {
        let pcs = pcs(n);
        assert_eq!(
            streams_after_learning(&pcs, COST),
            streams_after_learning(&pcs, MIN_GAIN),
            "{n} PCs"
        );
    }
}

#[test]
fn merge_takes_cost_fit_first_or_min_gain() {
    for ok in ["cost", "fit_first", "min_gain"] {
        registry::build("pcstream", &mut ctx(&[("merge", ok)])).expect(ok);
    }
    let e = registry::build("pcstream", &mut ctx(&[("merge", "kmeans")]))
        .err()
        .expect("an unknown rule is refused")
        .to_string();
    assert!(
        e.contains("merge=kmeans")
            && e.contains("cost")
            && e.contains("fit_first")
            && e.contains("min_gain"),
        "{e}"
    );
}
