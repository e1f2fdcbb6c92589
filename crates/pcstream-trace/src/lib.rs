//! pcstream-trace: the block-trace Parquet format (read streaming, write atomically), trace
//! summaries, and seeded synthetic workload generators.

pub mod error;
pub mod format;
pub mod gen;
pub mod info;
pub mod reader;
pub mod run;
pub mod writer;

pub use error::TraceError;
pub use format::TraceMeta;
pub use gen::{generate, generate_to_file, GenParams, MixSpec};
pub use info::summarize;
pub use reader::{scan_capacity, BlockTraceReader, Prefetch};
pub use run::{run_trace, RunError};
pub use writer::BlockTraceWriter;
