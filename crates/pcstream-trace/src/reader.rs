//! Streaming block-trace reader: one bounded batch at a time, every row validated, memory
//! independent of the trace length. `Prefetch` decodes on a second thread so the simulator's
//! loop never waits for Parquet decoding.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use pcstream_core::request::{Op, Request};

use crate::error::{one_line, TraceError};
use crate::format::{TraceMeta, COLUMNS, REQUIRED};

/// Rows per decoded batch (bounds memory whatever the row-group size).
pub const BATCH_ROWS: usize = 65_536;

pub struct BlockTraceReader {
    path: PathBuf,
    label: String,
    meta: TraceMeta,
    rows: u64,
    group_rows: Vec<u64>,
    /// Column index in the file of each of `COLUMNS` (None: absent, reads as 0).
    cols: [Option<usize>; 10],
    inner: ParquetRecordBatchReader,
    row: u64,
}

fn open_builder(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, TraceError> {
    let label = path.display().to_string();
    let f = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => TraceError::Missing {
            path: label.clone(),
        },
        _ => TraceError::Io {
            path: label.clone(),
            why: one_line(e),
        },
    })?;
    if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(TraceError::Io {
            path: label,
            why: "is a directory, not a trace file".into(),
        });
    }
    ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| TraceError::NotParquet {
        path: label,
        why: one_line(e),
    })
}

fn width(dt: &DataType) -> Option<(bool, u8)> {
    Some(match dt {
        DataType::UInt8 => (false, 8),
        DataType::UInt16 => (false, 16),
        DataType::UInt32 => (false, 32),
        DataType::UInt64 => (false, 64),
        DataType::Int8 => (true, 8),
        DataType::Int16 => (true, 16),
        DataType::Int32 => (true, 32),
        DataType::Int64 => (true, 64),
        _ => return None,
    })
}

