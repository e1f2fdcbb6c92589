//! The reclustering: every PC with `n_min` lifetimes clustered by lifetime, clusters that say
//! little merged, streams assigned, substream slots chosen, statistics decayed.

use super::params::Merge;
use super::substreams::Substreams;
use super::PcStream;
use crate::placement::cluster::{
    agglomerative_1d, kmeans_1d, mean_gain, merge_uninformative, Clustering, Moments,
};

/// The known PCs of one reclustering, sorted by (scaled mean lifetime, signature): (value,
/// signature, table entry).
type Known = Vec<(f64, u64, usize)>;

impl PcStream {
    /// Re-cluster every PC with at least `n_min` lifetimes into streams 1..N−1 (with
    /// `merge=fit_first`, while they fit, each to a stream of its own: `fit.rs`; with
    /// `merge=cost`, too, unless a stream does not pay: `cost.rs`).
    pub(super) fn recluster(&mut self, now: u64) {
        self.reclusterings += 1;
        self.joined.clear();
        self.last_recluster = now;
        self.recluster_soon = false;
        if self.p.first_come.is_some() {
            return;
        }
        let known = self.known();
        self.known_last = known.len();
        let x: Vec<f64> = known.iter().map(|k| k.0).collect();
        let fits = self.fits(known.len());
        // `merge=cost`: while the PCs fit, each is its own cluster, merged only where a stream
        // does not pay.
        let by_cost = self.p.merge == Merge::Cost;
        let c = if by_cost && fits {
            Clustering {
                labels: (0..x.len() as u32).collect(),
                centroids: x.clone(),
            }
        } else if self.p.agglomerative {
            agglomerative_1d(&x, (self.p.host_streams - 1) as usize)
        } else {
            kmeans_1d(&x, (self.p.host_streams - 1) as usize)
        };
        let (merged, samples) = if by_cost {
            self.merge_by_cost(&known, &c)
        } else {
            self.merge(&known, &c)
        };
        let groups = merged.last().map_or(0, |&m| m as usize + 1);
        let all_apart = !by_cost || groups == known.len();
        self.own_streams = fits && all_apart && !self.lone_pc_like_zero(&known);
        if self.own_streams {
            self.assign_own_streams(&known);
            if self.p.substreams == Substreams::HighVariance {
                self.choose_substreamed(false);
            }
            self.end_period(now);
            return;
        }
        for e in &mut self.table.pcs {
            e.clustered = false;
            e.stream = 0;
        }
        let only_aged = groups == 1 && self.only_aged_in_zero();
        let lone = groups == 1 && self.lone_group_like_zero(&samples, only_aged);
        // The one group shares stream 0 with nothing but the aged state: stream 0 is its
        // stream, and may have its substream (elsewhere stream 0 mixes PC 0's data, the PCs
        // still unknown and the group: fio-pareto0.5 without discard, 4.3 % worse with one).
        let zero_is_group = lone && only_aged;
        self.first_stream = if lone { 0 } else { 1 };
        self.assign_streams(&known, &c, &merged, groups);
        self.kmeans_groups = c.centroids.len();
        if self.p.substreams == Substreams::HighVariance {
            self.choose_substreamed(zero_is_group);
        }
        self.end_period(now);
    }

    /// The PCs with `n_min` lifetimes, sorted by (value, signature): the order, hence the
    /// result, is independent of the hash map.
    fn known(&self) -> Known {
        let mut known: Known = self
            .table
            .pcs
            .iter()
            .enumerate()
            .filter(|(_, e)| e.n >= self.p.n_min)
            .map(|(i, e)| (self.scaled(e), e.sig, i))
            .collect();
        known.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        known
    }

    /// `fit_first`: one known PC whose lifetimes look like stream 0's data is clustered, so it
    /// shares stream 0 as under `min_gain`: a stream of its own would only hold a second unit
    /// open beside stream 0's (uniform overwrites from one PC, `small` aged to 90 %: 8.745 with
    /// its own stream against baseline's 8.657, docs/POLICIES.md).
    fn lone_pc_like_zero(&self, known: &Known) -> bool {
        let [(_, _, i)] = known[..] else {
            return false;
        };
        let samples = self.table.pcs[i].moments();
        self.lone_group_like_zero(&samples, self.only_aged_in_zero())
    }

