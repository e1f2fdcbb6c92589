//! Shim logs to a file-level trace, streaming: the records of every process merged in time
//! order ([`super::merge`]), path hashes turned into dense path ids (in order of first use), the
//! signatures actually used into the `pcstream.pcs` table, runs of small writes optionally
//! folded ([`super::coalesce`]), and the rows written a chunk at a time. Memory holds the tables,
//! the merge's per-stream buffers, the coalescer's window and one chunk of rows, whatever the
//! number of records.

use std::collections::BTreeMap;
use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};

use super::coalesce::Coalescer;
use super::merge::Merge;
use super::shimlog::{io_uring_warning, ShimLogs, ShimRecord};
use crate::blocktrace::TraceMeta;
use crate::error::TraceError;
use crate::filetrace::flags::{HINT_REFUSED, VIA_RECOVERED, VIA_STDIO_INLINE};
use crate::filetrace::{FileEvent, FileOp, FileTraceWriter, KEY_CAPTURE};

/// What [`write_file_trace`] wrote.
#[derive(Debug, Default, serde::Serialize)]
pub struct FileTraceSummary {
    /// Rows written.
    pub records: u64,
    /// The program's write events (before coalescing) and their bytes.
    pub writes: u64,
    pub write_bytes: u64,
    /// Process images in the logs.
    pub processes: usize,
    /// Signatures in `pcstream.pcs`, paths in `pcstream.paths`.
    pub signatures: usize,
    pub paths: usize,
    pub warnings: Vec<String>,
    pub lost_processes: Vec<u32>,
    pub torn_bytes: u64,
    /// Records the processes' `E` lines count beyond what their `.bin` files hold: cut off by a
    /// file-size limit or a full disk while the process ran on.
    pub lost_records: u64,
    /// Write events folded into others (see [`super::coalesce`]): `records` is what was written.
    pub coalesced_writes: u64,
    /// Bytes of the writes the shim's safety net found at close/exit (flag `VIA_RECOVERED`).
    pub recovered_bytes: u64,
    /// Bytes that entered stdio buffers through inline macros (flag `VIA_STDIO_INLINE`).
    pub inline_stdio_bytes: u64,
    /// Bytes the shim knew were written but could not place (`W unplaced:` lines); not in the
    /// trace.
    pub unplaced_bytes: u64,
    /// set_hint events (`fcntl(F_SET_RW_HINT)`), and of them those the kernel refused (flag
    /// `HINT_REFUSED`: the level the program meant is kept).
    pub hint_events: u64,
    pub refused_hints: u64,
}

/// Merge `logs` in time order and write them to `out` (atomically: a temporary file renamed at
/// the end); with `coalesce`, runs of small contiguous writes of one PC are folded into one row
/// each (see [`super::coalesce`]), else every call is a row.
pub fn write_file_trace(
    logs: &ShimLogs,
    out: &Path,
    source: &str,
    coalesce: bool,
) -> Result<FileTraceSummary, TraceError> {
    write_file_trace_as(logs, out, source, coalesce, None)
}

