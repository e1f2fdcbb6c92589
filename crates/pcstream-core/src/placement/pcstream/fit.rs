//! `merge=fit_first` (and `merge=cost`, where streams pay): while the PCs with `n_min` lifetimes fit in the streams beside stream 0,
//! each has a stream of its own, and keeps it.

use super::params::Merge;
use super::PcStream;

/// The known PCs of one reclustering, as `recluster.rs` sorts them: (value, signature, entry).
type Known = [(f64, u64, usize)];

impl PcStream {
    /// Whether `known` PCs each get a stream of their own: `merge=fit_first` and they fit in
    /// the streams beside stream 0 (which stays for PC 0, the PCs still unknown and the aged
    /// state; substream slots are internal write points and do not count).
    pub(super) fn fits(&self, known: usize) -> bool {
        self.p.merge != Merge::MinGain && known < self.p.host_streams as usize
    }

    /// Each known PC to a stream of its own. A PC keeps the stream it holds unless a PC before
    /// it (in `known`'s order) holds the same one: a reclustering does not scatter the data of
    /// one PC over streams. The others take the lowest free streams in `known`'s order (mean
    /// lifetime, then signature: independent of the hash map). Every other PC to stream 0.
    pub(super) fn assign_own_streams(&mut self, known: &Known) {
        let streams = self.p.host_streams as usize;
        let mut taken = vec![false; streams];
        taken[0] = true;
        let held: Vec<Option<u8>> = known
            .iter()
            .map(|&(_, _, i)| {
                let e = &self.table.pcs[i];
                let s = e.stream as usize;
                let keep = e.clustered && s < streams && !taken[s];
                if keep {
                    taken[s] = true;
                }
                keep.then_some(e.stream)
            })
            .collect();
        for e in &mut self.table.pcs {
            e.clustered = false;
            e.stream = 0;
        }
        let mut free = (1..streams).filter(|&s| !taken[s]);
        let mut by_stream = vec![None; streams];
        for (&(x, _, i), h) in known.iter().zip(held) {
            let s = h.unwrap_or_else(|| free.next().expect("the known PCs fit") as u8);
            let e = &mut self.table.pcs[i];
            e.stream = s;
            e.clustered = true;
            e.joined_lg = f32::NAN;
            by_stream[s as usize] = Some(x);
        }
        self.owned = by_stream.iter().map(Option::is_some).collect();
        self.owned[0] = true;
        // One centroid per PC, in stream order: what a saved table shows.
        self.centroids = by_stream.into_iter().flatten().collect();
        self.first_stream = 1;
        self.kmeans_groups = known.len();
    }

    /// Table entry `i`, known since the last reclustering while every known PC has a stream of
    /// its own, takes the lowest free stream; none free: it waits in stream 0 for a
    /// reclustering at the next check, which clusters.
    pub(super) fn take_free_stream(&mut self, i: usize) {
        if self.p.merge == Merge::Cost {
            // Whether its stream pays is for the model: the next check reclusters.
            self.recluster_soon = true;
            return;
        }
        let Some(s) = self.owned.iter().position(|&t| !t) else {
            self.recluster_soon = true;
            return;
        };
        self.owned[s] = true;
        let e = &mut self.table.pcs[i];
        e.stream = s as u8;
        e.clustered = true;
        e.joined_lg = f32::NAN;
    }
}
