//! Cost per host page of every policy, engine only: `paper` preset, 2 × capacity of 1-page
//! random writes over a hot/cold skew, each request from one of 10,000 program contexts (PC =
//! LPN band) with trims, so learned tables are large. Prints host ns/page and the ratio to
//! `baseline`. `cargo run --release -p pcstream-core --example policy_cost [policy...]`.

use pcstream_core::placement::registry;
use pcstream_core::{Request, SimOptions, Simulator, SsdConfig};

fn main() {
    let cfg = SsdConfig::preset("paper").expect("preset");
    let logical = cfg.logical_pages();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let reqs: Vec<Request> = (0..2 * logical)
        .map(|i| {
            let r = next();
            // 80 % of writes to 20 % of the LPNs.
            let lpn = if r % 10 < 8 {
                (r >> 8) % (logical / 5)
            } else {
                logical / 5 + (r >> 8) % (logical - logical / 5)
            };
            let pc = 1 + lpn * 10_000 / logical;
            if i % 64 == 63 {
                Request::trim(lpn, 1)
            } else {
                Request::write(lpn, 1).with_pc(pc)
            }
        })
        .collect();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = if args.is_empty() {
        registry::names()
    } else {
        args.iter().map(|s| s.as_str()).collect()
    };
    let mut base_ns = None;
    for name in names {
        if name == "oracle" {
            continue; // needs the death-time pre-pass (a driver feature)
        }
        let o = SimOptions {
            policy: name.into(),
            prefill: 1.0,
            warmup: logical,
            ..Default::default()
        };
        let mut sim = Simulator::new(&cfg, o).expect("sim");
        sim.start().expect("start");
        for chunk in reqs.chunks(65536) {
            sim.feed(chunk).expect("feed");
        }
        let r = sim.finish();
        let ns = 1e9 / r.host_pages_per_s;
        let b = *base_ns.get_or_insert(ns);
        println!(
            "{name:16} waf {:.3}  {:7.1} ns/host page  {:.2}× baseline  state {} B",
            r.waf,
            ns,
            ns / b,
            r.policy_state_bytes
        );
    }
}
