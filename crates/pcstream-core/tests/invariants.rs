//! Model-based test: random writes, trims and reads on random small geometries, every policy and
//! GC mode; the whole-state check runs after every GC and the mapping is compared against a
//! plain set of live LPNs.

mod common;
use common::run;
use pcstream_core::placement::registry;
use pcstream_core::placement::GcMode;
use pcstream_core::{Request, SimError, SimOptions, Simulator, SsdConfig};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// Every policy (`name[+gc_mode][?k=v&k=v]`), with short periods so re-clustering happens.
const POLICIES: &[&str] = &[
    "baseline",
    "baseline+substream",
    "baseline+single_gc",
    "hotcold",
    "oracle",
    "manual",
    "fstream?fname_classes=1&extn_classes=2",
    "autostream-sfr?chunk=4&decay=32",
    "autostream-sfr?variant=b&chunk=4&decay=32",
    "autostream-mq?chunk=4",
    "pcstream-star?period=64&n_min=2",
    "pcstream?period=64&n_min=2",
    "pcstream?period=64&n_min=2&substream_policy=high_variance&hv_min_n=2&hv_ratio=0",
    "pcstream?period=64&n_min=2&hv_test=cv&hv_min_n=2&hv_cv=0.0",
    "pcstream?period=64&n_min=2&algorithm=agglomerative&pc_assign=first_come&first_come_writes=20",
    "sepbit",
    "sepbit?sample=1",
    "lkstream?chunk=4&window=64",
    "midas?cold_start=0",
    "midas?groups=3&cold_start=0",
    "filestream?period=64",
    "per-pc",
    "per-pc?write_points=3",
];

/// The simulator options of a `POLICIES` entry.
fn options(entry: &str, prefill: f64) -> SimOptions {
    let mut o = SimOptions {
        prefill,
        seed: 1,
        trace_name: "prop".into(),
        ..Default::default()
    };
    let (policy, params) = entry.split_once('?').unwrap_or((entry, ""));
    let (name, mode) = policy.split_once('+').unwrap_or((policy, ""));
    o.policy = name.into();
    if !mode.is_empty() {
        o.params.insert("gc_mode".into(), mode.into());
    }
    for kv in params.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap();
        o.params.insert(k.into(), v.into());
    }
    o
}

/// The list above is the registry's, with variants: a new policy cannot be left out, and none
/// of them may fail to build (the property test skips devices a policy cannot run on).
#[test]
fn every_listed_policy_builds_and_runs() {
    for name in registry::names() {
        let listed = POLICIES
            .iter()
            .any(|p| p.split(['+', '?']).next() == Some(name));
        assert!(listed, "policy {name} is registered but not in POLICIES");
    }
    let toml = "[geometry]\nchannels = 2\nways = 2\nblocks_per_die = 256\npages_per_block = 8\n\
                [ftl]\nop = 0.25\nhost_streams = 8\n";
    let cfg = SsdConfig::from_toml("listed", toml).unwrap();
    let logical = cfg.logical_pages();
    let reqs: Vec<Request> = (0..4 * logical)
        .map(|i| Request {
            pc: 1 + i % 3,
            file: 1 + (i % 5) as u32,
            ..Request::write((i * 7919) % logical, 1)
        })
        .collect();
    for entry in POLICIES {
        let mut sim =
            Simulator::new(&cfg, options(entry, 0.5)).unwrap_or_else(|e| panic!("{entry}: {e}"));
        sim.run_requests(&reqs).unwrap();
        let r = sim.finish();
        assert_eq!(r.host_pages, 4 * logical, "{entry}");
        assert!(
            r.gc_pages > 0 && r.waf > 1.0,
            "{entry}: GC ran ({} copies)",
            r.gc_pages
        );
        sim_ok(entry, &r);
    }
}

fn sim_ok(entry: &str, r: &pcstream_core::SimResult) {
    let streams: u64 = r.per_stream.iter().map(|s| s.pages).sum();
    assert_eq!(
        streams, r.host_pages,
        "{entry}: every host page lands in a host stream"
    );
}

fn geometry() -> impl Strategy<Value = (u32, u32, u32, u32, f64, u32, bool, u8)> {
    (
        1u32..=2,
        1u32..=2,
        16u32..=64,
        2u32..=12,
        0.15f64..0.6,
        1u32..=4,
        any::<bool>(),
        0u8..3,
    )
}

