//! Trace errors. Every message is a single line that names the file, the row group and row where
//! known, what is wrong and what to do about it, so the CLI can print it as is.

use thiserror::Error;

/// Anything that can go wrong reading, writing, summarising or generating a block trace.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The input path does not exist.
    #[error("{path}: no such file; check the path")]
    Missing { path: String },
    /// Not Parquet, truncated, or a corrupt footer / page (`why` is parquet's reason).
    #[error("{path}: not a readable Parquet file ({why}); was it fully written?")]
    NotParquet { path: String, why: String },
    /// One of the required columns (lpn, pages, op) is absent.
    #[error("{path}: required column '{column}' is missing; a block trace needs the columns lpn, pages and op")]
    MissingColumn { path: String, column: String },
    /// A column name appears more than once.
    #[error("{path}: column '{column}' appears more than once; a trace names each column once; re-write the file with unique column names")]
    DuplicateColumn { path: String, column: String },
    /// A known column is not an integer column.
    #[error("{path}: column '{column}' has type {found}, expected an integer column ({expected}); re-write the trace with integer columns")]
    WrongType {
        path: String,
        column: String,
        found: String,
        expected: String,
    },
    /// A row breaks the format; `what` says what and what to do. `row` counts within the group.
    #[error("{path}: row group {group}, row {row}: {what}")]
    BadRow {
        path: String,
        group: usize,
        row: u64,
        what: String,
    },
    /// A `pcstream.*` metadata value cannot be used.
    #[error("{path}: metadata key {key}: {why}")]
    BadMeta {
        path: String,
        key: String,
        why: String,
    },
    /// Reading or writing failed (`why` says what and what to do).
    #[error("{path}: {why}")]
    Io { path: String, why: String },
    /// Not enough memory for what the input asks (the message has the figures).
    #[error("{0}")]
    Memory(String),
    /// Bad generator parameters (unknown kind, impossible sizes, malformed mix spec).
    #[error("{0}")]
    Gen(String),
    /// A stop was requested ([`crate::cancel`]) before the work was done; no output was left.
    #[error("interrupted before the output was complete; nothing was written")]
    Interrupted,
}

/// Collapse any message (parquet's, the OS's) onto one line.
pub(crate) fn one_line(s: impl std::fmt::Display) -> String {
    s.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
