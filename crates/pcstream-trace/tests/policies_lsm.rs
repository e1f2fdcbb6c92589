//! The PC-based policies on `gen lsm` (docs/POLICIES.md has the full grid, `examples/lsm_grid`):
//! the orderings that hold on every setting of the grid, checked on a smaller device.

use std::collections::BTreeMap;

use pcstream_core::config::SsdConfig;
use pcstream_core::{Request, SimOptions};
use pcstream_trace::gen::TopPc;
use pcstream_trace::{generate, GenParams, SstAlloc};

mod common;

/// 4 dies × 1024 blocks × 32 pages (512 MiB, 1024 lines of 128 pages), 7 % OP, greedy.
fn device() -> SsdConfig {
    common::greedy_device("512m", 2, 2, 1024, 32)
}

/// `pcstream` with every GC copy sorted by its true remaining lifetime into M classes: what
/// placing GC copies can add to PCStream's host streams, with M = 2 and every spare write point
/// (docs/POLICIES.md). More classes sort better but hold more units open.
const DEATH_BOUNDS: [&str; 2] = [
    "pcstream substream_policy=death substreams=2",
    "pcstream substream_policy=death substreams=7",
];

const POLICIES: &[&str] = &["baseline", "pcstream-star", "pcstream", "per-pc"];

/// WAF of each policy (`name key=value ...`) on one `gen lsm` setting of the test device, 5
/// passes of its logical pages after 2 of warm-up.
fn wafs(
    levels: u32,
    ratio: u32,
    skew: f64,
    build_share: f64,
    seed: u64,
    policies: &[&'static str],
) -> BTreeMap<&'static str, f64> {
    let cfg = device();
    let logical = cfg.logical_pages();
    let p = GenParams {
        capacity_pages: logical,
        writes: 5 * logical,
        levels,
        ratio,
        skew,
        build_share,
        sst_pages: 128,
        seed,
        ..GenParams::default()
    };
    wafs_on(&cfg, &p, 2 * logical, policies)
}

/// The `gen lsm` trace of `p`.
fn requests(p: &GenParams) -> Vec<Request> {
    let mut reqs: Vec<Request> = Vec::new();
    generate("lsm", p, &mut |r| {
        reqs.push(r);
        Ok(())
    })
    .expect("generates");
    reqs
}

/// WAF of each policy on the `gen lsm` trace of `p`, the first `warmup` host pages excluded.
fn wafs_on(
    cfg: &SsdConfig,
    p: &GenParams,
    warmup: u64,
    policies: &[&'static str],
) -> BTreeMap<&'static str, f64> {
    let out = wafs_of(cfg, &requests(p), warmup, policies);
    eprintln!(
        "L{} R{} θ{} B{} seed {} {}: {out:?}",
        p.levels, p.ratio, p.skew, p.build_share, p.seed, p.sst_alloc
    );
    out
}

/// WAF of each policy (`name key=value ...`) on `reqs`, the first `warmup` host pages excluded.
fn wafs_of(
    cfg: &SsdConfig,
    reqs: &[Request],
    warmup: u64,
    policies: &[&'static str],
) -> BTreeMap<&'static str, f64> {
    let mut out = BTreeMap::new();
    for &spec in policies {
        let mut words = spec.split(' ');
        let name = words.next().expect("a policy name");
        let params = words
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("key=value");
                (k.to_string(), v.to_string())
            })
            .collect();
        let o = SimOptions {
            policy: name.into(),
            params,
            warmup,
            seed: 1,
            ..Default::default()
        };
        out.insert(spec, common::waf(cfg, o, reqs));
    }
    out
}

/// Every setting of the grid (levels {3, 4, 5} × ratio {4, 10} × skew {0, 0.99} × build share
/// {0, 0.3}), seeds 1–3.
fn grid() -> impl Iterator<Item = (u32, u32, f64, f64, u64)> {
    [3, 4, 5].into_iter().flat_map(|levels| {
        [4, 10].into_iter().flat_map(move |ratio| {
            [0.0, 0.99].into_iter().flat_map(move |skew| {
                [0.0, 0.3].into_iter().flat_map(move |build| {
                    (1..=3).map(move |seed| (levels, ratio, skew, build, seed))
                })
            })
        })
    })
}

