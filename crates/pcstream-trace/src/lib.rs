//! pcstream-trace: the block-trace Parquet format (read streaming, written atomically), trace
//! summaries, seeded synthetic workload generators, and the driver that streams a trace file
//! through the simulator.

pub mod coalesce;
pub mod error;
pub mod filetrace;
pub mod filetrace_reader;
pub mod format;
pub mod fsmodel;
pub mod gen;
pub mod import;
pub mod info;
pub mod reader;
mod rowgroups;
pub mod run;
pub mod shimlog;
pub mod writer;

pub use error::TraceError;
pub use format::TraceMeta;
pub use fsmodel::{map_file_trace, FsModel, MapOptions, MapSummary};
pub use gen::{generate, generate_to_file, GenError, GenParams, MixSpec};
pub use info::summarize;
pub use reader::{scan_capacity, BlockTraceReader, Prefetch};
pub use run::{run_trace, RunError};
pub use writer::BlockTraceWriter;
