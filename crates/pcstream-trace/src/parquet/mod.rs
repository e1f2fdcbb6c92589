//! The Parquet layer under both trace formats ([`crate::blocktrace`], [`crate::filetrace`]):
//! what reading and writing a trace file needs whatever its columns.
//!
//! - [`keys`]: the footer keys of both formats, defined once.
//! - `input`: opening a file for a reader: one-line errors, the strict checks of the footer
//!   (`footer`) and of every page header (`pages`), both walking Thrift bytes as the decoder
//!   reads them (`thrift`), and the footer's key-value pairs.
//! - `rowgroups`: a global row index to its row group, for error messages.
//! - `output`: the atomic writer (temporary file, footer, rename; removed when unfinished),
//!   with `checksum`: the CRC32 of every page in its header, which the writer leaves out.
//! - [`rewrite`]: one footer value of a trace replaced, rows and other pairs kept.
//!
//! Inside this module the `parquet` crate is spelled `::parquet`.

pub mod checksum;
mod footer;
mod input;
pub mod keys;
mod output;
mod pages;
pub mod rewrite;
mod rowgroups;
mod thrift;

pub(crate) use input::{builder, duplicate_column, footer_pairs, is_integer, open_input};
pub(crate) use output::{temp_path, AtomicWriter};
pub(crate) use rowgroups::RowGroups;
