//! Hardening: no input makes the readers, importers or the driver panic, abort or accept
//! garbage (docs/HARDENING.md). One test per class of the hostile-input review: corrupt Parquet
//! pages, overflowing geometry, huge but valid devices, huge capacities, offsets and times that
//! overflow, backwards times, inputs without requests, over-long lines, NUL bytes, unknown
//! blkparse rwbs, the embedded Arrow schema's metadata, inputs that are not regular files, file
//! classes the class table does not name.

mod common;

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use pcstream_core::request::Request;
use pcstream_core::{SimOptions, SsdConfig};
use pcstream_trace::blocktrace::format::MAX_PAGES;
use pcstream_trace::filetrace::FileTraceReader;
use pcstream_trace::import::{import, import_lines, ImportOptions, ImportReport};
use pcstream_trace::{
    generate_to_file, summarize, BlockTraceReader, BlockTraceWriter, GenParams, TraceError,
    TraceMeta,
};

fn read_all(path: &Path) -> Result<Vec<Request>, TraceError> {
    let mut r = BlockTraceReader::open(path)?;
    let (mut all, mut buf) = (Vec::new(), Vec::new());
    while r.next_batch(&mut buf)? {
        all.extend_from_slice(&buf);
    }
    Ok(all)
}

/// Import `text` as `format` in memory: the report and rows, or the error message.
fn import_text(format: &str, text: &[u8]) -> Result<(ImportReport, Vec<Request>), String> {
    let mut rows = Vec::new();
    let rep = import_lines(
        format,
        "in.txt",
        &mut Cursor::new(text.to_vec()),
        &ImportOptions::default(),
        &mut |r| {
            rows.push(*r);
            Ok(())
        },
        &mut || true,
    )
    .map_err(|e| e.to_string())?;
    Ok((rep, rows))
}

/// The trace at `path` rewritten with the parquet crate's default properties (dictionary
/// encoding on, default compression), its footer keys kept.
fn with_dictionaries(path: &Path) -> Vec<u8> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
    let kv = b
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .unwrap_or_default();
    let schema = b.schema().clone();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, schema, None).unwrap();
    for batch in b.build().unwrap() {
        w.write(&batch.unwrap()).unwrap();
    }
    for pair in kv.into_iter().filter(|p| p.key != "ARROW:schema") {
        w.append_key_value_metadata(pair);
    }
    w.close().unwrap();
    out
}

#[test]
fn corrupt_data_pages_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.parquet");
    let p = GenParams {
        capacity_pages: 4096,
        writes: 20_000,
        seed: 3,
        ..Default::default()
    };
    generate_to_file("zipf", &p, &good).unwrap();
    // As other writers (pyarrow's defaults) store it: dictionary pages for every column, where a
    // corrupt dictionary index can panic inside the decoder.
    let bytes = with_dictionaries(&good);
    let bad = dir.path().join("bad.parquet");
    let mut errors = 0;
    // 64 flipped bytes at every 1/40th of the file (data pages, page headers, the footer).
    for k in 0..40 {
        let at = (bytes.len() - 64) * k / 40;
        let mut b = bytes.clone();
        for x in &mut b[at..at + 64] {
            *x ^= 0x5a;
        }
        std::fs::write(&bad, &b).unwrap();
        let res = std::panic::catch_unwind(|| read_all(&bad).map(|_| ()));
        match res {
            Err(_) => panic!("reading the trace corrupted at byte {at} panicked"),
            Ok(Err(e)) => {
                let m = e.to_string();
                assert!(m.starts_with(&bad.display().to_string()), "{m}");
                assert!(!m.contains('\n'), "{m}");
                errors += 1;
            }
            Ok(Ok(())) => {}
        }
        let info = std::panic::catch_unwind(|| summarize(&bad).map(|_| ()));
        assert!(info.is_ok(), "info on the trace corrupted at {at} panicked");
    }
    assert!(
        errors > 10,
        "most corruptions are detected ({errors} of 40)"
    );
    // Decoder panics would be caught too (guard.rs; its unit test panics on purpose); the
    // Parquet release in use returns errors for these corruptions.
}

