//! Summary of a file-level trace (`pcstream info` on the output of `record`): one streaming
//! pass, memory bounded by the distinct PCs, files and threads, not by the rows.
//!
//! Fields: `kind` = "file", path, source, capture (`pcstream.capture`, null when absent), rows,
//! row_groups, paths (entries of `pcstream.paths`), ops (rows per op name, unknown names
//! included), writes `{rows, bytes}`, recovered_bytes and inline_stdio_bytes (write bytes with the
//! flags `VIA_RECOVERED`, `VIA_STDIO_INLINE`), io_uring `{writes, bytes}` (write rows with
//! `VIA_URING`: submissions the BPF capture saw, folded ones counted once),
//! processes (distinct pids), threads (distinct pid, tid), ts `{first_ns, last_ns, duration_s}`,
//! pcs `{count, top}` (the [`TOP`] signatures with the most bytes written: pc, bytes, rows,
//! share of the bytes, `where` — the innermost frames as `symbol` or `module+offset` — and
//! frames as in `pcstream.pcs`), files `{count, top}` (the [`TOP`] files by bytes written: path,
//! bytes, rows), set_hint `{events, by_hint, refused, invalid}` (set_hint rows per hint name;
//! those the kernel refused, those without a level).

use std::collections::BTreeMap;
use std::path::Path;

use arrow_schema::DataType;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{json, Value};

use super::flags::{HINT_INVALID, HINT_REFUSED, VIA_RECOVERED, VIA_STDIO_INLINE, VIA_URING};
use super::{FileEvent, FileOp, FileTraceReader, KEY_PATHS};
use crate::error::TraceError;
use crate::pc_labels::{label_top, TopLabels};

/// Entries in each top list.
pub const TOP: usize = 10;
/// Frames shown in a PC's `where`.
const WHERE_FRAMES: usize = 3;
/// Names of the write-life hints (`enum rw_hint`), by value.
pub const HINT_NAMES: [&str; 6] = ["NOT_SET", "NONE", "SHORT", "MEDIUM", "LONG", "EXTREME"];

/// Whether `path` is a file-level trace: its footer has `pcstream.paths` or its `op` column
/// holds strings. `false` for anything unreadable (the block-trace reader then reports it).
pub fn is_file_trace(path: &Path) -> bool {
    let Ok(f) = crate::parquet::open_input(path) else {
        return false;
    };
    // Through the readers' builder: the footer check and the decoder's panics contained.
    let Ok(b) = crate::parquet::builder(&path.display().to_string(), f) else {
        return false;
    };
    let has_paths = b
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .is_some_and(|kv| kv.iter().any(|k| k.key == KEY_PATHS));
    let string =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let op_is_string =
        b.schema()
            .column_with_name("op")
            .is_some_and(|(_, f)| match f.data_type() {
                DataType::Dictionary(_, v) => string(v),
                t => string(t),
            });
    has_paths || op_is_string
}

/// `name` for a hint value.
fn hint_name(v: u64) -> String {
    HINT_NAMES
        .get(v as usize)
        .map_or_else(|| format!("hint {v}"), |s| s.to_string())
}

/// "symbol < caller < ..." of a PC's innermost frames (module basename+offset without a symbol).
fn where_of(frames: &Value) -> String {
    let Some(list) = frames.as_array() else {
        return String::new();
    };
    list.iter()
        .take(WHERE_FRAMES)
        .map(|f| match f.get("symbol").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => {
                let module = f.get("module").and_then(Value::as_str).unwrap_or("?");
                let base = module.rsplit('/').next().unwrap_or(module);
                format!(
                    "{base}+{:#x}",
                    f.get("offset").and_then(Value::as_u64).unwrap_or(0)
                )
            }
        })
        .collect::<Vec<_>>()
        .join(" < ")
}

