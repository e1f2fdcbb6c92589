//! Block-level traces, the simulator's input: one row per request (docs/FORMATS.md). [`format`]
//! holds the columns and footer keys, [`reader`] streams a file (with a prefetching thread for the
//! simulator), [`writer`] writes one atomically, [`info`] summarises one, and `rowgroups` maps a
//! global row index to its row group for error messages (shared with the file-trace reader).

mod footer;
pub mod format;
pub mod info;
mod pages;
pub mod reader;
pub(crate) mod rowgroups;
mod thrift;
pub mod writer;

pub use format::{AgedRows, TraceMeta, PAGE_BYTES};
pub use info::summarize;
pub use reader::{scan_capacity, BlockTraceReader, Prefetch};
pub use writer::{BlockTraceWriter, DEFAULT_ROW_GROUP_ROWS};