/// [`write_file_trace`], saying in `pcstream.capture` how the logs were captured (`shim`, `bpf`,
/// `shim+bpf`; None: the key is not written).
pub fn write_file_trace_as(
    logs: &ShimLogs,
    out: &Path,
    source: &str,
    coalesce: bool,
    capture: Option<&str>,
) -> Result<FileTraceSummary, TraceError> {
    let mut merge = Merge::new(&logs.bins);
    let mut writer = FileTraceWriter::create(out)?;
    let mut ids = PathIds::default();
    let mut pcs: FxHashSet<u64> = FxHashSet::default();
    let mut s = FileTraceSummary::default();
    let mut coalescer = coalesce.then(Coalescer::new);
    while let Some(r) = merge.next()? {
        let ev = ids.event(&r, logs);
        if r.pc != 0 {
            pcs.insert(r.pc);
        }
        s.count(&ev);
        match &mut coalescer {
            Some(c) => c.push(ev, &mut |e| writer.push(e))?,
            None => writer.push(ev)?,
        }
    }
    if let Some(c) = coalescer {
        s.coalesced_writes = c.finish(&mut |e| writer.push(e))?;
    }
    let table = pcs_table(logs, pcs);
    s.signatures = table.len();
    let meta = TraceMeta {
        source: source.to_string(),
        pcs: serde_json::Value::Object(table),
        ..Default::default()
    };
    s.paths = ids.paths.len();
    let extra = capture
        .map(|c| vec![(KEY_CAPTURE.to_string(), c.to_string())])
        .unwrap_or_default();
    s.records = writer.finish_with(&meta, &ids.paths, extra)?;
    s.processes = logs.processes.len();
    s.warnings = logs.warnings.clone();
    if capture.is_some_and(|c| c.contains("bpf")) {
        // the BPF capture records ring I/O: the shim's "not recorded" does not hold
        let ring = io_uring_warning(logs.io_uring.len());
        s.warnings.retain(|w| *w != ring);
    }
    s.lost_processes = logs.lost.clone();
    s.torn_bytes = logs.torn_bytes;
    s.lost_records = logs.lost_records;
    s.unplaced_bytes = logs.unplaced_bytes;
    Ok(s)
}

/// Dense path ids, in order of first use, for the path hashes of the records.
#[derive(Default)]
struct PathIds {
    ids: FxHashMap<u64, u32>,
    /// Id → path (`?<hash>` for a hash no `P` line named).
    paths: BTreeMap<u32, String>,
    /// (dev, ino) → the path id a record last gave that file: the BPF capture leaves the path of
    /// a file it saw no open of to the logs that did (the shim's, in the same run).
    by_inode: FxHashMap<(u64, u64), u32>,
}

impl PathIds {
    /// The id of the path hash `h` (0: no path).
    fn id(&mut self, h: u64, logs: &ShimLogs) -> u32 {
        if h == 0 {
            return 0;
        }
        let next = self.ids.len() as u32 + 1;
        let paths = &mut self.paths;
        *self.ids.entry(h).or_insert_with(|| {
            paths.insert(
                next,
                logs.paths
                    .get(&h)
                    .cloned()
                    .unwrap_or_else(|| format!("?{h:016x}")),
            );
            next
        })
    }

    /// The file-level event of the record `r`, its paths as ids.
    fn event(&mut self, r: &ShimRecord, logs: &ShimLogs) -> FileEvent {
        let op = FileOp::from_code(r.op).unwrap_or(FileOp::Unknown);
        let mut path = self.id(r.path, logs);
        let inode = (r.dev, r.ino);
        if inode != (0, 0) && op != FileOp::Rename && op != FileOp::Unlink {
            if path != 0 {
                self.by_inode.insert(inode, path);
            } else {
                path = self.by_inode.get(&inode).copied().unwrap_or(0);
            }
        }
        let path2 = if op == FileOp::Rename {
            self.id(r.aux, logs)
        } else {
            0
        };
        FileEvent {
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
            path,
            path2,
        }
    }
}

impl FileTraceSummary {
    /// Count the program's event `ev` (before coalescing).
    fn count(&mut self, ev: &FileEvent) {
        match ev.op {
            FileOp::Write => {
                self.writes += 1;
                self.write_bytes += ev.len;
                if ev.flags & VIA_RECOVERED != 0 {
                    self.recovered_bytes += ev.len;
                }
                if ev.flags & VIA_STDIO_INLINE != 0 {
                    self.inline_stdio_bytes += ev.len;
                }
            }
            FileOp::SetHint => {
                self.hint_events += 1;
                if ev.flags & HINT_REFUSED != 0 {
                    self.refused_hints += 1;
                }
            }
            _ => {}
        }
    }
}

