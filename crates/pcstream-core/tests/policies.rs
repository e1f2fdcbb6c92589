//! Each policy's decision rule on a crafted trace, and the WAF ordering on a RocksDB-like mix.

mod common;
use common::*;
use pcstream_core::placement::{
    autostream_mq::AutoStreamMq, autostream_sfr::AutoStreamSfr, fstream::FStream,
    lkstream::LkStream, manual::Manual, midas::Midas, sepbit::SepBit, Cause, Invalidation,
    PageInfo, Placement, PolicyCtx, Reclaimed, RequestInfo, WriteInfo,
};
use pcstream_core::units::{LogicalTime, Lpn, PcSig, StreamId, UnitId};
use pcstream_core::{Request, SimOptions, Simulator};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn ctx(logical: u64, streams: u32, params: &[(&str, &str)]) -> PolicyCtx {
    PolicyCtx {
        host_streams: streams,
        logical_pages: logical,
        unit_pages: 64,
        units: 64,
        write_point_budget: streams,
        seed: 1,
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// Drive a policy's host-write hooks directly: one request, its pages' streams.
struct Driver {
    t: u64,
}

impl Driver {
    fn write(&mut self, p: &mut dyn Placement, r: RequestInfo) -> Vec<StreamId> {
        p.on_request(&r, LogicalTime(self.t));
        (0..r.pages.max(1))
            .map(|i| {
                let w = WriteInfo {
                    lpn: Lpn(r.lpn.0 + i as u64),
                    page_in_request: i,
                    req: r,
                    death: 0,
                };
                let s = p.on_write(&w, LogicalTime(self.t));
                self.t += 1;
                s
            })
            .collect()
    }
    fn page(&mut self, p: &mut dyn Placement, lpn: u64) -> StreamId {
        let r = RequestInfo {
            lpn: Lpn(lpn),
            pages: 1,
            ..Default::default()
        };
        self.write(p, r)[0]
    }
}

#[test]
fn autostream_sfr_heats_a_chunk_and_lets_it_cool() {
    let mut p = AutoStreamSfr::new(&mut ctx(1 << 20, 8, &[])).unwrap();
    let mut d = Driver { t: 0 };
    // 100 non-sequential writes into chunk 0 (512 pages): ln(100) → stream 4.
    let mut last = StreamId(0);
    for i in 0..100u64 {
        last = d.page(&mut p, (i * 7) % 512);
    }
    assert_eq!(p.count_of(0), 100);
    assert_eq!(last, StreamId(4), "floor(ln 100) = 4");
    // A chunk written once is cold.
    assert_eq!(d.page(&mut p, 100_000), StreamId(0));
    // A sequential request inherits the previous stream even in a cold chunk.
    let r = d.write(
        &mut p,
        RequestInfo {
            lpn: Lpn(100_001),
            pages: 4,
            ..Default::default()
        },
    );
    assert_eq!(r, vec![StreamId(0); 4]);
    // 4 decay periods elsewhere (sequential 512-page requests over other chunks).
    let start = d.t;
    while d.t < start + 4 * 16_384 {
        let lpn = 4096 + (d.t % 65_536);
        d.write(
            &mut p,
            RequestInfo {
                lpn: Lpn(lpn - lpn % 512),
                pages: 512,
                ..Default::default()
            },
        );
    }
    // 100 >> 4 = 6, +1 = 7 → floor(ln 7) = 1.
    let s = d.page(&mut p, 3);
    assert_eq!(p.count_of(0), 7);
    assert_eq!(s, StreamId(1), "the idle chunk cooled down");
    // GC copies all go to the reserved stream N−1.
    let pi = PageInfo {
        lpn: Lpn(3),
        t_write: None,
        pc: PcSig(0),
        stream: StreamId(1),
        victim_wp: 1,
        victim: UnitId(0),
        victim_created: LogicalTime(0),
        death: 0,
    };
    assert_eq!(p.gc_destination(&pi, LogicalTime(d.t)), StreamId(7));
}

#[test]
fn autostream_sfr_variant_b_classifies_before_updating() {
    let mut p = AutoStreamSfr::new(&mut ctx(1 << 16, 8, &[("variant", "b")])).unwrap();
    let mut d = Driver { t: 0 };
    let s: Vec<StreamId> = (0..12u64).map(|i| d.page(&mut p, (i * 3) % 512)).collect();
    // log10: the 10th write makes count 10 → sid 1, returned from the 11th write on.
    assert_eq!(&s[..10], &[StreamId(0); 10]);
    assert_eq!(&s[10..], &[StreamId(1); 2]);
}

#[test]
fn autostream_mq_promotes_hot_chunks_and_demotes_idle_ones() {
    let mut p = AutoStreamMq::new(&mut ctx(1 << 16, 8, &[])).unwrap();
    let mut d = Driver { t: 0 };
    for i in 0..60u64 {
        d.page(&mut p, (i * 5) % 256); // chunk 0
        d.page(&mut p, 256 + (i * 5) % 256); // chunk 1
    }
    assert_eq!(p.queue_of(0), 4, "floor(ln 60) = 4");
    assert_eq!(p.queue_of(256), 4);
    // Chunk 1 keeps being written, chunk 0 is left alone: its expiry passes and it is demoted
    // one queue per touch while it heads its queue.
    for i in 0..400u64 {
        d.page(&mut p, 256 + (i * 5) % 256);
    }
    assert_eq!(p.queue_of(0), 0, "idle chunk demoted to the coldest queue");
    assert_eq!(p.queue_of(256), 6, "hot chunk capped at N−2");
    assert_eq!(d.page(&mut p, 300), StreamId(6));
}

#[test]
fn autostream_mq_variant_b_places_by_the_queue_before_the_touch_and_never_demotes_queue_2() {
    let mut p = AutoStreamMq::new(&mut ctx(1 << 16, 8, &[("variant", "b")])).unwrap();
    let mut d = Driver { t: 0 };
    // Chunk 0 (512 pages): a new chunk is in queue 1; the 10th touch moves it to queue 2
    // (floor(log10 10) + 1), but that request still goes to the queue it had before.
    let s: Vec<StreamId> = (0..11).map(|_| d.page(&mut p, 7)).collect();
    assert!(s[..10].iter().all(|&x| x == StreamId(1)), "{s:?}");
    assert_eq!(s[10], StreamId(2));
    // The 100th touch reaches queue 3.
    for _ in 11..100 {
        d.page(&mut p, 7);
    }
    assert_eq!(p.queue_of(0), 3);
    // Chunk 0 was touched at every step, so dev_lifetime = 1: one touch elsewhere lets it
    // expire and it drops to queue 2 — and no further, however long it stays idle.
    for i in 0..50u64 {
        d.page(&mut p, 512 * (1 + i % 4));
    }
    assert_eq!(p.queue_of(0), 2, "queues 1 and 2 are never demoted");
    // Placed in queue 2; the touch (count 101) takes it back to queue 3.
    assert_eq!(d.page(&mut p, 7), StreamId(2));
    // A request spanning chunks is placed by its first chunk only.
    let r = RequestInfo {
        lpn: Lpn(511),
        pages: 2,
        ..Default::default()
    };
    assert_eq!(d.write(&mut p, r), vec![StreamId(3), StreamId(3)]);
    assert!(AutoStreamMq::new(&mut ctx(1 << 16, 2, &[("variant", "b")])).is_err());
}

#[test]
fn sepbit_classifies_by_inferred_invalidation_time() {
    let mut p = SepBit::new(&mut ctx(4096, 8, &[])).unwrap();
    let mut d = Driver { t: 0 };
    for l in 0..300 {
        assert_eq!(d.page(&mut p, l), StreamId(1), "new LPNs are class 2");
    }
    // ℓ = ∞: an overwrite within the FIFO window is short-lived.
    assert_eq!(d.page(&mut p, 250), StreamId(0));
    // Set ℓ = 100 with 16 reclaimed class-1 units of lifespan 100.
    let now = LogicalTime(d.t);
    for u in 0..16 {
        let r = Reclaimed {
            unit: UnitId(u),
            wp: 0,
            created: LogicalTime(now.0 - 100),
            valid_copied: 0,
        };
        p.on_segment_reclaimed(&r, now);
    }
    assert_eq!(p.ell(), (Some(100), 1));
    // Predecessor lived 50 < ℓ → short; 150 ≥ ℓ → long.
    let a = d.t;
    d.page(&mut p, 1000);
    while d.t < a + 50 {
        d.page(&mut p, 2000 + d.t % 500);
    }
    assert_eq!(d.page(&mut p, 1000), StreamId(0));
    let b = d.t;
    while d.t < b + 150 {
        d.page(&mut p, 2000 + d.t % 500);
    }
    assert_eq!(d.page(&mut p, 1000), StreamId(1));
    // GC: from a class-1 unit → class 3; else by age vs 4ℓ = 400 and 16ℓ = 1600.
    let t = LogicalTime(d.t + 10_000);
    let gc = |p: &mut SepBit, wp: u8, age: Option<u64>| {
        let pi = PageInfo {
            lpn: Lpn(7),
            t_write: age.map(|a| LogicalTime(t.0 - a)),
            pc: PcSig(0),
            stream: StreamId(0),
            victim_wp: wp,
            victim: UnitId(0),
            victim_created: LogicalTime(0),
            death: 0,
        };
        p.gc_destination(&pi, t).0
    };
    assert_eq!(gc(&mut p, 0, Some(5000)), 2);
    assert_eq!(gc(&mut p, 1, Some(399)), 3);
    assert_eq!(gc(&mut p, 3, Some(400)), 4);
    assert_eq!(gc(&mut p, 1, Some(1600)), 5);
    assert_eq!(gc(&mut p, 1, None), 5);
}

#[test]
fn manual_obeys_hints_and_class_recipes() {
    let mut p = Manual::new(&mut ctx(1024, 8, &[("class_map", "7:5")])).unwrap();
    let mut d = Driver { t: 0 };
    let hinted = |hint: u8, class: u16| RequestInfo {
        hint,
        file_class: class,
        pages: 1,
        ..Default::default()
    };
    let s: Vec<u8> = [
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 0),
        (4, 0),
        (5, 0),
        (0, 7),
        (2, 7),
    ]
    .iter()
    .map(|&(h, c)| d.write(&mut p, hinted(h, c))[0].0)
    .collect();
    // NOT_SET, NONE → 0; SHORT → 1 … EXTREME → 4; unhinted class 7 → 5; a hint wins over class.
    assert_eq!(s, vec![0, 0, 1, 2, 3, 4, 5, 1]);
    let mut few = Manual::new(&mut ctx(1024, 3, &[("map", "2:6")])).unwrap();
    assert_eq!(
        d.write(&mut few, hinted(2, 0))[0],
        StreamId(2),
        "clamped to N−1"
    );
    assert_eq!(d.write(&mut few, hinted(5, 0))[0], StreamId(2));
}

#[test]
fn fstream_separates_journal_metadata_and_named_files() {
    let mut p = FStream::new(&mut ctx(
        1024,
        8,
        &[("fname_classes", "3"), ("extn_classes", "4,9")],
    ))
    .unwrap();
    let mut d = Driver { t: 0 };
    let w = |meta: u8, class: u16| RequestInfo {
        meta,
        file_class: class,
        pages: 1,
        ..Default::default()
    };
    let s: Vec<u8> = [
        (1, 3),
        (2, 0),
        (3, 0),
        (4, 0),
        (5, 0),
        (0, 3),
        (0, 9),
        (0, 1),
    ]
    .iter()
    .map(|&(m, c)| d.write(&mut p, w(m, c))[0].0)
    .collect();
    assert_eq!(s, vec![1, 2, 3, 4, 4, 5, 6, 0]);
}

#[test]
fn lkstream_clusters_predicted_heat_each_window() {
    let mut p =
        LkStream::new(&mut ctx(1 << 16, 4, &[("chunk", "64"), ("window", "1000")])).unwrap();
    let mut d = Driver { t: 0 };
    // Window 1: chunk 0 gets 900 writes, chunk 1 90, chunk 2 10; chunk 3 none.
    for i in 0..1000u64 {
        let lpn = match i % 100 {
            0..90 => i % 64,
            90..99 => 64 + i % 64,
            _ => 128 + i % 64,
        };
        assert_eq!(
            d.page(&mut p, lpn),
            StreamId(0),
            "nothing is clustered before a window ends"
        );
    }
    p.tick(LogicalTime(d.t));
    let s: Vec<u8> = [0, 64, 128, 192]
        .iter()
        .map(|&l| p.stream_of(l).0)
        .collect();
    assert_eq!(
        s,
        vec![1, 2, 3, 0],
        "hottest → 1, coldest → N−1, never written → 0"
    );
    // Window 2: only chunk 2 is written; the EWMA halves the others, chunk 2 becomes hottest.
    for i in 0..1000u64 {
        d.page(&mut p, 128 + i % 64);
    }
    p.tick(LogicalTime(d.t));
    // Predictions 225, 22.5, 502.5 → chunk 2 hottest, then chunk 0, then chunk 1.
    let s: Vec<u8> = [0, 64, 128].iter().map(|&l| p.stream_of(l).0).collect();
    assert_eq!(s, vec![2, 3, 1]);
}

#[test]
fn midas_promotes_quickly_rewritten_lpns_to_hot_and_chains_gc_survivors() {
    let mut p = Midas::new(&mut ctx(1000, 8, &[("cold_start", "0")])).unwrap();
    let mut d = Driver { t: 0 };
    let write = |p: &mut Midas, d: &mut Driver, lpn: u64, prev: Option<u64>| {
        if let Some(tw) = prev {
            p.on_invalidate(&Invalidation {
                lpn: Lpn(lpn),
                t_write: Some(LogicalTime(tw)),
                pc: PcSig(0),
                stream: StreamId(1),
                cause: Cause::Overwrite,
                now: LogicalTime(d.t),
            });
        }
        d.page(p, lpn)
    };
    // New LPN → group 1; three quick rewrites (young, still in group 1) → counter 3 → HOT.
    assert_eq!(write(&mut p, &mut d, 5, None), StreamId(1));
    assert_eq!(write(&mut p, &mut d, 5, Some(0)), StreamId(1));
    assert_eq!(write(&mut p, &mut d, 5, Some(1)), StreamId(1));
    assert_eq!(write(&mut p, &mut d, 5, Some(2)), StreamId(0));
    assert_eq!(p.hot_counter(5), 3);
    // GC: a hot survivor loses 2 and moves to group 1; group g → g+1, capped at G−1.
    let pi = |wp: u8| PageInfo {
        lpn: Lpn(5),
        t_write: Some(LogicalTime(0)),
        pc: PcSig(0),
        stream: StreamId(0),
        victim_wp: wp,
        victim: UnitId(0),
        victim_created: LogicalTime(0),
        death: 0,
    };
    assert_eq!(p.gc_destination(&pi(0), LogicalTime(d.t)), StreamId(1));
    assert_eq!(p.hot_counter(5), 1);
    assert_eq!(p.gc_destination(&pi(3), LogicalTime(d.t)), StreamId(4));
    assert_eq!(p.gc_destination(&pi(7), LogicalTime(d.t)), StreamId(7));
    // An old predecessor (not in group 1 any more) cools the LPN.
    assert_eq!(write(&mut p, &mut d, 5, Some(0)), StreamId(1));
    assert_eq!(p.hot_counter(5), 0);
}

fn file_write(lpn: u64, pages: u32, file: u32, class: u16) -> Request {
    Request {
        file,
        file_class: class,
        ..Request::write(lpn, pages)
    }
}

#[test]
fn filestream_mapper_groups_new_files_with_similar_types() {
    let cfg = device(128, 64, 0.3, "greedy", "block", 3);
    let mut sim = Simulator::new(&cfg, opts("filestream", 0.0, 0)).unwrap();
    sim.start().unwrap();
    let filler =
        |n: u64| -> Vec<Request> { (0..n).map(|i| Request::write(5000 + i % 500, 1)).collect() };
    // History: type-2 files live 1016 pages each (identical → dif(2,2) = 0), written over 508;
    // type-1 files live 8 pages. Deletion = the TRIM of a file's last live page.
    for i in 0..4u32 {
        let base = 1000 + 64 * i as u64;
        sim.feed(&[file_write(base, 8, 10 + i, 2)]).unwrap();
        sim.feed(&filler(500)).unwrap();
        sim.feed(&[file_write(base + 8, 8, 10 + i, 2)]).unwrap();
        sim.feed(&filler(500)).unwrap();
        sim.feed(&[Request::trim(base, 16)]).unwrap();
        let b1 = 2000 + 64 * i as u64;
        sim.feed(&[file_write(b1, 8, 20 + i, 1), Request::trim(b1, 8)])
            .unwrap();
    }
    // F1 (type 2) → stream 1 (all scores 0, lowest id); F2 (type 1) avoids F1's stream (dif ≈ 1);
    // F3 (type 2) joins F1 (dif 0) rather than F2.
    sim.feed(&[
        file_write(3000, 4, 50, 2),
        file_write(3100, 4, 51, 1),
        file_write(3200, 4, 52, 2),
    ])
    .unwrap();
    let s: Vec<Option<u8>> = [3000, 3100, 3200, 5000]
        .iter()
        .map(|&l| sim.mapped_stream(l))
        .collect();
    assert_eq!(s, vec![Some(1), Some(2), Some(1), Some(0)]);
}

#[test]
fn filestream_remapper_splits_long_open_files_by_update_density() {
    let cfg = device(128, 64, 0.3, "greedy", "block", 5);
    let mut o = opts("filestream", 0.0, 0);
    o.params.insert("period".into(), "2000".into());
    let mut sim = Simulator::new(&cfg, o).unwrap();
    sim.start().unwrap();
    // A: 4 pages rewritten all the time (high USM); B: 400 pages written once (USM 1).
    sim.feed(&[file_write(0, 4, 1, 3), file_write(100, 400, 2, 3)])
        .unwrap();
    let a: Vec<Request> = (0..1000).map(|_| file_write(0, 4, 1, 3)).collect();
    sim.feed(&a).unwrap();
    assert!(sim.host_time().0 > 4000, "two remapper periods have passed");
    sim.feed(&[file_write(0, 1, 1, 3), file_write(100, 1, 2, 3)])
        .unwrap();
    // d = 1 (every file is long-open): remapper streams 2..4, highest USM first.
    assert_eq!(sim.mapped_stream(0), Some(2));
    assert_eq!(sim.mapped_stream(100), Some(3));
}

/// PC A: lifetime ≈ 1 k pages (a 1000-page ring); PC B: 32 pages trimmed ≈ 1 M pages later.
fn two_pc_trace() -> Vec<Request> {
    let mut reqs = vec![Request::write(2000, 32).with_pc(0xB)];
    for i in 0..1_000_000u64 {
        reqs.push(Request::write(i % 1000, 1).with_pc(0xA));
    }
    reqs.push(Request::trim(2000, 32));
    reqs
}

#[test]
fn pcstream_separates_pcs_by_lifetime_and_new_pcs_go_to_stream_0() {
    let cfg = device(128, 64, 0.3, "greedy", "block", 8);
    for policy in ["pcstream-star", "pcstream"] {
        let mut o = opts(policy, 0.0, 0);
        o.params.insert("period".into(), "1000064".into());
        let mut sim = Simulator::new(&cfg, o).unwrap();
        sim.start().unwrap();
        let reqs = two_pc_trace();
        sim.feed(&reqs).unwrap();
        // A has had lifetimes since the first check (period/16): clustered early, off stream 0.
        assert!(
            sim.mapped_stream(5) >= Some(1),
            "{policy}: A clustered early"
        );
        // B's lifetime (trim) is 2^10× A's and streams are free: it reclusters at the next
        // check, which the padding crosses; then each PC writes again.
        let pad: Vec<Request> = (0..64).map(|i| Request::write(i, 1).with_pc(0xA)).collect();
        sim.feed(&pad).unwrap();
        let after = [
            Request::write(10, 1).with_pc(0xA),
            Request::write(3000, 1).with_pc(0xB),
            Request::write(3001, 1).with_pc(0xC),
            Request::write(3002, 1),
        ];
        sim.feed(&after).unwrap();
        let (a, b) = (
            sim.mapped_stream(10).unwrap(),
            sim.mapped_stream(3000).unwrap(),
        );
        assert!(a >= 1 && b > a, "{policy}: A → {a}, B → {b}");
        assert_eq!(
            sim.mapped_stream(3001),
            Some(0),
            "{policy}: a new PC goes to stream 0"
        );
        assert_eq!(
            sim.mapped_stream(3002),
            Some(0),
            "{policy}: PC 0 is unknown"
        );
        let r = sim.finish();
        assert!(r.saved_table.is_some());
    }
}

#[test]
fn pcstream_bounded_table_evicts_the_least_recently_used_pcs() {
    use pcstream_core::placement::pcstream::PcStream;
    let mut p = PcStream::new(&mut ctx(1 << 16, 8, &[("max_pcs", "4")]), false).unwrap();
    let mut d = Driver { t: 0 };
    let write = |d: &mut Driver, p: &mut PcStream, pc: u64| {
        let r = RequestInfo {
            lpn: Lpn(pc),
            pages: 1,
            pc: PcSig(pc),
            ..Default::default()
        };
        d.write(p, r);
    };
    // PC 1 writes between every newcomer, so CLOCK always finds it referenced.
    for pc in 100..120 {
        write(&mut d, &mut p, 1);
        write(&mut d, &mut p, pc);
    }
    assert!(p.tracks(1), "a PC in constant use stays");
    assert!(p.tracks(119) && !p.tracks(100), "old one-off PCs go");
    assert_eq!(p.evictions(), 21 - 4);
    assert!(p.state_bytes() < 4096, "bounded: {}", p.state_bytes());
    let unbounded = PcStream::new(&mut ctx(1 << 16, 8, &[("max_pcs", "0")]), false).unwrap();
    assert_eq!(unbounded.evictions(), 0);
}

#[test]
fn pcstream_table_persists_across_runs() {
    let cfg = device(128, 64, 0.3, "greedy", "block", 8);
    let trace: Vec<Request> = (0..40_000u64)
        .map(|i| {
            if i % 2 == 0 {
                Request::write(i / 2 % 200, 1).with_pc(7)
            } else {
                Request::write(1000 + i / 2 % 2000, 1).with_pc(9)
            }
        })
        .collect();
    let mut o = opts("pcstream", 0.0, 0);
    o.params.insert("period".into(), "10000".into());
    let mut sim = Simulator::new(&cfg, o.clone()).unwrap();
    sim.start().unwrap();
    sim.feed(&trace).unwrap();
    let table = sim.finish().saved_table.unwrap();
    let v: serde_json::Value = serde_json::from_str(&table).unwrap();
    assert_eq!(v["pcs"][0]["sig"], "7", "signatures are decimal strings");
    assert_eq!(v["pcs"].as_array().unwrap().len(), 2);
    // Next run: the loaded table places both PCs at once (no reclustering has happened yet),
    // and the short-lived PC gets the lower stream.
    let mut sim = Simulator::new(&cfg, o.clone()).unwrap();
    sim.policy_mut().load_state(&table).unwrap();
    sim.start().unwrap();
    sim.feed(&[
        Request::write(0, 1).with_pc(7),
        Request::write(1000, 1).with_pc(9),
    ])
    .unwrap();
    let (s7, s9) = (
        sim.mapped_stream(0).unwrap(),
        sim.mapped_stream(1000).unwrap(),
    );
    assert!(s7 >= 1 && s9 > s7, "loaded table: pc 7 → {s7}, pc 9 → {s9}");
    // Ablation: an empty table leaves both in stream 0.
    let mut sim = Simulator::new(&cfg, o).unwrap();
    sim.start().unwrap();
    sim.feed(&[Request::write(0, 1).with_pc(7)]).unwrap();
    assert_eq!(sim.mapped_stream(0), Some(0));
    assert!(sim.policy_mut().load_state("{\"format\":2}").is_err());
}

/// A RocksDB-like mix: a cold static region (pc 3), an append-only WAL trimmed behind its head
/// (pc 1, short lifetimes) and a compaction writer whose 256-page files die after log-uniform
/// lifetimes between 2 k and 256 k pages (pc 2, wide spread), each file trimmed at death.
pub fn rocks_mix(logical: u64, total: u64, seed: u64) -> Vec<Request> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut reqs = Vec::new();
    let cold = logical * 3 / 10;
    for l in (0..cold).step_by(64) {
        reqs.push(Request::write(l, 64.min(cold - l) as u32).with_pc(3));
    }
    let wal = (cold, 1024u64);
    let file = 256u64;
    let slots_base = cold + wal.1;
    let slots = (logical - slots_base) / file;
    let mut free: Vec<u64> = (0..slots).rev().collect();
    let mut live: std::collections::BTreeSet<(u64, u64)> = Default::default();
    let mut t = 0u64;
    let mut wal_head = 0u64;
    let mut wal_written = 0u64;
    let mut cur: [Option<(u64, u64)>; 4] = [None; 4]; // (slot, pages written)
    while t < total {
        // WAL: 8 pages, trim the oldest 8 once 512 are live.
        reqs.push(Request::write(wal.0 + wal_head % wal.1, 8).with_pc(1));
        wal_head += 8;
        wal_written += 8;
        t += 8;
        if wal_written > 512 {
            let old = wal_head - 520;
            reqs.push(Request::trim(wal.0 + old % wal.1, 8));
        }
        // Compaction: 32 pages per step.
        while let Some(&(d, s)) = live.first() {
            if d > t && free.len() >= 4 {
                break;
            }
            live.pop_first();
            reqs.push(Request::trim(slots_base + s * file, file as u32));
            free.push(s);
        }
        // Four output files at once, 8 pages each per step: a unit mixes their lifetimes.
        for c in cur.iter_mut() {
            let (slot, done) = c.unwrap_or_else(|| (free.pop().expect("a free slot"), 0));
            reqs.push(Request::write(slots_base + slot * file + done, 8).with_pc(2));
            t += 8;
            if done + 8 == file {
                let life = (2048.0 * 128f64.powf(rng.random::<f64>())) as u64;
                live.insert((t + life, slot));
                *c = None;
            } else {
                *c = Some((slot, done + 8));
            }
        }
    }
    reqs
}

