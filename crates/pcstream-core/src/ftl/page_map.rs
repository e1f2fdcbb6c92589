//! Logical-to-physical map, its reverse, and what every physical page carries: its host write
//! time always, its host stream, writer PC and (oracle) death time only as the run's
//! [`PageLayout`] says.
//!
//! The reverse map and the write time share an 8-byte record, so a random invalidation touches
//! one cache line of the physical side; an LPN field of all ones means free or invalid.

pub use super::page_layout::{PageLayout, PcTable, StreamStore};
use crate::units::{Lpn, Ppn};

pub const NONE: u32 = u32::MAX;

/// `t_write` of pages written by the prefill: they have no birth time in the trace, so they give
/// no lifetime sample.
pub const PREFILL_TIME: u64 = u64::MAX;

/// What is known of a page version (the stored fields decoded; not itself stored).
#[derive(Clone, Copy, Debug)]
pub struct PageMeta {
    /// Logical time of the host write that created this version (`PREFILL_TIME` for prefill).
    pub t_write: u64,
    /// Signature of the writer's program context (0 when the policy does not see PCs).
    pub pc: u64,
    /// Host stream chosen at the host write (kept through GC copies).
    pub stream: u8,
}

impl PageMeta {
    pub fn new(t_write: u64, pc: u64, stream: u8) -> PageMeta {
        PageMeta {
            t_write,
            pc,
            stream,
        }
    }
}

/// The record of one physical page: reverse-map word and the low 32 bits of the write time.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct PageRec {
    /// The LPN stored here (and, `StreamStore::Packed`, the stream above it); LPN field all
    /// ones: free or invalid.
    pub rev: u32,
    /// Write time, low 32 bits (`u32::MAX` with `PageMap::t_hi` unset or all ones: prefill).
    pub t: u32,
}

const FREE: PageRec = PageRec { rev: NONE, t: 0 };

pub struct PageMap {
    pub layout: PageLayout,
    /// lpn → ppn (`NONE` if unmapped).
    pub l2p: Vec<u32>,
    /// Per physical page: reverse map and write time.
    pub rec: Vec<PageRec>,
    /// High 32 bits of the write times, allocated once the run's logical time passes 32 bits.
    t_hi: Option<Vec<u32>>,
    /// Per physical page, `StreamStore::Byte` only: the host stream.
    streams: Option<Vec<u8>>,
    /// Per physical page when the policy sees PCs: the index of the writer's PC in `pcs`.
    pc_idx: Option<Vec<u32>>,
    pcs: PcTable,
    /// Oracle only: death time per physical page.
    pub death: Option<Vec<u64>>,
    lpn_mask: u32,
    pub mapped: u64,
}

