//! pcstream-trace: everything between a program and the engine, by pipeline stage.
//!
//! - [`record`]: the shim's per-process logs → a file-level trace (after `pcstream record` ran
//!   the program under `shim/`).
//! - [`filetrace`]: the file-level trace format (events, reader, writer).
//! - [`map`]: the ext4 model that turns a file-level trace into the block trace the device sees.
//! - [`import`]: block traces from the field (blkparse, MSR, Alibaba, Tencent, fio, MQSim).
//! - [`gen`]: seeded synthetic block traces.
//! - [`blocktrace`]: the block-trace format (reader, writer, summaries), the simulator's input.
//! - [`parquet`]: the Parquet layer under both trace formats (checks before decoding, footer
//!   keys and pairs, atomic writing).
//! - [`input_file`]: every input file opened by its type, small text files read with a cap.
//! - [`pc_files`]: a trace's footer pairs and what each PC writes to each file (the PC labels).
//! - [`pc_labels`]: the labels that tell a trace's PCs apart by the frames of their call paths.
//! - [`replay`]: drives a block trace through the engine (`pcstream-core`); [`bench`] times it.
//! - [`cancel`]: the request to stop long work (a signal), and the outputs finished before it.

pub mod bench;
pub mod blocktrace;
pub mod cancel;
pub mod error;
pub mod filetrace;
#[doc(hidden)]
pub mod fuzzing;
pub mod gen;
pub mod guard;
pub mod import;
pub mod input_file;
pub mod map;
pub mod meminfo;
pub mod parquet;
pub mod pc_files;
pub mod pc_labels;
pub mod record;
pub mod replay;

pub use blocktrace::{
    scan_capacity, summarize, summarize_labelled, BlockTraceReader, BlockTraceWriter, Prefetch,
    TraceMeta,
};
pub use error::TraceError;
pub use gen::{generate, generate_to_file, GenError, GenParams, MixSpec, SstAlloc};
pub use map::{map_file_trace, FsModel, MapOptions, MapSummary};
pub use replay::{run_trace, RunError};
