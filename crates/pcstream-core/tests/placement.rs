//! Hot/cold separation, sequential overwrite, TRIM and timing sanity.

mod common;
use common::*;
use pcstream_core::{Request, SimOptions, SsdConfig};

fn hc_waf(policy: &str) -> f64 {
    let cfg = device(1024, 64, 0.07, "greedy", "block", 8);
    let logical = cfg.logical_pages();
    let warm = 4 * logical;
    let reqs = hotcold(warm + 4 * logical, logical, 0.1, 0.9, 3);
    run(&cfg, opts(policy, 1.0, warm), &reqs, false).waf
}

#[test]
fn hot_cold_ordering_oracle_hotcold_baseline() {
    let (o, h, b) = (hc_waf("oracle"), hc_waf("hotcold"), hc_waf("baseline"));
    eprintln!("oracle {o:.3} hotcold {h:.3} baseline {b:.3}");
    assert!(o < h, "oracle {o} should beat hotcold {h}");
    assert!(h < b, "hotcold {h} should beat baseline {b}");
}

#[test]
fn sequential_overwrite_has_waf_one() {
    let cfg = device(256, 64, 0.07, "greedy", "block", 1);
    let logical = cfg.logical_pages();
    let reqs: Vec<Request> = (0..5)
        .flat_map(|_| {
            (0..logical)
                .step_by(8)
                .map(move |l| Request::write(l, 8.min((logical - l) as u32)))
        })
        .collect();
    let r = run(&cfg, opts("baseline", 1.0, 0), &reqs, true);
    assert!(
        r.gc_pages == 0 && (r.waf - 1.0).abs() < 1e-12,
        "WAF {} gc {}",
        r.waf,
        r.gc_pages
    );
    assert!(
        r.erases > 0,
        "the device was overwritten, so units were erased"
    );
}

/// Fill, then (optionally) trim the first half, then random writes to the second half.
fn trim_workload(trim: bool) -> (f64, SsdConfig, Vec<Request>) {
    let cfg = device(1024, 64, 0.07, "greedy", "block", 1);
    let logical = cfg.logical_pages();
    let half = logical / 2;
    let mut reqs = Vec::new();
    if trim {
        reqs.extend(
            (0..half)
                .step_by(64)
                .map(|l| Request::trim(l, 64.min(half - l) as u32)),
        );
    }
    let rnd = uniform(6 * logical, half, 11);
    reqs.extend(rnd.into_iter().map(|r| Request::write(r.lpn + half, 1)));
    let r = run(&cfg, opts("baseline", 1.0, 3 * logical), &reqs, false);
    (r.waf, cfg, reqs)
}

#[test]
fn trim_lowers_waf_and_trimmed_pages_are_never_copied() {
    let (with, cfg, reqs) = trim_workload(true);
    let (without, _, _) = trim_workload(false);
    eprintln!("trim {with:.3} no trim {without:.3}");
    assert!(
        with < without * 0.5,
        "trimming half the device must cut WAF: {with} vs {without}"
    );
    // Trimmed LPNs stay unmapped: GC never resurrected (copied) them.
    let mut sim = pcstream_core::Simulator::new(&cfg, opts("baseline", 1.0, 0)).unwrap();
    sim.set_verify_each_gc(true);
    sim.start().unwrap();
    sim.feed(&reqs).unwrap();
    let half = cfg.logical_pages() / 2;
    assert!((0..half).all(|l| sim.mapped_stream(l).is_none()));
    assert!((half..cfg.logical_pages()).all(|l| sim.mapped_stream(l).is_some()));
    // With half the data gone, α doubles: WAF follows the model at the effective footprint.
    let a = (cfg.units() as f64 - 3.0) * cfg.unit_pages() as f64 / half as f64;
    let model = greedy_model_waf(a, cfg.unit_pages());
    assert!(
        (with - model).abs() / model < 0.05,
        "WAF {with} vs model {model} for the untrimmed half"
    );
}

fn timing_cfg() -> SsdConfig {
    let toml = "[geometry]\nchannels = 4\nways = 4\nblocks_per_die = 256\npages_per_block = 64\n\
                [ftl]\nop = 0.07\nhost_streams = 8\ngc_unit = \"line\"\n";
    SsdConfig::from_toml("timing", toml).unwrap()
}

fn timed(qd: u32, n: u64) -> pcstream_core::SimResult {
    let mut cfg = timing_cfg();
    cfg.timing.queue_depth = qd;
    let reqs: Vec<Request> = (0..n).map(|l| Request::write(l, 1)).collect();
    run(
        &cfg,
        SimOptions {
            timing: true,
            ..opts("baseline", 0.0, 0)
        },
        &reqs,
        false,
    )
}

#[test]
fn sequential_writes_at_qd32_reach_the_die_parallel_bound() {
    let r = timed(32, 40_000);
    let bound = 16.0 / 200e-6; // dies / program time
    let iops = r.iops.unwrap();
    eprintln!("iops {iops:.0} bound {bound:.0}");
    assert!(
        (iops - bound).abs() / bound < 0.10,
        "IOPS {iops} vs bound {bound}"
    );
}

#[test]
fn qd1_latency_is_one_program_time() {
    let r = timed(1, 2_000);
    let p50 = r.lat_p50_us.unwrap();
    assert!((p50 - 200.0).abs() < 2.0, "QD1 p50 {p50} µs");
    eprintln!("qd1: p50 {p50} iops {:?}", r.iops);
    assert!((r.iops.unwrap() - 5000.0).abs() < 50.0);
}

#[test]
fn gc_shows_in_latency() {
    // Random overwrites of a full device: GC copies and erases occupy dies.
    let mut cfg = timing_cfg();
    cfg.timing.queue_depth = 32;
    let logical = cfg.logical_pages();
    let reqs = uniform(3 * logical, logical, 5);
    let r = run(
        &cfg,
        SimOptions {
            timing: true,
            ..opts("baseline", 1.0, logical)
        },
        &reqs,
        false,
    );
    let clean = timed(32, 40_000);
    assert!(r.waf > 2.0);
    assert!(
        r.iops.unwrap() < clean.iops.unwrap() / 2.0,
        "GC must cost throughput"
    );
    eprintln!(
        "gc: waf {} p50 {:?} p99 {:?} p999 {:?} iops {:?} erases {} host {}",
        r.waf, r.lat_p50_us, r.lat_p99_us, r.lat_p999_us, r.iops, r.erases, r.host_pages
    );
    assert!(r.lat_p999_us.unwrap() > r.lat_p50_us.unwrap());
}