fn config(g: (u32, u32, u32, u32, f64, u32, bool, u8)) -> Option<SsdConfig> {
    let (ch, ways, blocks, ppb, op, streams, line, victim) = g;
    let victim = ["greedy", "fifo", "cost-benefit"][victim as usize];
    let unit = if line { "line" } else { "block" };
    let toml = format!(
        "[geometry]\nchannels = {ch}\nways = {ways}\nblocks_per_die = {blocks}\npages_per_block = {ppb}\n\
         [ftl]\nop = {op}\nhost_streams = {streams}\ngc_unit = \"{unit}\"\ngc_victim = \"{victim}\"\n"
    );
    SsdConfig::from_toml("prop", &toml).ok()
}

proptest! {
    // A fixed seed: the same 48 cases every run, so `most_generated_cases_reach_the_checks`
    // cannot pass or fail by luck (about half of random small devices cannot hold their
    // write points; a random seed let the count fall below 24 in about one run of three).
    #![proptest_config(ProptestConfig {
        cases: 48,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_0001),
        .. ProptestConfig::default()
    })]
    #[test]
    fn random_operations_keep_the_ftl_consistent(
        g in geometry(),
        policy in prop::sample::select(POLICIES.to_vec()),
        ops in prop::collection::vec((0u8..10, any::<u64>(), 1u32..6), 50..1500),
        prefill in prop::sample::select(vec![0.0, 0.5, 1.0]),
    ) {
        let Some(cfg) = config(g) else { return Ok(()) };
        if policy == "hotcold" && cfg.ftl.host_streams < 2 { return Ok(()) }
        let logical = cfg.logical_pages();
        let o = options(policy, prefill);
        let sim = match Simulator::new(&cfg, o.clone()) {
            Ok(sim) => sim,
            // A random device too small for the policy's write points, or with fewer host
            // streams than the policy needs (filestream and midas need 3), is not a failure;
            // anything else is (`every_listed_policy_builds_and_runs` checks that each one
            // builds on a real device).
            Err(SimError::Config(_)) => return Ok(()),
            Err(SimError::BadParam(_)) if cfg.ftl.host_streams < 3 => return Ok(()),
            Err(e) => { prop_assert!(false, "{policy}: {e}"); unreachable!() }
        };
        // `Simulator::new` accepted the device, so it holds the GC reserve of the policy's write
        // points and destinations (`SsdConfig::validate_with`): the runs below (with the
        // whole-state check after every GC) must never run out of free units. Restate the
        // check here so a simulator that skipped it fails.
        let (p, mode) = (sim.policy(), o.params.get("gc_mode").and_then(|m| GcMode::parse(m)));
        let gc_mode = mode.unwrap_or(p.gc_mode());
        let wps = pcstream_core::ftl::write_points(cfg.ftl.host_streams, gc_mode, p.internal_write_points());
        let fanout = p.gc_fanout().unwrap_or(wps).clamp(1, wps);
        let dests = pcstream_core::ftl::gc_destinations(gc_mode, wps, fanout);
        prop_assert!(cfg.validate_with(wps, dests).is_ok(), "{policy}: accepted a device without the GC reserve");
        drop(sim);
        let reqs: Vec<Request> = ops.iter().map(|&(k, x, n)| {
            let lpn = x % logical;
            let n = n.min((logical - lpn) as u32);
            // Four program contexts (0 = unknown) and hints, so learned policies take decisions.
            let w = Request { pc: (x >> 40) % 4, hint: ((x >> 44) % 6) as u8, meta: ((x >> 48) % 6) as u8,
                              file_class: ((x >> 52) % 4) as u16, file: ((x >> 56) % 5) as u32, ..Request::write(lpn, n) };
            match k { 0 => Request::trim(lpn, n), 1 => Request::read(lpn, n), _ => w }
        }).collect();
        // Model: the set of live LPNs.
        let mut live: BTreeSet<u64> = (0..(prefill * logical as f64).floor() as u64).collect();
        for r in &reqs {
            for l in r.lpn..r.lpn + r.pages as u64 {
                match r.op { 0 => { live.insert(l); } 1 => { live.remove(&l); } _ => {} }
            }
        }
        let mut sim = Simulator::new(&cfg, o.clone()).unwrap();
        sim.set_verify_each_gc(true);
        sim.run_requests(&reqs).unwrap();
        prop_assert!(sim.verify().is_ok(), "{:?}", sim.verify());
        for l in 0..logical {
            prop_assert_eq!(sim.mapped_stream(l).is_some(), live.contains(&l), "lpn {}", l);
        }
        let r = sim.finish();
        prop_assert!(r.waf >= 1.0);
        RAN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = run; // keep the helper linked for other tests
    }
}

