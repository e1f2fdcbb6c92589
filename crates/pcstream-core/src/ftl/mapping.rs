//! Logical-to-physical map, its reverse, and the per-page metadata every valid page carries
//! (host write time, writer PC, host stream, and the oracle's death time when one is used).
//!
//! The reverse map doubles as the page state: `p2l[ppn] == NONE` means free or invalid.

use crate::units::{Lpn, PcSig, Ppn, StreamId};

pub const NONE: u32 = u32::MAX;

/// `t_write` of pages written by the prefill: they have no birth time in the trace, so they give
/// no lifetime sample.
pub const PREFILL_TIME: u64 = u64::MAX;

/// Metadata kept with every physical page. Packed so a random invalidation touches one line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct PageMeta {
    /// Logical time of the host write that created this version (`PREFILL_TIME` for prefill).
    pub t_write: u64,
    /// Signature of the writer's program context.
    pub pc: u64,
    /// Host stream chosen at the host write (kept through GC copies).
    pub stream: u8,
}

pub struct Mapping {
    /// lpn → ppn (`NONE` if unmapped).
    pub l2p: Vec<u32>,
    /// ppn → lpn (`NONE` if the page is free or invalid).
    pub p2l: Vec<u32>,
    pub meta: Vec<PageMeta>,
    /// Oracle only: death time per physical page.
    pub death: Option<Vec<u64>>,
    pub mapped: u64,
}

impl Mapping {
    pub fn new(logical_pages: u64, physical_pages: u64, with_death: bool) -> Mapping {
        Mapping {
            l2p: vec![NONE; logical_pages as usize],
            p2l: vec![NONE; physical_pages as usize],
            meta: vec![PageMeta::default(); physical_pages as usize],
            death: with_death.then(|| vec![0; physical_pages as usize]),
            mapped: 0,
        }
    }

    #[inline]
    pub fn lookup(&self, lpn: Lpn) -> Option<Ppn> {
        let p = self.l2p[lpn.0 as usize];
        (p != NONE).then_some(Ppn(p))
    }

    /// Unmap `lpn`; returns the old physical page (now invalid) if it was mapped.
    #[inline]
    pub fn unmap(&mut self, lpn: Lpn) -> Option<Ppn> {
        let slot = &mut self.l2p[lpn.0 as usize];
        let old = *slot;
        if old == NONE {
            return None;
        }
        *slot = NONE;
        debug_assert_eq!(
            self.p2l[old as usize], lpn.0 as u32,
            "reverse map disagrees"
        );
        self.p2l[old as usize] = NONE;
        self.mapped -= 1;
        Some(Ppn(old))
    }

    /// Map `lpn` to the free page `ppn`. Requires: `lpn` unmapped, `ppn` free.
    #[inline]
    pub fn map(&mut self, lpn: Lpn, ppn: Ppn, meta: PageMeta) {
        debug_assert_eq!(self.l2p[lpn.0 as usize], NONE);
        debug_assert_eq!(self.p2l[ppn.0 as usize], NONE);
        self.l2p[lpn.0 as usize] = ppn.0;
        self.p2l[ppn.0 as usize] = lpn.0 as u32;
        self.meta[ppn.0 as usize] = meta;
        self.mapped += 1;
    }

    /// Move a valid page (GC copy): the destination takes its lpn and metadata.
    #[inline]
    pub fn relocate(&mut self, from: Ppn, to: Ppn) {
        let lpn = self.p2l[from.0 as usize];
        debug_assert_ne!(lpn, NONE);
        debug_assert_eq!(self.p2l[to.0 as usize], NONE);
        self.p2l[to.0 as usize] = lpn;
        self.p2l[from.0 as usize] = NONE;
        self.l2p[lpn as usize] = to.0;
        self.meta[to.0 as usize] = self.meta[from.0 as usize];
        if let Some(d) = self.death.as_mut() {
            d[to.0 as usize] = d[from.0 as usize];
        }
    }

    #[inline]
    pub fn page_pc(&self, ppn: Ppn) -> PcSig {
        PcSig(self.meta[ppn.0 as usize].pc)
    }

    #[inline]
    pub fn page_stream(&self, ppn: Ppn) -> StreamId {
        StreamId(self.meta[ppn.0 as usize].stream)
    }

    /// Bytes of map and page metadata per physical page (for the memory report).
    pub fn bytes(&self) -> usize {
        self.l2p.len() * 4
            + self.p2l.len() * 4
            + self.meta.len() * std::mem::size_of::<PageMeta>()
            + self.death.as_ref().map_or(0, |d| d.len() * 8)
    }
}
