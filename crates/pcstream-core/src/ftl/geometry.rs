//! Physical layout: how a physical page number maps to its allocation unit, its offset in the
//! unit and the die that programs it.
//!
//! PPNs are dense: `ppn = unit * unit_pages + offset`. A line unit stripes consecutive offsets
//! over the dies (offset `o` is on die `o % dies`), as FEMU advances its write pointer channel
//! first; a block unit lives on one die, and consecutive block units rotate over the dies so that
//! successive allocations spread out.

use crate::config::{GcUnit, SsdConfig};
use crate::units::{DieId, Ppn, UnitId};

/// Exact division of a 32-bit value by a fixed 32-bit divisor with one multiply
/// (Lemire, Kaser & Kurz, "Faster remainder by direct computation", 2019): the unit of a PPN is
/// needed on every invalidation, and a hardware division would dominate that path.
#[derive(Clone, Copy, Debug)]
struct FastDiv {
    d: u32,
    m: u64,
}

impl FastDiv {
    fn new(d: u32) -> FastDiv {
        assert!(d > 0);
        FastDiv {
            d,
            m: (u64::MAX / d as u64).wrapping_add(1),
        }
    }
    #[inline]
    fn div(&self, a: u32) -> u32 {
        if self.d == 1 {
            return a;
        }
        ((a as u128 * self.m as u128) >> 64) as u32
    }
}

#[derive(Clone, Debug)]
pub struct Geometry {
    pub dies: u32,
    pub unit_pages: u32,
    pub units: u32,
    pub gc_unit: GcUnit,
    pub physical_pages: u64,
    pub logical_pages: u64,
    div_unit: FastDiv,
}

impl Geometry {
    pub fn new(cfg: &SsdConfig) -> Geometry {
        let unit_pages = cfg.unit_pages();
        Geometry {
            dies: cfg.dies(),
            unit_pages,
            units: cfg.units(),
            gc_unit: cfg.ftl.gc_unit,
            physical_pages: cfg.physical_pages(),
            logical_pages: cfg.logical_pages(),
            div_unit: FastDiv::new(unit_pages),
        }
    }

    #[inline]
    pub fn ppn(&self, unit: UnitId, offset: u32) -> Ppn {
        debug_assert!(offset < self.unit_pages);
        Ppn(unit.0 * self.unit_pages + offset)
    }

    #[inline]
    pub fn unit_of(&self, ppn: Ppn) -> UnitId {
        UnitId(self.div_unit.div(ppn.0))
    }

    /// Die that programs page `offset` of `unit`.
    #[inline]
    pub fn die_of(&self, unit: UnitId, offset: u32) -> DieId {
        match self.gc_unit {
            GcUnit::Line => DieId(offset % self.dies),
            GcUnit::Block => DieId(unit.0 % self.dies),
        }
    }

    #[inline]
    pub fn die_of_ppn(&self, ppn: Ppn) -> DieId {
        let unit = self.unit_of(ppn);
        self.die_of(unit, ppn.0 - unit.0 * self.unit_pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_division_is_exact() {
        for d in [1u32, 3, 7, 64, 384, 6144, 1 << 20, 999_983, u32::MAX] {
            let f = FastDiv::new(d);
            for a in [
                0u32,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                123_456_789,
                u32::MAX - 1,
                u32::MAX,
            ] {
                assert_eq!(f.div(a), a / d, "{a} / {d}");
            }
        }
    }
}
