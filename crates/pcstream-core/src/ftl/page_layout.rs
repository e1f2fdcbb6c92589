//! What the engine keeps per physical page, chosen once per run from the device and the policy,
//! and the table that turns PC signatures into the 4-byte indexes the pages carry.
//!
//! Every page carries its reverse-map LPN and its host write time (the lifetime figures of every
//! result need it). The rest only when something reads it: the writer's PC when the policy sees
//! PCs, the death time for the oracle, and the host stream only where the unit does not tell it
//! (GC that mixes the streams of a victim: `single_gc` and policies that place GC copies).

use rustc_hash::FxHashMap;

use crate::placement::{Attrs, GcMode};

/// Where the host stream of a page is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamStore {
    /// From the write point of the unit holding the page: in `same_stream` and `substream`
    /// GC modes a unit only ever holds pages of one host stream.
    Unit,
    /// In the high bits of the reverse-map word, above `shift` bits of LPN.
    Packed { shift: u8 },
    /// One byte per physical page (the LPN and the stream do not fit 32 bits together).
    Byte,
}

/// The per-physical-page state of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    pub stream: StreamStore,
    /// A 4-byte PC index per page (the policy sees PCs).
    pub pc: bool,
    /// An 8-byte death time per page (the oracle).
    pub death: bool,
}

/// Bits needed to write every value below `n` (0 for n ≤ 1).
fn bits_below(n: u64) -> u32 {
    64 - n.saturating_sub(1).leading_zeros()
}

impl PageLayout {
    /// The layout for a policy that sees `sees`, with GC in `gc_mode`, on a device of
    /// `logical_pages`, its pages written to `stream_values` distinct streams or write points.
    pub fn new(logical_pages: u64, sees: Attrs, gc_mode: GcMode, stream_values: u32) -> Self {
        let stream = match gc_mode {
            GcMode::SameStream | GcMode::Substream => StreamStore::Unit,
            GcMode::SingleGc | GcMode::Policy => {
                // The LPN field needs one value more than the LPNs: all ones means "no page".
                let lpn_bits = bits_below(logical_pages + 1);
                if lpn_bits + bits_below(stream_values as u64) <= 32 {
                    StreamStore::Packed {
                        shift: lpn_bits as u8,
                    }
                } else {
                    StreamStore::Byte
                }
            }
        };
        PageLayout {
            stream,
            pc: sees.has(Attrs::PC),
            death: sees.has(Attrs::DEATH),
        }
    }

    /// Bytes per physical page (the reverse map and write time included; the L2P, per logical
    /// page, is not).
    pub fn bytes_per_physical_page(&self) -> u64 {
        8 + if self.stream == StreamStore::Byte {
            1
        } else {
            0
        } + if self.pc { 4 } else { 0 }
            + if self.death { 8 } else { 0 }
    }

    /// Mask of the LPN field of a reverse-map word.
    pub fn lpn_mask(&self) -> u32 {
        match self.stream {
            StreamStore::Packed { shift } if shift < 32 => (1u32 << shift) - 1,
            _ => u32::MAX,
        }
    }
}

/// Distinct PC signatures of a run, each with a 4-byte index; index 0 is PC 0 (unknown, and the
/// prefill's).
pub struct PcTable {
    sigs: Vec<u64>,
    index: FxHashMap<u64, u32>,
    /// The last signature interned: consecutive pages mostly come from the same request.
    last: (u64, u32),
}

impl Default for PcTable {
    fn default() -> Self {
        let mut index = FxHashMap::default();
        index.insert(0, 0);
        PcTable {
            sigs: vec![0],
            index,
            last: (0, 0),
        }
    }
}

impl PcTable {
    /// The index of `pc`, added if new.
    #[inline]
    pub fn intern(&mut self, pc: u64) -> u32 {
        if self.last.0 == pc {
            return self.last.1;
        }
        let next = self.sigs.len() as u32;
        let i = *self.index.entry(pc).or_insert(next);
        if i == next {
            assert!(next < u32::MAX, "more than 2^32 - 1 distinct PCs");
            self.sigs.push(pc);
        }
        self.last = (pc, i);
        i
    }

    #[inline]
    pub fn sig(&self, i: u32) -> u64 {
        self.sigs[i as usize]
    }

    pub fn bytes(&self) -> usize {
        self.sigs.capacity() * 8 + self.index.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_packed_where_it_fits() {
        let l = PageLayout::new(3_000_000, Attrs::NONE, GcMode::Policy, 9);
        assert_eq!(l.stream, StreamStore::Packed { shift: 22 });
        assert_eq!(l.lpn_mask(), (1 << 22) - 1);
        assert_eq!(l.bytes_per_physical_page(), 8);
        let l = PageLayout::new(1 << 30, Attrs::PC, GcMode::SingleGc, 9);
        assert_eq!(l.stream, StreamStore::Byte);
        assert_eq!(l.bytes_per_physical_page(), 13);
        let l = PageLayout::new(1 << 31, Attrs::DEATH, GcMode::SameStream, 8);
        assert_eq!((l.stream, l.lpn_mask()), (StreamStore::Unit, u32::MAX));
        assert_eq!(l.bytes_per_physical_page(), 16);
    }

    #[test]
    fn pcs_get_dense_indexes() {
        let mut t = PcTable::default();
        assert_eq!(t.intern(0), 0);
        assert_eq!(t.intern(77), 1);
        assert_eq!(t.intern(5), 2);
        assert_eq!(t.intern(77), 1);
        assert_eq!((t.sig(1), t.sig(2)), (77, 5));
    }
}
