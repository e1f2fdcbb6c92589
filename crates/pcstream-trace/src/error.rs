//! Trace errors. Every message is one line: the file, the row group and row where known, what is
//! wrong and what to do.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TraceError {
    #[error("{path}: no such file; check the path")]
    Missing { path: String },
    #[error("{path}: not a readable Parquet file ({why}); was it fully written?")]
    NotParquet { path: String, why: String },
    #[error("{path}: required column '{column}' is missing; a block trace needs lpn, pages and op (see docs/FORMAT.md)")]
    MissingColumn { path: String, column: String },
    #[error("{path}: column '{column}' has type {found}, expected an unsigned integer ({expected}); re-write the trace with integer columns")]
    WrongType {
        path: String,
        column: String,
        found: String,
        expected: String,
    },
    #[error("{path}: row group {group}, row {row}: {what}")]
    BadRow {
        path: String,
        group: usize,
        row: u64,
        what: String,
    },
    #[error("{path}: metadata key {key}: {why}")]
    BadMeta {
        path: String,
        key: String,
        why: String,
    },
    #[error("{path}: {why}")]
    Io { path: String, why: String },
    #[error("{0}")]
    Gen(String),
}

pub(crate) fn one_line(s: impl std::fmt::Display) -> String {
    s.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
