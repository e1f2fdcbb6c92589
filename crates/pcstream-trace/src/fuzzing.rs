//! The fuzz targets' bodies: one function per parser that takes arbitrary bytes and must return
//! (an error is fine) without panicking, aborting or allocating beyond what the input justifies.
//!
//! `fuzz/` (a crate of its own, built with cargo-afl) calls them from its AFL++ targets, and
//! `tests/fuzz_corpus.rs` replays the committed corpus (`fuzz/corpus/<target>/`: valid inputs
//! and every crash found) through them in a normal `cargo test` (docs/HARDENING.md).

use std::io::Cursor;

use pcstream_core::request::Op;
use pcstream_core::{Request, SimOptions, Simulator, SsdConfig};

use crate::blocktrace::format::{MAX_HINT, MAX_META, MAX_PAGES};
use crate::blocktrace::BlockTraceReader;
use crate::filetrace::reader::FileTraceReader;
use crate::import::{import_lines, ImportOptions, FORMATS};
use crate::record::merge::index_bin_from;
use crate::record::shimlog::{parse_txt, ShimLogs};

/// The fuzz targets, by name (the corpus folder of each).
pub const TARGETS: &[&str] = &[
    "import_blkparse",
    "import_msr",
    "import_alibaba",
    "import_tencent",
    "import_fio",
    "import_mqsim",
    "block_trace",
    "file_trace",
    "shimlog",
    "ssd_toml",
    "table_json",
];

/// Run target `name` on `data`; panics only on a broken invariant (a bug found).
pub fn run(name: &str, data: &[u8]) {
    match name {
        "block_trace" => block_trace(data),
        "file_trace" => file_trace(data),
        "shimlog" => shimlog(data),
        "ssd_toml" => ssd_toml(data),
        "table_json" => table_json(data),
        _ => match name.strip_prefix("import_") {
            Some(format) if FORMATS.contains(&format) => import(format, data),
            _ => panic!("unknown fuzz target {name}"),
        },
    }
}

/// An importer on `data` as the whole input file: every row it emits must be one the block-trace
/// writer accepts, in time order.
pub fn import(format: &str, data: &[u8]) {
    let opts = ImportOptions {
        skip_bad: 2, // also exercise the path past bad lines
        ..Default::default()
    };
    let mut last_ts = 0u64;
    let res = import_lines(
        format,
        "fuzz.txt",
        &mut Cursor::new(data),
        &opts,
        &mut |r| {
            assert!(Op::from_u8(r.op).is_some(), "op {}", r.op);
            if r.op != Op::Flush as u8 {
                assert!(r.pages > 0, "a row of 0 pages");
                assert!(
                    r.lpn + r.pages as u64 <= MAX_PAGES,
                    "a row beyond 2^40 pages"
                );
            }
            assert!(r.ts_ns >= last_ts, "time went backwards");
            last_ts = r.ts_ns;
            Ok(())
        },
        &mut || true,
    );
    if let Ok(rep) = res {
        assert!(rep.rows > 0 && rep.capacity_pages <= MAX_PAGES);
        let e = crate::error::one_line(format!("{rep:?}"));
        assert!(!e.is_empty());
    } else if let Err(e) = res {
        assert!(
            !e.to_string().contains('\n'),
            "a message of several lines: {e}"
        );
    }
}

/// The block-trace reader on `data` as a whole Parquet file: footer, schema and every row.
pub fn block_trace(data: &[u8]) {
    let Ok(mut r) =
        BlockTraceReader::from_bytes("fuzz.parquet", bytes::Bytes::copy_from_slice(data))
    else {
        return;
    };
    let _ = (r.num_rows(), r.num_row_groups(), r.meta().capacity_pages);
    let (mut buf, mut last_ts) = (Vec::new(), 0);
    // Every row the reader hands over is one the format allows (docs/FORMATS.md).
    while let Ok(true) = r.next_batch(&mut buf) {
        for q in &buf {
            assert!(Op::from_u8(q.op).is_some());
            assert!(q.ts_ns >= last_ts, "time went backwards");
            assert!(q.meta <= MAX_META && q.hint <= MAX_HINT);
            assert!(r.allows_file_class(q.file_class));
            last_ts = q.ts_ns;
        }
    }
}