#[test]
fn pc_separation_orders_below_baseline_and_pcstream_near_per_pc() {
    for (levels, ratio, skew, build, seed) in grid() {
        let w = wafs(levels, ratio, skew, build, seed, POLICIES);
        let (b, pc, pp) = (w["baseline"], w["pcstream"], w["per-pc"]);
        let what =
            format!("levels {levels}, ratio {ratio}, skew {skew}, build {build}, seed {seed}");
        assert!(pp <= b, "{what}: per-pc {pp} ≤ baseline {b}");
        assert!(pc <= b, "{what}: pcstream {pc} ≤ baseline {b}");
        // PCStream clusters the PCs into 7 streams; per-pc gives each its own: within 5 %.
        assert!(
            pc <= 1.05 * pp,
            "{what}: pcstream {pc} within 5 % of per-pc {pp}"
        );
        if build > 0.0 && b > 1.05 {
            // The build writer's PCs die far sooner than the store's: where GC copies at all,
            // separating them pays.
            assert!(
                pc < 0.98 * b,
                "{what}: pcstream {pc} clearly below baseline {b}"
            );
        }
    }
}

/// The grid's SSD: 16 dies, 512 lines of 512 pages (1 GiB), 7 % OP, greedy, 8 streams.
fn grid_device() -> SsdConfig {
    common::greedy_device("1g", 4, 4, 512, 32)
}

/// One run of the grid on `grid_device` (1.2 M host pages, SSTs of 256 pages): its requests and
/// the share of the pages and lifetime CV of the PC that writes the most.
struct GridRun {
    setting: String,
    seed: u64,
    reqs: Vec<Request>,
    share: f64,
    cv: f64,
}

impl GridRun {
    /// An acceptance run: one PC with lifetime CV > 1 writes at least 30 % of the pages.
    fn accepts(&self) -> bool {
        self.cv > 1.0 && self.share >= 0.3
    }
}

/// Every run of the grid, seeds 1–3, made as it is consumed.
fn grid_runs(cfg: &SsdConfig) -> impl Iterator<Item = GridRun> + '_ {
    grid().map(move |(levels, ratio, skew, build_share, seed)| {
        let p = GenParams {
            capacity_pages: cfg.logical_pages(),
            writes: 1_200_000,
            levels,
            ratio,
            skew,
            build_share,
            sst_pages: 256,
            seed,
            ..GenParams::default()
        };
        let reqs = requests(&p);
        let mut top = TopPc::new();
        reqs.iter().for_each(|r| top.push(r));
        let (share, cv) = top.share_and_cv().expect("the trace writes");
        GridRun {
            setting: format!("levels {levels}, ratio {ratio}, skew {skew}, build {build_share}"),
            seed,
            reqs,
            share,
            cv,
        }
    })
}

/// One compaction PC writes every level (levels 3, ratio 10, uniform keys, no build writer; the
/// grid's device and lengths). Where new SSTs take the lowest free slot, the LBAs tell the
/// levels apart and the PC cannot: AutoStream-MQ ends below PCStream, and below even PCStream's
/// host streams with every GC copy placed by its true death time, so no substream rule can
/// close that gap. Where they take the next free slot in turn (the default, as a file system
/// moving its goal on), the LBAs say little and PCStream is below both AutoStreams
/// (docs/POLICIES.md, "PCStream against AutoStream on the grid").
#[test]
fn autostream_beats_one_compaction_pc_only_where_the_lbas_tell_lifetimes_apart() {
    let policies = [
        "pcstream",
        "autostream-mq",
        "autostream-sfr",
        DEATH_BOUNDS[0],
        DEATH_BOUNDS[1],
    ];
    let run = |sst_alloc| {
        let cfg = grid_device();
        let p = GenParams {
            capacity_pages: cfg.logical_pages(),
            writes: 1_200_000,
            levels: 3,
            ratio: 10,
            sst_pages: 256,
            sst_alloc,
            seed: 1,
            ..GenParams::default()
        };
        wafs_on(&cfg, &p, 400_000, &policies)
    };
    let w = run(SstAlloc::Lowest);
    let (pc, mq) = (w["pcstream"], w["autostream-mq"]);
    assert!(mq < pc, "lowest: autostream-mq {mq} below pcstream {pc}");
    for b in DEATH_BOUNDS {
        assert!(mq < w[b], "lowest: autostream-mq {mq} below {b}: {}", w[b]);
    }
    let w = run(SstAlloc::Next);
    let pc = w["pcstream"];
    for a in ["autostream-mq", "autostream-sfr"] {
        assert!(pc < w[a], "next: pcstream {pc} below {a} {}", w[a]);
    }
}

