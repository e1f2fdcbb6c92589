//! Logical-to-physical map, its reverse, and the per-page metadata every valid page carries
//! (host write time, writer PC, host stream, and the oracle's death time when one is used).
//!
//! The reverse map lives inside the page metadata (`PageMeta::lpn`), so a random invalidation
//! touches one cache line of the physical side; `lpn == NONE` means free or invalid.

use crate::units::{Lpn, Ppn, StreamId};

pub const NONE: u32 = u32::MAX;

/// `t_write` of pages written by the prefill: they have no birth time in the trace, so they give
/// no lifetime sample.
pub const PREFILL_TIME: u64 = u64::MAX;

/// Metadata kept with every physical page (24 bytes). Packed so a random invalidation touches
/// one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct PageMeta {
    /// Logical time of the host write that created this version (`PREFILL_TIME` for prefill).
    pub t_write: u64,
    /// Signature of the writer's program context.
    pub pc: u64,
    /// Reverse map: the LPN stored here (`NONE`: free or invalid).
    pub lpn: u32,
    /// Host stream chosen at the host write (kept through GC copies).
    pub stream: u8,
}

impl Default for PageMeta {
    fn default() -> Self {
        PageMeta {
            t_write: 0,
            pc: 0,
            lpn: NONE,
            stream: 0,
        }
    }
}

impl PageMeta {
    pub fn new(t_write: u64, pc: u64, stream: u8) -> PageMeta {
        PageMeta {
            t_write,
            pc,
            lpn: NONE,
            stream,
        }
    }
}

pub struct PageMap {
    /// lpn → ppn (`NONE` if unmapped).
    pub l2p: Vec<u32>,
    /// Per physical page: reverse map and metadata.
    pub meta: Vec<PageMeta>,
    /// Oracle only: death time per physical page.
    pub death: Option<Vec<u64>>,
    pub mapped: u64,
}

impl PageMap {
    pub fn new(logical_pages: u64, physical_pages: u64, with_death: bool) -> PageMap {
        PageMap {
            l2p: vec![NONE; logical_pages as usize],
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
            self.meta[old as usize].lpn, lpn.0 as u32,
            "reverse map disagrees"
        );
        self.meta[old as usize].lpn = NONE;
        self.mapped -= 1;
        Some(Ppn(old))
    }

    /// Map `lpn` to the free page `ppn`. Requires: `lpn` unmapped, `ppn` free.
    #[inline]
    pub fn map(&mut self, lpn: Lpn, ppn: Ppn, meta: PageMeta) {
        debug_assert_eq!(self.l2p[lpn.0 as usize], NONE);
        debug_assert_eq!(self.meta[ppn.0 as usize].lpn, NONE);
        self.l2p[lpn.0 as usize] = ppn.0;
        self.meta[ppn.0 as usize] = PageMeta {
            lpn: lpn.0 as u32,
            ..meta
        };
        self.mapped += 1;
    }

    /// Move a valid page (GC copy): the destination takes its lpn and metadata.
    #[inline]
    pub fn relocate(&mut self, from: Ppn, to: Ppn) {
        let m = self.meta[from.0 as usize];
        debug_assert_ne!(m.lpn, NONE);
        debug_assert_eq!(self.meta[to.0 as usize].lpn, NONE);
        self.meta[to.0 as usize] = m;
        self.meta[from.0 as usize].lpn = NONE;
        self.l2p[m.lpn as usize] = to.0;
        if let Some(d) = self.death.as_mut() {
            d[to.0 as usize] = d[from.0 as usize];
        }
    }

    /// Hint the CPU to fetch the L2P entry of `lpn` (ignored when out of range).
    #[inline]
    pub fn prefetch_l2p(&self, lpn: u64) {
        if let Some(e) = self.l2p.get(lpn as usize) {
            crate::prefetch::read(e);
        }
    }

    /// Hint the CPU to fetch the metadata of the page `lpn` maps to now.
    #[inline]
    pub fn prefetch_meta_of(&self, lpn: u64) {
        if let Some(&p) = self.l2p.get(lpn as usize) {
            if let Some(m) = self.meta.get(p as usize) {
                crate::prefetch::read(m);
            }
        }
    }

    /// Hint the CPU to fetch the L2P entry of the LPN stored in `ppn`, if it is valid.
    #[inline]
    pub fn prefetch_l2p_of_page(&self, ppn: Ppn) {
        let l = self.meta[ppn.0 as usize].lpn;
        if l != NONE {
            self.prefetch_l2p(l as u64);
        }
    }

    /// LPN stored in `ppn` (`NONE` if free or invalid).
    #[inline]
    pub fn lpn_at(&self, ppn: Ppn) -> u32 {
        self.meta[ppn.0 as usize].lpn
    }

    #[inline]
    pub fn page_stream(&self, ppn: Ppn) -> StreamId {
        StreamId(self.meta[ppn.0 as usize].stream)
    }

    /// Bytes of map and page metadata per physical page (for the memory report).
    pub fn bytes(&self) -> usize {
        self.l2p.len() * 4
            + self.meta.len() * std::mem::size_of::<PageMeta>()
            + self.death.as_ref().map_or(0, |d| d.len() * 8)
    }
}
