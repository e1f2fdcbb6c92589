//! Engine throughput: baseline, uniform random 4 KiB writes on the `paper` preset at steady state
//! (full sequential prefill, one device-fill of warm-up), Parquet decode included.
//! Reports page operations per second (host writes + GC copies), with and without timing.
//! `PCSTREAM_BENCH_PRESET=small` runs a quick version.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pcstream_core::{SimOptions, SsdConfig};
use pcstream_trace::{generate_to_file, run_trace, GenParams};

fn engine(c: &mut Criterion) {
    if cfg!(debug_assertions) {
        eprintln!("warning: benchmark built without optimisation");
    }
    let preset = std::env::var("PCSTREAM_BENCH_PRESET").unwrap_or_else(|_| "paper".into());
    let cfg = SsdConfig::preset(&preset).expect("preset");
    let logical = cfg.logical_pages();
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("uniform.parquet");
    let p = GenParams {
        capacity_pages: logical,
        writes: 2 * logical,
        seed: 1,
        ..Default::default()
    };
    generate_to_file("uniform", &p, &trace).expect("generate");
    // One run to learn the page-operation count (deterministic).
    let probe = |timing: bool| {
        let o = SimOptions {
            policy: "baseline".into(),
            prefill: 1.0,
            warmup: 0,
            timing,
            seed: 1,
            ..Default::default()
        };
        run_trace(&trace, &cfg, o, None, &mut |_, _| true).expect("run")
    };
    let r = probe(false);
    let ops = r.host_pages + r.gc_pages;
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    g.throughput(Throughput::Elements(ops));
    for timing in [false, true] {
        let name = if timing {
            "baseline_uniform_timing"
        } else {
            "baseline_uniform_no_timing"
        };
        g.bench_function(format!("{preset}/{name}"), |b| b.iter(|| probe(timing)));
    }
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
