//! pcstream-core: the pure engine of pcstream — a page-mapped multi-stream SSD simulator
//! (FTL, garbage collection, TRIM, internal substreams, timing) and the placement policies.
//!
//! No I/O lives here: traces arrive as [`request::Request`] values, results leave as
//! [`metrics::SimResult`]. Parquet, generators and the CLI are in other crates.

pub mod config;
pub mod error;
pub mod ftl;
pub mod metrics;
pub mod placement;
pub mod prefetch;
pub mod request;
pub mod sim;
pub mod state_size;
pub mod timing;
pub mod units;

pub use config::SsdConfig;
pub use error::{ConfigError, SimError};
pub use metrics::SimResult;
pub use request::Request;
pub use sim::{SimOptions, Simulator};
