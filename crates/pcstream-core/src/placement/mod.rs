//! Placement policies: the trait every scheme implements, the attributes a policy may see, and
//! the registry (`--policy NAME`).
//!
//! The simulator calls these hooks (docs/POLICIES.md, "The policy interface"): `on_request` once
//! per host request, `on_write` per host page, `on_invalidate` per overwritten or trimmed page
//! (with the old version's write time, PC and stream), `gc_destination` per copied page when the
//! policy classifies GC writes itself, `on_segment_reclaimed` after each erase, `tick` when
//! logical time crosses the policy's period, and `save_state`/`load_state` for tables that
//! persist across runs. A policy only receives the request attributes its `sees()` declares: the
//! others arrive as zeros. There is no file-event hook: no trace carries create/delete events,
//! so a policy derives file lifecycles from the `file` column and invalidations.

pub mod autostream_mq;
pub mod autostream_sfr;
pub mod baseline;
pub mod cluster;
pub mod filestream;
pub mod fstream;
pub mod hotcold;
pub mod lifetime_class;
pub mod lkstream;
pub mod manual;
pub mod midas;
pub mod open_cost;
pub mod oracle;
pub mod pcstream;
pub mod per_pc;
mod policy_ctx;
pub mod registry;
pub mod sepbit;

pub use policy_ctx::{Finite, PolicyCtx};

use crate::error::SimError;
use crate::units::{LogicalTime, Lpn, PcSig, StreamId, UnitId};

/// Request attributes a policy may read (a bit set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Attrs(pub u32);

impl Attrs {
    pub const NONE: Attrs = Attrs(0);
    pub const LPN: Attrs = Attrs(1);
    pub const LEN: Attrs = Attrs(1 << 1);
    pub const PC: Attrs = Attrs(1 << 2);
    pub const FILE: Attrs = Attrs(1 << 3);
    pub const FILE_CLASS: Attrs = Attrs(1 << 4);
    pub const META: Attrs = Attrs(1 << 5);
    pub const PID: Attrs = Attrs(1 << 6);
    pub const HINT: Attrs = Attrs(1 << 7);
    /// Future knowledge: the death time of each write (oracle only).
    pub const DEATH: Attrs = Attrs(1 << 8);
    /// Lifetime feedback on invalidation (old version's write time, PC, stream).
    pub const LIFETIME: Attrs = Attrs(1 << 9);
    /// User-vs-GC flag and victim information at GC.
    pub const GC_INFO: Attrs = Attrs(1 << 11);

    pub const fn union(self, o: Attrs) -> Attrs {
        Attrs(self.0 | o.0)
    }
    pub const fn has(self, o: Attrs) -> bool {
        self.0 & o.0 == o.0
    }

    const NAMES: [(&'static str, Attrs); 11] = [
        ("lpn", Attrs::LPN),
        ("len", Attrs::LEN),
        ("pc", Attrs::PC),
        ("file", Attrs::FILE),
        ("file_class", Attrs::FILE_CLASS),
        ("meta", Attrs::META),
        ("pid", Attrs::PID),
        ("hint", Attrs::HINT),
        ("death_time", Attrs::DEATH),
        ("lifetime_feedback", Attrs::LIFETIME),
        ("gc_info", Attrs::GC_INFO),
    ];

    pub fn names(self) -> Vec<&'static str> {
        Attrs::NAMES
            .iter()
            .filter(|(_, a)| self.has(*a))
            .map(|(n, _)| *n)
            .collect()
    }
}

/// Where GC copies go when the policy does not decide per page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcMode {
    /// Back to the write point of the victim's stream (mixed with new host data).
    SameStream,
    /// To the internal substream of the victim's stream.
    Substream,
    /// To one dedicated GC write point.
    SingleGc,
    /// `gc_destination` is called for every copied page.
    Policy,
}

impl GcMode {
    pub fn parse(s: &str) -> Option<GcMode> {
        match s {
            "same_stream" | "same-stream" => Some(GcMode::SameStream),
            "substream" => Some(GcMode::Substream),
            "single_gc" | "single-gc" => Some(GcMode::SingleGc),
            "policy" => Some(GcMode::Policy),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            GcMode::SameStream => "same_stream",
            GcMode::Substream => "substream",
            GcMode::SingleGc => "single_gc",
            GcMode::Policy => "policy",
        }
    }
}

/// A host request as a policy sees it (attributes outside `sees()` are zero).
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestInfo {
    pub op: u8,
    pub lpn: Lpn,
    pub pages: u32,
    pub pc: PcSig,
    pub file: u32,
    pub file_class: u16,
    pub meta: u8,
    pub pid: u32,
    pub hint: u8,
}

