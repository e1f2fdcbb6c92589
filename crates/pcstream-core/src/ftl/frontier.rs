//! Write points: one open unit per stream, substream or policy class, filled page by page.
//! Data of different write points never share a unit.

use super::unit_pool::NIL;
use super::Ftl;
use crate::units::{LogicalTime, Ppn, UnitId};

#[derive(Clone, Copy, Debug)]
pub struct WritePoint {
    pub unit: u32,
    pub next: u32,
}

impl Default for WritePoint {
    fn default() -> Self {
        WritePoint { unit: NIL, next: 0 }
    }
}

impl WritePoint {
    #[inline]
    pub fn needs_unit(&self, unit_pages: u32) -> bool {
        self.unit == NIL || self.next >= unit_pages
    }
    pub fn is_open(&self) -> bool {
        self.unit != NIL
    }
}

impl Ftl {
    /// Next free page of write point `wp`, opening a unit from the free pool if needed.
    /// Requires: a free unit exists when one is needed (GC keeps the reserve).
    #[inline]
    pub(crate) fn alloc(&mut self, wp: u8, now: LogicalTime) -> Ppn {
        let unit_pages = self.geo.unit_pages;
        let w = &mut self.wps[wp as usize];
        if w.unit == NIL {
            let u = self.units.open(wp, now).unwrap_or_else(|| {
                panic!("no free unit for write point {wp}: the GC reserve was exhausted")
            });
            let w = &mut self.wps[wp as usize];
            w.unit = u.0;
            w.next = 0;
        }
        let w = &mut self.wps[wp as usize];
        debug_assert!(w.next < unit_pages);
        let ppn = self.geo.ppn(UnitId(w.unit), w.next);
        w.next += 1;
        ppn
    }

    /// Seal the unit of `wp` once its last page has been programmed.
    #[inline]
    pub(crate) fn seal_if_full(&mut self, wp: u8, now: LogicalTime) {
        let w = &mut self.wps[wp as usize];
        if w.next == self.geo.unit_pages {
            let u = UnitId(w.unit);
            w.unit = NIL;
            w.next = 0;
            self.units.seal(u, now);
        }
    }
}
