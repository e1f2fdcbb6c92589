//! Streaming reader of file-level traces (docs/FORMATS.md; written by
//! [`super::writer`]). The footer and schema are checked when the file is opened; rows are
//! then decoded one bounded batch at a time into [`FileEvent`]s, so memory does not grow with the
//! trace length. Errors are one line naming the file, the row group and row.
//!
//! Columns may come in any order; integer columns may have any integer Arrow type (values are
//! converted with a range check). The `op` column holds strings (plain or dictionary-encoded). A
//! well-formed name this version does not know (lower-case letters, digits, `_`) reads as
//! [`FileOp::Unknown`] and is counted in [`FileTraceReader::unknown_ops`]; an empty, null or
//! malformed op is an error. Required columns: `ts_ns`, `op`, `offset`, `len`; the others read as
//! 0 when absent (`fd` as -1).

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Schema};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;

use super::{FileEvent, FileOp, KEY_CAPTURE, KEY_PATHS};
use crate::blocktrace::TraceMeta;
use crate::error::{one_line, TraceError};
use crate::guard::contain;
use crate::parquet::{builder, duplicate_column, footer_pairs, is_integer, open_input, RowGroups};

/// Most rows per decoded batch (bounds memory whatever the row-group size).
pub const FILE_BATCH_ROWS: usize = 64 * 1024;

/// Columns a file-level trace cannot do without.
pub const FILE_REQUIRED: [&str; 4] = ["ts_ns", "op", "offset", "len"];

/// Integer columns in the order of [`FileTraceReader`]'s `cols` (the `op` column is separate).
const INT_COLUMNS: [&str; 12] = [
    "ts_ns", "pid", "tid", "fd", "dev", "ino", "offset", "len", "pc", "flags", "path", "path2",
];

/// An open file-level trace, positioned before its first row.
pub struct FileTraceReader {
    meta: TraceMeta,
    paths: BTreeMap<u32, String>,
    /// `pcstream.capture` (None: absent).
    capture: Option<String>,
    rows: u64,
    groups: RowGroups,
    /// Batch column of each of [`INT_COLUMNS`] (`None`: absent).
    cols: [Option<usize>; 12],
    op_col: usize,
    inner: ParquetRecordBatchReader,
    row: u64,
    /// Unknown op name → rows.
    unknown: BTreeMap<String, u64>,
}

fn is_string(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(k, v) => is_integer(k) && is_string(v),
        _ => false,
    }
}

/// Checked copy of one integer column into a field of `out`; `Err((row, value))` when a value
/// does not fit.
macro_rules! load_int {
    ($a:expr, $out:expr, $field:ident, $ty:ty) => {{
        fn copy<S: Copy + std::fmt::Display>(
            vals: &[S],
            out: &mut [FileEvent],
        ) -> Result<(), (usize, String)>
        where
            $ty: TryFrom<S>,
        {
            for (k, (r, &v)) in out.iter_mut().zip(vals).enumerate() {
                match <$ty>::try_from(v) {
                    Ok(d) => r.$field = d,
                    Err(_) => return Err((k, v.to_string())),
                }
            }
            Ok(())
        }
        match $a.data_type() {
            DataType::UInt8 => copy($a.as_primitive::<UInt8Type>().values(), $out),
            DataType::UInt16 => copy($a.as_primitive::<UInt16Type>().values(), $out),
            DataType::UInt32 => copy($a.as_primitive::<UInt32Type>().values(), $out),
            DataType::UInt64 => copy($a.as_primitive::<UInt64Type>().values(), $out),
            DataType::Int8 => copy($a.as_primitive::<Int8Type>().values(), $out),
            DataType::Int16 => copy($a.as_primitive::<Int16Type>().values(), $out),
            DataType::Int32 => copy($a.as_primitive::<Int32Type>().values(), $out),
            DataType::Int64 => copy($a.as_primitive::<Int64Type>().values(), $out),
            other => unreachable!("column type {other} passed the schema check"),
        }
    }};
}

