//! Every reader/writer error: a one-line message naming the file, the row group and row where
//! known, and what to do; never a panic.

mod common;

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array, UInt8Array,
};
use common::{read_err, write_raw};
use pcstream_core::request::Request;
use pcstream_trace::{summarize, BlockTraceReader, BlockTraceWriter, TraceError, TraceMeta};

fn open_err(path: &std::path::Path) -> String {
    match BlockTraceReader::open(path) {
        Ok(_) => panic!("expected {} not to open", path.display()),
        Err(e) => e.to_string(),
    }
}

fn assert_one_line(s: &str) {
    assert!(!s.contains('\n'), "message spans lines: {s}");
}

/// ops/lpns/pages columns as UInt8/UInt64/UInt32.
fn cols(op: Vec<u8>, lpn: Vec<u64>, pages: Vec<u32>) -> Vec<(&'static str, ArrayRef)> {
    vec![
        ("op", Arc::new(UInt8Array::from(op)) as ArrayRef),
        ("lpn", Arc::new(UInt64Array::from(lpn))),
        ("pages", Arc::new(UInt32Array::from(pages))),
    ]
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.parquet");
    let s = open_err(&p);
    assert_eq!(s, format!("{}: no such file; check the path", p.display()));
    assert!(matches!(
        BlockTraceReader::open(&p),
        Err(TraceError::Missing { .. })
    ));
    assert!(summarize(&p)
        .unwrap_err()
        .to_string()
        .contains("no such file"));
}

#[test]
fn not_parquet_and_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.parquet");
    std::fs::write(&p, "ts,op,lpn\n1,0,5\n").unwrap();
    let s = open_err(&p);
    assert!(
        s.starts_with(&format!("{}: not a readable Parquet file (", p.display())),
        "{s}"
    );
    assert!(s.ends_with("); was it fully written?"), "{s}");
    assert_one_line(&s);

    // A real trace with its tail (footer) cut off, at several lengths.
    let good = dir.path().join("good.parquet");
    let mut w = BlockTraceWriter::create(&good, &TraceMeta::default(), 1000).unwrap();
    for i in 0..5000u64 {
        w.push(&Request::write(i * 3, 2)).unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(&good).unwrap();
    for cut in [1usize, 7, 100, bytes.len() / 2, bytes.len() - 4] {
        let p = dir.path().join(format!("cut{cut}.parquet"));
        std::fs::write(&p, &bytes[..bytes.len() - cut]).unwrap();
        let s = read_err(&p);
        assert!(
            s.contains("not a readable Parquet file") && s.contains("was it fully written?"),
            "cut {cut}: {s}"
        );
        assert_one_line(&s);
    }
    // Corrupt data pages with an intact footer: an error (with the row group), not a panic.
    let mut bad = bytes.clone();
    for b in bad[4..bytes.len() / 2].iter_mut() {
        *b = 0x5a;
    }
    let p = dir.path().join("corrupt.parquet");
    std::fs::write(&p, &bad).unwrap();
    let s = read_err(&p);
    assert!(s.starts_with(&p.display().to_string()), "{s}");
    assert_one_line(&s);
}

#[test]
fn required_columns() {
    let dir = tempfile::tempdir().unwrap();
    for missing in ["lpn", "pages", "op"] {
        let p = dir.path().join(format!("no-{missing}.parquet"));
        let c: Vec<_> = cols(vec![0], vec![1], vec![1])
            .into_iter()
            .filter(|(n, _)| *n != missing)
            .collect();
        write_raw(&p, c, &[], 10);
        let s = open_err(&p);
        assert!(
            s.starts_with(&format!(
                "{}: required column '{missing}' is missing",
                p.display()
            )),
            "{s}"
        );
    }
}

#[test]
fn wrong_type_names_the_column_and_both_types() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.parquet");
    let mut c = cols(vec![0], vec![1], vec![1]);
    c[1] = ("lpn", Arc::new(Float64Array::from(vec![1.0])));
    write_raw(&p, c, &[], 10);
    let s = open_err(&p);
    assert!(
        s.starts_with(&format!("{}: column 'lpn' has type Float64", p.display())),
        "{s}"
    );
    assert!(s.contains("UInt64"), "{s}");

    let p = dir.path().join("s.parquet");
    let mut c = cols(vec![0], vec![1], vec![1]);
    c.push(("pid", Arc::new(StringArray::from(vec!["42"]))));
    write_raw(&p, c, &[], 10);
    let s = open_err(&p);
    assert!(
        s.contains("column 'pid' has type Utf8") && s.contains("UInt32"),
        "{s}"
    );
}