/// A footer whose Thrift list claims 10^10 row groups (found by fuzzing: the decoder reserved
/// 157 GB and the process aborted) is a one-line error, for both trace kinds and for `info`.
#[test]
fn a_footer_list_longer_than_the_file_is_an_error_not_an_abort() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    for kind in ["block_trace", "file_trace"] {
        let bad = corpus.join(kind).join("crash-footer-list-alloc.parquet");
        let m = read_all(&bad).expect_err("a corrupt footer").to_string();
        assert!(m.starts_with(&bad.display().to_string()), "{m}");
        assert!(m.contains("not a readable Parquet file"), "{m}");
        assert!(!m.contains('\n'), "{m}");
        let m = FileTraceReader::open(&bad)
            .err()
            .expect("a corrupt footer")
            .to_string();
        assert!(m.starts_with(&bad.display().to_string()), "{m}");
        assert!(summarize(&bad).is_err());
    }
}

/// A footer whose schema gives a node 1.6·10^9 children, written under a field header of
/// another type (found by fuzzing: the decoder, reading the field by its id, reserved 13 GB for
/// them, an abort under a memory limit) is refused before the decoder sees it, naming the
/// element.
#[test]
fn a_schema_node_with_more_children_than_elements_is_an_error() {
    let bad = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/file_trace/crash-schema-children-alloc.parquet");
    for m in [
        read_all(&bad).expect_err("a corrupt schema").to_string(),
        FileTraceReader::open(&bad)
            .err()
            .expect("a corrupt schema")
            .to_string(),
        summarize(&bad).expect_err("a corrupt schema").to_string(),
    ] {
        assert!(m.starts_with(&bad.display().to_string()), "{m}");
        assert!(m.contains("schema element 13 has its child count"), "{m}");
        assert!(!m.contains('\n'), "{m}");
    }
}

/// Inputs on which the decoder's skip of a boolean list spun for 2^31 steps (found by fuzzing:
/// a data-page header, a footer's column metadata, footers with mistyped fields) are refused
/// by the strict walks over the footer and the page headers, with a one-line error.
#[test]
fn boolean_list_and_mistyped_inputs_are_refused_before_the_decoder_spins() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/file_trace");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("hang-")
        {
            continue;
        }
        let m = FileTraceReader::open(&path)
            .err()
            .unwrap_or_else(|| panic!("{} opens", path.display()))
            .to_string();
        assert!(m.starts_with(&path.display().to_string()), "{m}");
        assert!(m.contains("corrupt"), "{m}");
        assert!(!m.contains('\n'), "{m}");
        seen += 1;
    }
    assert!(seen >= 6, "{seen} hang inputs");
}

#[test]
fn huge_capacities_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    // A capacity key beyond 2^40 pages: refused when the file is opened.
    let path = dir.path().join("cap.parquet");
    write_trace(&path, Some(MAX_PAGES), 1);
    // The writer refuses such a key: patch the footer's value in place (same length).
    let b = std::fs::read(&path).unwrap();
    let (from, to) = (MAX_PAGES.to_string(), (9 * MAX_PAGES).to_string());
    assert_eq!(from.len(), to.len());
    let at = b
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap();
    let mut b2 = b.clone();
    b2[at..at + from.len()].copy_from_slice(to.as_bytes());
    std::fs::write(&path, b2).unwrap();
    let e = BlockTraceReader::open(&path).err().unwrap().to_string();
    assert!(
        e.contains("pcstream.capacity_pages") && e.contains("2^40"),
        "{e}"
    );
    // A capacity of 2^40 pages is valid, but info's bitmap (128 GiB) does not fit memory.
    write_trace(&path, Some(MAX_PAGES), MAX_PAGES - 8);
    let e = summarize(&path).unwrap_err();
    assert!(matches!(e, TraceError::Memory(_)), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("128.00 GiB") && m.contains("are available"),
        "{m}"
    );
    // Without a capacity key, a row beyond 2^40 pages is a bad row.
    write_trace(&path, None, MAX_PAGES);
    let e = read_all(&path).unwrap_err().to_string();
    assert!(
        e.contains("row group 0, row 0") && e.contains("2^40"),
        "{e}"
    );
}

