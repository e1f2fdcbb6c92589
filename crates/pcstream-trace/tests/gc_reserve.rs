//! Every registered policy runs on a device whose spare units only just hold the GC reserve of
//! its write points (`SsdConfig::validate_with`): 1 GiB as 256 lines of 1024 pages, where the
//! 2 % GC high watermark once counted as reserve refused `pcstream` and `oracle`.

use pcstream_core::config::SsdConfig;
use pcstream_core::placement::registry;
use pcstream_core::{Request, SimOptions, Simulator};
use pcstream_trace::{generate, GenParams};

mod common;

/// 16 dies × 256 blocks × 64 pages: 1 GiB in 256 lines of 1024 pages, 7 % OP, greedy, 8 host
/// streams. 240 lines hold the logical space packed full; 16 are spare.
fn device() -> SsdConfig {
    common::greedy_device("1g-256-lines", 4, 4, 256, 64)
}

#[test]
fn every_policy_runs_on_the_256_line_device() {
    let cfg = device();
    assert_eq!((cfg.units(), cfg.spare_units()), (256, 16));
    let logical = cfg.logical_pages();
    // The RocksDB-like mix (several PCs, trims, hot and cold writers) over 1.5 passes of the
    // logical space on a device prefilled to 90 %: GC runs from the first pass on.
    let p = GenParams {
        capacity_pages: logical,
        writes: 3 * logical / 16,
        req_pages: 8,
        seed: 3,
        mix: "rocksdb-like".into(),
        ..GenParams::default()
    };
    let mut reqs: Vec<Request> = Vec::new();
    generate("mix", &p, &mut |r| {
        reqs.push(r);
        Ok(())
    })
    .expect("generates");
    let mut line = Vec::new();
    for name in registry::names() {
        let o = SimOptions {
            policy: name.into(),
            prefill: 0.9,
            warmup: logical / 2,
            seed: 1,
            ..Default::default()
        };
        let mut sim = Simulator::new(&cfg, o).unwrap_or_else(|e| panic!("{name}: {e}"));
        sim.set_verify_each_gc(false);
        sim.run_requests(&reqs)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        sim.verify().unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = sim.finish();
        assert!(r.gc_pages > 0, "{name}: the run must exercise GC");
        line.push(format!("{name} {:.3}", r.waf));
    }
    eprintln!("WAF on {}: {}", cfg.name, line.join(", "));
}
