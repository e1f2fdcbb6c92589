//! Engine throughput: baseline, uniform random 4 KiB writes on the `paper` preset at steady state
//! (full sequential prefill, one device-fill of warm-up), Parquet decode included.
//! Reports page operations per second (host writes + GC copies), with and without timing.
//! Also the block-trace decoder alone (`decode`): rows per second straight from the reader and
//! through the prefetching thread the simulator uses (it needs ≥ 10 M rows/s), and what page
//! checksums cost: an open (every page's CRC32 checked), the checksum copy alone, a whole write.
//! `PCSTREAM_BENCH_PRESET=small` runs a quick version.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pcstream_core::{SimOptions, SsdConfig};
use pcstream_trace::parquet::checksum::add_checksums;
use pcstream_trace::{generate_to_file, run_trace, BlockTraceReader, GenParams};

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

/// Sum of the LPNs of every row, read with `next_batch` (or through `Prefetch`): the checksum
/// keeps the decoding from being optimised away and ties both readers to the same rows.
fn read_all(path: &std::path::Path, prefetch: bool) -> (u64, u64) {
    let (mut rows, mut sum) = (0u64, 0u64);
    if prefetch {
        let mut pf = BlockTraceReader::open(path).expect("open").into_prefetch(4);
        while let Some(b) = pf.next_batch() {
            let b = b.expect("batch");
            rows += b.len() as u64;
            sum = sum.wrapping_add(b.iter().map(|q| q.lpn).sum::<u64>());
            pf.recycle(b);
        }
    } else {
        let mut r = BlockTraceReader::open(path).expect("open");
        let mut buf = Vec::new();
        while r.next_batch(&mut buf).expect("batch") {
            rows += buf.len() as u64;
            sum = sum.wrapping_add(buf.iter().map(|q| q.lpn).sum::<u64>());
        }
    }
    (rows, sum)
}

fn decode(c: &mut Criterion) {
    let rows = if std::env::var("PCSTREAM_BENCH_PRESET").as_deref() == Ok("small") {
        1_000_000
    } else {
        10_000_000
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("u.parquet");
    let p = GenParams {
        writes: rows,
        capacity_pages: 3_145_728,
        ..Default::default()
    };
    generate_to_file("uniform", &p, &path).expect("generate");
    let direct = read_all(&path, false);
    assert_eq!(direct.0, rows);
    assert_eq!(
        read_all(&path, true),
        direct,
        "prefetch reads the same rows"
    );
    let mut g = c.benchmark_group("decode");
    g.sample_size(10);
    g.throughput(Throughput::Elements(rows));
    g.bench_function("uniform/next_batch", |b| b.iter(|| read_all(&path, false)));
    g.bench_function("uniform/prefetch", |b| b.iter(|| read_all(&path, true)));
    // What page checksums cost: opening (every page header walked and every page's CRC32
    // checked), and the copy that gives a written file its checksums.
    g.bench_function("uniform/open", |b| {
        b.iter(|| BlockTraceReader::open(&path).expect("open").num_rows())
    });
    let copy = dir.path().join("copy.parquet");
    g.bench_function("uniform/add_checksums", |b| {
        b.iter(|| add_checksums(&path, &copy).expect("checksums"))
    });
    g.bench_function("uniform/generate_to_file", |b| {
        b.iter(|| generate_to_file("uniform", &p, &copy).expect("generate"))
    });
    g.finish();
}

criterion_group!(benches, engine, decode);
criterion_main!(benches);