/// One 8-page write at `lpn`, with the capacity key `capacity` (at most 2^40 pages).
fn write_trace(path: &Path, capacity: Option<u64>, lpn: u64) {
    let mut w = BlockTraceWriter::create(path, &TraceMeta::default(), 1024).unwrap();
    w.push(&Request {
        lpn,
        pages: 8,
        ..Default::default()
    })
    .unwrap();
    w.set_meta(&TraceMeta {
        capacity_pages: capacity,
        ..Default::default()
    });
    w.finish().unwrap();
}

#[test]
fn overflowing_geometry_is_refused_and_huge_devices_checked_against_memory() {
    let toml = |c: u64, w: u64, b: u64, p: u64| {
        format!(
            "[geometry]\nchannels = {c}\nways = {w}\nblocks_per_die = {b}\npages_per_block = {p}\n[ftl]\nop = 0.07\n"
        )
    };
    let e = SsdConfig::from_toml("wrap", &toml(65536, 65537, 1, 256))
        .unwrap_err()
        .to_string();
    assert!(e.contains("exceeds the engine's limit"), "{e}");
    // Latencies whose sum in ns would overflow the die clocks (found by fuzzing), or that are
    // not numbers, are refused up front.
    for (k, v) in [
        ("program_us", "2222222222222222000"),
        ("read_us", "nan"),
        ("erase_us", "inf"),
    ] {
        let text = format!("{}[timing]\n{k} = {v}\n", toml(4, 4, 256, 64));
        let e = SsdConfig::from_toml("slow", &text).unwrap_err().to_string();
        assert!(
            e.contains("latencies must be between 0 and 1000000 µs"),
            "{k}: {e}"
        );
    }
    let ok = format!("{}[timing]\nprogram_us = 1000000\n", toml(4, 4, 256, 64));
    SsdConfig::from_toml("slowest", &ok).expect("1 s per program is allowed");
    // Valid (under 2^32 pages) but far larger than this machine's memory: 2^32 - 2^20 pages
    // need about 47 GiB of engine state with baseline (11.7 bytes per physical page).
    let cfg = SsdConfig::from_toml("huge", &toml(64, 64, 4095, 256)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.parquet");
    let p = GenParams {
        capacity_pages: 1024,
        writes: 100,
        ..Default::default()
    };
    generate_to_file("uniform", &p, &trace).unwrap();
    let opts = SimOptions {
        policy: "baseline".into(),
        ..Default::default()
    };
    let e = pcstream_trace::run_trace(&trace, &cfg, opts, None, &mut |_, _| true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("SSD 'huge'") && e.contains("GiB of memory") && e.contains("are available"),
        "{e}"
    );
}

#[test]
fn offsets_beyond_2_40_pages_and_overflowing_units_are_bad_lines() {
    let e = import_text(
        "msr",
        b"128166372003061629,hm,0,Write,9223372036854775808,4096,10\n",
    )
    .unwrap_err();
    assert!(
        e.contains("in.txt:1") && e.contains("9223372036854775808") && e.contains("2^40"),
        "{e}"
    );
    let e = import_text("alibaba", b"1,W,9223372036854775808,4096,1\n").unwrap_err();
    assert!(e.contains("in.txt:1") && e.contains("2^40"), "{e}");
    let e = import_text(
        "fio",
        b"fio version 2 iolog\nf write 9223372036854775808 4096\n",
    )
    .unwrap_err();
    assert!(e.contains("in.txt:2") && e.contains("2^40"), "{e}");
    // Sector counts that overflow once multiplied: the message quotes the file's number.
    let e = import_text("tencent", b"1,36028797018963968,8,1,7\n").unwrap_err();
    assert!(
        e.contains("Offset 36028797018963968 (sectors) overflows"),
        "{e}"
    );
    assert!(!e.contains("18446744073709551615"), "{e}");
    let e = import_text("mqsim", b"0 0 36028797018963968 8 0\n").unwrap_err();
    assert!(e.contains("StartLBA 36028797018963968"), "{e}");
}

#[test]
fn overflowing_timestamps_are_errors() {
    for (format, line) in [
        ("msr", "18446744073709551615,hm,0,Write,0,4096,10"),
        ("alibaba", "1,W,0,4096,18446744073709551615"),
        ("tencent", "18446744073709551615,0,8,1,7"),
        ("blkparse", "8,0 0 1 18446744073709551615.0 5 D W 0 + 8 [x]"),
        ("blkparse", "8,0 0 1 18446744073.999999999 5 D W 0 + 8 [x]"),
        (
            "fio",
            "fio version 3 iolog\n18446744073709551615 f write 0 4096",
        ),
    ] {
        let e = import_text(format, format!("{line}\n").as_bytes()).unwrap_err();
        assert!(e.contains("overflows"), "{format}: {e}");
        assert!(e.contains("in.txt:"), "{format}: {e}");
    }
    let e = import_text("msr", b"99999999999999999999,hm,0,Write,0,4096,10\n").unwrap_err();
    assert!(e.contains("larger than 2^64 - 1"), "{e}");
}

#[test]
fn backwards_timestamps_keep_the_order_clamped_and_counted() {
    let text = b"300,hm,0,Write,0,4096,1\n100,hm,0,Write,4096,4096,1\n200,hm,0,Write,8192,4096,1\n500,hm,0,Write,0,4096,1\n";
    let (rep, rows) = import_text("msr", text).unwrap();
    assert_eq!(rep.reordered, 2);
    let got: Vec<(u64, u64)> = rows.iter().map(|r| (r.lpn, r.ts_ns)).collect();
    assert_eq!(got, vec![(0, 0), (1, 0), (2, 0), (0, 20_000)]);
}

#[test]
fn inputs_without_requests_are_errors() {
    for (format, text) in [
        ("msr", &b""[..]),
        ("msr", b"\n\n  \n"),
        ("blkparse", b"8,0 0 1 0.1 5 Q W 0 + 8 [x]\n"),
        ("fio", b"fio version 2 iolog\nf add\nf open\n"),
    ] {
        let e = import_text(format, text).unwrap_err();
        assert!(e.contains("no requests to import"), "{format}: {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "1,hm,0,Write,0,4096,1\n").unwrap();
    let out = dir.path().join("out.parquet");
    let opts = ImportOptions {
        device: Some("prxy_0".into()),
        ..Default::default()
    };
    let e = import("msr", &input, &out, &opts, &mut |_, _| true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("1 of other devices than --device"), "{e}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no output"
    );
}

#[test]
fn long_lines_nul_bytes_and_binary_data_name_the_line() {
    let mut text = b"1,hm,0,Write,0,4096,1\n".to_vec();
    text.extend(std::iter::repeat_n(b'0', (1 << 20) + 10));
    text.push(b'\n');
    let e = import_text("msr", &text).unwrap_err();
    assert!(e.contains("in.txt:2") && e.contains("1 MiB"), "{e}");
    let e = import_text("blkparse", b"8,0 0 1 0.1 5 D W\x000 + 8 [x]\n").unwrap_err();
    assert!(e.contains("in.txt:1") && e.contains("NUL"), "{e}");
    let e = import_text("msr", b"1,hm,0,Write,0,4096,1\n\xff\xfe\n").unwrap_err();
    assert!(e.contains("in.txt:2") && e.contains("UTF-8"), "{e}");
}

#[test]
fn unknown_blkparse_rwbs_is_a_bad_line() {
    let e = import_text("blkparse", b"8,0 0 1 0.1 5 D WQ 0 + 8 [x]\n").unwrap_err();
    assert!(e.contains("rwbs 'WQ'") && e.contains("'Q'"), "{e}");
    // N (no data) is blkparse's own: not a request, not an error.
    let (rep, _) = import_text(
        "blkparse",
        b"8,0 0 1 0.1 5 D N 0 + 0 [x]\n8,0 0 2 0.2 5 D W 0 + 8 [x]\n",
    )
    .unwrap();
    assert_eq!(rep.writes, 1);
}

#[test]
fn the_arrow_schema_carries_the_pcstream_keys() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let p = GenParams {
        capacity_pages: 4096,
        writes: 100,
        ..Default::default()
    };
    generate_to_file("uniform", &p, &path).unwrap();
    let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap()).unwrap();
    let md = b.schema().metadata();
    assert_eq!(
        md.get("pcstream.capacity_pages").map(|s| s.as_str()),
        Some("4096")
    );
    assert_eq!(md.get("pcstream.format").map(|s| s.as_str()), Some("1"));
}

#[test]
fn large_tables_stay_out_of_the_arrow_schema_but_in_the_footer() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use pcstream_trace::blocktrace::{BlockTraceWriter, TraceMeta};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    // 20,000 incarnations of one journal file: a table of about 1 MB.
    let files = (1..=20_000u32)
        .map(|i| (i, "/scratch/tpcc.db-journal".to_string()))
        .collect();
    let meta = TraceMeta {
        capacity_pages: Some(4096),
        files,
        ..Default::default()
    };
    let mut w = BlockTraceWriter::create(&path, &meta, 1024).unwrap();
    w.push(&Request::write(0, 8)).unwrap();
    w.finish().unwrap();
    let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap()).unwrap();
    let arrow = b.schema().metadata();
    assert_eq!(
        arrow.get("pcstream.capacity_pages").map(|s| s.as_str()),
        Some("4096")
    );
    let footer = b.metadata().file_metadata().key_value_metadata().unwrap();
    let value = |key: &str| {
        let kv = footer.iter().find(|kv| kv.key == key).unwrap();
        kv.value.as_ref().unwrap().len()
    };
    assert!(value("pcstream.files") > 500_000);
    // The embedded schema (what pyarrow reads) carries the small keys only.
    assert!(value("ARROW:schema") < 10_000, "{}", value("ARROW:schema"));
    // One copy of the table, not two: the file is little more than the table.
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 700_000, "{size} bytes");
    // And the reader sees it.
    let r = pcstream_trace::blocktrace::BlockTraceReader::open(&path).unwrap();
    assert_eq!(r.meta().files.len(), 20_000);
}

