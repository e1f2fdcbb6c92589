//! Opening a Parquet file for either trace reader: the input file with one-line errors, the
//! strict footer and page-header checks before the decoder reads anything, and the footer's
//! key-value pairs, read in one place.

use std::fs::File;
use std::path::Path;

use ::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use ::parquet::file::metadata::ParquetMetaData;
use arrow_schema::DataType;

use super::pages::ReadAt;
use crate::error::{one_line, TraceError};
use crate::guard::contain;

/// Open a trace file with one-line errors: missing, unreadable, or not a regular file (a FIFO is
/// refused without blocking; see [`crate::input_file`]).
pub(crate) fn open_input(path: &Path) -> Result<File, TraceError> {
    crate::input_file::open_regular(path, "trace file")
}

/// Read the footer of `src` (a file, or bytes in memory) into a reader builder; a corrupt
/// footer or page header is [`TraceError::NotParquet`], also when the decoder panics on it.
pub(crate) fn builder<T: ReadAt + 'static>(
    label: &str,
    src: T,
) -> Result<ParquetRecordBatchReaderBuilder<T>, TraceError> {
    let not_parquet = |why: String| TraceError::NotParquet {
        path: label.to_string(),
        why,
    };
    super::footer::check_footer(&src).map_err(not_parquet)?;
    let meta = contain(|| ArrowReaderMetadata::load(&src, ArrowReaderOptions::new()))
        .map_err(not_parquet)?
        .map_err(|e| not_parquet(one_line(e)))?;
    super::pages::check_pages(&src, meta.metadata()).map_err(not_parquet)?;
    Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(
        src, meta,
    ))
}

/// The footer's key-value pairs, in file order (a key without a value is `None`).
pub(crate) fn footer_pairs(md: &ParquetMetaData) -> Vec<(String, Option<String>)> {
    md.file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|k| (k.key.clone(), k.value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The first column name `schema` has twice: a reader would silently take one of the two.
pub(crate) fn duplicate_column(schema: &arrow_schema::Schema) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .find(|n| !seen.insert(*n))
}

/// Integer Arrow types the readers convert (value by value, checked) to the column's width.
pub(crate) fn is_integer(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
    )
}
