//! Engine-only throughput (no Parquet): baseline, uniform random writes, `paper` preset, steady
//! state. `cargo run --release -p pcstream-core --example steady [timing]`.

use pcstream_core::{Request, SimOptions, Simulator, SsdConfig};

fn main() {
    let timing = std::env::args().any(|a| a == "timing");
    let cfg = SsdConfig::preset("paper").expect("preset");
    let logical = cfg.logical_pages();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let reqs: Vec<Request> = (0..2 * logical)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Request::write(x % logical, 1)
        })
        .collect();
    let o = SimOptions {
        policy: "baseline".into(),
        prefill: 1.0,
        warmup: logical,
        timing,
        ..Default::default()
    };
    let mut sim = Simulator::new(&cfg, o).expect("sim");
    sim.start().expect("start");
    for chunk in reqs.chunks(65536) {
        sim.feed(chunk).expect("feed");
    }
    let r = sim.finish();
    println!(
        "waf {:.3} host {} gc {} page_ops/s {:.2} M (measured part {:.2} s), bytes/page {:.1}",
        r.waf,
        r.host_pages,
        r.gc_pages,
        r.page_ops_per_s / 1e6,
        (r.host_pages + r.gc_pages) as f64 / r.page_ops_per_s,
        r.bytes_per_page
    );
}