#[test]
fn the_pc_table_names_only_the_pcs_of_the_rows() {
    use pcstream_trace::blocktrace::{BlockTraceReader, BlockTraceWriter, TraceMeta};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    // A mapped trace inherits the file trace's PCs; only 7 wrote pages that reached the device.
    let frames = serde_json::json!([{"module": "/bin/x", "offset": 16}]);
    let meta = TraceMeta {
        pcs: serde_json::json!({"7": frames, "8": frames, "9": frames}),
        ..Default::default()
    };
    let mut w = BlockTraceWriter::create(&path, &meta, 1024).unwrap();
    w.push(&Request {
        pc: 7,
        ..Request::write(0, 8)
    })
    .unwrap();
    w.push(&Request::write(8, 8)).unwrap();
    w.finish().unwrap();
    let r = BlockTraceReader::open(&path).unwrap();
    let pcs = r.meta().pcs.as_object().unwrap();
    assert_eq!(pcs.keys().collect::<Vec<_>>(), vec!["7"]);
    assert_eq!(pcs["7"], frames);
}

/// Runs `check` in a thread; if it has not returned within 20 s (a FIFO waited on), opens
/// `fifo` for writing, which releases the blocked reader, and fails.
fn at_once(fifo: &Path, check: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        check();
        let _ = done.send(());
    });
    if finished
        .recv_timeout(std::time::Duration::from_secs(20))
        .is_err()
    {
        let _ = std::fs::OpenOptions::new().write(true).open(fifo);
        let _ = worker.join();
        panic!("blocked on {}", fifo.display());
    }
    worker.join().unwrap();
}

