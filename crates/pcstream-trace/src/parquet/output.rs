//! Writing a Parquet file atomically, for both trace writers: rows go to `PATH.tmp-<pid>`,
//! [`AtomicWriter::finish`] writes the footer and renames the file onto `PATH`; on any error, or
//! when the writer is dropped unfinished, the temporary file is removed, so a partial trace is
//! never left behind.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::parquet::arrow::arrow_writer::ArrowWriterOptions;
use ::parquet::arrow::{encode_arrow_schema, ArrowWriter, ARROW_SCHEMA_META_KEY};
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::WriterProperties;
use arrow_array::RecordBatch;
use arrow_schema::Schema;

use super::checksum::add_checksums;
use crate::error::{one_line, TraceError};

/// Footer values longer than this (bytes) are not copied into the embedded Arrow schema: the
/// file and PC tables of a long recording reach megabytes (SQLite's journal, one file per
/// transaction), and a second, base64-encoded copy would more than double the trace's size.
/// Readers of those keys take them from the footer's key-value pairs.
const ARROW_SCHEMA_VALUE_LIMIT: usize = 64 * 1024;

/// The temporary file an output `path` is written to before it is renamed into place. Refuses a
/// `path` that exists and is not a regular file (a device node such as /dev/null, a FIFO, a
/// directory): renaming over it would replace the node with a file.
pub(crate) fn temp_path(path: &Path) -> Result<PathBuf, TraceError> {
    let label = path.display().to_string();
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() {
            return Err(TraceError::Io {
                path: label,
                why: "exists and is not a regular file (a device, FIFO or directory); give a file name for the output".into(),
            });
        }
    }
    let name = path
        .file_name()
        .ok_or_else(|| TraceError::Io {
            path: label.clone(),
            why: "the path names no file; give a file name for the output".into(),
        })?
        .to_string_lossy()
        .into_owned();
    Ok(path.with_file_name(format!("{name}.tmp-{}", std::process::id())))
}

/// Write the footer: `pairs` as key-value metadata, and an Arrow schema `schema` carrying the
/// pairs no longer than [`ARROW_SCHEMA_VALUE_LIMIT`] (pyarrow, pandas and polars read a table's
/// metadata from the embedded schema, not from the footer's pairs).
fn append_footer<W: std::io::Write + Send>(
    w: &mut ArrowWriter<W>,
    schema: &Schema,
    pairs: Vec<(String, String)>,
) {
    let small: BTreeMap<String, String> = pairs
        .iter()
        .filter(|(_, v)| v.len() <= ARROW_SCHEMA_VALUE_LIMIT)
        .cloned()
        .collect();
    w.append_key_value_metadata(KeyValue::new(
        ARROW_SCHEMA_META_KEY.to_string(),
        encode_arrow_schema(&schema.clone().with_metadata(small)),
    ));
    for (k, v) in pairs {
        w.append_key_value_metadata(KeyValue::new(k, v));
    }
}

/// One Parquet file being written to its temporary path; see the module documentation.
pub(crate) struct AtomicWriter {
    path: PathBuf,
    label: String,
    tmp: PathBuf,
    /// `Some` until [`finish`](Self::finish): still open on drop means unfinished.
    writer: Option<ArrowWriter<File>>,
    schema: Arc<Schema>,
}

impl AtomicWriter {
    /// Start writing `path` with columns `schema` and writer properties `props`.
    pub(crate) fn create(
        path: &Path,
        schema: Arc<Schema>,
        props: WriterProperties,
    ) -> Result<AtomicWriter, TraceError> {
        let label = path.display().to_string();
        let io = |e: &dyn std::fmt::Display| TraceError::Io {
            path: label.clone(),
            why: format!(
                "cannot write ({}); check that the directory exists and is writable",
                one_line(e)
            ),
        };
        let tmp = temp_path(path)?;
        let file = File::create(&tmp).map_err(|e| io(&e))?;
        // The embedded Arrow schema is written by `finish`, with the footer's keys in its
        // metadata: that is where pyarrow, pandas and polars look, and the keys are known only
        // at the end.
        let options = ArrowWriterOptions::new()
            .with_properties(props)
            .with_skip_arrow_metadata(true);
        let writer =
            ArrowWriter::try_new_with_options(file, schema.clone(), options).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                io(&e)
            })?;
        Ok(AtomicWriter {
            path: path.to_path_buf(),
            label,
            tmp,
            writer: Some(writer),
            schema,
        })
    }

    /// The output path as errors name it.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// The columns every batch must have.
    pub(crate) fn schema(&self) -> &Arc<Schema> {
        &self.schema
    }

    fn fail(&self, what: &str, e: &dyn std::fmt::Display) -> TraceError {
        TraceError::Io {
            path: self.label.clone(),
            why: format!(
                "{what} failed ({}); check free disk space; nothing was written",
                one_line(e)
            ),
        }
    }

    /// Hand `batch` to the encoder.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<(), TraceError> {
        let w = self.writer.as_mut().expect("writer open until finish");
        match w.write(batch) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail("write", &e)),
        }
    }

    /// End the row group being written: the rows handed over so far form one row group.
    pub(crate) fn end_row_group(&mut self) -> Result<(), TraceError> {
        let w = self.writer.as_mut().expect("writer open until finish");
        match w.flush() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail("write", &e)),
        }
    }

    /// Write the footer (`pairs`, in this order) and move the file into place, unless a stop
    /// was requested ([`crate::cancel`]): then the temporary files are removed and the output
    /// left as it was. The pages get their CRC32 checksums on the way ([`super::checksum`]): the
    /// encoder's file is copied to a second temporary file, which is renamed into place. The
    /// request is checked right before the rename and the rename is recorded right after it,
    /// both before the caller runs again; a signal that comes in between finds the output
    /// recorded as kept, so the caller never says "nothing was written" of a file that is in
    /// place.
    pub(crate) fn finish(mut self, pairs: Vec<(String, String)>) -> Result<(), TraceError> {
        let mut w = self.writer.take().expect("writer open until finish");
        append_footer(&mut w, &self.schema, pairs);
        let mut summed = self.tmp.clone().into_os_string();
        summed.push(".crc");
        let summed = PathBuf::from(summed);
        let res = match w.close() {
            Err(e) => Err(self.fail("closing", &e)),
            Ok(_) => add_checksums(&self.tmp, &summed)
                .map_err(|e| self.fail("adding page checksums", &e))
                .and_then(|()| crate::cancel::check())
                .and_then(|()| {
                    std::fs::rename(&summed, &self.path).map_err(|e| self.fail("renaming", &e))
                }),
        };
        let _ = std::fs::remove_file(&self.tmp);
        if res.is_ok() {
            crate::cancel::note_kept(&self.path);
        }
        if res.is_err() {
            let _ = std::fs::remove_file(&summed);
        }
        res
    }
}

impl Drop for AtomicWriter {
    fn drop(&mut self) {
        // Still open: not finished (error or early return); remove the partial output.
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
