//! Writing file-level traces: the column schema and [`FileTraceWriter`], which encodes events in
//! time order, a chunk at a time, with their footer (the block-trace keys plus `pcstream.paths`,
//! written last) into Parquet, atomically (a temporary file renamed at the end). [`write_rows`]
//! writes a slice of rows; [`write_events`] writes hand-made events (tests, benchmarks,
//! synthetic inputs); the record stage streams converted shim logs through the writer.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::{FileEvent, KEY_PATHS};
use crate::blocktrace::TraceMeta;
use crate::error::TraceError;
use crate::parquet::AtomicWriter;

/// Rows handed to the Parquet encoder at a time.
pub const WRITE_CHUNK_ROWS: usize = 64 * 1024;
/// Rows per row group: bounds what the encoder holds before it writes a group out.
pub const ROW_GROUP_ROWS: usize = 256 * 1024;

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

/// Writes one file-level trace, rows pushed one at a time (in time order) and encoded in chunks
/// of [`WRITE_CHUNK_ROWS`]; the footer (`meta` and the path table, known only at the end) is
/// written by [`finish`](Self::finish). The file is written atomically (`crate::parquet`'s
/// writer): it appears at `PATH` only when `finish` succeeds, and is removed when dropped
/// unfinished.
pub struct FileTraceWriter {
    out: AtomicWriter,
    buf: Vec<FileEvent>,
    rows: u64,
}

impl FileTraceWriter {
    /// Start writing `out`.
    pub fn create(out: &Path) -> Result<FileTraceWriter, TraceError> {
        let schema = Arc::new(Schema::new(
            FILE_COLUMNS
                .iter()
                .map(|(n, t)| Field::new(*n, t.clone(), false))
                .collect::<Vec<_>>(),
        ));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(3).expect("zstd level 3 exists"),
            ))
            .set_dictionary_enabled(true)
            // Time stamps and offsets rarely repeat: a dictionary would only cost hashing.
            .set_column_dictionary_enabled(ColumnPath::from("ts_ns"), false)
            .set_column_dictionary_enabled(ColumnPath::from("offset"), false)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        Ok(FileTraceWriter {
            out: AtomicWriter::create(out, schema, props)?,
            buf: Vec::with_capacity(WRITE_CHUNK_ROWS),
            rows: 0,
        })
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Append one row.
    pub fn push(&mut self, row: FileEvent) -> Result<(), TraceError> {
        self.buf.push(row);
        self.rows += 1;
        if self.buf.len() >= WRITE_CHUNK_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        let batch = batch_of(self.out.schema(), &self.buf);
        self.out.write(&batch)?;
        self.buf.clear();
        Ok(())
    }

    /// Write the last rows and the footer: `meta`'s pairs and `pcstream.paths` = `paths`; move
    /// the trace into place. Returns the number of rows.
    pub fn finish(
        self,
        meta: &TraceMeta,
        paths: &BTreeMap<u32, String>,
    ) -> Result<u64, TraceError> {
        self.finish_with(meta, paths, Vec::new())
    }

    /// [`Self::finish`] with more footer pairs of the file-level format (`pcstream.capture`).
    pub fn finish_with(
        mut self,
        meta: &TraceMeta,
        paths: &BTreeMap<u32, String>,
        extra: Vec<(String, String)>,
    ) -> Result<u64, TraceError> {
        if !self.buf.is_empty() || self.rows == 0 {
            self.flush()?;
        }
        let mut pairs = meta.to_pairs();
        pairs.push((
            KEY_PATHS.to_string(),
            serde_json::to_string(paths).expect("a string map serialises"),
        ));
        pairs.extend(extra);
        self.out.finish(pairs)?;
        Ok(self.rows)
    }
}

/// Write `rows` (already in time order) with the footer pairs `meta` + `pcstream.paths` =
/// `paths` to `out`, atomically (a temporary file renamed at the end).
pub fn write_rows(
    out: &Path,
    rows: &[FileEvent],
    meta: &TraceMeta,
    paths: &BTreeMap<u32, String>,
) -> Result<(), TraceError> {
    let mut w = FileTraceWriter::create(out)?;
    for r in rows {
        w.push(*r)?;
    }
    w.finish(meta, paths).map(|_| ())
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
