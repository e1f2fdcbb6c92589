//! Importers: exact rows from hand-written fixtures, `FILE:LINE` errors with no output left
//! behind, `--skip-bad`, the device filter, compressed inputs.

use std::path::{Path, PathBuf};

use pcstream_core::request::Request;
use pcstream_trace::import::{import, ImportOptions};
use pcstream_trace::BlockTraceReader;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

fn rows(path: &Path) -> (Vec<Request>, Option<u64>) {
    let mut r = BlockTraceReader::open(path).unwrap();
    let cap = r.meta().capacity_pages;
    let (mut all, mut buf) = (Vec::new(), Vec::new());
    while r.next_batch(&mut buf).unwrap() {
        all.extend_from_slice(&buf);
    }
    (all, cap)
}

/// (op, lpn, pages, ts_ns) of each row.
fn brief(v: &[Request]) -> Vec<(u8, u64, u32, u64)> {
    v.iter().map(|r| (r.op, r.lpn, r.pages, r.ts_ns)).collect()
}

fn run(
    format: &str,
    input: &Path,
    opts: ImportOptions,
) -> Result<(Vec<Request>, Option<u64>), String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    match import(format, input, &out, &opts, &mut |_, _| true) {
        Ok(_) => Ok(rows(&out)),
        Err(e) => {
            assert!(!out.exists(), "no output on error");
            let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
            Err(e.to_string())
        }
    }
}

#[test]
fn msr_rows_units_and_device_filter() {
    let (v, cap) = run("msr", &fixture("msr_good.csv"), ImportOptions::default()).unwrap();
    // FILETIME ticks are 100 ns; offsets in bytes; 4095 + 2 bytes straddles pages 0 and 1.
    assert_eq!(
        brief(&v),
        vec![
            (0, 786_432, 1, 0),
            (2, 2, 2, 100),
            (0, 0, 1, 10_000_000),
            (0, 0, 2, 20_000_000)
        ]
    );
    assert_eq!(cap, Some(786_433));
    let only = ImportOptions {
        device: Some("hm_1".into()),
        ..Default::default()
    };
    let (v, _) = run("msr", &fixture("msr_good.csv"), only).unwrap();
    assert_eq!(brief(&v), vec![(0, 0, 1, 0)]);
}