#[test]
fn inputs_that_are_not_regular_files_are_refused_at_once() {
    use pcstream_trace::input_file::{read_capped, SSD_CONFIG_MAX_BYTES};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.parquet");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let sock = dir.path().join("sock.parquet");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let link = dir.path().join("link.parquet");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let nodes = [
        (fifo.clone(), "a FIFO"),
        (link, "a FIFO"),
        (dir.path().to_path_buf(), "a directory"),
        ("/dev/zero".into(), "a character device"),
        (sock, "a socket"),
    ];
    let out = dir.path().join("out.parquet");
    for (node, kind) in nodes {
        let out = out.clone();
        at_once(&fifo, move || {
            let said = format!("{}: is {kind}, not a regular file", node.display());
            let errors = [
                BlockTraceReader::open(&node).err().map(|e| e.to_string()),
                FileTraceReader::open(&node).err().map(|e| e.to_string()),
                summarize(&node).err().map(|e| e.to_string()),
                import(
                    "msr",
                    &node,
                    &out,
                    &ImportOptions::default(),
                    &mut |_, _| true,
                )
                .err()
                .map(|e| e.to_string()),
                read_capped(&node, "SSD config file", SSD_CONFIG_MAX_BYTES)
                    .err()
                    .map(|e| e.to_string()),
            ];
            for e in errors {
                let e = e.expect("refused");
                assert!(e.starts_with(&said), "{e}");
                assert!(!e.contains('\n'), "{e}");
            }
            assert!(!pcstream_trace::filetrace::info::is_file_trace(&node));
            assert!(!out.exists());
        });
    }
}

