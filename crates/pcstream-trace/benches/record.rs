//! Record-stage conversion throughput: synthetic shim logs (`record::synth`: 4 processes of 4
//! threads making 1–48-byte stdio writes, interleaved as the shim appends them) indexed and
//! merged into a file-level trace, one row per call and coalesced; throughput in input records
//! per second. `PCSTREAM_BENCH_RECORDS` sets the size (default 3 M records).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pcstream_trace::record::shimlog::read_dir;
use pcstream_trace::record::synth::{write_synthetic, SynthSpec};
use pcstream_trace::record::write_file_trace;

fn record(c: &mut Criterion) {
    if cfg!(debug_assertions) {
        eprintln!("warning: benchmark built without optimisation");
    }
    let n: u64 = std::env::var("PCSTREAM_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("logs dir");
    let spec = SynthSpec {
        records: n,
        ..Default::default()
    };
    let totals = write_synthetic(&logs, &spec).expect("synthetic logs");
    let out = dir.path().join("t.parquet");
    let mut g = c.benchmark_group("record");
    g.sample_size(10);
    g.throughput(Throughput::Elements(totals.records));
    for (name, coalesce) in [("convert", false), ("convert_coalesced", true)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let logs = read_dir(&logs).expect("index");
                write_file_trace(&logs, &out, "bench", coalesce).expect("convert")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, record);
criterion_main!(benches);