#[test]
fn alibaba_tencent_mqsim_rows() {
    let (v, _) = run(
        "alibaba",
        &fixture("alibaba_good.csv"),
        ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(
        brief(&v),
        vec![(0, 1, 2, 0), (2, 0, 1, 74_000), (0, 0, 1, 174_000)]
    );
    let (v, _) = run(
        "tencent",
        &fixture("tencent_good.csv"),
        ImportOptions::default(),
    )
    .unwrap();
    // sectors of 512 B: offset 8 sectors = 4096 B = page 1; 16 sectors = 2 pages.
    assert_eq!(
        brief(&v),
        vec![
            (0, 1, 2, 0),
            (2, 0, 1, 1_000_000_000),
            (0, 1, 1, 2_000_000_000)
        ]
    );
    let (v, _) = run(
        "mqsim",
        &fixture("mqsim_good.trace"),
        ImportOptions::default(),
    )
    .unwrap();
    // Type 0 = write, 1 = read; LBA 16 = 8 KiB = page 2.
    assert_eq!(
        brief(&v),
        vec![(0, 2, 1, 0), (2, 0, 1, 1000), (0, 8, 2, 2000)]
    );
}

#[test]
fn blkparse_keeps_issue_events_only() {
    let (v, _) = run(
        "blkparse",
        &fixture("blkparse_good.txt"),
        ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(
        brief(&v),
        vec![
            (0, 256, 1, 0),
            (2, 0, 2, 499_000),
            (1, 512, 8, 999_000),
            (3, 0, 0, 2_999_000)
        ]
    );
    assert_eq!(v[0].pid, 697);
}

#[test]
fn fio_v2_and_v3() {
    let (v, _) = run("fio", &fixture("fio_v2_good.log"), ImportOptions::default()).unwrap();
    assert_eq!(
        brief(&v),
        vec![
            (0, 0, 1, 0),
            (0, 1, 2, 1000),
            (2, 0, 1, 2000),
            (1, 0, 1, 3000),
            (3, 0, 0, 4000)
        ]
    );
    let (v, _) = run("fio", &fixture("fio_v3_good.log"), ImportOptions::default()).unwrap();
    assert_eq!(brief(&v), vec![(0, 115_197, 1, 0), (2, 0, 1, 1_000_000)]);
}

#[test]
fn malformed_lines_name_file_and_line() {
    for (format, file, line, what) in [
        ("msr", "msr_bad.csv", 2, "Type 'erase'"),
        (
            "alibaba",
            "alibaba_bad.csv",
            1,
            "expected 5 comma-separated fields",
        ),
        ("tencent", "tencent_bad.csv", 1, "IOType '2'"),
        ("blkparse", "blkparse_bad.txt", 1, "sector + nsectors"),
        ("fio", "fio_bad.log", 2, "FILE ACTION OFFSET LENGTH"),
        ("mqsim", "mqsim_bad.trace", 1, "Type '2'"),
    ] {
        let e = run(format, &fixture(file), ImportOptions::default()).unwrap_err();
        let at = format!("{}:{line}: ", fixture(file).display());
        assert!(
            e.starts_with(&at) && e.contains(what) && e.contains("--skip-bad") && !e.contains('\n'),
            "{e}"
        );
    }
}

#[test]
fn skip_bad_tolerates_exactly_n_lines() {
    let one = ImportOptions {
        skip_bad: 1,
        ..Default::default()
    };
    let e = run("msr", &fixture("msr_bad.csv"), one).unwrap_err();
    assert!(
        e.contains(":3: Offset 'abc'") && e.contains("more than --skip-bad 1"),
        "{e}"
    );
    let two = ImportOptions {
        skip_bad: 2,
        ..Default::default()
    };
    let (v, _) = run("msr", &fixture("msr_bad.csv"), two).unwrap();
    assert_eq!(v.len(), 1);
}

#[test]
fn capacity_given_is_enforced() {
    let small = ImportOptions {
        capacity_pages: Some(1000),
        ..Default::default()
    };
    let e = run("msr", &fixture("msr_good.csv"), small).unwrap_err();
    assert!(
        e.contains("msr_good.csv:1:") && e.contains("--capacity 1000"),
        "{e}"
    );
}

#[test]
fn compressed_inputs_read_like_plain_ones() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(fixture("alibaba_good.csv")).unwrap();
    let gz = dir.path().join("t.csv.gz");
    {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::default(),
        );
        e.write_all(&plain).unwrap();
        e.finish().unwrap();
    }
    let zst = dir.path().join("t.csv.zst");
    std::fs::write(&zst, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    let (a, _) = run(
        "alibaba",
        &fixture("alibaba_good.csv"),
        ImportOptions::default(),
    )
    .unwrap();
    let (b, _) = run("alibaba", &gz, ImportOptions::default()).unwrap();
    let (c, _) = run("alibaba", &zst, ImportOptions::default()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, c);
}

#[test]
fn unknown_format_and_missing_file() {
    let e = run("nope", &fixture("msr_good.csv"), ImportOptions::default()).unwrap_err();
    assert!(
        e.contains("unknown import format 'nope'") && e.contains("blkparse"),
        "{e}"
    );
    let e = run(
        "msr",
        Path::new("/nonexistent/x.csv"),
        ImportOptions::default(),
    )
    .unwrap_err();
    assert!(e.contains("/nonexistent/x.csv: no such file"), "{e}");
}

#[test]
fn meta_map_splits_requests_at_range_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.txt");
    // blkparse D lines: a write over pages 0..4 (sectors 0..32), a trim, a flush.
    std::fs::write(
        &input,
        "7,0 1 1 0.000000000 5 D WS 0 + 32 [jbd2]\n\
         7,0 1 2 0.000001000 5 D DS 80 + 8 [k]\n\
         7,0 1 3 0.000002000 5 D FWS 0 + 0 [sync]\n",
    )
    .unwrap();
    // pages 1..2 journal, 3 inode; page 10 directory (the trim hits it).
    let opts = ImportOptions {
        meta_map: vec![(1, 2, 1), (3, 1, 2), (10, 1, 3)],
        ..Default::default()
    };
    let (v, cap) = run("blkparse", &input, opts).unwrap();
    let got: Vec<(u8, u64, u32, u8)> = v.iter().map(|r| (r.op, r.lpn, r.pages, r.meta)).collect();
    assert_eq!(
        got,
        vec![
            (0, 0, 1, 0),
            (0, 1, 2, 1),
            (0, 3, 1, 2),
            (1, 10, 1, 3),
            (3, 0, 0, 0)
        ]
    );
    assert_eq!(cap, Some(11));
    let bad = ImportOptions {
        meta_map: vec![(5, 2, 1), (6, 1, 2)],
        ..Default::default()
    };
    let e = run("blkparse", &input, bad).unwrap_err();
    assert!(
        e.contains("meta map entry 1") && e.contains("inside the previous range"),
        "{e}"
    );
}

#[test]
fn progress_reports_bytes_and_can_stop() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.csv");
    let line = "0,W,4096,4096,1577808000000626\n";
    std::fs::write(&input, line.repeat(200_000)).unwrap();
    let size = std::fs::metadata(&input).unwrap().len();
    let out = dir.path().join("out.parquet");
    let mut seen = Vec::new();
    import(
        "alibaba",
        &input,
        &out,
        &ImportOptions::default(),
        &mut |done, total| {
            seen.push((done, total));
            true
        },
    )
    .unwrap();
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0));
    assert_eq!(*seen.last().unwrap(), (size, size));
    std::fs::remove_file(&out).unwrap();
    let e = import(
        "alibaba",
        &input,
        &out,
        &ImportOptions::default(),
        &mut |_, _| false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("interrupted"), "{e}");
    assert!(!out.exists(), "no output after a stop");
}

#[test]
fn a_label_names_the_input_in_the_source_and_in_errors() {
    // A volume's lines spilled from a larger file: the trace and its errors name that file.
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("0.txt");
    std::fs::write(&spill, "3,W,0,4096,1\n").unwrap();
    let labelled = ImportOptions {
        label: Some("io_traces.csv".into()),
        ..Default::default()
    };
    let out = dir.path().join("3.parquet");
    import("alibaba", &spill, &out, &labelled, &mut |_, _| true).unwrap();
    let reader = BlockTraceReader::open(&out).unwrap();
    assert_eq!(
        reader.meta().source,
        "pcstream import alibaba io_traces.csv"
    );
    std::fs::write(&spill, "3,W,0,4096,1\n3,X,0,4096,2\n").unwrap();
    let e = run("alibaba", &spill, labelled).unwrap_err();
    assert!(e.starts_with("io_traces.csv:2: opcode 'X'"), "{e}");
}
