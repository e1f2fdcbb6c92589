//! Decode throughput (ignored by default; run with
//! `cargo test -p pcstream-trace --release --test throughput -- --ignored --nocapture`).
//! The simulator needs ≥ 10 M rows/s from the reader.

use std::time::Instant;

use pcstream_trace::{generate_to_file, BlockTraceReader, GenParams};

#[test]
#[ignore]
fn decode_10m_uniform_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.parquet");
    let p = GenParams {
        writes: 10_000_000,
        capacity_pages: 3_145_728,
        ..Default::default()
    };
    let t = Instant::now();
    generate_to_file("uniform", &p, &path).unwrap();
    let gen_s = t.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).unwrap().len();

    let t = Instant::now();
    let mut r = BlockTraceReader::open(&path).unwrap();
    let (mut buf, mut n, mut sum) = (Vec::new(), 0u64, 0u64);
    while r.next_batch(&mut buf).unwrap() {
        n += buf.len() as u64;
        sum = sum.wrapping_add(buf.iter().map(|q| q.lpn).sum::<u64>());
    }
    let direct = n as f64 / t.elapsed().as_secs_f64();
    assert_eq!(n, 10_000_000);

    let t = Instant::now();
    let mut pf = BlockTraceReader::open(&path).unwrap().into_prefetch(4);
    let (mut m, mut sum2) = (0u64, 0u64);
    while let Some(b) = pf.next_batch() {
        let b = b.unwrap();
        m += b.len() as u64;
        sum2 = sum2.wrapping_add(b.iter().map(|q| q.lpn).sum::<u64>());
        pf.recycle(b);
    }
    let prefetch = m as f64 / t.elapsed().as_secs_f64();
    assert_eq!((m, sum2), (n, sum));
    println!(
        "generate+write: {gen_s:.2} s ({:.1} M rows/s), file {:.1} MB; decode: next_batch {:.1} M rows/s, prefetch {:.1} M rows/s",
        10.0 / gen_s,
        bytes as f64 / 1e6,
        direct / 1e6,
        prefetch / 1e6
    );
}