/// The `pcstream.paths` table of the footer `pairs` (empty when absent).
fn path_table(
    label: &str,
    pairs: &[(String, Option<String>)],
) -> Result<BTreeMap<u32, String>, TraceError> {
    let Some((_, Some(v))) = pairs.iter().find(|(k, _)| k == KEY_PATHS) else {
        return Ok(BTreeMap::new());
    };
    serde_json::from_str(v).map_err(|e| TraceError::BadMeta {
        path: label.to_string(),
        key: KEY_PATHS.into(),
        why: format!(
            "malformed JSON ({}); expected an object {{\"id\": \"path\"}}; re-record the trace",
            one_line(e)
        ),
    })
}

/// The file column of each of [`INT_COLUMNS`] (`None`: absent) and of `op`, checking their types
/// and that the required ones are there.
fn find_columns(label: &str, schema: &Schema) -> Result<([Option<usize>; 12], usize), TraceError> {
    let missing = |c: &str| TraceError::MissingColumn {
        path: label.to_string(),
        column: c.to_string(),
    };
    let mut file_idx = [None; 12];
    for (i, name) in INT_COLUMNS.iter().enumerate() {
        match schema.column_with_name(name) {
            Some((idx, field)) if is_integer(field.data_type()) => file_idx[i] = Some(idx),
            Some((_, field)) => {
                return Err(TraceError::WrongType {
                    path: label.to_string(),
                    column: name.to_string(),
                    found: field.data_type().to_string(),
                    expected: "an integer type".into(),
                })
            }
            None if FILE_REQUIRED.contains(name) => return Err(missing(name)),
            None => {}
        }
    }
    let op_idx = match schema.column_with_name("op") {
        Some((idx, field)) if is_string(field.data_type()) => idx,
        Some((_, field)) => {
            return Err(TraceError::WrongType {
                path: label.to_string(),
                column: "op".into(),
                found: field.data_type().to_string(),
                expected: "a string column of op names (open, write, ...)".into(),
            })
        }
        None => return Err(missing("op")),
    };
    Ok((file_idx, op_idx))
}

/// What an op string is: a known op, a well-formed unknown name, or malformed.
fn classify_op(s: &str) -> Result<FileOp, ()> {
    if let Some(op) = FileOp::from_name(s) {
        return Ok(op);
    }
    let well_formed = !s.is_empty()
        && s.len() <= 32
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_');
    if well_formed {
        Ok(FileOp::Unknown)
    } else {
        Err(())
    }
}

impl FileTraceReader {
    /// Open `path`: read the footer (`pcstream.*` keys and the path table) and check the schema.
    pub fn open(path: &Path) -> Result<FileTraceReader, TraceError> {
        let label = path.display().to_string();
        let b = builder(&label, open_input(path)?)?;
        FileTraceReader::from_builder(label, b, true)
    }

    /// As [`open`](Self::open) for the rows alone: the footer's PC table is neither read nor
    /// checked (parsing a large one takes longer than reading the rows), so `meta().pcs` is empty.
    pub(crate) fn open_rows(path: &Path) -> Result<FileTraceReader, TraceError> {
        let label = path.display().to_string();
        let b = builder(&label, open_input(path)?)?;
        FileTraceReader::from_builder(label, b, false)
    }

    /// As [`open`](Self::open), from the bytes of a whole Parquet file (`label` names it).
    pub fn from_bytes(label: &str, data: bytes::Bytes) -> Result<FileTraceReader, TraceError> {
        let b = builder(label, data)?;
        FileTraceReader::from_builder(label.to_string(), b, true)
    }

