//! Writing file-level traces: the column schema and [`write_rows`], which encodes events in time
//! order with their footer (the block-trace keys plus `pcstream.paths`) into Parquet, atomically
//! (a temporary file renamed at the end). [`write_events`] writes hand-made events (tests,
//! benchmarks, synthetic inputs); the record stage writes converted shim logs through
//! [`write_rows`].

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

use super::{FileEvent, KEY_PATHS};
use crate::blocktrace::TraceMeta;
use crate::error::{one_line, TraceError};

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
pub fn write_rows(
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
