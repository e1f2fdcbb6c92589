//! File-level traces: what programs asked of the file system, one row per call (the output of
//! the record stage, the input of the map stage). The columns and footer are in docs/FORMATS.md:
//! `ts_ns u64, pid u32, tid u32, op string, fd i32, dev u64, ino u64, offset u64, len u64, pc u64,
//! flags u32, path u32, path2 u32`; the footer holds the block-trace keys plus `pcstream.paths`
//! (JSON id → path; ids from 1, 0 = none). Rows of all processes are ordered by time (then pid,
//! tid, log order).
//!
//! [`event`] is the in-memory row and [`flags`] the bits of its `flags` column, [`reader`] streams a file back into events, [`writer`] encodes
//! events, [`info`] summarises a file (`pcstream info`).

pub mod event;
pub mod flags;
pub mod info;
pub mod reader;
pub mod writer;

pub use crate::parquet::keys::{KEY_CAPTURE, KEY_PATHS};
pub use event::{FileEvent, FileOp};
pub use reader::FileTraceReader;
pub use writer::{write_events, write_rows, FileTraceWriter, FILE_COLUMNS};
