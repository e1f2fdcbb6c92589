//! What the PC labels (`pcstream info`, the report) read of a trace besides its summary: the
//! footer's key-value pairs and the amount each PC writes to each file. Read here rather than
//! through a Parquet library in Python, whose import alone took longer than reading both.

use std::collections::HashMap;
use std::path::Path;

use crate::blocktrace::BlockTraceReader;
use crate::error::TraceError;
use crate::filetrace::info::is_file_trace;
use crate::filetrace::{FileOp, FileTraceReader};
use crate::parquet::{builder, footer_pairs, open_input};

/// The footer's key-value pairs of the Parquet file `path`, in file order (a key without a value
/// has the empty string), after the readers' checks of the footer.
pub fn footer_values(path: &Path) -> Result<Vec<(String, String)>, TraceError> {
    let b = builder(&path.display().to_string(), open_input(path)?)?;
    Ok(footer_pairs(b.metadata())
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect())
}

/// (PC, file, amount) of every PC and file with writes, in no particular order: a block trace's
/// pages written (`op` 0) by `file` id (names in `pcstream.files`), a file-level trace's bytes
/// written (`write` rows) by `path` id (names in `pcstream.paths`). Rows without a PC (0) or a
/// file (0) are left out. Streams the trace; its PC table is not read.
pub fn pc_file_amounts(path: &Path) -> Result<Vec<(u64, u32, u64)>, TraceError> {
    let mut sums: HashMap<(u64, u32), u64> = HashMap::new();
    let mut add = |pc: u64, file: u32, amount: u64| {
        if pc != 0 && file != 0 {
            let sum = sums.entry((pc, file)).or_default();
            *sum = sum.saturating_add(amount);
        }
    };
    if is_file_trace(path) {
        let mut r = FileTraceReader::open_rows(path)?;
        let mut buf = Vec::new();
        while r.next_batch(&mut buf)? {
            for e in buf.iter().filter(|e| e.op == FileOp::Write) {
                add(e.pc, e.path, e.len);
            }
        }
    } else {
        let mut r = BlockTraceReader::open_rows(path)?;
        let mut buf = Vec::new();
        while r.next_batch(&mut buf)? {
            for q in buf.iter().filter(|q| q.op == 0) {
                add(q.pc, q.file, u64::from(q.pages));
            }
        }
    }
    Ok(sums.into_iter().map(|((pc, f), n)| (pc, f, n)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockTraceWriter, TraceMeta};
    use pcstream_core::request::Request;

    #[test]
    fn amounts_sum_the_writes_of_each_pc_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut meta = TraceMeta::default();
        meta.files.insert(1, "/a".into());
        let mut w = BlockTraceWriter::create(&path, &meta, 1024).unwrap();
        let rows = [
            (0, 5, 1, 2),
            (0, 5, 1, 3),
            (1, 5, 1, 4),
            (0, 0, 1, 1),
            (0, 6, 0, 1),
        ];
        for (i, (op, pc, file, pages)) in rows.into_iter().enumerate() {
            let r = Request {
                op,
                pc,
                file,
                pages,
                lpn: i as u64 * 8,
                ..Default::default()
            };
            w.push(&r).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(pc_file_amounts(&path).unwrap(), vec![(5, 1, 5)]);
        let footer = footer_values(&path).unwrap();
        assert!(footer
            .iter()
            .any(|(k, v)| k == "pcstream.files" && v == r#"{"1":"/a"}"#));
    }
}
