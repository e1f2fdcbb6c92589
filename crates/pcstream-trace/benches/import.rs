//! Importer throughput: input lines per second through `import::import` (read, parse, convert,
//! Parquet encode and write) for synthetic MSR Cambridge and Alibaba CSV files written to a
//! temporary directory. `PCSTREAM_BENCH_LINES` sets the size (default 1 M lines per file).

use std::io::Write;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pcstream_trace::import::{import, ImportOptions};

/// A seeded xorshift: deterministic inputs without the rand crates' setup cost.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// MSR lines as the SNIA files have them: FILETIME ticks, host, disk, Read/Write, byte offset
/// (4 KiB aligned mostly, some odd), size 4–64 KiB, response time.
fn write_msr(path: &Path, lines: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let mut ts = 128_166_372_002_993_000u64;
    for _ in 0..lines {
        ts += r.next() % 20_000;
        let op = if r.next().is_multiple_of(3) {
            "Read"
        } else {
            "Write"
        };
        let off = (r.next() % (1 << 22)) * 4096 + if r.next().is_multiple_of(8) { 512 } else { 0 };
        let size = 4096 * (1 + r.next() % 16);
        writeln!(
            f,
            "{ts},hm,{},{op},{off},{size},{}",
            r.next() % 2,
            r.next() % 100_000
        )
        .expect("write");
    }
    f.flush().expect("flush");
}

/// Alibaba lines: device id, R/W, byte offset, length, µs timestamp.
fn write_alibaba(path: &Path, lines: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ts = 1_577_808_000_000_626u64;
    for _ in 0..lines {
        ts += r.next() % 200;
        let op = if r.next().is_multiple_of(4) { 'R' } else { 'W' };
        let off = (r.next() % (1 << 22)) * 4096;
        let len = 4096 * (1 + r.next() % 32);
        writeln!(f, "{},{op},{off},{len},{ts}", r.next() % 4).expect("write");
    }
    f.flush().expect("flush");
}

fn bench(c: &mut Criterion) {
    if cfg!(debug_assertions) {
        eprintln!("warning: benchmark built without optimisation");
    }
    let lines: u64 = std::env::var("PCSTREAM_BENCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let msr = dir.path().join("hm_0.csv");
    let ali = dir.path().join("io_traces.csv");
    write_msr(&msr, lines);
    write_alibaba(&ali, lines);
    let out = dir.path().join("out.parquet");
    let mut g = c.benchmark_group("import");
    g.sample_size(10);
    g.throughput(Throughput::Elements(lines));
    for (name, format, input) in [("msr_csv", "msr", &msr), ("alibaba_csv", "alibaba", &ali)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let rep = import(
                    format,
                    input,
                    &out,
                    &ImportOptions::default(),
                    &mut |_, _| true,
                )
                .expect("import");
                assert_eq!(rep.lines, lines);
                rep.rows
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
