//! Block-trace writer: all ten columns as unsigned integers, zstd, fixed metadata keys.
//! Writes to a temporary file renamed on `finish`, so no partial trace is ever left behind.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt16Array, UInt32Array, UInt64Array, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use pcstream_core::request::Request;

use crate::error::{one_line, TraceError};
use crate::format::{TraceMeta, COLUMNS};

pub const DEFAULT_ROW_GROUP_ROWS: usize = 1 << 20;

pub struct BlockTraceWriter {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<ArrowWriter<File>>,
    schema: Arc<Schema>,
    buf: Vec<Request>,
    batch_rows: usize,
    pub rows: u64,
}

fn dtype(bits: u8) -> DataType {
    match bits {
        8 => DataType::UInt8,
        16 => DataType::UInt16,
        32 => DataType::UInt32,
        _ => DataType::UInt64,
    }
}

impl BlockTraceWriter {
    pub fn create(
        path: &Path,
        meta: &TraceMeta,
        row_group_rows: usize,
    ) -> Result<BlockTraceWriter, TraceError> {
        let label = path.display().to_string();
        let io = |e: &dyn std::fmt::Display| TraceError::Io {
            path: label.clone(),
            why: format!(
                "cannot write ({}); check the directory exists and is writable",
                one_line(e)
            ),
        };
        let tmp = path.with_file_name(format!(
            "{}.tmp-{}",
            path.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
            std::process::id()
        ));
        let file = File::create(&tmp).map_err(|e| io(&e))?;
        let schema = Arc::new(Schema::new(
            COLUMNS
                .iter()
                .map(|(n, b)| Field::new(*n, dtype(*b), false))
                .collect::<Vec<_>>(),
        ));
        let kv = meta
            .to_pairs()
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, v))
            .collect();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(3).expect("zstd level 3 exists"),
            ))
            .set_max_row_group_size(row_group_rows.max(1))
            .set_key_value_metadata(Some(kv))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(&e)
        })?;
        Ok(BlockTraceWriter {
            path: path.to_path_buf(),
            tmp,
            writer: Some(writer),
            schema,
            buf: Vec::with_capacity(65_536),
            batch_rows: 65_536.min(row_group_rows.max(1)),
            rows: 0,
        })
    }

    pub fn push(&mut self, r: &Request) -> Result<(), TraceError> {
        self.buf.push(*r);
        self.rows += 1;
        if self.buf.len() >= self.batch_rows {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let b = &self.buf;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from_iter_values(b.iter().map(|r| r.ts_ns))),
            Arc::new(UInt8Array::from_iter_values(b.iter().map(|r| r.op))),
            Arc::new(UInt64Array::from_iter_values(b.iter().map(|r| r.lpn))),
            Arc::new(UInt32Array::from_iter_values(b.iter().map(|r| r.pages))),
            Arc::new(UInt64Array::from_iter_values(b.iter().map(|r| r.pc))),
            Arc::new(UInt32Array::from_iter_values(b.iter().map(|r| r.file))),
            Arc::new(UInt16Array::from_iter_values(
                b.iter().map(|r| r.file_class),
            )),
            Arc::new(UInt8Array::from_iter_values(b.iter().map(|r| r.meta))),
            Arc::new(UInt32Array::from_iter_values(b.iter().map(|r| r.pid))),
            Arc::new(UInt8Array::from_iter_values(b.iter().map(|r| r.hint))),
        ];
        let batch =
            RecordBatch::try_new(self.schema.clone(), cols).expect("columns match the schema");
        let label = self.path.display().to_string();
        self.writer
            .as_mut()
            .expect("writer open until finish")
            .write(&batch)
            .map_err(|e| TraceError::Io {
                path: label,
                why: format!("write failed ({})", one_line(e)),
            })?;
        self.buf.clear();
        Ok(())
    }

    /// Flush, close and move the trace into place.
    pub fn finish(mut self) -> Result<u64, TraceError> {
        self.flush()?;
        let label = self.path.display().to_string();
        let w = self.writer.take().expect("writer open until finish");
        w.close().map_err(|e| TraceError::Io {
            path: label.clone(),
            why: format!("closing failed ({})", one_line(e)),
        })?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| TraceError::Io {
            path: label,
            why: format!(
                "cannot move the finished trace into place ({})",
                one_line(e)
            ),
        })?;
        Ok(self.rows)
    }
}

impl Drop for BlockTraceWriter {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