#[test]
fn same_input_gives_identical_results() {
    // OP 0.2: room for 16 write points (substreams) and their GC reserve.
    let cfg = common::device(256, 32, 0.2, "greedy", "block", 8);
    let logical = cfg.logical_pages();
    let reqs: Vec<Request> = common::hotcold(4 * logical, logical, 0.2, 0.8, 9)
        .into_iter()
        .map(|r| r.with_pc(1 + r.lpn % 3))
        .collect();
    let strip = |r: pcstream_core::SimResult| {
        let mut v = serde_json::to_value(&r).unwrap();
        for k in ["wall_s", "host_pages_per_s", "page_ops_per_s"] {
            v.as_object_mut().unwrap().remove(k);
        }
        serde_json::to_string(&v).unwrap()
    };
    for p in POLICIES {
        let (name, params) = p.split_once('?').unwrap_or((p, ""));
        let (name, mode) = name.split_once('+').unwrap_or((name, ""));
        let mut o = SimOptions {
            timing: true,
            ..common::opts(name, 0.9, logical)
        };
        if !mode.is_empty() {
            o.params.insert("gc_mode".into(), mode.into());
        }
        for kv in params.split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap();
            o.params.insert(k.into(), v.into());
        }
        let a = strip(run(&cfg, o.clone(), &reqs, false));
        let b = strip(run(&cfg, o, &reqs, false));
        assert_eq!(a, b, "{p} is not deterministic");
    }
}

#[test]
fn bad_configurations_are_one_line_errors() {
    let base =
        "[geometry]\nchannels = 1\nways = 1\nblocks_per_die = 64\npages_per_block = 64\n[ftl]\n";
    let e = SsdConfig::from_toml("x.toml", &format!("{base}op = 0\n"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("x.toml") && e.contains("op = 0") && !e.contains('\n'),
        "{e}"
    );
    let e = SsdConfig::from_toml("y.toml", "[geometry]\nchannels = 1\nways = 1\nblocks_per_die = 8\npages_per_block = 64\n[ftl]\nop = 0.07\nhost_streams = 8\ngc_unit = \"block\"\n").unwrap_err().to_string();
    assert!(
        e.contains("y.toml") && e.contains("open write points") && !e.contains('\n'),
        "{e}"
    );
    let e = SsdConfig::from_toml("z.toml", &format!("{base}op = 0.1\nbogus = 3\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("z.toml") && e.contains("bogus"), "{e}");
    let e = SsdConfig::preset("nope").unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("paper"), "{e}");
    let toml = "[geometry]\nchannels = 2\nways = 2\nblocks_per_die = 256\npages_per_block = 8\n\
                [ftl]\nop = 0.25\nhost_streams = 8\n";
    let cfg = SsdConfig::from_toml("listed", toml).unwrap();
    let e = Simulator::new(
        &cfg,
        SimOptions {
            policy: "nope".into(),
            ..Default::default()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("nope") && e.contains("baseline"), "{e}");
    let e = Simulator::new(
        &cfg,
        SimOptions {
            policy: "hotcold".into(),
            params: [("thresh".to_string(), "3".to_string())].into(),
            ..Default::default()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("thresh"), "{e}");
}

#[test]
fn requests_beyond_capacity_are_rejected_with_their_index() {
    let toml = "[geometry]\nchannels = 2\nways = 2\nblocks_per_die = 256\npages_per_block = 8\n\
                [ftl]\nop = 0.25\nhost_streams = 8\n";
    let cfg = SsdConfig::from_toml("listed", toml).unwrap();
    let mut sim = Simulator::new(&cfg, common::opts("baseline", 0.0, 0)).unwrap();
    sim.start().unwrap();
    let l = cfg.logical_pages();
    let e = sim
        .feed(&[Request::write(0, 1), Request::write(l - 1, 2)])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("request 1:") && e.contains(&l.to_string()),
        "{e}"
    );
}

#[test]
fn presets_match_the_papers_device() {
    let p = SsdConfig::preset("paper").unwrap();
    assert_eq!(p.dies(), 16);
    assert_eq!(p.geometry.blocks_per_die * p.dies(), 8192);
    assert_eq!(p.physical_pages() * 4096, 12 << 30);
    assert_eq!(p.ftl.host_streams, 8);
}

static RAN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[test]
fn most_generated_cases_reach_the_checks() {
    random_operations_keep_the_ftl_consistent();
    let ran = RAN.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        ran >= 24,
        "only {ran} of 48 generated cases were valid devices"
    );
}
