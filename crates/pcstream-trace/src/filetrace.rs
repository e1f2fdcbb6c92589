//! File-level trace (design.md, "File-level trace"): the Parquet file `pcstream record` writes.
//! Columns `ts_ns u64, pid u32, tid u32, op string, fd i32, dev u64, ino u64, offset u64, len u64,
//! pc u64, flags u32, path u32` plus `path2 u32` (the new path of a rename, 0 otherwise); footer
//! keys as for block traces plus `pcstream.paths` (JSON id → path; ids from 1, 0 = none).
//! Rows of all processes are ordered by time (then pid, tid, log order).
//!
//! This module also holds the event model the readers and the file-system model share
//! ([`FileEvent`], [`FileOp`]) and [`write_events`], which writes hand-made events in the same
//! format (tests, benchmarks, synthetic inputs).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use crate::error::{one_line, TraceError};
use crate::format::TraceMeta;
use crate::shimlog::{op_name, ShimLogs};

/// Footer key of the path table.
pub const KEY_PATHS: &str = "pcstream.paths";

/// Operation of a file-level event (the `op` column). Codes are those of `enum pcshim_op`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FileOp {
    #[default]
    Open = 1,
    Write = 2,
    Fsync = 3,
    Fdatasync = 4,
    SyncRange = 5,
    Truncate = 6,
    PunchHole = 7,
    Fallocate = 8,
    Unlink = 9,
    Rename = 10,
    Close = 11,
    Fork = 12,
    Exec = 13,
    Exit = 14,
    /// posix_spawn in the parent (`offset` = the child's pid).
    Spawn = 15,
    /// A well-formed op name this version does not know (the format allows new ones).
    Unknown = 255,
}

impl FileOp {
    const ALL: [FileOp; 15] = [
        FileOp::Open,
        FileOp::Write,
        FileOp::Fsync,
        FileOp::Fdatasync,
        FileOp::SyncRange,
        FileOp::Truncate,
        FileOp::PunchHole,
        FileOp::Fallocate,
        FileOp::Unlink,
        FileOp::Rename,
        FileOp::Close,
        FileOp::Fork,
        FileOp::Exec,
        FileOp::Exit,
        FileOp::Spawn,
    ];

    /// The op of a shim record code, if known.
    pub fn from_code(code: u16) -> Option<FileOp> {
        FileOp::ALL.iter().copied().find(|o| *o as u16 == code)
    }

    /// The op named `name` (the strings of the `op` column), if known.
    pub fn from_name(name: &str) -> Option<FileOp> {
        // Match on the bytes: this runs once per row when the column is not dictionary-encoded.
        Some(match name {
            "open" => FileOp::Open,
            "write" => FileOp::Write,
            "fsync" => FileOp::Fsync,
            "fdatasync" => FileOp::Fdatasync,
            "sync_range" => FileOp::SyncRange,
            "truncate" => FileOp::Truncate,
            "punch_hole" => FileOp::PunchHole,
            "fallocate" => FileOp::Fallocate,
            "unlink" => FileOp::Unlink,
            "rename" => FileOp::Rename,
            "close" => FileOp::Close,
            "fork" => FileOp::Fork,
            "exec" => FileOp::Exec,
            "exit" => FileOp::Exit,
            "spawn" => FileOp::Spawn,
            _ => return None,
        })
    }

    /// The name written in the `op` column ("unknown" for [`FileOp::Unknown`]).
    pub fn name(self) -> &'static str {
        op_name(self as u16).unwrap_or("unknown")
    }
}

/// One row of a file-level trace. Field meanings follow `shim/include/pcshim.h`; `path` and
/// `path2` are ids in the `pcstream.paths` table (0 = none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileEvent {
    pub ts_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub op: FileOp,
    pub fd: i32,
    pub dev: u64,
    pub ino: u64,
    pub offset: u64,
    pub len: u64,
    pub pc: u64,
    pub flags: u32,
    pub path: u32,
    pub path2: u32,
}

/// What [`write_file_trace`] wrote.
#[derive(Debug, Default, serde::Serialize)]
pub struct FileTraceSummary {
    pub records: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub processes: usize,
    pub signatures: usize,
    pub paths: usize,
    pub warnings: Vec<String>,
    pub lost_processes: Vec<u32>,
    pub torn_bytes: u64,
    /// Write records folded into others (see [`crate::coalesce`]): `records` is what was written.
    pub coalesced_writes: u64,
}

/// Rows handed to the Parquet encoder at a time.
const WRITE_CHUNK_ROWS: usize = 64 * 1024;