#[test]
fn a_table_file_is_read_by_its_type_and_up_to_its_limit() {
    use pcstream_trace::input_file::PC_TABLE_MAX_BYTES;
    use pcstream_trace::replay::run_with_table_file;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.parquet");
    let p = GenParams {
        capacity_pages: 4096,
        writes: 100,
        ..Default::default()
    };
    generate_to_file("uniform", &p, &trace).unwrap();
    let cfg = SsdConfig::preset("small").unwrap();
    // Sparse: refused by its size, never read.
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(PC_TABLE_MAX_BYTES + 1)
        .unwrap();
    let opts = || SimOptions {
        policy: "pcstream".into(),
        ..SimOptions::default()
    };
    for (table, says) in [
        (
            big.clone(),
            format!("over the limit of {PC_TABLE_MAX_BYTES} bytes"),
        ),
        ("/dev/zero".into(), "is a character device".to_string()),
        (dir.path().to_path_buf(), "is a directory".to_string()),
    ] {
        let e = run_with_table_file(&trace, &cfg, opts(), Some(&table), &mut |_, _| true)
            .expect_err("refused")
            .to_string();
        assert!(e.contains(&says), "{e}");
    }
    assert_eq!(
        std::fs::metadata(&big).unwrap().len(),
        PC_TABLE_MAX_BYTES + 1
    );
}

/// Every page of a trace we write carries its CRC32, and the readers check it: a byte flipped
/// inside any column's last page is an error naming the file, the row group and the column, for
/// the reader and for `info`, where without checksums the rows would read as valid.
#[test]
fn a_flipped_byte_in_a_page_fails_its_checksum() {
    use parquet::file::metadata::ParquetMetaDataReader;
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.parquet");
    let p = GenParams {
        capacity_pages: 4096,
        writes: 20_000,
        seed: 5,
        ..Default::default()
    };
    generate_to_file("zipf", &p, &good).unwrap();
    let rows = read_all(&good).unwrap().len();
    let bytes = std::fs::read(&good).unwrap();
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
        .unwrap();
    let bad = dir.path().join("bad.parquet");
    for (g, rg) in meta.row_groups().iter().enumerate() {
        for col in rg.columns() {
            // The chunk's last byte is inside its last page's bytes.
            let start = col
                .dictionary_page_offset()
                .unwrap_or(col.data_page_offset());
            let at = (start + col.compressed_size() - 1) as usize;
            let mut b = bytes.clone();
            b[at] ^= 0x01;
            std::fs::write(&bad, &b).unwrap();
            let name = col.column_path().string();
            for m in [
                read_all(&bad).map(|_| ()).unwrap_err().to_string(),
                summarize(&bad).map(|_| ()).unwrap_err().to_string(),
            ] {
                assert!(m.starts_with(&bad.display().to_string()), "{m}");
                assert!(m.contains(&format!("row group {g}, column {name}:")), "{m}");
                assert!(m.contains("fails its CRC32 checksum"), "{m}");
                assert!(!m.contains('\n'), "{m}");
            }
        }
    }
    assert_eq!(read_all(&good).unwrap().len(), rows);
}