    fn from_builder<T: ChunkReader + 'static>(
        label: String,
        b: ParquetRecordBatchReaderBuilder<T>,
        pcs: bool,
    ) -> Result<FileTraceReader, TraceError> {
        let md = b.metadata().clone();
        let pairs = crate::blocktrace::format::without_pcs(footer_pairs(&md), pcs);
        let meta = TraceMeta::from_pairs(&label, &pairs)?;
        let paths = path_table(&label, &pairs)?;
        let capture = pairs
            .iter()
            .find(|(k, _)| k == KEY_CAPTURE)
            .and_then(|(_, v)| v.clone());
        if let Some(column) = duplicate_column(b.schema()) {
            return Err(TraceError::DuplicateColumn {
                path: label,
                column: column.to_string(),
            });
        }
        let (file_idx, op_idx) = find_columns(&label, b.schema())?;
        let mut selected: Vec<usize> = file_idx.iter().flatten().copied().collect();
        selected.push(op_idx);
        selected.sort_unstable();
        let pos = |f: usize| selected.binary_search(&f).expect("selected");
        let mut cols = [None; 12];
        for (c, f) in cols.iter_mut().zip(file_idx) {
            *c = f.map(pos);
        }
        let op_col = pos(op_idx);
        let groups = RowGroups::new(&label, &md);
        let rows = groups.rows();
        let mask = ProjectionMask::roots(b.parquet_schema(), selected);
        let not_parquet = |why: String| TraceError::NotParquet {
            path: label.clone(),
            why,
        };
        let inner = contain(|| {
            b.with_projection(mask)
                .with_batch_size(FILE_BATCH_ROWS)
                .build()
        })
        .map_err(not_parquet)?
        .map_err(|e| not_parquet(one_line(e)))?;
        Ok(FileTraceReader {
            meta,
            paths,
            capture,
            rows,
            groups,
            cols,
            op_col,
            inner,
            row: 0,
            unknown: BTreeMap::new(),
        })
    }

    /// The `pcstream.*` footer keys (source, pcs, ...).
    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }
    /// The `pcstream.capture` value, when the trace has one.
    pub fn capture(&self) -> Option<&str> {
        self.capture.as_deref()
    }
    /// The `pcstream.paths` table (id → path).
    pub fn paths(&self) -> &BTreeMap<u32, String> {
        &self.paths
    }
    pub fn num_rows(&self) -> u64 {
        self.rows
    }
    pub fn num_row_groups(&self) -> usize {
        self.groups.count()
    }
    /// Op names this version does not know, with the number of rows of each.
    pub fn unknown_ops(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }

    /// (row group, row within it) of the global row `row`.
    pub fn locate(&self, row: u64) -> (usize, u64) {
        self.groups.locate(row)
    }

    /// A one-line error about global row `row` of this file.
    pub fn bad_row(&self, row: u64, what: String) -> TraceError {
        self.groups.bad_row(row, what)
    }

    /// Clear `out` and fill it with the next batch of rows (at most [`FILE_BATCH_ROWS`]);
    /// `Ok(false)` once the trace is exhausted.
    pub fn next_batch(&mut self, out: &mut Vec<FileEvent>) -> Result<bool, TraceError> {
        out.clear();
        let next =
            contain(|| self.inner.next()).map_err(|why| self.groups.decode_error(self.row, why))?;
        let batch = match next {
            None => return Ok(false),
            Some(Err(e)) => return Err(self.groups.decode_error(self.row, e)),
            Some(Ok(b)) => b,
        };
        out.resize(
            batch.num_rows(),
            FileEvent {
                fd: -1,
                ..Default::default()
            },
        );
        for (field, c) in self.cols.iter().enumerate() {
            if let Some(idx) = *c {
                self.load(batch.column(idx), field, out)?;
            }
        }
        self.load_ops(batch.column(self.op_col), out)?;
        self.check_paths(out)?;
        self.row += out.len() as u64;
        Ok(true)
    }

    /// Every path id of the rows `out` (other than 0, none) is named in `pcstream.paths`.
    fn check_paths(&self, out: &[FileEvent]) -> Result<(), TraceError> {
        let named = |id: u32| id == 0 || self.paths.contains_key(&id);
        let Some((k, id)) = out.iter().enumerate().find_map(|(k, e)| {
            [e.path, e.path2]
                .into_iter()
                .find(|&id| !named(id))
                .map(|id| (k, id))
        }) else {
            return Ok(());
        };
        Err(self.bad_row(
            self.row + k as u64,
            format!("path id {id} is not in pcstream.paths; re-record the trace or add the path to the table"),
        ))
    }

    fn load(&self, a: &ArrayRef, field: usize, out: &mut [FileEvent]) -> Result<(), TraceError> {
        let name = INT_COLUMNS[field];
        if a.null_count() > 0 {
            let k = (0..a.len()).find(|&k| a.is_null(k)).unwrap_or(0);
            return Err(self.bad_row(
                self.row + k as u64,
                format!("column {name} is null; every row needs a value (write 0 for unknown)"),
            ));
        }
        let res = match field {
            0 => load_int!(a, out, ts_ns, u64),
            1 => load_int!(a, out, pid, u32),
            2 => load_int!(a, out, tid, u32),
            3 => load_int!(a, out, fd, i32),
            4 => load_int!(a, out, dev, u64),
            5 => load_int!(a, out, ino, u64),
            6 => load_int!(a, out, offset, u64),
            7 => load_int!(a, out, len, u64),
            8 => load_int!(a, out, pc, u64),
            9 => load_int!(a, out, flags, u32),
            10 => load_int!(a, out, path, u32),
            _ => load_int!(a, out, path2, u32),
        };
        res.map_err(|(k, v)| {
            self.bad_row(
                self.row + k as u64,
                format!("{name} = {v} is out of range for the column; re-record the trace"),
            )
        })
    }

    fn load_ops(&mut self, a: &ArrayRef, out: &mut [FileEvent]) -> Result<(), TraceError> {
        let bad = |me: &Self, k: usize, v: Option<&str>| {
            me.bad_row(
                me.row + k as u64,
                match v {
                    None => {
                        "op is null; every row needs an op name (open, write, fsync, ...)".into()
                    }
                    Some(v) => format!(
                        "op '{}' is not an op name (open, write, fsync, ...); re-record the trace",
                        v.escape_debug()
                    ),
                },
            )
        };
        // Dictionary: classify each distinct value once, then map the keys.
        if let DataType::Dictionary(_, _) = a.data_type() {
            let d = a.as_any_dictionary();
            let values = d.values();
            let mut ops = Vec::with_capacity(values.len());
            for i in 0..values.len() {
                let s = string_at(values, i);
                ops.push(s.map(|s| (classify_op(s), s.to_string())));
            }
            let keys = d.normalized_keys();
            for (k, (r, &key)) in out.iter_mut().zip(keys.iter()).enumerate() {
                if d.keys().is_null(k) {
                    return Err(bad(self, k, None));
                }
                match ops.get(key) {
                    Some(Some((Ok(op), name))) => {
                        r.op = *op;
                        if *op == FileOp::Unknown {
                            *self.unknown.entry(name.clone()).or_insert(0) += 1;
                        }
                    }
                    Some(Some((Err(()), name))) => return Err(bad(self, k, Some(name))),
                    _ => return Err(bad(self, k, None)),
                }
            }
            return Ok(());
        }
        for (k, r) in out.iter_mut().enumerate() {
            if a.is_null(k) {
                return Err(bad(self, k, None));
            }
            let s = string_at(a, k).unwrap_or("");
            match classify_op(s) {
                Ok(op) => {
                    r.op = op;
                    if op == FileOp::Unknown {
                        *self.unknown.entry(s.to_string()).or_insert(0) += 1;
                    }
                }
                Err(()) => return Err(bad(self, k, Some(s))),
            }
        }
        Ok(())
    }
}

/// The string at `i` of a (non-dictionary) string array; `None` when null.
fn string_at(a: &ArrayRef, i: usize) -> Option<&str> {
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(i),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i),
        DataType::Utf8View => a.as_string_view().value(i),
        other => unreachable!("op type {other} passed the schema check"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_classify() {
        assert_eq!(classify_op("write"), Ok(FileOp::Write));
        assert_eq!(classify_op("mmap_write"), Ok(FileOp::Unknown));
        assert_eq!(classify_op(""), Err(()));
        assert_eq!(classify_op("Write!"), Err(()));
    }
}
