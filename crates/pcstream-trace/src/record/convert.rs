//! Shim logs to a file-level trace: the records of every process sorted by time, path hashes
//! turned into dense path ids, the signatures actually used into the `pcstream.pcs` table, and
//! (optionally) runs of small writes folded by [`super::coalesce`].

use std::collections::BTreeMap;
use std::path::Path;

use super::shimlog::ShimLogs;
use crate::blocktrace::TraceMeta;
use crate::error::TraceError;
use crate::filetrace::{write_rows, FileEvent, FileOp};

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
    /// Write records folded into others (see [`super::coalesce`]): `records` is what was written.
    pub coalesced_writes: u64,
}

/// Sort `logs` by time and write them to `out` (atomically: a temporary file renamed at the end);
/// with `coalesce`, runs of small contiguous writes are folded first (see [`super::coalesce`]).
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
        super::coalesce::coalesce(rows)
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
    use crate::filetrace::KEY_PATHS;
    use crate::record::shimlog::{Frame, ShimRecord};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    use std::fs::File;

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
