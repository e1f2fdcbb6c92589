//! Streaming block-trace reader. The footer and schema are checked when the file is opened;
//! rows are then decoded one bounded batch at a time (at most [`BATCH_ROWS`]) and every row is
//! validated, so memory does not grow with the trace length and a bad row is reported with its row
//! group and row. [`Prefetch`] moves decoding to a second thread so the simulator's loop does not
//! wait for Parquet.
//!
//! Columns may come in any order and with any integer Arrow type; values are converted to the
//! column's unsigned width and a value that does not fit (negative, too large) is an error rather
//! than a silent wrap. Absent optional columns read as 0. Columns that are not part of the format
//! are not decoded at all (projection).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;
use pcstream_core::request::{Op, Request};

use super::format::{
    row_fields_error, without_pcs, NamedClasses, TraceMeta, COLUMNS, KEY_AGED_PAGES, KEY_AGED_ROWS,
    MAX_HINT, MAX_META, MAX_PAGES, REQUIRED,
};
use crate::error::{one_line, TraceError};
use crate::guard::contain;
use crate::parquet::{builder, duplicate_column, footer_pairs, is_integer, open_input, RowGroups};

/// Most rows per decoded batch, whatever the row-group size (bounds memory).
pub const BATCH_ROWS: usize = 64 * 1024;

/// An open block trace, positioned before its first row.
pub struct BlockTraceReader {
    path: PathBuf,
    label: String,
    meta: TraceMeta,
    /// The `file_class` values the rows may carry.
    classes: NamedClasses,
    rows: u64,
    /// First global row of each row group, plus the total at the end (for error positions).
    groups: RowGroups,
    /// Batch column of each of [`COLUMNS`] (`None`: absent, reads as 0).
    cols: [Option<usize>; 10],
    inner: ParquetRecordBatchReader,
    /// Global index of the next row to decode.
    row: u64,
    /// The time of the last row decoded (rows come in time order).
    last_ts: u64,
    /// Pages of the aged rows decoded so far.
    aged_pages: u64,
}

/// Copy `vals` into one field of `out` through a checked conversion. For widening unsigned
/// conversions `try_from` is infallible and the loop compiles to a plain strided copy.
/// On failure returns (row in batch, offending value).
#[inline]
fn copy_col<S, D>(
    vals: &[S],
    out: &mut [Request],
    set: impl Fn(&mut Request, D),
) -> Result<(), (usize, String)>
where
    S: Copy + std::fmt::Display,
    D: TryFrom<S>,
{
    for (k, (r, &v)) in out.iter_mut().zip(vals).enumerate() {
        match D::try_from(v) {
            Ok(d) => set(r, d),
            Err(_) => return Err((k, v.to_string())),
        }
    }
    Ok(())
}

/// Dispatch once per column on the Arrow type, then run a monomorphic copy loop.
macro_rules! load {
    ($a:expr, $out:expr, $field:ident) => {{
        let set = |r: &mut Request, v| r.$field = v;
        match $a.data_type() {
            DataType::UInt8 => copy_col($a.as_primitive::<UInt8Type>().values(), $out, set),
            DataType::UInt16 => copy_col($a.as_primitive::<UInt16Type>().values(), $out, set),
            DataType::UInt32 => copy_col($a.as_primitive::<UInt32Type>().values(), $out, set),
            DataType::UInt64 => copy_col($a.as_primitive::<UInt64Type>().values(), $out, set),
            DataType::Int8 => copy_col($a.as_primitive::<Int8Type>().values(), $out, set),
            DataType::Int16 => copy_col($a.as_primitive::<Int16Type>().values(), $out, set),
            DataType::Int32 => copy_col($a.as_primitive::<Int32Type>().values(), $out, set),
            DataType::Int64 => copy_col($a.as_primitive::<Int64Type>().values(), $out, set),
            // The schema was checked at open and every batch follows it.
            other => unreachable!("column type {other} passed the schema check"),
        }
    }};
}

impl BlockTraceReader {
    /// Open `path`: read the footer and metadata and check the schema (required columns present,
    /// known columns integer-typed).
    pub fn open(path: &Path) -> Result<BlockTraceReader, TraceError> {
        let label = path.display().to_string();
        let b = builder(&label, open_input(path)?)?;
        BlockTraceReader::from_builder(path, label, b, true)
    }

    /// As [`open`](Self::open) for the rows alone: the footer's PC table is neither read nor
    /// checked (parsing a large one takes longer than reading the rows), so `meta().pcs` is empty.
    pub(crate) fn open_rows(path: &Path) -> Result<BlockTraceReader, TraceError> {
        let label = path.display().to_string();
        let b = builder(&label, open_input(path)?)?;
        BlockTraceReader::from_builder(path, label, b, false)
    }