/// The column names and types of a file-level trace, in the order they are written.
pub const FILE_COLUMNS: [(&str, DataType); 13] = [
    ("ts_ns", DataType::UInt64),
    ("pid", DataType::UInt32),
    ("tid", DataType::UInt32),
    ("op", DataType::Utf8),
    ("fd", DataType::Int32),
    ("dev", DataType::UInt64),
    ("ino", DataType::UInt64),
    ("offset", DataType::UInt64),
    ("len", DataType::UInt64),
    ("pc", DataType::UInt64),
    ("flags", DataType::UInt32),
    ("path", DataType::UInt32),
    ("path2", DataType::UInt32),
];

fn batch_of(schema: &Arc<Schema>, rows: &[FileEvent]) -> RecordBatch {
    let c64 = |f: fn(&FileEvent) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)))
    };
    let c32 = |f: fn(&FileEvent) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(f)))
    };
    let cols: Vec<ArrayRef> = vec![
        c64(|r| r.ts_ns),
        c32(|r| r.pid),
        c32(|r| r.tid),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.op.name()),
        )),
        Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.fd))),
        c64(|r| r.dev),
        c64(|r| r.ino),
        c64(|r| r.offset),
        c64(|r| r.len),
        c64(|r| r.pc),
        c32(|r| r.flags),
        c32(|r| r.path),
        c32(|r| r.path2),
    ];
    RecordBatch::try_new(schema.clone(), cols).expect("columns match the schema")
}

