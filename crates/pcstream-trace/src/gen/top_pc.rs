//! The PC that writes the most pages of a trace, and how widely its pages' lifetimes spread:
//! what decides which `gen lsm` settings are the PCStream grid's acceptance runs (one PC with
//! lifetime CV > 1 writing at least 30 % of the pages; docs/POLICIES.md).

use std::collections::BTreeMap;

use pcstream_core::request::{Op, Request};

/// Per PC: pages written, and n, Σℓ, Σℓ² of its completed lifetimes.
#[derive(Clone, Copy, Default)]
struct PcLives {
    pages: u64,
    n: f64,
    sum: f64,
    sum2: f64,
}

/// Fed a trace's requests in order; lifetimes are in host pages, write to overwrite or trim
/// (pages never invalidated are left out).
#[derive(Default)]
pub struct TopPc {
    /// Write time and PC of each LPN's live version.
    last: Vec<Option<(u64, u64)>>,
    pcs: BTreeMap<u64, PcLives>,
    /// Host pages written so far.
    t: u64,
}

impl TopPc {
    pub fn new() -> TopPc {
        TopPc::default()
    }

    pub fn push(&mut self, r: &Request) {
        let (write, trim) = (r.op == Op::Write as u8, r.op == Op::Trim as u8);
        if !(write || trim) {
            return;
        }
        let end = (r.lpn + r.pages as u64) as usize;
        if self.last.len() < end {
            self.last.resize(end, None);
        }
        for lpn in r.lpn as usize..end {
            if let Some((w, pc)) = self.last[lpn].take() {
                let l = (self.t - w) as f64;
                let s = self.pcs.entry(pc).or_default();
                s.n += 1.0;
                s.sum += l;
                s.sum2 += l * l;
            }
            if write {
                self.last[lpn] = Some((self.t, r.pc));
                self.pcs.entry(r.pc).or_default().pages += 1;
                self.t += 1;
            }
        }
    }

    /// The top PC's share of the host pages and the coefficient of variation of its completed
    /// lifetimes (ties to the smaller signature); `None` if nothing was written.
    pub fn share_and_cv(&self) -> Option<(f64, f64)> {
        let (_, s) = self
            .pcs
            .iter()
            .max_by_key(|(pc, s)| (s.pages, std::cmp::Reverse(**pc)))?;
        let n = s.n.max(1.0);
        let mean = s.sum / n;
        let cv = (s.sum2 / n - mean * mean).max(0.0).sqrt() / mean.max(1e-9);
        Some((s.pages as f64 / self.t.max(1) as f64, cv))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_pc_and_the_spread_of_its_lifetimes() {
        let mut t = TopPc::new();
        // PC 7 writes LPN 0 four times (host pages 0, 1, 3, 6); PC 9 writes LPN 1 twice and
        // trims it; PC 8 writes once.
        let w = |lpn, pc| Request::write(lpn, 1).with_pc(pc);
        for r in [
            w(0, 7),
            w(0, 7),
            w(1, 9),
            w(0, 7),
            w(1, 9),
            w(2, 8),
            w(0, 7),
        ] {
            t.push(&r);
        }
        t.push(&Request::trim(1, 1));
        let (share, cv) = t.share_and_cv().unwrap();
        assert_eq!(share, 4.0 / 7.0);
        // Lifetimes 1, 2, 3 (writes at 0, 1, 3, 6): mean 2, σ √(2/3).
        assert!((cv - (2.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-12, "cv {cv}");
        assert!(TopPc::new().share_and_cv().is_none());
    }
}
