//! Death rates of a stream's young and old pages: whether its GC survivors outlive its new writes.
//!
//! A stream's GC survivors are worth a unit of their own when they die more slowly than the
//! stream's new writes: mixed back, they stay valid in units whose new pages die around them,
//! and GC copies them again. Lifetimes completed so far cannot tell: they are the short ones
//! (the long ones have not ended yet), so a PC whose pages mostly live long shows a small
//! spread early on. Death *rates* can: a page alive at age `a` counts toward the exposure of
//! its age class for as long as it is alive, dead or not by now.
//!
//! Per host stream (the stream a page was written to, as GC keeps it in its metadata): alive
//! pages per write epoch of `EPOCH_PAGES` host pages while younger than the stream's GC age
//! (how old its units are when GC erases them), and one count of the older ones; deaths and
//! exposure (alive pages × epochs) of both classes. `rates` is young deaths per young
//! page-epoch over old deaths per old page-epoch. Cost: O(1) per write and invalidation, O(streams)
//! per epoch.

use std::collections::VecDeque;

/// Host pages per write epoch: the age resolution of the young/old split (our choice: small
/// against the GC age of any unit of 512 pages or more under GC pressure, and a few counters
/// per stream per epoch).
pub const EPOCH_PAGES: u64 = 4096;

/// Weight of the newest GC age in its running mean (our choice: about the last 16 victims).
const GC_AGE_WEIGHT: f64 = 1.0 / 16.0;

#[derive(Clone, Debug, Default)]
struct Stream {
    /// Alive pages per epoch, oldest first; the front is epoch `front`.
    young: VecDeque<u64>,
    front: u64,
    young_alive: u64,
    old_alive: u64,
    /// Deaths and exposure (page-epochs) of young and old pages.
    d_young: f64,
    d_old: f64,
    e_young: f64,
    e_old: f64,
    /// Pages GC copied out of this stream's units and its substream's.
    copied: f64,
    /// Age of this stream's units when GC erases them, in epochs (running mean; 0: none yet).
    gc_age: f64,
}

impl Stream {
    /// Epochs a page stays young: the stream's GC age, rounded up, at most `max` (also before
    /// its first GC).
    fn span(&self, max: usize) -> usize {
        if self.gc_age > 0.0 {
            (self.gc_age.ceil() as usize).min(max)
        } else {
            max
        }
    }
}

/// Young and old death rates per host stream.
#[derive(Clone, Debug)]
pub struct AgeHazard {
    epoch: u64,
    /// Longest young span in epochs: bounds the per-epoch counts a stream keeps.
    max_span: usize,
    streams: Vec<Stream>,
}

/// What `AgeHazard::rates` reports for one stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// Young pages that died (the sample the test rests on).
    pub young_deaths: f64,
    /// Pages GC copied out of the stream's units (decayed like the rest).
    pub copied: f64,
    /// Young death rate over old death rate (old deaths counted one more: an old class nobody
    /// has died in yet rates finite); `None` before the stream's first GC or with no old page.
    pub ratio: Option<f64>,
}

impl AgeHazard {
    /// `max_young` host pages: the oldest a page can be and still count as young, whatever
    /// the GC age (it bounds the state: 8 B per stream per `EPOCH_PAGES` of it).
    pub fn new(streams: usize, max_young: u64) -> AgeHazard {
        let mut s = Stream::default();
        s.young.push_back(0);
        AgeHazard {
            epoch: 0,
            max_span: max_young.div_ceil(EPOCH_PAGES).max(1) as usize,
            streams: vec![s; streams],
        }
    }

    /// Move to the epoch of logical time `now`: exposure for the epochs gone by, then the
    /// pages past their stream's GC age become old.
    #[inline]
    fn advance(&mut self, now: u64) {
        let e = now / EPOCH_PAGES;
        while self.epoch < e {
            self.epoch += 1;
            let (epoch, max) = (self.epoch, self.max_span);
            for s in &mut self.streams {
                s.e_young += s.young_alive as f64;
                s.e_old += s.old_alive as f64;
                s.young.push_back(0);
                let span = s.span(max);
                while s.young.len() > span {
                    let n = s.young.pop_front().expect("longer than the span");
                    s.front += 1;
                    s.young_alive -= n;
                    s.old_alive += n;
                }
                debug_assert_eq!(s.front + s.young.len() as u64 - 1, epoch);
            }
        }
    }

    /// A host page written to `stream` at `now`.
    #[inline]
    pub fn write(&mut self, stream: usize, now: u64) {
        self.advance(now);
        let s = &mut self.streams[stream];
        *s.young.back_mut().expect("the current epoch") += 1;
        s.young_alive += 1;
    }

