//! The record stage, after the program ran: the per-process logs the shim (`shim/`) left
//! (one file's `.bin` layout: [`shimbin`]) are indexed ([`shimlog`]), merged in time order
//! without being held in memory ([`merge`]), converted into file-level events and written as a
//! file-level trace ([`convert`]), with runs of small writes of one PC folded into one row each
//! ([`coalesce`]). [`synth`] writes synthetic logs for tests and benchmarks.

pub mod coalesce;
pub mod convert;
pub mod merge;
pub mod refused_hints;
pub mod shimbin;
pub mod shimlog;
pub mod synth;

pub use convert::{write_file_trace, write_file_trace_as, FileTraceSummary};