/// The readers accept every codec of the Parquet format, for traces written elsewhere: each
/// codec's file, written by the parquet crate, reads back as the trace it was written from.
#[test]
fn every_parquet_codec_reads() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.parquet");
    let p = GenParams {
        capacity_pages: 4096,
        writes: 5_000,
        seed: 9,
        ..Default::default()
    };
    generate_to_file("zipf", &p, &good).unwrap();
    let want = read_all(&good).unwrap();
    let codecs = [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::GZIP(GzipLevel::default()),
        Compression::BROTLI(BrotliLevel::default()),
        Compression::LZ4,
        Compression::LZ4_RAW,
        Compression::ZSTD(ZstdLevel::default()),
    ];
    for codec in codecs {
        let b =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&good).unwrap()).unwrap();
        let props = WriterProperties::builder().set_compression(codec).build();
        let out = dir.path().join(format!("{codec:?}.parquet"));
        let f = std::fs::File::create(&out).unwrap();
        let mut w = ArrowWriter::try_new(f, b.schema().clone(), Some(props)).unwrap();
        for batch in b.build().unwrap() {
            w.write(&batch.unwrap()).unwrap();
        }
        w.close().unwrap();
        let got = read_all(&out).unwrap_or_else(|e| panic!("{codec:?}: {e}"));
        assert_eq!(got, want, "{codec:?}");
    }
}

/// A row's `file_class` must be 0 or named in `pcstream.file_classes` when the footer has the
/// key: the readers refuse it naming the file, row and value; the writer refuses to write such a
/// trace. A file without the key (written elsewhere) names no classes and is not checked.
#[test]
fn file_classes_the_class_table_does_not_name_are_refused() {
    use arrow_array::{ArrayRef, UInt16Array, UInt32Array, UInt64Array, UInt8Array};
    let dir = tempfile::tempdir().unwrap();
    let raw = |name: &str, kv: &[(&str, &str)]| {
        let path = dir.path().join(name);
        let cols: Vec<(&str, ArrayRef)> = vec![
            ("lpn", Arc::new(UInt64Array::from(vec![0, 1, 2, 3, 4]))),
            ("pages", Arc::new(UInt32Array::from(vec![1; 5]))),
            ("op", Arc::new(UInt8Array::from(vec![0; 5]))),
            (
                "file_class",
                Arc::new(UInt16Array::from(vec![0, 1, 1, 7, 1])),
            ),
        ];
        common::write_raw(&path, cols, kv, 2);
        path
    };
    let bad = raw(
        "bad.parquet",
        &[("pcstream.file_classes", r#"{"1": "sst"}"#)],
    );
    for m in [
        read_all(&bad).map(|_| ()).unwrap_err().to_string(),
        summarize(&bad).map(|_| ()).unwrap_err().to_string(),
    ] {
        assert!(m.starts_with(&bad.display().to_string()), "{m}");
        assert!(
            m.contains("row group 1, row 1: file_class 7 is not named in pcstream.file_classes (it names 1)"),
            "{m}"
        );
        assert!(!m.contains('\n'), "{m}");
    }
    let named = raw(
        "named.parquet",
        &[("pcstream.file_classes", r#"{"1": "sst", "7": "wal"}"#)],
    );
    assert_eq!(read_all(&named).unwrap()[3].file_class, 7);
    assert_eq!(read_all(&raw("plain.parquet", &[])).unwrap().len(), 5);

    let out = dir.path().join("written.parquet");
    let mut meta = TraceMeta::default();
    meta.file_classes.insert(1, "sst".into());
    let mut w = BlockTraceWriter::create(&out, &meta, 1024).unwrap();
    for (lpn, file_class) in [(0, 1), (1, 0), (2, 9)] {
        let r = Request {
            lpn,
            pages: 1,
            file_class,
            ..Default::default()
        };
        w.push(&r).unwrap();
    }
    let m = w.finish().unwrap_err().to_string();
    assert!(
        m.contains("rows have file_class 9, which the table does not name"),
        "{m}"
    );
    assert!(!out.exists(), "a trace its reader refuses was written");
}
