//! Block-level traces, the simulator's input: one row per request (docs/FORMATS.md). [`format`]
//! holds the columns and the footer metadata, [`reader`] streams a file (with a prefetching
//! thread for the simulator), [`writer`] writes one atomically, [`info`] summarises one. The
//! Parquet plumbing under them is [`crate::parquet`]'s.

pub mod format;
pub mod info;
pub mod reader;
pub mod writer;

pub use format::{AgedRows, TraceMeta, PAGE_BYTES};
pub use info::{summarize, summarize_labelled};
pub use reader::{scan_capacity, BlockTraceReader, Prefetch};
pub use writer::{BlockTraceWriter, DEFAULT_ROW_GROUP_ROWS};
