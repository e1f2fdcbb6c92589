//! Typed units used at every module border of the engine.
//!
//! Addresses are 4 KiB pages. Logical time counts host pages written (GC copies do not advance it),
//! which is the lifetime unit of the PCStream papers.

use serde::{Deserialize, Serialize};

/// Bytes per page: the engine's only page size (the flash page and the host's 4 KiB block).
/// Byte or sector ranges become pages at the edges of the pipeline, a partial page counting as
/// a page.
pub const PAGE_BYTES: u64 = 4096;

/// Logical page number (host address space, in pages).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Lpn(pub u64);

/// Physical page number: `unit * pages_per_unit + offset` (see `ftl::geometry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ppn(pub u32);

/// Allocation/GC unit (a line across all dies, or a single block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnitId(pub u32);

/// Die index `channel * ways + way`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DieId(pub u32);

/// Write point id. Host streams are `0..host_streams`; internal write points (substreams, the
/// dedicated GC stream, policy classes) follow them and are never visible to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StreamId(pub u8);

/// ASLR-invariant program-context signature; 0 = unknown.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct PcSig(pub u64);

/// Number of host pages written so far (after prefill).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct LogicalTime(pub u64);

impl LogicalTime {
    /// Pages elapsed since `earlier` (saturating: never negative).
    #[inline]
    pub fn since(self, earlier: LogicalTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

/// Death time used by the oracle: the logical time at which a page version is invalidated,
/// or `NEVER` when it survives the whole trace.
pub const NEVER: u64 = u64::MAX;
