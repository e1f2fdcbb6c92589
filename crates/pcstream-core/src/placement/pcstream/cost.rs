//! `merge=cost`: what the device's GC is seen doing, and the merge of PCs or clusters whose
//! streams do not pay by the placement cost model (`placement::open_cost`).

use super::PcStream;
use crate::placement::cluster::{Clustering, Moments};
use crate::placement::open_cost::{Device, Group};

/// The known PCs of one reclustering, as `recluster.rs` sorts them: (value, signature, entry).
type Known = [(f64, u64, usize)];

/// GC as the policy sees it: host pages, pages GC copied, units it reclaimed and their ages
/// (host pages from opening to reclaim), all halved once a period so recent GC counts most.
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct GcSeen {
    host_pages: f64,
    copied: f64,
    units: f64,
    age_sum: f64,
    /// Logical time of the last halving.
    halved_at: u64,
}

impl GcSeen {
    pub fn host_page(&mut self) {
        self.host_pages += 1.0;
    }

    pub fn reclaimed(&mut self, copied: u32, age: u64) {
        self.copied += copied as f64;
        self.units += 1.0;
        self.age_sum += age as f64;
    }

    /// Whether GC has reclaimed a unit yet (else the model has no device to decide on).
    pub fn seen(&self) -> bool {
        self.units > 0.0
    }

    /// Halve every count once `period` host pages have passed since the last halving.
    pub fn decay(&mut self, now: u64, period: u64) {
        if now >= self.halved_at + period {
            self.host_pages *= 0.5;
            self.copied *= 0.5;
            self.units *= 0.5;
            self.age_sum *= 0.5;
            self.halved_at = now;
        }
    }

    /// The device the model decides on, `open` write points held open with the groups it
    /// weighs (stream 0 and the internal ones included).
    fn device(&self, budget: u32, open: usize) -> Device {
        Device {
            copy_rate: if self.host_pages > 0.0 {
                self.copied / self.host_pages
            } else {
                0.0
            },
            gc_age: if self.units > 0.0 {
                self.age_sum / self.units
            } else {
                0.0
            },
            slack_units: budget as f64 - open as f64 + 1.0,
        }
    }
}

impl PcStream {
    /// `merge=cost`: the group of each cluster of `c` after adjacent clusters (in lifetime order)
    /// merged while the cheapest separation left does not pay (`Device::net` < 0); the moments
    /// of every known PC's log2 lifetimes together.
    pub(super) fn merge_by_cost(&self, known: &Known, c: &Clustering) -> (Vec<u32>, Moments) {
        if !self.gc_seen.seen() {
            // No GC yet, so no measure of what a stream costs: merged as `min_gain` merges.
            return self.merge(known, c);
        }
        let host =
            self.pc0_writes as f64 + self.table.pcs.iter().map(|e| e.writes as f64).sum::<f64>();
        // Each cluster a mixture of its PCs, those whose mean log2 lifetimes share an octave
        // pooled (a cluster may hold thousands of PCs; the model needs their spread, not each).
        let mut bins: Vec<Vec<(i64, Group)>> = vec![Vec::new(); c.centroids.len()];
        let mut samples = Moments::default();
        for (&(_, _, i), &g) in known.iter().zip(&c.labels) {
            let e = &self.table.pcs[i];
            let m = e.moments();
            samples = samples + m;
            let pc = Group::from_moments(&m, e.writes as f64, host);
            let octave = pc.mu.floor() as i64;
            let bin = &mut bins[g as usize];
            match bin.iter_mut().find(|(o, _)| *o == octave) {
                Some((_, b)) => *b = b.pooled(&pc),
                None => bin.push((octave, pc)),
            }
        }
        // Groups in cluster order, each with the clusters it holds.
        let mut merged: Vec<(Vec<Group>, Vec<usize>)> = bins
            .into_iter()
            .enumerate()
            .map(|(k, b)| {
                assert!(!b.is_empty(), "a clustering leaves no cluster empty");
                (b.into_iter().map(|(_, g)| g).collect(), vec![k])
            })
            .collect();
        let internal = self.internal_slots();
        while merged.len() > 1 {
            // Open: stream 0, the groups, the internal write points.
            let dev = self
                .gc_seen
                .device(self.p.write_point_budget, merged.len() + 1 + internal);
            let (j, net) = (0..merged.len() - 1)
                .map(|j| (j, dev.net(&merged[j].0, &merged[j + 1].0)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("two groups at least");
            if net >= 0.0 {
                break;
            }
            let (b, ks) = merged.remove(j + 1);
            merged[j].0.extend(b);
            merged[j].1.extend(ks);
        }
        let mut label = vec![0u32; c.centroids.len()];
        for (g, (_, ks)) in merged.iter().enumerate() {
            for &k in ks {
                label[k] = g as u32;
            }
        }
        (label, samples)
    }

    /// Internal write points the policy holds besides the host streams (substream slots).
    fn internal_slots(&self) -> usize {
        if self.p.substreams.policy_slots() {
            self.p.max_substreams
        } else {
            0
        }
    }
}