#[test]
fn mix_ordering_oracle_pcstream_star_baseline() {
    let cfg = device(640, 64, 0.12, "greedy", "block", 8);
    let logical = cfg.logical_pages();
    let reqs = rocks_mix(logical, 12 * logical, 5);
    let waf = |p: &str| {
        let mut o = opts(p, 0.0, 3 * logical);
        if p.starts_with("pcstream") {
            o.params.insert("period".into(), "16384".into());
        }
        run(&cfg, o, &reqs, false).waf
    };
    let (o, pc, star, b) = (
        waf("oracle"),
        waf("pcstream"),
        waf("pcstream-star"),
        waf("baseline"),
    );
    eprintln!("oracle {o:.3} pcstream {pc:.3} pcstream-star {star:.3} baseline {b:.3}");
    assert!(o <= pc, "oracle {o} ≤ pcstream {pc}");
    assert!(pc <= star, "pcstream {pc} ≤ pcstream-star {star}");
    assert!(
        star < b * 0.9,
        "pcstream-star {star} clearly below baseline {b}"
    );
    // Every registered policy, the new ones included.
    for p in pcstream_core::placement::registry::names() {
        if p == "oracle" {
            continue;
        }
        let w = waf(p);
        eprintln!("{p} {w:.3}");
        assert!(w >= o, "{p} {w} below the oracle {o}");
    }
}