    /// As [`open`](Self::open), from the bytes of a whole Parquet file (`label` names it in
    /// errors). [`capacity_pages`](Self::capacity_pages) then needs the capacity key: there is
    /// no file to scan.
    pub fn from_bytes(label: &str, data: bytes::Bytes) -> Result<BlockTraceReader, TraceError> {
        let b = builder(label, data)?;
        BlockTraceReader::from_builder(Path::new(label), label.to_string(), b, true)
    }

    fn from_builder<T: ChunkReader + 'static>(
        path: &Path,
        label: String,
        b: ParquetRecordBatchReaderBuilder<T>,
        pcs: bool,
    ) -> Result<BlockTraceReader, TraceError> {
        let md = b.metadata().clone();
        let pairs = without_pcs(footer_pairs(&md), pcs);
        let meta = TraceMeta::from_pairs(&label, &pairs)?;
        let classes = NamedClasses::new(&pairs, &meta);
        let schema = b.schema().clone();
        if let Some(column) = duplicate_column(&schema) {
            return Err(TraceError::DuplicateColumn {
                path: label,
                column: column.to_string(),
            });
        }
        let mut file_idx = [None; 10];
        for (i, (name, bits)) in COLUMNS.iter().enumerate() {
            match schema.column_with_name(name) {
                Some((idx, field)) if is_integer(field.data_type()) => file_idx[i] = Some(idx),
                Some((_, field)) => {
                    return Err(TraceError::WrongType {
                        path: label,
                        column: name.to_string(),
                        found: field.data_type().to_string(),
                        expected: format!("UInt{bits}"),
                    })
                }
                None if REQUIRED.contains(name) => {
                    return Err(TraceError::MissingColumn {
                        path: label,
                        column: name.to_string(),
                    })
                }
                None => {}
            }
        }
        // Projected batches hold the selected columns in file order.
        let mut selected: Vec<usize> = file_idx.iter().flatten().copied().collect();
        selected.sort_unstable();
        let mut cols = [None; 10];
        for (c, f) in cols.iter_mut().zip(file_idx) {
            *c = f.map(|f| selected.binary_search(&f).expect("selected"));
        }
        let groups = RowGroups::new(&label, &md);
        let rows = groups.rows();
        check_aged(&label, &meta, rows)?;

        let mask = ProjectionMask::roots(b.parquet_schema(), selected);
        let not_parquet = |why: String| TraceError::NotParquet {
            path: label.clone(),
            why,
        };
        let inner = contain(|| b.with_projection(mask).with_batch_size(BATCH_ROWS).build())
            .map_err(not_parquet)?
            .map_err(|e| not_parquet(one_line(e)))?;
        Ok(BlockTraceReader {
            path: path.to_path_buf(),
            label,
            meta,
            classes,
            rows,
            groups,
            cols,
            inner,
            row: 0,
            last_ts: 0,
            aged_pages: 0,
        })
    }

    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }
    /// Whether a row may carry the file class `class`: 0, or one `pcstream.file_classes` names
    /// (any when the footer has no such key). Rows handed over always may.
    pub fn allows_file_class(&self, class: u16) -> bool {
        self.classes.allows(class)
    }
    pub fn num_rows(&self) -> u64 {
        self.rows
    }
    pub fn num_row_groups(&self) -> usize {
        self.groups.count()
    }
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `pcstream.capacity_pages`, or max(lpn + pages) found by a streaming pre-scan of the file
    /// when the key is absent.
    pub fn capacity_pages(&self) -> Result<u64, TraceError> {
        match self.meta.capacity_pages {
            Some(c) => Ok(c),
            None => scan_capacity(&self.path),
        }
    }

    fn bad_row(&self, row: u64, what: String) -> TraceError {
        self.groups.bad_row(row, what)
    }

    /// Clear `out` and fill it with the next batch of rows (at most [`BATCH_ROWS`]); `Ok(false)`
    /// once the trace is exhausted. Every row is validated: op in 0..=3, pages ≥ 1 unless the op
    /// is a flush, lpn + pages ≤ `pcstream.capacity_pages` when the key is present.
    pub fn next_batch(&mut self, out: &mut Vec<Request>) -> Result<bool, TraceError> {
        out.clear();
        let next =
            contain(|| self.inner.next()).map_err(|why| self.groups.decode_error(self.row, why))?;
        let batch = match next {
            None => return Ok(false),
            Some(Err(e)) => return Err(self.groups.decode_error(self.row, e)),
            Some(Ok(b)) => b,
        };
        out.resize(batch.num_rows(), Request::default());
        for (field, c) in self.cols.iter().enumerate() {
            if let Some(idx) = *c {
                self.load(batch.column(idx), field, out)?;
            }
        }
        self.validate(out)?;
        self.check_aged_rows(out)?;
        self.last_ts = out.last().map_or(self.last_ts, |r| r.ts_ns);
        self.row += out.len() as u64;
        Ok(true)
    }

    /// Copy one column (field index into [`COLUMNS`]) of the current batch into `out`.
    fn load(&self, a: &ArrayRef, field: usize, out: &mut [Request]) -> Result<(), TraceError> {
        let (name, bits) = COLUMNS[field];
        if a.null_count() > 0 {
            let k = (0..a.len()).find(|&k| a.is_null(k)).unwrap_or(0);
            return Err(self.bad_row(
                self.row + k as u64,
                format!("column {name} is null; every row needs a value (write 0 for unknown)"),
            ));
        }
        let res = match field {
            0 => load!(a, out, ts_ns),
            1 => load!(a, out, op),
            2 => load!(a, out, lpn),
            3 => load!(a, out, pages),
            4 => load!(a, out, pc),
            5 => load!(a, out, file),
            6 => load!(a, out, file_class),
            7 => load!(a, out, meta),
            8 => load!(a, out, pid),
            _ => load!(a, out, hint),
        };
        res.map_err(|(k, v)| {
            self.bad_row(
                self.row + k as u64,
                format!(
                    "{name} = {v} does not fit the column's type (UInt{bits}); re-write the trace with values in range"
                ),
            )
        })
    }

    fn validate(&self, out: &[Request]) -> Result<(), TraceError> {
        let cap = self.meta.capacity_pages.unwrap_or(MAX_PAGES);
        // Fast check over the whole batch first; locate the culprit only when something is off.
        let mut prev = self.last_ts;
        let ok = out.iter().all(|r| {
            let in_order = r.ts_ns >= prev;
            prev = r.ts_ns;
            in_order
                && r.meta <= MAX_META
                && r.hint <= MAX_HINT
                && self.classes.allows(r.file_class)
                && r.op <= 3
                && (r.op == Op::Flush as u8
                    || (r.pages > 0 && r.lpn <= cap && r.pages as u64 <= cap - r.lpn))
        });
        if ok {
            return Ok(());
        }
        let mut prev = self.last_ts;
        for (k, r) in out.iter().enumerate() {
            let row = self.row + k as u64;
            if let Some(what) = row_fields_error(r, prev) {
                return Err(self.bad_row(row, format!("{what}; fix the importer or the trace")));
            }
            if let Some(what) = self.classes.error(r.file_class, &self.meta) {
                return Err(self.bad_row(row, what));
            }
            prev = r.ts_ns;
            let Some(op) = Op::from_u8(r.op) else {
                return Err(self.bad_row(
                    row,
                    format!(
                        "op {} is not 0 (write), 1 (trim), 2 (read) or 3 (flush); fix the importer or the trace",
                        r.op
                    ),
                ));
            };
            if op == Op::Flush {
                continue;
            }
            if r.pages == 0 {
                return Err(self.bad_row(
                    row,
                    format!(
                        "pages is 0 for a {}; every write, trim or read covers at least 1 page; fix the importer or the trace",
                        ["write", "trim", "read"][r.op as usize]
                    ),
                ));
            }
            if r.lpn > cap || r.pages as u64 > cap - r.lpn {
                let what = match self.meta.capacity_pages {
                    Some(c) => format!(
                        "lpn {} + {} pages is beyond the trace capacity ({c} pages); re-generate the trace or fix pcstream.capacity_pages",
                        r.lpn, r.pages
                    ),
                    None => format!(
                        "lpn {} + {} pages is beyond the limit of {MAX_PAGES} pages (2^40, 4 PiB); fix the importer or the trace",
                        r.lpn, r.pages
                    ),
                };
                return Err(self.bad_row(row, what));
            }
        }
        Ok(())
    }

    /// The aged rows (`pcstream.aged_rows`) in `out`: all writes, and their pages, once all are
    /// read, the `pcstream.aged_pages` the footer gives.
    fn check_aged_rows(&mut self, out: &[Request]) -> Result<(), TraceError> {
        let Some(aged) = self.meta.aged.filter(|a| self.row < a.rows) else {
            return Ok(());
        };
        let n = (aged.rows - self.row).min(out.len() as u64) as usize;
        for (k, r) in out[..n].iter().enumerate() {
            if r.op != Op::Write as u8 {
                return Err(self.bad_row(
                    self.row + k as u64,
                    format!(
                        "op {} in the aged state (the first {} rows, pcstream.aged_rows), which holds writes only; re-map the trace",
                        r.op, aged.rows
                    ),
                ));
            }
            self.aged_pages += u64::from(r.pages);
        }
        if self.row + n as u64 == aged.rows && self.aged_pages != aged.pages {
            return Err(TraceError::BadMeta {
                path: self.label.clone(),
                key: KEY_AGED_PAGES.into(),
                why: format!(
                    "says {} pages but the {} aged rows write {}; re-map the trace",
                    aged.pages, aged.rows, self.aged_pages
                ),
            });
        }
        Ok(())
    }

    /// Decode on a background thread, up to `depth` batches ahead of the consumer.
    pub fn into_prefetch(mut self, depth: usize) -> Prefetch {
        let depth = depth.max(1);
        let label = self.label.clone();
        let (tx, rx) = sync_channel::<Result<Vec<Request>, TraceError>>(depth);
        let (back_tx, back_rx) = sync_channel::<Vec<Request>>(depth + 2);
        let handle = std::thread::Builder::new()
            .name("pcstream-decode".into())
            .spawn(move || loop {
                // Reuse a Vec the consumer handed back, if any: no allocation in steady state.
                let mut buf = back_rx.try_recv().unwrap_or_default();
                match self.next_batch(&mut buf) {
                    Ok(true) => {
                        if tx.send(Ok(buf)).is_err() {
                            return; // consumer gone
                        }
                    }
                    Ok(false) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            })
            .expect("spawning the decoding thread");
        Prefetch {
            rx: Some(rx),
            back: back_tx,
            handle: Some(handle),
            label,
            done: false,
        }
    }
}