/// Write `rows` (already in time order) with the footer pairs `meta` + `pcstream.paths` =
/// `paths` to `out`, atomically (a temporary file renamed at the end).
fn write_rows(
    out: &Path,
    rows: &[FileEvent],
    meta: &TraceMeta,
    paths: &BTreeMap<u32, String>,
) -> Result<(), TraceError> {
    let label = out.display().to_string();
    let io = |e: &dyn std::fmt::Display| TraceError::Io {
        path: label.clone(),
        why: format!(
            "cannot write ({}); check that the directory exists and is writable",
            one_line(e)
        ),
    };
    let schema = Arc::new(Schema::new(
        FILE_COLUMNS
            .iter()
            .map(|(n, t)| Field::new(*n, t.clone(), false))
            .collect::<Vec<_>>(),
    ));
    let mut kv: Vec<KeyValue> = meta
        .to_pairs()
        .into_iter()
        .map(|(k, v)| KeyValue::new(k, v))
        .collect();
    kv.push(KeyValue::new(
        KEY_PATHS.to_string(),
        serde_json::to_string(paths).expect("a string map serialises"),
    ));
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("zstd level 3 exists"),
        ))
        .set_dictionary_enabled(true)
        .set_key_value_metadata(Some(kv))
        .build();
    let name = out
        .file_name()
        .ok_or_else(|| io(&"the path names no file"))?
        .to_string_lossy()
        .into_owned();
    let tmp = out.with_file_name(format!("{name}.tmp-{}", std::process::id()));
    let result = (|| -> Result<(), TraceError> {
        let file = File::create(&tmp).map_err(|e| io(&e))?;
        let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| io(&e))?;
        for chunk in rows.chunks(WRITE_CHUNK_ROWS) {
            w.write(&batch_of(&schema, chunk)).map_err(|e| io(&e))?;
        }
        if rows.is_empty() {
            w.write(&batch_of(&schema, &[])).map_err(|e| io(&e))?;
        }
        w.close().map_err(|e| io(&e))?;
        std::fs::rename(&tmp, out).map_err(|e| io(&e))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Write hand-made `events` as a file-level trace (in the given order, which should be by time)
/// with the path table `paths` (id → path) and `source` in the footer.
pub fn write_events(
    out: &Path,
    events: &[FileEvent],
    paths: &BTreeMap<u32, String>,
    source: &str,
) -> Result<(), TraceError> {
    let meta = TraceMeta {
        source: source.to_string(),
        ..Default::default()
    };
    write_rows(out, events, &meta, paths)
}

/// Sort `logs` by time and write them to `out` (atomically: a temporary file renamed at the end);
/// with `coalesce`, runs of small contiguous writes are folded first (see [`crate::coalesce`]).
pub fn write_file_trace(
    logs: &ShimLogs,
    out: &Path,
    source: &str,
    coalesce: bool,
) -> Result<FileTraceSummary, TraceError> {
    let mut order: Vec<usize> = (0..logs.records.len()).collect();
    order.sort_by_key(|&i| {
        let r = &logs.records[i];
        (r.ts_ns, r.pid, r.tid, i)
    });
    // Dense path ids in order of first use; signatures actually used.
    let mut ids: BTreeMap<u64, u32> = BTreeMap::new();
    let mut paths: BTreeMap<u32, String> = BTreeMap::new();
    let mut id_of = |h: u64| -> u32 {
        if h == 0 {
            return 0;
        }
        let next = ids.len() as u32 + 1;
        *ids.entry(h).or_insert_with(|| {
            paths.insert(
                next,
                logs.paths
                    .get(&h)
                    .cloned()
                    .unwrap_or_else(|| format!("?{h:016x}")),
            );
            next
        })
    };
    let n = order.len();
    let mut rows = Vec::with_capacity(n);
    let mut pcs = serde_json::Map::new();
    let mut summary = FileTraceSummary::default();
    for &i in &order {
        let r = &logs.records[i];
        let op = FileOp::from_code(r.op).unwrap_or(FileOp::Unknown);
        rows.push(FileEvent {
            ts_ns: r.ts_ns,
            pid: r.pid,
            tid: r.tid,
            op,
            fd: r.fd,
            dev: r.dev,
            ino: r.ino,
            offset: r.offset,
            len: r.len,
            pc: r.pc,
            flags: r.flags,
            path: id_of(r.path),
            path2: if op == FileOp::Rename {
                id_of(r.aux)
            } else {
                0
            },
        });
        if r.pc != 0 && !pcs.contains_key(&r.pc.to_string()) {
            let frames: Vec<serde_json::Value> = logs
                .sigs
                .get(&r.pc)
                .map(|f| {
                    f.iter()
                        .map(|f| {
                            serde_json::json!({"module": f.module, "module_id": format!("{:016x}", f.module_id), "offset": f.offset})
                        })
                        .collect()
                })
                .unwrap_or_default();
            pcs.insert(r.pc.to_string(), serde_json::Value::Array(frames));
        }
        if op == FileOp::Write {
            summary.writes += 1;
            summary.write_bytes += r.len;
        }
    }
    let meta = TraceMeta {
        source: source.to_string(),
        pcs: serde_json::Value::Object(pcs),
        ..Default::default()
    };
    let (rows, folded) = if coalesce {
        crate::coalesce::coalesce(rows)
    } else {
        (rows, 0)
    };
    write_rows(out, &rows, &meta, &paths)?;
    summary.records = rows.len() as u64;
    summary.coalesced_writes = folded;
    summary.processes = logs.processes.len();
    summary.signatures = meta.pcs.as_object().map_or(0, |m| m.len());
    summary.paths = paths.len();
    summary.warnings = logs.warnings.clone();
    summary.lost_processes = logs.lost.clone();
    summary.torn_bytes = logs.torn_bytes;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shimlog::{Frame, ShimRecord};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;

    #[test]
    fn rows_are_time_ordered_with_tables() {
        let mut logs = ShimLogs::default();
        let rec = |ts, pid, op, path, pc| ShimRecord {
            ts_ns: ts,
            pid,
            op,
            path,
            pc,
            len: 10,
            ..Default::default()
        };
        logs.records = vec![
            rec(30, 2, 2, 7, 5),
            rec(10, 1, 1, 7, 5),
            rec(20, 1, 9, 8, 0),
        ];
        logs.paths.insert(7, "/a".into());
        logs.paths.insert(8, "/b".into());
        logs.sigs.insert(
            5,
            vec![Frame {
                module: "/bin/x".into(),
                module_id: 1,
                offset: 0x40,
            }],
        );
        logs.processes = vec![1, 2];
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.parquet");
        let s = write_file_trace(&logs, &out, "test", false).unwrap();
        assert_eq!((s.records, s.writes, s.signatures, s.paths), (3, 1, 1, 2));
        let r = SerializedFileReader::new(File::open(&out).unwrap()).unwrap();
        let kv = r.metadata().file_metadata().key_value_metadata().unwrap();
        let get = |k: &str| {
            kv.iter()
                .find(|p| p.key == k)
                .unwrap()
                .value
                .clone()
                .unwrap()
        };
        assert_eq!(get(KEY_PATHS), r#"{"1":"/a","2":"/b"}"#);
        assert!(get("pcstream.pcs").contains(r#""5":[{"module":"/bin/x""#));
        let rows: Vec<String> = r
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                format!(
                    "{} {}",
                    row.get_ulong(0).unwrap(),
                    row.get_string(3).unwrap()
                )
            })
            .collect();
        assert_eq!(rows, ["10 open", "20 unlink", "30 write"]);
    }

    #[test]
    fn unwritable_output_is_one_line() {
        let e = write_file_trace(
            &ShimLogs::default(),
            Path::new("/nonexistent/dir/t.parquet"),
            "",
            true,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("/nonexistent/dir/t.parquet: cannot write"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
}