/// `pcstream.pcs`: the signatures used, in order, with their frames.
fn pcs_table(logs: &ShimLogs, pcs: FxHashSet<u64>) -> serde_json::Map<String, serde_json::Value> {
    let mut used: Vec<u64> = pcs.into_iter().collect();
    used.sort_unstable();
    used.into_iter()
        .map(|pc| {
            let frames: Vec<serde_json::Value> = logs
                .sigs
                .get(&pc)
                .map(|f| {
                    f.iter()
                        .map(|f| {
                            let mut frame = serde_json::json!({"module": f.module, "module_id": format!("{:016x}", f.module_id), "offset": f.offset});
                            if let Some(name) = &f.symbol {
                                frame["symbol"] = serde_json::Value::String(name.clone());
                            }
                            frame
                        })
                        .collect()
                })
                .unwrap_or_default();
            (pc.to_string(), serde_json::Value::Array(frames))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::filetrace::{FileTraceReader, KEY_PATHS};
    use crate::record::shimlog::{decode_record, read_dir, Frame, ShimRecord, HEADER_BYTES};
    use crate::record::synth::{write_synthetic, LogWriter, SynthSpec};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    use std::fs::File;

    fn read_rows(path: &Path) -> Vec<FileEvent> {
        let mut r = FileTraceReader::open(path).unwrap();
        let (mut all, mut buf) = (Vec::new(), Vec::new());
        while r.next_batch(&mut buf).unwrap() {
            all.extend_from_slice(&buf);
        }
        all
    }

    /// What the converter did before it streamed: every record of every file (in name order),
    /// sorted by (ts_ns, pid, tid, log order).
    fn sorted_reference(dir: &Path) -> Vec<ShimRecord> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        names.sort();
        let mut recs = Vec::new();
        for p in names {
            let b = std::fs::read(p).unwrap();
            recs.extend(b[HEADER_BYTES..].chunks_exact(88).map(decode_record));
        }
        let mut order: Vec<usize> = (0..recs.len()).collect();
        order.sort_by_key(|&i| (recs[i].ts_ns, recs[i].pid, recs[i].tid, i));
        order.into_iter().map(|i| recs[i]).collect()
    }

    fn key(e: &FileEvent) -> (u64, u32, u32, FileOp, u64, u64, u64, u32) {
        (e.ts_ns, e.pid, e.tid, e.op, e.offset, e.len, e.pc, e.flags)
    }

    #[test]
    fn rows_are_time_ordered_with_tables() {
        let dir = tempfile::tempdir().unwrap();
        let rec = |ts, pid, op, path, pc| ShimRecord {
            ts_ns: ts,
            pid,
            tid: pid,
            op,
            path,
            pc,
            len: 10,
            ..Default::default()
        };
        let mut a = LogWriter::create(dir.path(), 1, 0, 1).unwrap();
        a.path(7, "/a").unwrap();
        a.path(8, "/b").unwrap();
        a.signature(
            5,
            &[Frame {
                module: "/bin/x".into(),
                module_id: 1,
                offset: 0x40,
                symbol: None,
            }],
        )
        .unwrap();
        a.record(&rec(10, 1, 1, 7, 5)).unwrap();
        a.record(&rec(20, 1, 9, 8, 0)).unwrap();
        a.finish(true).unwrap();
        let mut b = LogWriter::create(dir.path(), 2, 1, 2).unwrap();
        b.record(&rec(30, 2, 2, 7, 5)).unwrap();
        b.finish(true).unwrap();
        let logs = read_dir(dir.path()).unwrap();
        let out = dir.path().join("t.parquet");
        let s = write_file_trace(&logs, &out, "test", false).unwrap();
        assert_eq!((s.records, s.writes, s.signatures, s.paths), (3, 1, 1, 2));
        assert_eq!(s.processes, 2);
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

    #[test]
    fn the_merge_gives_the_order_of_a_sort_of_all_records() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SynthSpec {
            processes: 3,
            threads: 5,
            records: 60_000,
            seed: 7,
            step_ns: 3,
        };
        write_synthetic(dir.path(), &spec).unwrap();
        // Edge cases: one pid in two files (an exec), equal time stamps across them, and a
        // thread whose clock goes back (its records stay in log order among equal keys).
        let rec = |ts, tid, op: FileOp, offset| ShimRecord {
            ts_ns: ts,
            pid: 77,
            tid,
            op: op as u16,
            offset,
            ..Default::default()
        };
        let mut a = LogWriter::create(dir.path(), 77, 1, 5).unwrap();
        for (i, ts) in [1_000_000u64, 1_000_050, 1_000_010, 1_000_050, 1_000_020]
            .iter()
            .enumerate()
        {
            a.record(&rec(*ts, 77, FileOp::Fsync, i as u64)).unwrap();
            a.record(&rec(*ts, 78, FileOp::Close, i as u64)).unwrap();
        }
        a.record(&rec(1_000_010, 77, FileOp::Exec, 9)).unwrap();
        a.finish(true).unwrap();
        let mut b = LogWriter::create(dir.path(), 77, 1, 6).unwrap();
        for i in 0..3 {
            b.record(&rec(1_000_010 + i, 77, FileOp::Fsync, 100 + i))
                .unwrap();
        }
        b.finish(true).unwrap();
        let logs = read_dir(dir.path()).unwrap();
        assert!(logs.bins.iter().any(|b| b.streams.len() > 2));
        let out = dir.path().join("t.parquet");
        let s = write_file_trace(&logs, &out, "test", false).unwrap();
        let want: Vec<_> = sorted_reference(dir.path())
            .iter()
            .map(|r| {
                (
                    r.ts_ns,
                    r.pid,
                    r.tid,
                    FileOp::from_code(r.op).unwrap(),
                    r.offset,
                    r.len,
                    r.pc,
                    r.flags,
                )
            })
            .collect();
        let got: Vec<_> = read_rows(&out).iter().map(key).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the merged order differs from the sorted one");
        assert_eq!(s.records, want.len() as u64);
    }

    #[test]
    fn summary_counts_flags_hints_and_coalescing_keeps_bytes_and_owners() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SynthSpec {
            records: 40_000,
            ..Default::default()
        };
        let t = write_synthetic(dir.path(), &spec).unwrap();
        let logs = read_dir(dir.path()).unwrap();
        let (plain, folded) = (dir.path().join("p.parquet"), dir.path().join("c.parquet"));
        let a = write_file_trace(&logs, &plain, "test", false).unwrap();
        let b = write_file_trace(&logs, &folded, "test", true).unwrap();
        for s in [&a, &b] {
            assert_eq!((s.writes, s.write_bytes), (t.writes, t.write_bytes));
            assert_eq!(s.recovered_bytes, t.recovered_bytes);
            assert_eq!(s.inline_stdio_bytes, t.inline_stdio_bytes);
            assert_eq!(s.hint_events, t.hint_events);
            assert_eq!(s.signatures as u64, t.signatures);
            assert_eq!(s.paths as u64, t.files);
            assert!(s.lost_processes.is_empty() && s.warnings.is_empty());
        }
        assert!(t.recovered_bytes > 0 && t.inline_stdio_bytes > 0 && t.hint_events > 0);
        assert_eq!((a.records, a.coalesced_writes), (t.records, 0));
        assert_eq!(b.records + b.coalesced_writes, t.records);
        assert!(
            b.records * 10 < a.records,
            "{} rows of {}",
            b.records,
            a.records
        );
        let (pr, cr) = (read_rows(&plain), read_rows(&folded));
        assert_eq!(cr.len() as u64, b.records);
        assert!(cr.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
        // Bytes per (PC, file) and every page's last writer are the same.
        let acc = |rows: &[FileEvent]| {
            let mut bytes: HashMap<(u64, u32), u64> = HashMap::new();
            let mut owner: HashMap<(u32, u64), u64> = HashMap::new();
            for e in rows.iter().filter(|e| e.op == FileOp::Write) {
                *bytes.entry((e.pc, e.path)).or_default() += e.len;
                for p in e.offset / 4096..=(e.offset + e.len - 1) / 4096 {
                    owner.insert((e.path, p), e.pc);
                }
            }
            (bytes, owner)
        };
        assert!(acc(&pr) == acc(&cr));
        // Every other event is kept, in order.
        let others = |rows: &[FileEvent]| -> Vec<_> {
            rows.iter()
                .filter(|e| e.op != FileOp::Write)
                .map(key)
                .collect()
        };
        assert_eq!(others(&pr), others(&cr));
    }
}
