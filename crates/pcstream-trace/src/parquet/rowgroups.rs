//! Row-group bookkeeping shared by the block- and file-trace readers: where each row group
//! starts, so an error can name the file, row group and row of a global row index.

use ::parquet::file::metadata::ParquetMetaData;

use crate::error::{one_line, TraceError};

pub(crate) struct RowGroups {
    label: String,
    /// First global row of each group, then the total.
    starts: Vec<u64>,
}

impl RowGroups {
    pub(crate) fn new(label: &str, md: &ParquetMetaData) -> RowGroups {
        let mut starts = vec![0u64];
        for g in md.row_groups() {
            let last = *starts.last().expect("non-empty");
            starts.push(last.saturating_add(g.num_rows().max(0) as u64));
        }
        RowGroups {
            label: label.to_string(),
            starts,
        }
    }

    pub(crate) fn rows(&self) -> u64 {
        *self.starts.last().expect("non-empty")
    }

    pub(crate) fn count(&self) -> usize {
        self.starts.len() - 1
    }

    /// (row group, row within it) of the global row index `row`.
    pub(crate) fn locate(&self, row: u64) -> (usize, u64) {
        let g = self
            .starts
            .partition_point(|&s| s <= row)
            .saturating_sub(1)
            .min(self.count().saturating_sub(1));
        (g, row - self.starts[g].min(row))
    }

    /// A one-line error about global row `row`.
    pub(crate) fn bad_row(&self, row: u64, what: String) -> TraceError {
        let (group, row) = self.locate(row);
        TraceError::BadRow {
            path: self.label.clone(),
            group,
            row,
            what,
        }
    }

    /// The decoder failed while reading the group holding global row `row`.
    pub(crate) fn decode_error(&self, row: u64, e: impl std::fmt::Display) -> TraceError {
        let (g, _) = self.locate(row);
        TraceError::NotParquet {
            path: self.label.clone(),
            why: format!("row group {g}: {}", one_line(e)),
        }
    }
}