/// (bytes, rows) written per key, and the [`TOP`] keys by bytes (then rows, then key).
fn top<K: Copy + Ord>(m: &FxHashMap<K, (u64, u64)>) -> Vec<(K, u64, u64)> {
    let mut v: Vec<(K, u64, u64)> = m.iter().map(|(&k, &(b, r))| (k, b, r)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
    v.truncate(TOP);
    v
}

/// What one pass over the rows counts.
#[derive(Default)]
struct Tally {
    /// Rows per known op name.
    ops: BTreeMap<&'static str, u64>,
    writes: u64,
    bytes: u64,
    recovered: u64,
    inline: u64,
    /// Write rows and bytes submitted through io_uring.
    uring: (u64, u64),
    /// (bytes, rows) written per PC and per path id.
    pcs: FxHashMap<u64, (u64, u64)>,
    files: FxHashMap<u32, (u64, u64)>,
    pids: FxHashSet<u32>,
    threads: FxHashSet<(u32, u32)>,
    /// set_hint rows per hint value (the level meant; rows without one not counted here), and
    /// those the kernel refused / that carried no level.
    hints: BTreeMap<u64, u64>,
    refused_hints: u64,
    invalid_hints: u64,
    first: Option<u64>,
    last: u64,
}

impl Tally {
    fn add(&mut self, e: &FileEvent) {
        if e.op != FileOp::Unknown {
            *self.ops.entry(e.op.name()).or_default() += 1;
        }
        self.first.get_or_insert(e.ts_ns);
        self.last = self.last.max(e.ts_ns);
        self.pids.insert(e.pid);
        self.threads.insert((e.pid, e.tid));
        match e.op {
            FileOp::Write => {
                self.writes += 1;
                self.bytes += e.len;
                if e.flags & VIA_RECOVERED != 0 {
                    self.recovered += e.len;
                }
                if e.flags & VIA_STDIO_INLINE != 0 {
                    self.inline += e.len;
                }
                if e.flags & VIA_URING != 0 {
                    self.uring.0 += 1;
                    self.uring.1 += e.len;
                }
                let p = self.pcs.entry(e.pc).or_default();
                p.0 += e.len;
                p.1 += 1;
                let f = self.files.entry(e.path).or_default();
                f.0 += e.len;
                f.1 += 1;
            }
            FileOp::SetHint => {
                if e.flags & HINT_REFUSED != 0 {
                    self.refused_hints += 1;
                }
                if e.flags & HINT_INVALID != 0 {
                    self.invalid_hints += 1;
                } else {
                    *self.hints.entry(e.offset).or_default() += 1;
                }
            }
            _ => {}
        }
    }

    /// Share of the bytes written.
    fn share(&self, b: u64) -> f64 {
        if self.bytes == 0 {
            0.0
        } else {
            b as f64 / self.bytes as f64
        }
    }
}

/// Summarise the file-level trace at `path`; see the module documentation for the fields.
pub fn summarize(path: &Path) -> Result<Value, TraceError> {
    summarize_labelled(path, false).map(|(summary, _)| summary)
}

/// [`summarize`], and when `labels` the labels of its top PCs ([`label_top`]).
pub fn summarize_labelled(path: &Path, labels: bool) -> Result<(Value, TopLabels), TraceError> {
    let mut r = FileTraceReader::open(path)?;
    let mut t = Tally::default();
    let mut buf = Vec::new();
    while r.next_batch(&mut buf)? {
        for e in &buf {
            t.add(e);
        }
    }
    let mut ops: BTreeMap<String, u64> = t.ops.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    for (name, n) in r.unknown_ops() {
        *ops.entry(name.clone()).or_default() += n;
    }
    let meta = r.meta();
    let top_pcs: Vec<Value> = top(&t.pcs)
        .into_iter()
        .map(|(pc, b, n)| {
            let frames = meta.pcs.get(pc.to_string()).cloned().unwrap_or(json!([]));
            json!({"pc": pc.to_string(), "bytes": b, "rows": n, "share": t.share(b),
                   "where": where_of(&frames), "frames": frames})
        })
        .collect();
    let paths = r.paths();
    let top_files: Vec<Value> = top(&t.files)
        .into_iter()
        .map(|(id, b, n)| {
            let name = match id {
                0 => "(no path)".to_string(),
                _ => paths
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| format!("(path id {id})")),
            };
            json!({"path": name, "bytes": b, "rows": n, "share": t.share(b)})
        })
        .collect();
    let by_hint: serde_json::Map<String, Value> = t
        .hints
        .iter()
        .map(|(&h, &n)| (hint_name(h), json!(n)))
        .collect();
    let (first, last) = (t.first.unwrap_or(0), t.last);
    let summary = json!({
        "kind": "file",
        "path": path.display().to_string(),
        "source": meta.source,
        "capture": r.capture(),
        "rows": r.num_rows(),
        "row_groups": r.num_row_groups(),
        "paths": paths.len(),
        "ops": ops,
        "writes": {"rows": t.writes, "bytes": t.bytes},
        "recovered_bytes": t.recovered,
        "inline_stdio_bytes": t.inline,
        "io_uring": {"writes": t.uring.0, "bytes": t.uring.1},
        "processes": t.pids.len(),
        "threads": t.threads.len(),
        "ts": {"first_ns": first, "last_ns": last, "duration_s": last.saturating_sub(first) as f64 / 1e9},
        "pcs": {"count": t.pcs.len(), "top": top_pcs},
        "files": {"count": t.files.len(), "top": top_files},
        "set_hint": {
            "events": t.hints.values().sum::<u64>() + t.invalid_hints,
            "by_hint": by_hint,
            "refused": t.refused_hints,
            "invalid": t.invalid_hints,
        },
    });
    let top = labels.then(|| label_top(&summary, &meta.pcs)).flatten();
    Ok((summary, top))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocktrace::TraceMeta;
    use crate::filetrace::flags::VIA_STDIO;
    use crate::filetrace::{write_rows, FileEvent};

    fn ev(ts: u64, pid: u32, op: FileOp, path: u32, len: u64, pc: u64, flags: u32) -> FileEvent {
        FileEvent {
            ts_ns: ts,
            pid,
            tid: pid + 1,
            op,
            fd: 3,
            dev: 1,
            ino: path as u64,
            len,
            pc,
            flags,
            path,
            ..Default::default()
        }
    }

    #[test]
    fn info_summarises_a_file_trace_and_a_block_trace() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("f.parquet");
        let rows = vec![
            ev(1_000, 10, FileOp::Open, 1, 0, 0, 0),
            ev(2_000, 10, FileOp::Write, 1, 100, 5, 0),
            ev(3_000, 10, FileOp::Write, 1, 50, 6, VIA_RECOVERED),
            ev(
                4_000,
                11,
                FileOp::Write,
                2,
                1000,
                5,
                VIA_STDIO | VIA_STDIO_INLINE,
            ),
            ev(4_000, 11, FileOp::Write, 0, 7, 6, VIA_URING),
            FileEvent {
                offset: 2,
                ..ev(5_000, 11, FileOp::SetHint, 2, 0, 0, 0)
            },
            ev(3_000_000_000, 10, FileOp::Fsync, 1, 0, 0, 0),
        ];
        let meta = TraceMeta {
            source: "test".into(),
            pcs: json!({"5": [{"module": "/bin/app", "module_id": "07", "offset": 64, "symbol": "save"},
                              {"module": "/bin/app", "offset": 128}]}),
            ..Default::default()
        };
        let paths = BTreeMap::from([(1, "/db/a.log".to_string()), (2, "/db/b.rdb".to_string())]);
        write_rows(&out, &rows, &meta, &paths).unwrap();
        assert!(is_file_trace(&out));
        let s = crate::blocktrace::summarize(&out).unwrap();
        assert_eq!(s["kind"], "file");
        assert_eq!(s["rows"], 7);
        assert_eq!(
            s["ops"],
            json!({"fsync": 1, "open": 1, "set_hint": 1, "write": 4})
        );
        assert_eq!(s["writes"], json!({"rows": 4, "bytes": 1157}));
        assert_eq!(
            (
                s["recovered_bytes"].clone(),
                s["inline_stdio_bytes"].clone()
            ),
            (json!(50), json!(1000))
        );
        assert_eq!(s["io_uring"], json!({"writes": 1, "bytes": 7}));
        assert_eq!(s["capture"], Value::Null);
        assert_eq!(
            (
                s["processes"].clone(),
                s["threads"].clone(),
                s["paths"].clone()
            ),
            (json!(2), json!(2), json!(2))
        );
        assert_eq!(s["ts"]["duration_s"], json!(2.999999));
        let top = &s["pcs"]["top"];
        assert_eq!(s["pcs"]["count"], 2);
        assert_eq!(
            (
                top[0]["pc"].clone(),
                top[0]["bytes"].clone(),
                top[0]["rows"].clone()
            ),
            (json!("5"), json!(1100), json!(2))
        );
        assert_eq!(top[0]["where"], "save < app+0x80");
        assert_eq!(top[0]["frames"][0]["symbol"], "save");
        assert_eq!(
            (top[1]["pc"].clone(), top[1]["frames"].clone()),
            (json!("6"), json!([]))
        );
        let files = &s["files"]["top"];
        assert_eq!(s["files"]["count"], 3);
        assert_eq!(
            (files[0]["path"].clone(), files[0]["bytes"].clone()),
            (json!("/db/b.rdb"), json!(1000))
        );
        assert_eq!(
            (files[1]["path"].clone(), files[1]["rows"].clone()),
            (json!("/db/a.log"), json!(2))
        );
        assert_eq!(files[2]["path"], "(no path)");
        assert_eq!(
            s["set_hint"],
            json!({"events": 1, "by_hint": {"SHORT": 1}, "refused": 0, "invalid": 0})
        );

        // A block trace keeps its fields and says so.
        let block = dir.path().join("b.parquet");
        let mut w = crate::BlockTraceWriter::create(&block, &TraceMeta::default(), 1024).unwrap();
        w.push(&pcstream_core::request::Request {
            pages: 2,
            ..Default::default()
        })
        .unwrap();
        w.finish().unwrap();
        assert!(!is_file_trace(&block));
        let b = crate::blocktrace::summarize(&block).unwrap();
        assert_eq!(
            (b["kind"].clone(), b["writes"]["pages"].clone()),
            (json!("block"), json!(2))
        );
    }

    #[test]
    fn where_names_symbols_or_module_offsets() {
        let f = json!([{"module": "/usr/bin/x", "offset": 64, "symbol": "main"},
                       {"module": "/lib/libc.so.6", "offset": 4096},
                       {"module": "/a", "offset": 1}, {"module": "/b", "offset": 2}]);
        assert_eq!(where_of(&f), "main < libc.so.6+0x1000 < a+0x1");
        assert_eq!(hint_name(2), "SHORT");
        assert_eq!(hint_name(9), "hint 9");
    }
}