#[test]
fn bad_rows_give_row_group_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let n = 35usize;
    let kv = [
        ("pcstream.format", "1"),
        ("pcstream.capacity_pages", "1000"),
    ];
    let case = |name: &str, k: usize, op: u8, lpn: u64, pages: u32| {
        let p = dir.path().join(name);
        let mut o = vec![0u8; n];
        let mut l: Vec<u64> = (0..n as u64).collect();
        let mut g = vec![1u32; n];
        o[k] = op;
        l[k] = lpn;
        g[k] = pages;
        write_raw(&p, cols(o, l, g), &kv, 10);
        (p.display().to_string(), read_err(&p))
    };
    let (p, s) = case("op.parquet", 23, 9, 5, 1);
    assert!(
        s.starts_with(&format!(
            "{p}: row group 2, row 3: op 9 is not 0 (write), 1 (trim), 2 (read) or 3 (flush)"
        )),
        "{s}"
    );
    let (p, s) = case("pages.parquet", 0, 1, 5, 0);
    assert!(
        s.starts_with(&format!("{p}: row group 0, row 0: pages is 0 for a trim")),
        "{s}"
    );
    let (p, s) = case("cap.parquet", 34, 0, 995, 8);
    assert_eq!(
        s,
        format!("{p}: row group 3, row 4: lpn 995 + 8 pages is beyond the trace capacity (1000 pages); re-generate the trace or fix pcstream.capacity_pages")
    );
    // Exactly at the capacity is fine; a flush with 0 pages is fine.
    let p = dir.path().join("ok.parquet");
    write_raw(&p, cols(vec![0, 3], vec![992, 0], vec![8, 0]), &kv, 10);
    assert_eq!(common::read_all(&p).unwrap().len(), 2);
}

#[test]
fn values_that_do_not_fit_and_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("neg.parquet");
    let mut c = cols(vec![0; 12], (0..12).collect(), vec![1; 12]);
    c[1] = (
        "lpn",
        Arc::new(Int64Array::from(
            (0..12)
                .map(|i| if i == 11 { -5 } else { i })
                .collect::<Vec<_>>(),
        )),
    );
    write_raw(&p, c, &[], 4);
    let s = read_err(&p);
    assert!(
        s.starts_with(&format!(
            "{}: row group 2, row 3: lpn = -5 does not fit",
            p.display()
        )),
        "{s}"
    );

    let p = dir.path().join("wide.parquet");
    let mut c = cols(vec![0; 2], vec![0; 2], vec![1; 2]);
    c.push(("hint", Arc::new(UInt64Array::from(vec![1, 300]))));
    write_raw(&p, c, &[], 4);
    assert!(read_err(&p)
        .contains("row group 0, row 1: hint = 300 does not fit the column's type (UInt8)"));

    let p = dir.path().join("null.parquet");
    let mut c = cols(vec![0; 2], vec![0; 2], vec![1; 2]);
    c[1] = ("lpn", Arc::new(UInt64Array::from(vec![Some(1), None])));
    write_raw(&p, c, &[], 4);
    assert!(read_err(&p).contains("row group 0, row 1: column lpn is null"));
}

#[test]
fn bad_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.parquet");
    write_raw(
        &p,
        cols(vec![0], vec![0], vec![1]),
        &[("pcstream.files", "{\"1\": ")],
        10,
    );
    let s = open_err(&p);
    assert!(
        s.starts_with(&format!(
            "{}: metadata key pcstream.files: malformed JSON",
            p.display()
        )),
        "{s}"
    );
    assert_one_line(&s);

    write_raw(
        &p,
        cols(vec![0], vec![0], vec![1]),
        &[("pcstream.format", "2")],
        10,
    );
    let s = open_err(&p);
    assert!(
        s.contains("pcstream.format") && s.contains("upgrade pcstream"),
        "{s}"
    );

    write_raw(
        &p,
        cols(vec![0], vec![0], vec![1]),
        &[("pcstream.page_bytes", "512")],
        10,
    );
    assert!(open_err(&p).contains("page size 512 is not supported"));
}

#[test]
fn write_errors_name_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("no-such-dir").join("t.parquet");
    let e = BlockTraceWriter::create(&p, &TraceMeta::default(), 10)
        .err()
        .expect("cannot create");
    let s = e.to_string();
    assert!(
        s.starts_with(&format!("{}: cannot write (", p.display())),
        "{s}"
    );
    assert!(s.contains("check that the directory exists"), "{s}");
    assert_one_line(&s);
}