/// Batches decoded ahead on a background thread (see [`BlockTraceReader::into_prefetch`]).
pub struct Prefetch {
    rx: Option<Receiver<Result<Vec<Request>, TraceError>>>,
    back: SyncSender<Vec<Request>>,
    handle: Option<JoinHandle<()>>,
    label: String,
    done: bool,
}

impl Prefetch {
    /// The next batch, an error (after which the stream ends), or `None` at the end of the trace.
    pub fn next_batch(&mut self) -> Option<Result<Vec<Request>, TraceError>> {
        if self.done {
            return None;
        }
        match self.rx.as_ref()?.recv() {
            Ok(Ok(b)) => Some(Ok(b)),
            Ok(Err(e)) => {
                self.done = true;
                Some(Err(e))
            }
            Err(_) => {
                // Sender gone: normal end, unless the thread died; never report a crash as EOF.
                self.done = true;
                let panicked = self.handle.take().is_some_and(|h| h.join().is_err());
                panicked.then(|| {
                    Err(TraceError::Io {
                        path: self.label.clone(),
                        why: "the decoding thread panicked; this is a bug in pcstream, please report it".into(),
                    })
                })
            }
        }
    }

    /// Hand a consumed batch back so the decoder can refill it instead of allocating.
    pub fn recycle(&mut self, v: Vec<Request>) {
        let _ = self.back.try_send(v);
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        // Dropping the receiver unblocks a decoder waiting to send; then wait for it.
        self.rx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Refuse aged-state keys that cannot describe the trace's `rows`: more aged rows than rows,
/// fewer aged pages than aged rows (each is a write of at least a page), or pages without rows.
fn check_aged(label: &str, meta: &TraceMeta, rows: u64) -> Result<(), TraceError> {
    let Some(a) = meta.aged else { return Ok(()) };
    let (key, why) = if a.rows > rows {
        (
            KEY_AGED_ROWS,
            format!("says {} aged rows but the trace has {rows} rows", a.rows),
        )
    } else if a.pages < a.rows || (a.rows == 0 && a.pages > 0) {
        (
            KEY_AGED_PAGES,
            format!(
                "{} pages cannot be the aged state of {} rows (each is a write of at least a page)",
                a.pages, a.rows
            ),
        )
    } else if meta.capacity_pages.is_some_and(|c| a.pages > c) {
        (
            KEY_AGED_PAGES,
            format!("{} aged pages exceed the trace's capacity", a.pages),
        )
    } else {
        return Ok(());
    };
    Err(TraceError::BadMeta {
        path: label.to_string(),
        key: key.into(),
        why: format!("{why}; re-map the trace or remove the pcstream.aged_* keys"),
    })
}

/// max(lpn + pages) over every row of the trace, streaming; the capacity of traces without
/// `pcstream.capacity_pages`.
pub fn scan_capacity(path: &Path) -> Result<u64, TraceError> {
    let mut r = BlockTraceReader::open(path)?;
    let mut buf = Vec::new();
    let mut cap = 0u64;
    while r.next_batch(&mut buf)? {
        for q in &buf {
            cap = cap.max(q.lpn + q.pages as u64); // no overflow: validated
        }
    }
    Ok(cap)
}
