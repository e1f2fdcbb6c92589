//! Whole-state consistency check (O(physical pages)); run after every GC in tests.
//!
//! Checks: every mapped LPN has exactly one valid PPN and the reverse map agrees; per-unit valid
//! counts equal the valid pages found; their sum equals the mapped LPNs; free + open + sealed
//! (+ collecting) units = all units; each open unit belongs to exactly one write point; no page
//! beyond a write point's fill position is valid (a page is never written twice without erase);
//! the greedy buckets hold exactly the sealed units with their valid counts.

use super::page_map::NONE;
use super::unit_pool::UnitState;
use super::Ftl;

/// Units found per state: free, open, sealed, collecting.
type StateCounts = [usize; 4];

impl Ftl {
    pub fn verify(&self) -> Result<(), String> {
        let mapped = self.verify_l2p()?;
        let mut valid_total = 0u64;
        let mut counts: StateCounts = [0; 4];
        for u in 0..self.geo.units {
            valid_total += self.verify_unit(u, &mut counts)? as u64;
        }
        if valid_total != mapped {
            return Err(format!(
                "sum of valid counts {valid_total} ≠ mapped LPNs {mapped}"
            ));
        }
        self.verify_unit_states(&counts)?;
        if self.units.uses_buckets() {
            self.verify_buckets(counts[2])?;
        }
        Ok(())
    }

    /// Every mapped LPN's page maps back to it, and the count of mapped LPNs is right; returns
    /// that count.
    fn verify_l2p(&self) -> Result<u64, String> {
        let mut mapped = 0u64;
        for (lpn, &p) in self.map.l2p.iter().enumerate() {
            if p != NONE {
                mapped += 1;
                let back = self.map.lpn_at(crate::units::Ppn(p));
                if back as usize != lpn {
                    return Err(format!("lpn {lpn} → ppn {p}, but ppn {p} → {back}"));
                }
            }
        }
        if mapped != self.map.mapped {
            return Err(format!(
                "{mapped} mapped LPNs, counter says {}",
                self.map.mapped
            ));
        }
        Ok(mapped)
    }

    /// Unit `u`: its valid pages map to it and match its count, and its state agrees with them
    /// and with its write point; counted in `counts`. Returns its valid pages.
    fn verify_unit(&self, u: u32, counts: &mut StateCounts) -> Result<u32, String> {
        let g = &self.geo;
        let base = (u * g.unit_pages) as usize;
        let pages: Vec<u32> = (base..base + g.unit_pages as usize)
            .map(|p| self.map.lpn_at(crate::units::Ppn(p as u32)))
            .collect();
        let mut valid = 0u32;
        for (off, &l) in pages.iter().enumerate() {
            if l != NONE {
                valid += 1;
                if self.map.l2p[l as usize] as usize != base + off {
                    return Err(format!(
                        "ppn {} → lpn {l}, but lpn {l} → {}",
                        base + off,
                        self.map.l2p[l as usize]
                    ));
                }
            }
        }
        if valid != self.units.valid[u as usize] {
            return Err(format!(
                "unit {u}: {valid} valid pages, counter says {}",
                self.units.valid[u as usize]
            ));
        }
        match self.units.state[u as usize] {
            UnitState::Free => {
                counts[0] += 1;
                if valid != 0 {
                    return Err(format!("free unit {u} has {valid} valid pages"));
                }
            }
            UnitState::Open(wp) => {
                counts[1] += 1;
                self.verify_open_unit(u, wp, &pages)?;
            }
            UnitState::Sealed(_) => counts[2] += 1,
            UnitState::Collecting(_) => counts[3] += 1,
        }
        Ok(valid)
    }

    /// Open unit `u` (its pages' LPNs in `pages`) is the one write point `wp` fills, and no page
    /// beyond the write position is valid.
    fn verify_open_unit(&self, u: u32, wp: u8, pages: &[u32]) -> Result<(), String> {
        let w = self
            .wps
            .get(wp as usize)
            .ok_or(format!("open unit {u} of unknown write point {wp}"))?;
        if w.unit != u {
            return Err(format!(
                "unit {u} open for write point {wp}, which fills unit {}",
                w.unit
            ));
        }
        if let Some(off) = pages[w.next as usize..].iter().position(|&l| l != NONE) {
            return Err(format!(
                "unit {u}: page {} beyond the write position {} is valid",
                w.next as usize + off,
                w.next
            ));
        }
        Ok(())
    }

    /// The units counted per state add up, the free ones are the pool's, and each open one
    /// belongs to a write point.
    fn verify_unit_states(&self, counts: &StateCounts) -> Result<(), String> {
        let units = self.geo.units;
        if counts.iter().sum::<usize>() != units as usize || counts[0] != self.units.free.len() {
            return Err(format!(
                "units: {} free ({} in the pool) + {} open + {} sealed + {} collecting ≠ {}",
                counts[0],
                self.units.free.len(),
                counts[1],
                counts[2],
                counts[3],
                units
            ));
        }
        let open_wps = self.wps.iter().filter(|w| w.is_open()).count();
        if open_wps != counts[1] {
            return Err(format!(
                "{open_wps} write points hold a unit but {} units are open",
                counts[1]
            ));
        }
        Ok(())
    }

    /// The greedy buckets hold exactly the `sealed` sealed units, each in its valid count's.
    fn verify_buckets(&self, sealed: usize) -> Result<(), String> {
        let mut in_buckets = 0usize;
        for b in 0..=self.geo.unit_pages as usize {
            for u in self.units.bucket_members(b) {
                in_buckets += 1;
                if !matches!(self.units.state[u as usize], UnitState::Sealed(_))
                    || self.units.valid[u as usize] as usize != b
                {
                    return Err(format!(
                        "unit {u} in greedy bucket {b} is {:?} with {} valid",
                        self.units.state[u as usize], self.units.valid[u as usize]
                    ));
                }
            }
        }
        if in_buckets != sealed {
            return Err(format!(
                "{in_buckets} units in greedy buckets, {sealed} sealed"
            ));
        }
        Ok(())
    }
}
