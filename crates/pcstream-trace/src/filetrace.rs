//! File-level trace (design.md, "File-level trace"): the Parquet file `pcstream record` writes.
//! Columns `ts_ns u64, pid u32, tid u32, op string, fd i32, dev u64, ino u64, offset u64, len u64,
//! pc u64, flags u32, path u32` plus `path2 u32` (the new path of a rename, 0 otherwise); footer
//! keys as for block traces plus `pcstream.paths` (JSON id → path; ids from 1, 0 = none).
//! Rows of all processes are ordered by time (then pid, tid, log order).

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
}

/// Sort `logs` by time and write them to `out` (atomically: a temporary file renamed at the end).
pub fn write_file_trace(
    logs: &ShimLogs,
    out: &Path,
    source: &str,
) -> Result<FileTraceSummary, TraceError> {
    let label = out.display().to_string();
    let io = |e: &dyn std::fmt::Display| TraceError::Io {
        path: label.clone(),
        why: format!(
            "cannot write ({}); check that the directory exists and is writable",
            one_line(e)
        ),
    };
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
    let (mut path, mut path2) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut pcs = serde_json::Map::new();
    let mut summary = FileTraceSummary::default();
    for &i in &order {
        let r = &logs.records[i];
        path.push(id_of(r.path));
        path2.push(if r.op == 10 { id_of(r.aux) } else { 0 });
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
        if r.op == 2 {
            summary.writes += 1;
            summary.write_bytes += r.len;
        }
    }
    let col64 = |f: &dyn Fn(usize) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(order.iter().map(|&i| f(i))))
    };
    let rec = |i: usize| &logs.records[i];
    let cols: Vec<ArrayRef> = vec![
        col64(&|i| rec(i).ts_ns),
        Arc::new(UInt32Array::from_iter_values(
            order.iter().map(|&i| rec(i).pid),
        )),
        Arc::new(UInt32Array::from_iter_values(
            order.iter().map(|&i| rec(i).tid),
        )),
        Arc::new(StringArray::from_iter_values(
            order.iter().map(|&i| op_name(rec(i).op).unwrap_or("?")),
        )),
        Arc::new(Int32Array::from_iter_values(
            order.iter().map(|&i| rec(i).fd),
        )),
        col64(&|i| rec(i).dev),
        col64(&|i| rec(i).ino),
        col64(&|i| rec(i).offset),
        col64(&|i| rec(i).len),
        col64(&|i| rec(i).pc),
        Arc::new(UInt32Array::from_iter_values(
            order.iter().map(|&i| rec(i).flags),
        )),
        Arc::new(UInt32Array::from(path)),
        Arc::new(UInt32Array::from(path2)),
    ];
    let fields = [
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
    let schema = Arc::new(Schema::new(
        fields
            .iter()
            .map(|(n, t)| Field::new(*n, t.clone(), false))
            .collect::<Vec<_>>(),
    ));
    let meta = TraceMeta {
        source: source.to_string(),
        pcs: serde_json::Value::Object(pcs),
        ..Default::default()
    };
    let mut kv: Vec<KeyValue> = meta
        .to_pairs()
        .into_iter()
        .map(|(k, v)| KeyValue::new(k, v))
        .collect();
    kv.push(KeyValue::new(
        KEY_PATHS.to_string(),
        serde_json::to_string(&paths).expect("a string map serialises"),
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
        let batch = RecordBatch::try_new(schema, cols).expect("columns match the schema");
        w.write(&batch).map_err(|e| io(&e))?;
        w.close().map_err(|e| io(&e))?;
        std::fs::rename(&tmp, out).map_err(|e| io(&e))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    summary.records = n as u64;
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
        let s = write_file_trace(&logs, &out, "test").unwrap();
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