impl PageMap {
    pub fn new(logical_pages: u64, physical_pages: u64, layout: PageLayout) -> PageMap {
        let n = physical_pages as usize;
        PageMap {
            l2p: vec![NONE; logical_pages as usize],
            rec: vec![FREE; n],
            t_hi: None,
            streams: (layout.stream == StreamStore::Byte).then(|| vec![0; n]),
            pc_idx: layout.pc.then(|| vec![0; n]),
            pcs: PcTable::default(),
            death: layout.death.then(|| vec![0; n]),
            lpn_mask: layout.lpn_mask(),
            layout,
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
        let r = &mut self.rec[old as usize];
        debug_assert_eq!(r.rev & self.lpn_mask, lpn.0 as u32, "reverse map disagrees");
        // Only the LPN field goes: the stream bits and the time stay readable for the caller.
        r.rev |= self.lpn_mask;
        self.mapped -= 1;
        Some(Ppn(old))
    }

    /// Map `lpn` to the free page `ppn`. Requires: `lpn` unmapped, `ppn` free.
    #[inline]
    pub fn map(&mut self, lpn: Lpn, ppn: Ppn, meta: PageMeta) {
        debug_assert_eq!(self.l2p[lpn.0 as usize], NONE);
        debug_assert_eq!(self.lpn_at(ppn), NONE);
        let p = ppn.0 as usize;
        self.l2p[lpn.0 as usize] = ppn.0;
        let mut rev = lpn.0 as u32;
        match self.layout.stream {
            StreamStore::Unit => {}
            StreamStore::Packed { shift } => {
                if shift < 32 {
                    rev |= (meta.stream as u32) << shift;
                }
            }
            StreamStore::Byte => {
                if let Some(s) = self.streams.as_mut() {
                    s[p] = meta.stream;
                }
            }
        }
        self.rec[p] = PageRec {
            rev,
            t: self.time_lo(p, meta.t_write),
        };
        if self.pc_idx.is_some() {
            let i = self.pcs.intern(meta.pc);
            if let Some(v) = self.pc_idx.as_mut() {
                v[p] = i;
            }
        }
        self.mapped += 1;
    }

    /// The low 32 bits of `t` to store at page `p`, the high ones stored too when needed.
    #[inline]
    fn time_lo(&mut self, p: usize, t: u64) -> u32 {
        // u32::MAX as low bits with no high array means the prefill: a real time that needs it
        // switches to 64-bit times first.
        if t >= NONE as u64 && t != PREFILL_TIME && self.t_hi.is_none() {
            self.widen_times();
        }
        if let Some(hi) = self.t_hi.as_mut() {
            hi[p] = (t >> 32) as u32;
        }
        t as u32
    }

    /// Give every page a high half of its write time (once, when logical time passes 32 bits).
    #[cold]
    fn widen_times(&mut self) {
        let hi = self
            .rec
            .iter()
            .map(|r| if r.t == NONE { NONE } else { 0 })
            .collect();
        self.t_hi = Some(hi);
    }

    /// Write time of the version at `ppn` (`PREFILL_TIME` for the prefill's).
    #[inline]
    pub fn t_write(&self, ppn: Ppn) -> u64 {
        let lo = self.rec[ppn.0 as usize].t;
        match self.t_hi.as_ref() {
            None if lo == NONE => PREFILL_TIME,
            None => lo as u64,
            Some(hi) => ((hi[ppn.0 as usize] as u64) << 32) | lo as u64,
        }
    }

    /// The writer's PC of the version at `ppn` (0 when the policy does not see PCs).
    #[inline]
    pub fn pc(&self, ppn: Ppn) -> u64 {
        self.pc_idx
            .as_ref()
            .map_or(0, |v| self.pcs.sig(v[ppn.0 as usize]))
    }

    /// The stream stored with `ppn`, `None` when the unit tells it (`StreamStore::Unit`).
    #[inline]
    pub fn stored_stream(&self, ppn: Ppn) -> Option<u8> {
        match self.layout.stream {
            StreamStore::Unit => None,
            StreamStore::Packed { shift } => Some(if shift < 32 {
                (self.rec[ppn.0 as usize].rev >> shift) as u8
            } else {
                0
            }),
            StreamStore::Byte => self.streams.as_ref().map(|s| s[ppn.0 as usize]),
        }
    }

    /// Move a valid page (GC copy): the destination takes its lpn and metadata.
    #[inline]
    pub fn relocate(&mut self, from: Ppn, to: Ppn) {
        let (f, t) = (from.0 as usize, to.0 as usize);
        let r = self.rec[f];
        debug_assert_ne!(r.rev & self.lpn_mask, self.lpn_mask);
        debug_assert_eq!(self.lpn_at(to), NONE);
        self.rec[t] = r;
        self.rec[f].rev |= self.lpn_mask;
        self.l2p[(r.rev & self.lpn_mask) as usize] = to.0;
        for v in [self.t_hi.as_mut(), self.pc_idx.as_mut()]
            .into_iter()
            .flatten()
        {
            v[t] = v[f];
        }
        if let Some(s) = self.streams.as_mut() {
            s[t] = s[f];
        }
        if let Some(d) = self.death.as_mut() {
            d[t] = d[f];
        }
    }

    /// Hint the CPU to fetch the L2P entry of `lpn` (ignored when out of range).
    #[inline]
    pub fn prefetch_l2p(&self, lpn: u64) {
        if let Some(e) = self.l2p.get(lpn as usize) {
            crate::prefetch::read(e);
        }
    }

    /// Hint the CPU to fetch the record of the page `lpn` maps to now.
    #[inline]
    pub fn prefetch_meta_of(&self, lpn: u64) {
        if let Some(&p) = self.l2p.get(lpn as usize) {
            if let Some(m) = self.rec.get(p as usize) {
                crate::prefetch::read(m);
            }
        }
    }

    /// Hint the CPU to fetch the L2P entry of the LPN stored in `ppn`, if it is valid.
    #[inline]
    pub fn prefetch_l2p_of_page(&self, ppn: Ppn) {
        let l = self.lpn_at(ppn);
        if l != NONE {
            self.prefetch_l2p(l as u64);
        }
    }

    /// LPN stored in `ppn` (`NONE` if free or invalid).
    #[inline]
    pub fn lpn_at(&self, ppn: Ppn) -> u32 {
        let l = self.rec[ppn.0 as usize].rev & self.lpn_mask;
        if l == self.lpn_mask {
            NONE
        } else {
            l
        }
    }

    /// Bytes of map and page state (for the memory report).
    pub fn bytes(&self) -> usize {
        self.l2p.len() * 4
            + self.rec.len() * std::mem::size_of::<PageRec>()
            + self.t_hi.as_ref().map_or(0, |v| v.len() * 4)
            + self.streams.as_ref().map_or(0, |v| v.len())
            + self
                .pc_idx
                .as_ref()
                .map_or(0, |v| v.len() * 4 + self.pcs.bytes())
            + self.death.as_ref().map_or(0, |d| d.len() * 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{Attrs, GcMode};

    #[test]
    fn write_times_widen_past_32_bits_and_fields_survive_a_copy() {
        let layout = PageLayout::new(8, Attrs::PC, GcMode::Policy, 4);
        let mut m = PageMap::new(8, 16, layout);
        m.map(Lpn(0), Ppn(0), PageMeta::new(PREFILL_TIME, 0, 0));
        m.map(Lpn(1), Ppn(1), PageMeta::new(7, 99, 3));
        assert_eq!(m.t_write(Ppn(1)), 7);
        let late = (1u64 << 32) + 5;
        m.map(Lpn(2), Ppn(2), PageMeta::new(late, 42, 2));
        assert_eq!(m.t_write(Ppn(0)), PREFILL_TIME);
        assert_eq!((m.t_write(Ppn(1)), m.t_write(Ppn(2))), (7, late));
        m.relocate(Ppn(2), Ppn(9));
        assert_eq!(m.lookup(Lpn(2)), Some(Ppn(9)));
        assert_eq!(m.lpn_at(Ppn(2)), NONE);
        assert_eq!((m.t_write(Ppn(9)), m.pc(Ppn(9))), (late, 42));
        assert_eq!(m.stored_stream(Ppn(9)), Some(2));
        assert_eq!(m.unmap(Lpn(1)), Some(Ppn(1)));
        assert_eq!(
            (m.lpn_at(Ppn(1)), m.pc(Ppn(1)), m.stored_stream(Ppn(1))),
            (NONE, 99, Some(3))
        );
    }
}