/// The acceptance runs of the grid (grid device and lengths, seeds 1–3): wherever one PC with
/// lifetime CV > 1 writes at least 30 % of the pages, `pcstream` is below both AutoStreams (or,
/// where GC never copies, at WAF 1.000 with them) and within 5 % of `per-pc`. With the
/// substream chosen by the CV of completed lifetimes three runs (seed 1) were lost by
/// 0.1–0.7 %: early on the compaction PC's completed lifetimes are its short ones (CV < 1), so
/// the substream served a small stream; judged by death rates, young against old pages alive
/// or dead, the compaction stream qualifies from its first GC (docs/POLICIES.md, "Which
/// streams get a substream").
#[test]
fn pcstream_below_both_autostreams_wherever_one_pc_has_wide_lifetimes() {
    let cfg = grid_device();
    let mut qualifying = 0;
    for run in grid_runs(&cfg) {
        let what = format!(
            "{}, seed {} (top PC {:.0} %, CV {:.2})",
            run.setting,
            run.seed,
            100.0 * run.share,
            run.cv
        );
        if !run.accepts() {
            eprintln!("{what}: not an acceptance run");
            continue;
        }
        qualifying += 1;
        let policies = ["pcstream", "autostream-mq", "autostream-sfr", "per-pc"];
        let w = wafs_of(&cfg, &run.reqs, 400_000, &policies);
        eprintln!("{what}: {w:?}");
        let pc = w["pcstream"];
        for a in ["autostream-mq", "autostream-sfr"] {
            // WAF 1.000 is the floor: no policy gets below an AutoStream that GC never made copy.
            let floor = pc == 1.0 && w[a] == 1.0;
            assert!(
                pc < w[a] || floor,
                "{what}: pcstream {pc} below {a} {}",
                w[a]
            );
        }
        let pp = w["per-pc"];
        assert!(
            pc <= 1.05 * pp,
            "{what}: pcstream {pc} within 5 % of per-pc {pp}"
        );
    }
    // Ratio 10 with skewed keys gives the compaction PC a CV below 1 (docs/POLICIES.md).
    assert_eq!(qualifying, 54, "18 settings × 3 seeds qualify");
}

/// Why `pcstream` does not reach 0.98 × `pcstream-star` on the acceptance runs (docs/POLICIES.md,
/// "Why substreams do not pay off here"): substreams only place GC copies, and even every copy
/// sorted by its true remaining lifetime into 7 classes (every spare write point) leaves the
/// WAF of PCStream's host streams less than 2 % lower on average over seeds 1–3 on every
/// setting where one PC with lifetime CV > 1 writes at least 30 % of the pages. GC copies are a
/// small share of the writes there (`pcstream-star` at most about 1.12), so 2 % of the WAF is
/// a sixth or more of the copies.
#[test]
fn no_placement_of_gc_copies_gives_2_percent_on_average_on_the_acceptance_settings() {
    let cfg = grid_device();
    let policies = ["pcstream-star", DEATH_BOUNDS[1]];
    let mut by_setting: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in grid_runs(&cfg).filter(GridRun::accepts) {
        let w = wafs_of(&cfg, &run.reqs, 400_000, &policies);
        let (star, bound) = (w["pcstream-star"], w[DEATH_BOUNDS[1]]);
        assert!(
            star < 1.13,
            "{}, seed {}: pcstream-star {star}: GC copies little",
            run.setting,
            run.seed
        );
        by_setting
            .entry(run.setting)
            .or_default()
            .push(bound / star);
    }
    assert_eq!(by_setting.len(), 18, "18 acceptance settings");
    for (what, r) in &by_setting {
        let mean = r.iter().sum::<f64>() / r.len() as f64;
        eprintln!("{what}: death M = 7 / pcstream-star {r:.3?}, mean {mean:.4}");
        assert!(
            mean > 0.98,
            "{what}: GC copies sorted by their true death {mean:.4} × pcstream-star"
        );
    }
}