#[test]
fn every_policy_reports_its_state_and_what_it_sees() {
    let cfg = device(256, 64, 0.3, "greedy", "block", 8);
    for name in pcstream_core::placement::registry::names() {
        let sim = Simulator::new(
            &cfg,
            SimOptions {
                policy: name.into(),
                ..opts(name, 0.0, 0)
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let p = sim.policy();
        assert_eq!(p.name(), name);
        let sees = p.sees().names();
        match name {
            "pcstream" | "pcstream-star" => {
                assert!(
                    sees.contains(&"pc") && !sees.contains(&"lpn"),
                    "{name}: {sees:?}"
                )
            }
            "autostream-sfr" | "autostream-mq" => assert_eq!(sees, vec!["lpn", "len"]),
            "manual" => assert_eq!(sees, vec!["hint"]),
            "fstream" => assert_eq!(sees, vec!["file_class", "meta"]),
            _ => {}
        }
        if matches!(
            name,
            "autostream-sfr" | "autostream-mq" | "sepbit" | "hotcold"
        ) {
            assert!(p.state_bytes() > 0, "{name} keeps per-item state");
        }
    }
}

#[test]
fn pcstream_high_variance_sends_gc_copies_of_the_compaction_stream_to_a_substream() {
    let cfg = device(640, 64, 0.12, "greedy", "block", 8);
    let logical = cfg.logical_pages();
    let reqs = rocks_mix(logical, 8 * logical, 5);
    // (WAF, live compaction pages held by substream write points ≥ 8) of one run.
    let run_with = |policy: &str, params: &[(&str, &str)]| {
        let mut o = opts(policy, 0.0, 3 * logical);
        o.params.insert("period".into(), "16384".into());
        if policy == "pcstream" {
            o.params
                .insert("substream_policy".into(), "high_variance".into());
        }
        for (k, v) in params {
            o.params.insert(k.to_string(), v.to_string());
        }
        let mut sim = Simulator::new(&cfg, o).unwrap();
        sim.start().unwrap();
        sim.feed(&reqs).unwrap();
        let compaction = (logical * 3 / 10 + 1024)..logical;
        let in_sub = compaction
            .filter(|&l| sim.mapped_write_point(l).is_some_and(|s| s >= 8))
            .count();
        let wal = (logical * 3 / 10)..(logical * 3 / 10 + 1024);
        let wal_sub = wal
            .filter(|&l| sim.mapped_write_point(l).is_some_and(|s| s >= 8))
            .count();
        (sim.finish(), in_sub, wal_sub)
    };
    let (hv, hv_sub, hv_wal_sub) = run_with("pcstream", &[]);
    let (cv, cv_sub, cv_wal_sub) = run_with("pcstream", &[("hv_test", "cv")]);
    let (none, none_sub, _) = run_with("pcstream", &[("hv_ratio", "1e9")]);
    let (none_cv, none_cv_sub, _) = run_with("pcstream", &[("hv_test", "cv"), ("hv_cv", "1e9")]);
    let (star, _, _) = run_with("pcstream-star", &[]);
    eprintln!(
        "high_variance {:.3} ({} open of {}, {hv_sub} compaction pages in substreams), by CV {:.3} ({cv_sub}), no substream {:.3} ({} open), star {:.3}",
        hv.waf, hv.open_write_points, hv.write_points, cv.waf, none.waf, none.open_write_points, star.waf
    );
    assert_eq!(hv.gc_mode, "policy");
    assert_eq!(
        hv.write_points, 10,
        "8 host streams + M = 2 substream slots"
    );
    // GC survivors of the compaction stream (wide lifetimes: its old pages die far more slowly
    // than its young ones) sit in a substream; the WAL's lifetimes hardly vary, so its pages
    // never do, by death rates or by CV; with a threshold of 1e9 no stream qualifies.
    assert!(hv_sub > 0, "compaction survivors in a substream");
    assert_eq!(hv_wal_sub, 0, "WAL pages never go to a substream");
    assert!(cv_sub > 0, "by CV: compaction survivors in a substream");
    assert_eq!(cv_wal_sub, 0, "by CV: WAL pages never go to a substream");
    assert_eq!(none_sub, 0, "no substream without a qualifying stream");
    assert_eq!(
        none_cv_sub, 0,
        "by CV: no substream without a qualifying stream"
    );
    assert!(none_cv.waf == none.waf, "no substream is no substream");
    // Same GC reserve (policy mode keeps one free unit per write point): substreams pay off.
    assert!(
        hv.waf < none.waf,
        "substream {} vs none {}",
        hv.waf,
        none.waf
    );
    assert!(
        hv.waf < star.waf,
        "substream {} vs star {}",
        hv.waf,
        star.waf
    );
}

#[test]
fn pcstream_first_come_ablation_hands_out_streams_in_order_of_warm_up() {
    let cfg = device(128, 64, 0.3, "greedy", "block", 8);
    let mut o = opts("pcstream-star", 0.0, 0);
    o.params.insert("pc_assign".into(), "first_come".into());
    let mut sim = Simulator::new(&cfg, o).unwrap();
    sim.start().unwrap();
    // PC 9 passes 1000 pages first (in 8-page requests), then PC 4; PC 5 stays below.
    let mut reqs: Vec<Request> = (0..130u64)
        .map(|i| Request::write(i % 100 * 8, 8).with_pc(9))
        .collect();
    reqs.extend((0..130u64).map(|i| Request::write(1000 + i % 100 * 8, 8).with_pc(4)));
    reqs.extend((0..10u64).map(|i| Request::write(2000 + i, 1).with_pc(5)));
    sim.feed(&reqs).unwrap();
    // The last requests of PC 9 and PC 4 (i = 129) wrote LPNs 232 and 1232.
    let s: Vec<Option<u8>> = [232, 1232, 2000]
        .iter()
        .map(|&l| sim.mapped_stream(l))
        .collect();
    assert_eq!(s, vec![Some(1), Some(2), Some(0)]);
}

#[test]
fn the_strict_device_check_counts_the_gc_reserve_of_every_destination() {
    // SepBIT's 6 classes on a 1-stream device need 5 internal write points, and GC may send a
    // victim's copies to all 6: 5 open units + 6 GC units + 1 for the waiting write point = 12,
    // more than the 10 units that 38 blocks of 2 pages have beyond the packed logical space.
    // `validate_for` (one GC destination) passes; `validate_with` (six) does not.
    let cfg = device(38, 2, 0.34, "greedy", "block", 1);
    assert_eq!(cfg.spare_units(), 10);
    assert_eq!(pcstream_core::config::gc_reserve(6, 6), 12);
    assert!(cfg.validate_for(6).is_ok());
    let e = cfg.validate_with(6, 6).unwrap_err().to_string();
    assert!(
        e.contains("10 spare units") && e.contains("the 12 that 6 open write points and 6 GC"),
        "{e}"
    );
    let e = Simulator::new(&cfg, opts("sepbit", 0.0, 0))
        .err()
        .expect("refused");
    assert!(e.to_string().contains("spare units"), "{e}");
}

#[test]
fn gc_watermarks_fit_the_configured_ones_into_the_reserve() {
    use pcstream_core::ftl::gc_watermarks;
    // 16 dies × 256 blocks × 64 pages (1 GiB, 256 lines of 1024 pages), 7 % OP: 240 lines hold
    // the logical space, 16 are spare. The configured 1 % / 2 % are 3 / 6 units.
    let toml = "[geometry]\nchannels = 4\nways = 4\nblocks_per_die = 256\npages_per_block = 64\n\
                [ftl]\nop = 0.07\nhost_streams = 8\n";
    let cfg = pcstream_core::SsdConfig::from_toml("1g-256", toml).unwrap();
    assert_eq!((cfg.units(), cfg.spare_units()), (256, 16));
    assert_eq!((cfg.gc_low_units(), cfg.gc_high_units()), (3, 6));
    // One destination, 10 write points: the configured watermarks fit (7 reachable).
    assert_eq!(gc_watermarks(&cfg, 10, 1), (3, 6));
    // Eight destinations among 8 write points: low must cover them (8), high is what the
    // device can reach (16 − 7 = 9); the preferred margin (low = 9) does not fit.
    assert!(cfg.validate_with(8, 8).is_ok());
    assert_eq!(gc_watermarks(&cfg, 8, 8), (8, 9));
    // One more write point and the reserve (17) exceeds the spare units.
    assert!(cfg.validate_with(9, 8).is_err());
    // `per-pc`'s default: as many write points as keep the configured watermarks (16 + 1 − 6).
    assert_eq!(pcstream_core::ftl::write_point_budget(&cfg), 11);
    assert_eq!(gc_watermarks(&cfg, 11, 1), (3, 6));
    assert_eq!(gc_watermarks(&cfg, 12, 1), (3, 5));
    // A roomy device keeps the configured watermarks, raised to one above the destinations.
    let small = pcstream_core::SsdConfig::preset("small").unwrap();
    assert_eq!(gc_watermarks(&small, 8, 1), (11, 21));
    assert_eq!(gc_watermarks(&small, 8, 15), (16, 21));
}

#[test]
fn per_pc_gives_each_pc_a_write_point_beyond_the_host_streams() {
    // 512 blocks of 64 pages, 12 % OP: 54 spare units; with the watermarks 2 / 3 the budget is
    // 52 write points (51 for PCs, 1 for GC), far more than the 8 host streams.
    let cfg = device(512, 64, 0.12, "greedy", "block", 8);
    assert_eq!(pcstream_core::ftl::write_point_budget(&cfg), 52);
    let logical = cfg.logical_pages();
    // 12 PCs writing at the same rate, each a circular log over its own region of k² shares
    // of the logical space (PC k): each PC's pages live a fixed time, 144× apart between PCs.
    let start = |k: u64| logical * (0..k).map(|j| j * j).sum::<u64>() / 650;
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut head = [0u64; 13];
    // Separated, each PC's units die whole (WAF 1); mixed in one stream they do not.
    let reqs: Vec<Request> = (0..6 * logical / 4)
        .map(|_| {
            let k = rng.random_range(1..=12u64);
            let (a, b) = (start(k), start(k + 1));
            let l = a + head[k as usize] % ((b - a) / 4) * 4;
            head[k as usize] += 1;
            Request::write(l, 4).with_pc(k)
        })
        .collect();
    let per_pc = run(&cfg, opts("per-pc", 0.0, 2 * logical), &reqs, false);
    let base = run(&cfg, opts("baseline", 0.0, 2 * logical), &reqs, false);
    assert_eq!(per_pc.write_points, 52);
    // PCs take write points 1..=12 in the order they first write; every host page is counted
    // on its write point, those beyond the host streams included.
    let streams: Vec<u32> = per_pc.per_stream.iter().map(|s| s.stream).collect();
    assert_eq!(streams.len(), 12, "{streams:?}");
    assert!(streams.iter().all(|&s| (1..=12).contains(&s)));
    assert_eq!(
        per_pc.per_stream.iter().map(|s| s.pages).sum::<u64>(),
        per_pc.host_pages
    );
    eprintln!("per-pc {:.3} baseline {:.3}", per_pc.waf, base.waf);
    assert!(
        per_pc.waf < 0.9 * base.waf,
        "per-pc {} clearly below baseline {}",
        per_pc.waf,
        base.waf
    );
}

/// Drive `pcstream-star` with synthetic lifetimes: each PC in `pcs` writes 64 pages whose
/// lifetimes are `base · 2^z`, z uniform in [−1.5, 1.5] (PC 0 too; an infinite `base`: written
/// once, never dies), then one clustering, with `merge=min_gain` (the rule that merges while
/// streams are free; `tests/pcstream_merge.rs` has `fit_first`'s); returns each PC's stream.
fn streams_after_learning(pcs: &[(u64, f64)], params: &[(&str, &str)]) -> Vec<u8> {
    use pcstream_core::placement::pcstream::PcStream;
    let params: Vec<(&str, &str)> = [("merge", "min_gain")]
        .into_iter()
        .chain(params.iter().copied())
        .collect();
    let mut p = PcStream::new(&mut ctx(1 << 20, 8, &params), false).unwrap();
    let mut d = Driver { t: 1 << 30 };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for i in 0..64u64 {
        for &(pc, base) in pcs {
            let r = RequestInfo {
                lpn: Lpn(i),
                pages: 1,
                pc: PcSig(pc),
                ..Default::default()
            };
            d.write(&mut p, r);
            if base.is_infinite() {
                continue;
            }
            let l = (base * 2f64.powf(rng.random_range(-1.5..1.5))) as u64;
            p.on_invalidate(&Invalidation {
                lpn: Lpn(i),
                t_write: Some(LogicalTime(d.t - l)),
                pc: PcSig(pc),
                stream: StreamId(0),
                cause: Cause::Overwrite,
                now: LogicalTime(d.t),
            });
        }
    }
    p.tick(LogicalTime(d.t));
    assert_eq!(p.reclusterings(), 1);
    pcs.iter().map(|&(pc, _)| p.stream_of(pc).0).collect()
}

#[test]
fn pcstream_gives_a_stream_only_to_lifetimes_that_differ() {
    // PCs 1 and 2 with the same lifetimes (their sample means differ a little): one stream,
    // and since PC 0's data live as long, that stream is stream 0.
    let same = [(0, 4096.0), (1, 4096.0), (2, 4096.0)];
    assert_eq!(streams_after_learning(&same, &[]), vec![0, 0, 0]);
    // `min_gain=0` keeps every cluster apart, the pre-merge behaviour.
    let kept = streams_after_learning(&same, &[("min_gain", "0")]);
    assert!(
        kept[1] >= 1 && kept[2] >= 1 && kept[1] != kept[2],
        "{kept:?}"
    );
    // Lifetimes 256× apart: two streams, the short-lived PC in the lower one.
    let apart = streams_after_learning(&[(1, 1024.0), (2, 262_144.0)], &[]);
    assert!(apart[0] >= 1 && apart[1] > apart[0], "{apart:?}");
    // One cluster unlike stream 0's data (PC 0 lives 256× longer): a stream of its own.
    let lone = streams_after_learning(&[(0, 262_144.0), (1, 1024.0), (2, 1024.0)], &[]);
    assert_eq!(lone[1..], [1, 1]);
    // Stream 0's data has no lifetime yet (PC 3's, written once): unlike anything, so kept
    // apart.
    let cold = streams_after_learning(&[(1, 1024.0), (2, 1024.0), (3, f64::INFINITY)], &[]);
    assert_eq!(cold, vec![1, 1, 0]);
    // Stream 0 holds nothing but the pages PCs 1 and 2 wrote before they were known: their
    // own, so they share it (baseline's layout).
    let alone = streams_after_learning(&[(1, 1024.0), (2, 1024.0)], &[]);
    assert_eq!(alone, vec![0, 0]);
}
