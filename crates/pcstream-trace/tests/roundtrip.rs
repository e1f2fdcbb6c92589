//! Write → read round trips: every column and metadata key, any row-group size, hand-written
//! files with other column orders, missing optional columns, signed and extra columns, the
//! prefetching reader, and the writer's atomic output.

mod common;

use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray, UInt16Array, UInt8Array};
use common::{read_all, write_raw};
use pcstream_core::request::Request;
use pcstream_trace::{scan_capacity, BlockTraceReader, BlockTraceWriter, TraceMeta};

/// Rows exercising every column, including values that need the full width of each type.
fn sample_rows(n: u64) -> Vec<Request> {
    (0..n)
        .map(|i| Request {
            ts_ns: i * 1_000 + (i % 3),
            op: (i % 4) as u8,
            lpn: (i * 7919) % 1_000_000,
            pages: if i % 4 == 3 { 0 } else { 1 + (i % 9) as u32 },
            pc: u64::MAX - i,
            file: (i as u32).wrapping_mul(2_654_435_761),
            file_class: [0, 3, u16::MAX][(i % 3) as usize],
            meta: (i % 6) as u8,
            pid: u32::MAX - i as u32,
            hint: (i % 6) as u8,
        })
        .collect()
}

fn sample_meta() -> TraceMeta {
    let mut m = TraceMeta {
        capacity_pages: Some(1_000_016),
        source: "unit test: \"quoted\" source".into(),
        ..Default::default()
    };
    m.files.insert(1, "/data/000001.sst".into());
    m.files.insert(4_000_000_000, "/ünïcode/path".into());
    m.file_classes.insert(3, "sst".into());
    m.file_classes.insert(u16::MAX, "last".into());
    m.pcs = serde_json::json!({"18446744073709551615": [{"module": "libc.so", "offset": 4096, "symbol": "write"}]});
    m
}

fn write(path: &std::path::Path, rows: &[Request], meta: &TraceMeta, group: usize) -> u64 {
    let mut w = BlockTraceWriter::create(path, meta, group).unwrap();
    for r in rows {
        w.push(r).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn every_column_and_key_round_trips_for_any_row_group_size() {
    let dir = tempfile::tempdir().unwrap();
    let rows = sample_rows(20_001);
    let meta = sample_meta();
    for group in [1usize, 7, 1000, 16_384, 1 << 20] {
        // Small groups on a prefix: thousands of row groups cost minutes in a debug build and
        // test nothing that a few hundred do not.
        let rows = match group {
            1 => &rows[..1001],
            7 => &rows[..3001],
            _ => &rows[..],
        };
        let path = dir.path().join(format!("t{group}.parquet"));
        assert_eq!(write(&path, rows, &meta, group), rows.len() as u64);
        let r = BlockTraceReader::open(&path).unwrap();
        assert_eq!(r.meta(), &meta);
        assert_eq!(r.num_rows(), rows.len() as u64);
        assert_eq!(
            r.num_row_groups(),
            rows.len().div_ceil(group),
            "group {group}"
        );
        assert_eq!(r.path(), path.as_path());
        assert_eq!(read_all(&path).unwrap(), rows, "group size {group}");
    }
}

#[test]
fn batches_are_bounded_and_memory_does_not_follow_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let rows = sample_rows(200_000);
    write(&path, &rows, &sample_meta(), 150_000);
    let mut r = BlockTraceReader::open(&path).unwrap();
    let mut buf = Vec::new();
    let mut total = 0;
    while r.next_batch(&mut buf).unwrap() {
        assert!(
            !buf.is_empty() && buf.len() <= 65_536,
            "batch of {}",
            buf.len()
        );
        total += buf.len();
    }
    assert_eq!(total, 200_000);
    assert!(buf.is_empty(), "next_batch clears the output at the end");
}

#[test]
fn prefetch_yields_the_same_rows_and_reuses_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let rows = sample_rows(300_000);
    write(&path, &rows, &sample_meta(), 50_000);
    let mut pf = BlockTraceReader::open(&path).unwrap().into_prefetch(2);
    let mut got = Vec::new();
    let mut ptrs = std::collections::BTreeSet::new();
    while let Some(b) = pf.next_batch() {
        let b = b.unwrap();
        got.extend_from_slice(&b);
        ptrs.insert(b.as_ptr() as usize);
        pf.recycle(b);
    }
    assert_eq!(got, rows);
    assert!(pf.next_batch().is_none(), "stays at the end");
    // 5 batches went round; with recycling the decoder refills at most depth + 2 + 1 buffers.
    assert!(ptrs.len() <= 4, "{} distinct buffers", ptrs.len());
}

