//! `pcstream`'s substream modes: where GC survivors go, and (`high_variance`) which host streams
//! get a substream slot at each reclustering.

use super::PcStream;
use crate::placement::lifetime_class::geometric_class;
use crate::placement::{Attrs, GcMode, PageInfo};
use crate::units::{LogicalTime, StreamId, NEVER};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Substreams {
    /// `pcstream-star`: GC copies stay in their stream.
    None,
    /// Every stream's survivors go to its own FTL substream.
    All,
    /// Only the streams whose survivors outlive their new writes get a substream slot.
    HighVariance,
    /// Every stream's survivors by age (time since the host write) into the M slots.
    Age,
    /// Every stream's survivors by remaining lifetime into the M slots (needs death times).
    Death,
}

impl Substreams {
    /// The policy places GC copies into its own M internal write points.
    pub fn policy_slots(self) -> bool {
        matches!(
            self,
            Substreams::HighVariance | Substreams::Age | Substreams::Death
        )
    }

    /// What the policy sees beyond PCs and lifetime feedback.
    pub fn sees(self) -> Attrs {
        match self {
            Substreams::HighVariance | Substreams::Age => Attrs::GC_INFO,
            Substreams::Death => Attrs::GC_INFO.union(Attrs::DEATH),
            Substreams::None | Substreams::All => Attrs::NONE,
        }
    }

    pub fn gc_mode(self) -> GcMode {
        match self {
            Substreams::None => GcMode::SameStream,
            Substreams::All => GcMode::Substream,
            Substreams::HighVariance | Substreams::Age | Substreams::Death => GcMode::Policy,
        }
    }
}

impl PcStream {
    /// Write point of one GC copy: `age` / `death` by its class, else its victim stream's slot.
    pub(super) fn gc_copy_destination(&mut self, p: &PageInfo, now: LogicalTime) -> StreamId {
        let hs = self.p.host_streams as u8;
        let last = self.p.max_substreams as u32 - 1;
        // Data of the aged state (no host write time) and data that never dies: the oldest class.
        let span = match self.p.substreams {
            Substreams::Age => p.t_write.map(|t| now.0.saturating_sub(t.0)),
            Substreams::Death => (p.death != NEVER).then(|| p.death.saturating_sub(now.0)),
            _ => return self.sub.destination(p.victim_wp),
        };
        let c = span.map_or(last, |r| {
            geometric_class(r, self.p.class_base, self.p.class_ratio, last)
        });
        StreamId(hs + c as u8)
    }

    /// `high_variance`, at a reclustering: give the substream slots to the streams whose GC
    /// survivors outlive their new writes. `zero_is_group`: stream 0 holds the one clustered
    /// group (and the aged state), so it may have a substream too.
    pub(super) fn choose_substreamed(&mut self, zero_is_group: bool) {
        let streams = self.p.host_streams as usize;
        let mut pages = vec![0u64; streams];
        let mut copied = vec![0u64; streams];
        if self.hazard.is_some() {
            self.weigh_by_hazard(zero_is_group, &mut pages, &mut copied);
        } else {
            self.weigh_by_cv(zero_is_group, &mut pages);
        }
        let mut ranked: Vec<usize> = (0..pages.len()).filter(|&s| pages[s] > 0).collect();
        ranked.sort_by_key(|&s| (std::cmp::Reverse((copied[s], pages[s])), s));
        let slots = self.sub.slots();
        ranked.truncate(slots);
        // A slot once used holds an open unit whether or not a stream sends it survivors:
        // a stream that no longer qualifies keeps its slot until a qualifying stream needs
        // it, rather than leave that unit open and idle (rocksdb-fr without discard: a
        // stream substreamed for one period left its slot's unit idle for the rest of the
        // run, 2.7 % above `pcstream-star`; kept, 0.4 %). `hv_test=cv` stays the rule it was.
        for s in 0..streams {
            if self.hazard.is_some()
                && ranked.len() < slots
                && self.sub.has(s)
                && !ranked.contains(&s)
            {
                ranked.push(s);
            }
        }
        self.sub.assign(&ranked);
    }

    /// `hv_test=hazard`: pages per stream since the last reclustering, of the streams whose
    /// pages past the age GC erases their units at die `hv_ratio` times slower than younger
    /// ones (rates of the pages written to the stream so far), and the pages GC copied out of
    /// each stream.
    fn weigh_by_hazard(&mut self, zero_is_group: bool, pages: &mut [u64], copied: &mut [u64]) {
        let Some(h) = &mut self.hazard else {
            return;
        };
        for e in &self.table.pcs {
            pages[e.stream as usize] += e.recent_pages;
        }
        for (s, p) in pages.iter_mut().enumerate() {
            let r = h.rates(s);
            let slower = r.young_deaths >= self.p.hv_min_n as f64
                && r.ratio.is_some_and(|x| x > self.p.hv_ratio);
            // GC has copied few pages out of the stream, but some: its substream unit
            // would stay open, mostly empty, for more than a period, space GC lacks
            // (sqlite-tpcc-wal without discard: the WAL's stream, 6,710 copies against
            // the database stream's 246,731, took the second slot, 3.6 % above
            // `pcstream-star`). None yet costs nothing until copies come.
            let few = r.copied > 0.0 && r.copied < self.p.hv_min_copies;
            if (s == 0 && !zero_is_group) || !slower || few {
                *p = 0;
            }
            copied[s] = r.copied as u64;
        }
        h.decay();
    }

    /// `hv_test=cv`: pages of high-variance PCs per stream since the last reclustering.
    fn weigh_by_cv(&self, zero_is_group: bool, pages: &mut [u64]) {
        for e in &self.table.pcs {
            if (e.stream > 0 || zero_is_group)
                && e.clustered
                && e.n >= self.p.hv_min_n
                && e.cv() > self.p.hv_cv
            {
                pages[e.stream as usize] += e.recent_pages;
            }
        }
    }
}