/// One host page write.
#[derive(Clone, Copy, Debug)]
pub struct WriteInfo {
    pub lpn: Lpn,
    /// Index of this page within its request (0 = first page).
    pub page_in_request: u32,
    pub req: RequestInfo,
    /// Oracle only: logical time at which this version dies (`units::NEVER` if it survives).
    pub death: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Overwrite,
    Trim,
}

/// A page version became invalid.
#[derive(Clone, Copy, Debug)]
pub struct Invalidation {
    pub lpn: Lpn,
    /// Write time of the dead version; `None` for prefill data (no birth time in the trace).
    pub t_write: Option<LogicalTime>,
    pub pc: PcSig,
    pub stream: StreamId,
    pub cause: Cause,
    pub now: LogicalTime,
}

impl Invalidation {
    /// Lifetime in host pages, if the version was written by the trace.
    pub fn lifetime(&self) -> Option<u64> {
        self.t_write.map(|t| self.now.since(t))
    }
}

/// A valid page being copied by GC.
#[derive(Clone, Copy, Debug)]
pub struct PageInfo {
    pub lpn: Lpn,
    pub t_write: Option<LogicalTime>,
    pub pc: PcSig,
    /// Host stream of the original write.
    pub stream: StreamId,
    /// Write point that filled the victim unit.
    pub victim_wp: u8,
    pub victim: UnitId,
    /// Logical time the victim unit was opened.
    pub victim_created: LogicalTime,
    pub death: u64,
}

/// A victim unit was erased.
#[derive(Clone, Copy, Debug)]
pub struct Reclaimed {
    pub unit: UnitId,
    pub wp: u8,
    pub created: LogicalTime,
    pub valid_copied: u32,
}

pub trait Placement: Send {
    fn name(&self) -> &'static str;
    /// Attributes the simulator hands to this policy.
    fn sees(&self) -> Attrs;
    /// How GC copies are placed (a `--param gc_mode=...` override applies unless `Policy`).
    fn gc_mode(&self) -> GcMode {
        GcMode::SameStream
    }
    /// Extra write points the policy addresses beyond the host streams (`GcMode::Policy`).
    fn internal_write_points(&self) -> u32 {
        0
    }
    /// `GcMode::Policy`: how many write points the GC copies of one victim may go to (`None`:
    /// any). The FTL keeps one free unit per such destination in reserve, so a policy that
    /// sends each victim's copies to a single place should say so.
    fn gc_fanout(&self) -> Option<u32> {
        None
    }
    /// Hint: a host write of `lpn` comes a few requests from now. Policies with per-LPN state
    /// start loading it (`crate::prefetch::read`) so the cache misses overlap. No effect on
    /// results.
    #[inline]
    fn prefetch(&self, _lpn: u64) {}
    /// Hint (`GcMode::Policy`): `gc_destination` will be asked about `lpn` a few copies from now.
    #[inline]
    fn prefetch_gc(&self, _lpn: u64) {}
    fn on_request(&mut self, _req: &RequestInfo, _now: LogicalTime) {}
    /// Host stream (or, for `GcMode::Policy` policies, write point) of one host page.
    fn on_write(&mut self, w: &WriteInfo, now: LogicalTime) -> StreamId;
    fn on_invalidate(&mut self, _inv: &Invalidation) {}
    /// Write point of a GC-copied page; only called in `GcMode::Policy`.
    fn gc_destination(&mut self, p: &PageInfo, _now: LogicalTime) -> StreamId {
        StreamId(p.victim_wp)
    }
    /// `GcMode::Policy`: the write point of every copy out of a victim that was written by
    /// write point `victim_wp`, when that alone decides (`None`: ask `gc_destination` per
    /// page). Saves a call and a metadata read per copied page; must agree with
    /// `gc_destination`.
    fn gc_victim_destination(&mut self, _victim_wp: u8) -> Option<StreamId> {
        None
    }
    fn on_segment_reclaimed(&mut self, _r: &Reclaimed, _now: LogicalTime) {}
    /// Period in host pages between `tick` calls (`None`: never).
    fn tick_period(&self) -> Option<u64> {
        None
    }
    fn tick(&mut self, _now: LogicalTime) {}
    /// Persistent state (JSON) saved at the end of a run, if the policy has any.
    fn save_state(&self) -> Option<String> {
        None
    }
    fn load_state(&mut self, _state: &str) -> Result<(), SimError> {
        Err(SimError::BadParam(format!(
            "policy {} keeps no persistent table",
            self.name()
        )))
    }
    /// Bytes of state the policy holds.
    fn state_bytes(&self) -> usize;
}