#[test]
fn dropping_a_prefetch_early_stops_the_decoder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path, &sample_rows(300_000), &sample_meta(), 10_000);
    let mut pf = BlockTraceReader::open(&path).unwrap().into_prefetch(1);
    assert!(pf.next_batch().unwrap().is_ok());
    drop(pf); // joins the thread; would hang if the decoder stayed blocked
}

#[test]
fn other_column_order_missing_optional_and_extra_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.parquet");
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("comment", Arc::new(StringArray::from(vec!["a", "b", "c"]))),
        ("pages", Arc::new(Int32Array::from(vec![1, 2, 3]))),
        ("hint", Arc::new(UInt8Array::from(vec![4, 5, 0]))),
        ("lpn", Arc::new(Int64Array::from(vec![10, 20, 30]))),
        ("file_class", Arc::new(UInt16Array::from(vec![9, 8, 7]))),
        ("op", Arc::new(Int32Array::from(vec![0, 2, 1]))),
    ];
    write_raw(&path, cols, &[], 2);
    let r = BlockTraceReader::open(&path).unwrap();
    assert_eq!(r.meta().capacity_pages, None);
    assert_eq!(r.capacity_pages().unwrap(), 33);
    assert_eq!(scan_capacity(&path).unwrap(), 33);
    let rows = read_all(&path).unwrap();
    let want = [
        Request {
            lpn: 10,
            pages: 1,
            op: 0,
            hint: 4,
            file_class: 9,
            ..Default::default()
        },
        Request {
            lpn: 20,
            pages: 2,
            op: 2,
            hint: 5,
            file_class: 8,
            ..Default::default()
        },
        Request {
            lpn: 30,
            pages: 3,
            op: 1,
            hint: 0,
            file_class: 7,
            ..Default::default()
        },
    ];
    assert_eq!(rows, want);
}

#[test]
fn capacity_set_after_the_rows_is_written_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let mut w = BlockTraceWriter::create(&path, &TraceMeta::default(), 100).unwrap();
    w.push(&Request::write(90, 10)).unwrap();
    assert_eq!(w.rows(), 1);
    w.set_meta(&TraceMeta {
        capacity_pages: Some(100),
        ..Default::default()
    });
    w.finish().unwrap();
    assert_eq!(
        BlockTraceReader::open(&path).unwrap().meta().capacity_pages,
        Some(100)
    );

    let path2 = dir.path().join("t2.parquet");
    let mut w = BlockTraceWriter::create(&path2, &TraceMeta::default(), 100).unwrap();
    w.push(&Request::write(90, 10)).unwrap();
    w.set_meta(&TraceMeta {
        capacity_pages: Some(99),
        ..Default::default()
    });
    let e = w.finish().unwrap_err().to_string();
    assert!(
        e.contains("pcstream.capacity_pages") && e.contains("100 pages"),
        "{e}"
    );
    assert!(!path2.exists());
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn writer_leaves_nothing_when_dropped_or_failing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    {
        let mut w = BlockTraceWriter::create(&path, &TraceMeta::default(), 10).unwrap();
        for r in sample_rows(1000) {
            w.push(&r).unwrap();
        }
        let tmp = format!("t.parquet.tmp-{}", std::process::id());
        assert_eq!(
            leftovers(dir.path()),
            vec![tmp],
            "writes go to PATH.tmp-<pid>"
        );
    }
    assert!(
        leftovers(dir.path()).is_empty(),
        "dropped unfinished: temp file removed"
    );

    let meta = TraceMeta {
        capacity_pages: Some(50),
        ..Default::default()
    };
    let mut w = BlockTraceWriter::create(&path, &meta, 4).unwrap();
    for i in 0..10 {
        w.push(&Request::write(i, 1)).unwrap();
    }
    let e = w.push(&Request::write(45, 6)).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}: row group 2, row 2: lpn 45 + 6 pages is beyond the trace capacity (50 pages)",
            path.display()
        )),
        "{e}"
    );
    let e = w
        .push(&Request {
            op: 7,
            pages: 1,
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("op 7 is not 0 (write)"), "{e}");
    let e = w.push(&Request::trim(3, 0)).unwrap_err().to_string();
    assert!(e.contains("pages is 0"), "{e}");
    w.push(&Request {
        op: 3,
        ..Default::default()
    })
    .unwrap(); // a flush carries no pages
    drop(w);
    assert!(leftovers(dir.path()).is_empty());
}