    /// The page written to `stream` at `t_write` died at `now`.
    #[inline]
    pub fn death(&mut self, stream: usize, t_write: u64, now: u64) {
        self.advance(now);
        let Some(s) = self.streams.get_mut(stream) else {
            return;
        };
        let e = t_write / EPOCH_PAGES;
        if e >= s.front {
            let n = &mut s.young[(e - s.front) as usize];
            // Every counted death had its write counted (a table loaded from another run brings
            // lifetimes, not pages in flight).
            if *n == 0 {
                return;
            }
            *n -= 1;
            s.young_alive -= 1;
            s.d_young += 1.0;
        } else if s.old_alive > 0 {
            s.old_alive -= 1;
            s.d_old += 1.0;
        }
    }

    /// GC copied `copied` pages out of a unit of `stream`'s substream.
    pub fn copied_from_substream(&mut self, stream: usize, copied: u32) {
        if let Some(s) = self.streams.get_mut(stream) {
            s.copied += copied as f64;
        }
    }

    /// GC copied `copied` pages out of a unit of `stream` opened at `created`, and erased it.
    pub fn reclaimed(&mut self, stream: usize, created: u64, copied: u32, now: u64) {
        let Some(s) = self.streams.get_mut(stream) else {
            return;
        };
        s.copied += copied as f64;
        let age = now.saturating_sub(created) as f64 / EPOCH_PAGES as f64;
        s.gc_age = if s.gc_age > 0.0 {
            s.gc_age + GC_AGE_WEIGHT * (age - s.gc_age)
        } else {
            age.max(f64::MIN_POSITIVE)
        };
    }

    /// Young over old death rate of `stream`.
    pub fn rates(&self, stream: usize) -> Rates {
        let s = &self.streams[stream];
        let ratio = (s.gc_age > 0.0 && s.e_old > 0.0 && s.e_young > 0.0)
            .then(|| (s.d_young / s.e_young) / ((s.d_old + 1.0) / s.e_old));
        Rates {
            young_deaths: s.d_young,
            copied: s.copied,
            ratio,
        }
    }

    /// Halve every stream's deaths and exposure: what streams hold changes at each
    /// reclustering, and the rates should follow.
    pub fn decay(&mut self) {
        for s in &mut self.streams {
            s.d_young /= 2.0;
            s.d_old /= 2.0;
            s.e_young /= 2.0;
            s.e_old /= 2.0;
            s.copied /= 2.0;
        }
    }

    pub fn state_bytes(&self) -> usize {
        self.streams
            .iter()
            .map(|s| std::mem::size_of::<Stream>() + s.young.capacity() * 8)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of one stream written one per host page, each dying at a given age; returns the
    /// ratio after `n` pages with GC age `gc` pages.
    fn ratio_of(lifetime: impl Fn(u64) -> u64, n: u64, gc: u64) -> f64 {
        let mut h = AgeHazard::new(2, 1 << 40);
        let mut deaths: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        for t in 0..n {
            if let Some(ws) = deaths.remove(&t) {
                for w in ws {
                    h.death(1, w, t);
                }
            }
            h.write(1, t);
            deaths.entry(t + lifetime(t).max(1)).or_default().push(t);
            if t % 512 == 0 && t >= gc {
                h.reclaimed(1, t - gc, 0, t);
            }
        }
        h.rates(1).ratio.expect("GC happened")
    }

    #[test]
    fn long_lived_survivors_show_a_high_ratio_before_they_die() {
        // Nine pages in ten die at 2,000, one in ten at 10^7 (none of those dies in the run):
        // survivors past the GC age of 20,000 never die, new writes mostly do.
        let r = ratio_of(
            |t| if t % 10 == 0 { 10_000_000 } else { 2_000 },
            400_000,
            20_000,
        );
        assert!(r > 10.0, "ratio {r}");
    }

    #[test]
    fn memoryless_lifetimes_show_a_ratio_near_one() {
        // Geometric lifetimes (a fixed chance to die each page): old pages die as fast as young.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut life = |_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            (-(1.0 - u).ln() * 30_000.0) as u64
        };
        let lifetimes: Vec<u64> = (0..600_000).map(&mut life).collect();
        let r = ratio_of(|t| lifetimes[t as usize], 600_000, 20_000);
        assert!((0.8..1.25).contains(&r), "ratio {r}");
    }

    #[test]
    fn fixed_lifetimes_show_a_ratio_below_one() {
        // Every page lives 30,000: past the GC age of 20,000 death is certain within 10,000.
        let r = ratio_of(|_| 30_000, 400_000, 20_000);
        assert!(r < 0.5, "ratio {r}");
    }

    #[test]
    fn young_counts_stay_bounded_without_gc() {
        let mut h = AgeHazard::new(1, 10 * EPOCH_PAGES);
        for t in 0..100 * EPOCH_PAGES {
            h.write(0, t);
        }
        assert_eq!(h.streams[0].young.len(), 10);
        assert_eq!(
            h.streams[0].young_alive + h.streams[0].old_alive,
            100 * EPOCH_PAGES
        );
        // A page that aged out dies as an old page.
        h.death(0, 0, 100 * EPOCH_PAGES);
        assert_eq!(h.streams[0].d_old, 1.0);
    }
}