impl BlockTraceReader {
    pub fn open(path: &Path) -> Result<BlockTraceReader, TraceError> {
        let label = path.display().to_string();
        let b = open_builder(path)?;
        let md = b.metadata().clone();
        let pairs: Vec<(String, Option<String>)> = md
            .file_metadata()
            .key_value_metadata()
            .map(|kv| {
                kv.iter()
                    .map(|k| (k.key.clone(), k.value.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let meta = TraceMeta::from_pairs(&label, &pairs)?;
        let schema = b.schema().clone();
        let mut cols = [None; 10];
        for (i, (name, bits)) in COLUMNS.iter().enumerate() {
            if let Some((idx, field)) = schema.column_with_name(name) {
                match width(field.data_type()) {
                    Some(_) => cols[i] = Some(idx),
                    None => {
                        return Err(TraceError::WrongType {
                            path: label,
                            column: name.to_string(),
                            found: format!("{}", field.data_type()),
                            expected: format!("UInt{bits}"),
                        })
                    }
                }
            } else if REQUIRED.contains(name) {
                return Err(TraceError::MissingColumn {
                    path: label,
                    column: name.to_string(),
                });
            }
        }
        let group_rows: Vec<u64> = md
            .row_groups()
            .iter()
            .map(|g| g.num_rows() as u64)
            .collect();
        let rows = group_rows.iter().sum();
        let inner = b
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| TraceError::NotParquet {
                path: label.clone(),
                why: one_line(e),
            })?;
        Ok(BlockTraceReader {
            path: path.to_path_buf(),
            label,
            meta,
            rows,
            group_rows,
            cols,
            inner,
            row: 0,
        })
    }

    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }
    pub fn num_rows(&self) -> u64 {
        self.rows
    }
    pub fn num_row_groups(&self) -> usize {
        self.group_rows.len()
    }
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// (row group, row within it) of the global row index `row`.
    fn locate(&self, row: u64) -> (usize, u64) {
        let mut r = row;
        for (g, &n) in self.group_rows.iter().enumerate() {
            if r < n {
                return (g, r);
            }
            r -= n;
        }
        (self.group_rows.len().saturating_sub(1), r)
    }

    fn bad_row(&self, row: u64, what: String) -> TraceError {
        let (group, r) = self.locate(row);
        TraceError::BadRow {
            path: self.label.clone(),
            group,
            row: r,
            what,
        }
    }

    /// Clear `out` and fill it with the next batch; `false` at the end of the trace.
    pub fn next_batch(&mut self, out: &mut Vec<Request>) -> Result<bool, TraceError> {
        out.clear();
        let batch = match self.inner.next() {
            None => return Ok(false),
            Some(Err(e)) => {
                let (g, _) = self.locate(self.row);
                return Err(TraceError::NotParquet {
                    path: self.label.clone(),
                    why: format!("row group {g}: {}", one_line(e)),
                });
            }
            Some(Ok(b)) => b,
        };
        out.resize(batch.num_rows(), Request::default());
        for (i, c) in self.cols.iter().enumerate() {
            if let Some(idx) = c {
                self.fill(&batch, *idx, i, out)?;
            }
        }
        let cap = self.meta.capacity_pages;
        for (k, r) in out.iter().enumerate() {
            let row = self.row + k as u64;
            let Some(op) = Op::from_u8(r.op) else {
                return Err(self.bad_row(
                    row,
                    format!(
                        "op {} is not 0 (write), 1 (trim), 2 (read) or 3 (flush)",
                        r.op
                    ),
                ));
            };
            if op != Op::Flush {
                if r.pages == 0 {
                    return Err(self.bad_row(
                        row,
                        "pages is 0; every write, trim or read covers ≥ 1 page".into(),
                    ));
                }
                if let Some(cap) = cap {
                    if r.lpn.checked_add(r.pages as u64).is_none_or(|e| e > cap) {
                        return Err(self.bad_row(
                            row,
                            format!(
                                "lpn {} + {} pages is beyond the trace capacity ({cap} pages); fix pcstream.capacity_pages or the trace",
                                r.lpn, r.pages
                            ),
                        ));
                    }
                }
            }
        }
        self.row += out.len() as u64;
        Ok(true)
    }

    /// Copy column `idx` of `batch` into field `field` (index into `COLUMNS`) of `out`.
    fn fill(
        &self,
        batch: &RecordBatch,
        idx: usize,
        field: usize,
        out: &mut [Request],
    ) -> Result<(), TraceError> {
        let a = batch.column(idx);
        let (name, bits) = COLUMNS[field];
        let max = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        macro_rules! each {
            ($t:ty, $conv:expr) => {{
                let arr = a.as_primitive::<$t>();
                if arr.null_count() > 0 {
                    let k = (0..arr.len()).find(|&k| arr.is_null(k)).unwrap_or(0);
                    return Err(self.bad_row(
                        self.row + k as u64,
                        format!("column {name} is null; every row needs a value"),
                    ));
                }
                for (k, (r, &v)) in out.iter_mut().zip(arr.values().iter()).enumerate() {
                    let v: i128 = $conv(v);
                    if v < 0 || v as u128 > max as u128 {
                        return Err(self.bad_row(
                            self.row + k as u64,
                            format!("{name} = {v} does not fit in {bits} unsigned bits"),
                        ));
                    }
                    set(r, field, v as u64);
                }
            }};
        }
        match a.data_type() {
            DataType::UInt8 => each!(UInt8Type, |v: u8| v as i128),
            DataType::UInt16 => each!(UInt16Type, |v: u16| v as i128),
            DataType::UInt32 => each!(UInt32Type, |v: u32| v as i128),
            DataType::UInt64 => each!(UInt64Type, |v: u64| v as i128),
            DataType::Int8 => each!(Int8Type, |v: i8| v as i128),
            DataType::Int16 => each!(Int16Type, |v: i16| v as i128),
            DataType::Int32 => each!(Int32Type, |v: i32| v as i128),
            DataType::Int64 => each!(Int64Type, |v: i64| v as i128),
            other => {
                return Err(TraceError::WrongType {
                    path: self.label.clone(),
                    column: name.into(),
                    found: other.to_string(),
                    expected: format!("UInt{bits}"),
                })
            }
        }
        Ok(())
    }

    /// Decode on a background thread, `depth` batches ahead.
    pub fn into_prefetch(mut self, depth: usize) -> Prefetch {
        let (tx, rx) = sync_channel::<Result<Vec<Request>, TraceError>>(depth.max(1));
        let (back_tx, back_rx) = sync_channel::<Vec<Request>>(depth.max(1) + 2);
        let handle = std::thread::spawn(move || loop {
            let mut buf = back_rx.try_recv().unwrap_or_default();
            match self.next_batch(&mut buf) {
                Ok(true) => {
                    if tx.send(Ok(buf)).is_err() {
                        return;
                    }
                }
                Ok(false) => return,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        });
        Prefetch {
            rx,
            back: back_tx,
            _handle: handle,
        }
    }
}

#[inline]
fn set(r: &mut Request, field: usize, v: u64) {
    match field {
        0 => r.ts_ns = v,
        1 => r.op = v as u8,
        2 => r.lpn = v,
        3 => r.pages = v as u32,
        4 => r.pc = v,
        5 => r.file = v as u32,
        6 => r.file_class = v as u16,
        7 => r.meta = v as u8,
        8 => r.pid = v as u32,
        _ => r.hint = v as u8,
    }
}

/// Batches decoded ahead on a background thread.
pub struct Prefetch {
    rx: Receiver<Result<Vec<Request>, TraceError>>,
    back: SyncSender<Vec<Request>>,
    _handle: std::thread::JoinHandle<()>,
}

impl Prefetch {
    pub fn next_batch(&mut self) -> Option<Result<Vec<Request>, TraceError>> {
        self.rx.recv().ok()
    }
    /// Hand a consumed batch back for reuse (no allocation in steady state).
    pub fn recycle(&mut self, v: Vec<Request>) {
        let _ = self.back.try_send(v);
    }
}

/// max(lpn + pages) over the trace, for traces without `pcstream.capacity_pages`.
pub fn scan_capacity(path: &Path) -> Result<u64, TraceError> {
    let mut r = BlockTraceReader::open(path)?;
    let mut buf = Vec::new();
    let mut cap = 0u64;
    while r.next_batch(&mut buf)? {
        for q in &buf {
            cap = cap.max(q.lpn.saturating_add(q.pages as u64));
        }
    }
    Ok(cap)
}