/// The file-trace reader on `data` as a whole Parquet file.
pub fn file_trace(data: &[u8]) {
    let Ok(mut r) =
        FileTraceReader::from_bytes("fuzz.parquet", bytes::Bytes::copy_from_slice(data))
    else {
        return;
    };
    let _ = (r.num_rows(), r.paths().len());
    let paths = r.paths().clone();
    let mut buf = Vec::new();
    while let Ok(true) = r.next_batch(&mut buf) {
        for e in &buf {
            for id in [e.path, e.path2] {
                assert!(
                    id == 0 || paths.contains_key(&id),
                    "path id {id} not in the table"
                );
            }
        }
    }
}

/// The shim-log parsers on `data` as a `.bin` and as a `.txt` file.
pub fn shimlog(data: &[u8]) {
    let _ = index_bin_from(
        std::path::Path::new("fuzz.bin"),
        &mut &data[..],
        data.len() as u64,
    );
    let mut logs = ShimLogs::default();
    let _ = parse_txt("fuzz.txt", data, &mut logs);
}

/// The SSD configuration parser on `data`; a valid device small enough is also built and run.
pub fn ssd_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cfg) = SsdConfig::from_toml("fuzz", text) else {
        return;
    };
    assert!(cfg.ftl.op > 0.0 && cfg.ftl.op <= pcstream_core::config::MAX_OP);
    let everything = pcstream_core::ftl::page_map::PageLayout::new(
        cfg.logical_pages(),
        pcstream_core::placement::Attrs::PC.union(pcstream_core::placement::Attrs::DEATH),
        pcstream_core::placement::GcMode::Policy,
        255,
    );
    let policy_bytes =
        cfg.logical_pages() * pcstream_core::state_size::POLICY_BYTES_PER_LOGICAL_PAGE;
    let e = pcstream_core::state_size::estimate(&cfg, &everything, policy_bytes);
    assert!(e.total() > 0);
    if cfg.physical_pages() > 1 << 16 {
        return;
    }
    for policy in ["baseline", "oracle"] {
        let opts = SimOptions {
            policy: policy.into(),
            prefill: 0.5,
            timing: true,
            ..Default::default()
        };
        let Ok(mut sim) = Simulator::new(&cfg, opts) else {
            continue;
        };
        if sim.start().is_err() || cfg.physical_pages() > 1 << 12 {
            continue;
        }
        // Three device-fills of scattered one-page writes: garbage collection runs.
        let logical = cfg.logical_pages().max(1);
        let reqs: Vec<Request> = (0..3 * logical)
            .map(|i| Request {
                lpn: (i * 7919) % logical,
                pages: 1,
                ts_ns: i,
                ..Default::default()
            })
            .collect();
        if sim.feed(&reqs).is_ok() {
            let r = sim.finish();
            assert!(r.waf >= 1.0 || r.host_pages == 0, "WAF {}", r.waf);
        }
    }
}

/// A tiny device for the table target (building it must cost little).
const TABLE_SSD: &str = "[geometry]\nchannels = 1\nways = 2\nblocks_per_die = 64\n\
                         pages_per_block = 16\n[ftl]\nop = 0.3\nhost_streams = 4\n";

/// The PCStream policy's persistent table (`--table`) parser on `data`.
pub fn table_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let cfg = SsdConfig::from_toml("fuzz", TABLE_SSD).expect("the fuzz device is valid");
    let opts = SimOptions {
        policy: "pcstream".into(),
        ..Default::default()
    };
    let mut sim = Simulator::new(&cfg, opts).expect("pcstream on the fuzz device");
    if sim.policy_mut().load_state(text).is_ok() {
        // Only a table of a policy that writes tables loads. Read as the loader reads it, other
        // fields skipped: a `Value` refuses what skipping accepts (a number beyond f64 in a field
        // the table does not have, found by fuzzing).
        #[derive(serde::Deserialize)]
        struct Policy {
            policy: Option<String>,
        }
        let policy = serde_json::from_str::<Policy>(text)
            .ok()
            .and_then(|p| p.policy);
        assert!(
            matches!(policy.as_deref(), Some("pcstream" | "pcstream-star")),
            "{policy:?}"
        );
        let _ = sim.policy_mut().save_state();
    }
}