    /// Merge adjacent k-means clusters whose split says little; the group of each cluster, and
    /// the moments of every known PC's log2 lifetimes together.
    pub(super) fn merge(&self, known: &[(f64, u64, usize)], c: &Clustering) -> (Vec<u32>, Moments) {
        // Clusters whose pages' lifetimes overlap are not worth two streams: each stream holds an
        // open unit, space that GC then lacks, and mixing two such clusters costs nothing more
        // than the spread inside each already does.
        //
        // Each PC weighs by the pages it has written (`merge_weight=pages`, our choice), its
        // lifetimes' mean and spread kept: long-lived data completes few lifetimes while it is
        // written (right-censoring), so weighed by completed lifetimes a cold writer that has
        // written a fifth of the pages but seen one file die weighs next to nothing and joins the
        // hot stream until the next period (`gen mix hotcold-files`, seed 2: 2.02 against
        // `per-pc`'s 1.07; docs/POLICIES.md).
        let mut moments = vec![Moments::default(); c.centroids.len()];
        let mut samples = Moments::default();
        for (&(_, _, i), &g) in known.iter().zip(&c.labels) {
            let e = &self.table.pcs[i];
            let m = e.moments();
            samples = samples + m;
            let m = if self.p.weigh_by_pages {
                m.scaled(e.writes.max(e.n) as f64 / m.n)
            } else {
                m
            };
            moments[g as usize] = moments[g as usize] + m;
        }
        (merge_uninformative(&moments, self.p.min_gain), samples)
    }

    /// No PC-0 writes and no PC still unknown that has written: stream 0 holds only the aged
    /// state and the pages the clustered PCs wrote before they were known.
    fn only_aged_in_zero(&self) -> bool {
        self.pc0_writes == 0
            && !self
                .table
                .pcs
                .iter()
                .any(|e| e.n < self.p.n_min && e.writes > 0)
    }

    /// One group left: whether its pages' lifetimes (`samples`) look like those of the data that
    /// stays in stream 0 (PC 0 and the PCs still unknown). Then a stream of its own would only
    /// hold a second unit open beside stream 0's; it shares stream 0, baseline's layout.
    /// Decided from the first clustering on, before a second unit is ever opened.
    fn lone_group_like_zero(&self, samples: &Moments, only_aged: bool) -> bool {
        // Stream 0's data with no lifetime yet (e.g. written once) counts as unlike anything,
        // except where stream 0 holds only the device's aged state and the group's own early
        // pages: then the aged pages' times of death stand for their lifetimes, or, none having
        // died, the group shares stream 0 (one writer overwriting a device uniformly: a stream
        // beside stream 0 cost 2.8 % over baseline on `medium` prefilled, 3.9 % fresh).
        // Only a difference of mean lifetimes counts here (`mean_gain`): stream 0's data (the
        // file system's journal and metadata) narrower than the group but at its mean leave
        // stream 0's units no emptier when GC comes (fio's one PC on the bundled fio-pareto0.5
        // without discard: 2.5 % above baseline with the split, 3.3 % below without).
        let zero = self
            .table
            .pcs
            .iter()
            .filter(|e| e.n < self.p.n_min)
            .fold(self.pc0, |m, e| m + e.moments());
        let alike = |z: &Moments| mean_gain(z, samples) / (z.n + samples.n) < self.p.min_gain;
        if zero.n > 0.0 || !only_aged {
            alike(&zero)
        } else if self.aged.n > 0.0 {
            // The aged pages' deaths are the only evidence of how the rest of them die.
            alike(&self.aged)
        } else {
            // No aged page has died: stream 0's data are the group's own early pages (or an
            // aged state that never dies, which baseline mixes in the same way).
            true
        }
    }

    /// Every known PC to its group's stream (from `first_stream` on); the groups' centroids.
    fn assign_streams(&mut self, known: &Known, c: &Clustering, merged: &[u32], groups: usize) {
        let mut sums = vec![(0.0f64, 0usize); groups];
        for (&(x, _, i), &g) in known.iter().zip(&c.labels) {
            let m = merged[g as usize];
            let e = &mut self.table.pcs[i];
            e.stream = m as u8 + self.first_stream;
            e.clustered = true;
            e.joined_lg = f32::NAN;
            sums[m as usize].0 += x;
            sums[m as usize].1 += 1;
        }
        self.centroids = sums.iter().map(|&(s, n)| s / n as f64).collect();
    }

    /// A new period: pages since the reclustering start from 0, and with `stat_decay` every
    /// lifetime statistic is halved.
    fn end_period(&mut self, now: u64) {
        self.gc_seen.decay(now, self.p.period);
        for e in &mut self.table.pcs {
            e.recent_pages = 0;
            if self.p.stat_decay {
                e.halve();
            }
        }
        if self.p.stat_decay {
            self.pc0 = self.pc0.scaled(0.5);
            self.aged = self.aged.scaled(0.5);
        }
    }
}
