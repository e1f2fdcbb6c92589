//! The record stage, after the program ran: the per-process logs the shim (`shim/`) left are
//! parsed ([`shimlog`]), merged in time order into file-level events and written as a file-level
//! trace ([`convert`]), with runs of small writes optionally folded ([`coalesce`]).

pub mod coalesce;
pub mod convert;
pub mod shimlog;

pub use convert::{write_file_trace, FileTraceSummary};
