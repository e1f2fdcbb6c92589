//! The PC table: lifetime statistics per program context, bounded by CLOCK eviction, and the
//! persistent table (`--table`) saved as JSON.

// No adversary picks the PC signatures: a fast non-keyed hasher is enough.
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::placement::cluster::Moments;

/// Version of the saved table's JSON layout; a table in another is refused.
pub const TABLE_FORMAT: u32 = 1;

/// Bytes of one hash index slot: the signature (u64) and the entry's index (u32).
const INDEX_SLOT_BYTES: usize = 8 + 4;

/// One PC-stream table entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PcEntry {
    #[serde(with = "sig_string")]
    pub sig: u64,
    /// Completed lifetimes.
    pub n: u64,
    /// Σℓ and Σℓ² in host pages.
    pub sum_l: u64,
    pub sum_l2: f64,
    /// Σ log2 ℓ and Σ (log2 ℓ)² (ℓ ≥ 1): the spread of this PC's lifetimes on the clustering's
    /// scale, which decides whether two clusters are worth two streams.
    #[serde(default)]
    pub sum_lg: f64,
    #[serde(default)]
    pub sum_lg2: f64,
    pub stream: u8,
    /// Placed by the last clustering or by nearest centroid since (else stream 0).
    #[serde(skip)]
    pub clustered: bool,
    /// Host pages written by this PC (all time, and since the last reclustering).
    #[serde(skip)]
    pub writes: u64,
    #[serde(skip)]
    pub recent_pages: u64,
    /// log2 of the mean lifetime with which the PC joined the nearest centroid since the last
    /// reclustering (NaN: placed by the reclustering itself, or not yet).
    #[serde(skip)]
    pub joined_lg: f32,
    /// CLOCK reference bit: set when the PC writes, cleared by the eviction hand.
    #[serde(skip)]
    pub referenced: bool,
}

/// Signatures as decimal strings: JSON readers that hold numbers as doubles would round them.
mod sig_string {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl PcEntry {
    /// A PC seen for the first time.
    fn fresh(sig: u64) -> PcEntry {
        PcEntry {
            sig,
            n: 0,
            sum_l: 0,
            sum_l2: 0.0,
            sum_lg: 0.0,
            sum_lg2: 0.0,
            stream: 0,
            clustered: false,
            writes: 0,
            recent_pages: 0,
            joined_lg: f32::NAN,
            // Unreferenced until used again: one-off PCs are the first to go.
            referenced: false,
        }
    }
    pub fn mean(&self) -> f64 {
        self.sum_l as f64 / self.n as f64
    }
    /// Count and moments of the log2 lifetimes.
    pub fn moments(&self) -> Moments {
        Moments {
            n: self.n as f64,
            s1: self.sum_lg,
            s2: self.sum_lg2,
        }
    }
    /// Coefficient of variation of the lifetimes (0 if undefined).
    pub fn cv(&self) -> f64 {
        if self.n == 0 || self.sum_l == 0 {
            return 0.0;
        }
        let m = self.mean();
        let var = (self.sum_l2 / self.n as f64 - m * m).max(0.0);
        var.sqrt() / m
    }
    /// One more completed lifetime of `l` host pages (`lg` = log2 max(ℓ, 1)).
    pub fn add_lifetime(&mut self, l: u64, lg: f64) {
        self.n += 1;
        self.sum_l = self.sum_l.saturating_add(l);
        self.sum_l2 += (l as f64) * (l as f64);
        self.sum_lg += lg;
        self.sum_lg2 += lg * lg;
    }
    /// `stat_decay`: halve the statistics, so older lifetimes weigh less.
    pub fn halve(&mut self) {
        self.n /= 2;
        self.sum_l /= 2;
        self.sum_l2 /= 2.0;
        self.sum_lg /= 2.0;
        self.sum_lg2 /= 2.0;
    }
}

/// The saved table (`save_state` / `load_state`).
#[derive(Serialize, Deserialize)]
pub struct SavedTable {
    pub format: u32,
    pub policy: String,
    pub centroids: Vec<f64>,
    pub pcs: Vec<PcEntry>,
}

/// The PC entries and their hash index, at most `max_pcs` of them (0: unbounded).
pub struct PcTable {
    pub pcs: Vec<PcEntry>,
    index: FxHashMap<u64, u32>,
    max_pcs: usize,
    /// The CLOCK hand over `pcs`.
    hand: usize,
    evictions: u64,
}

impl PcTable {
    pub fn new(max_pcs: usize) -> PcTable {
        PcTable {
            pcs: Vec::new(),
            index: FxHashMap::default(),
            max_pcs,
            hand: 0,
            evictions: 0,
        }
    }

    /// Index of `sig`'s entry, if it has one.
    pub fn get(&self, sig: u64) -> Option<usize> {
        self.index.get(&sig).map(|&i| i as usize)
    }

    /// Index of `sig`'s entry, made (evicting one when the table is full) if it has none.
    pub fn entry(&mut self, sig: u64) -> usize {
        if let Some(&i) = self.index.get(&sig) {
            self.pcs[i as usize].referenced = true;
            return i as usize;
        }
        let fresh = PcEntry::fresh(sig);
        let i = if self.max_pcs == 0 || self.pcs.len() < self.max_pcs {
            self.pcs.push(fresh);
            self.pcs.len() - 1
        } else {
            // Table full: CLOCK (second chance) approximates LRU in O(1) amortised. The evicted
            // PC's pages still in flight give no lifetime feedback any more (its entry is gone).
            let i = loop {
                let h = self.hand;
                self.hand = (self.hand + 1) % self.pcs.len();
                if std::mem::take(&mut self.pcs[h].referenced) {
                    continue;
                }
                break h;
            };
            self.index.remove(&self.pcs[i].sig);
            self.pcs[i] = fresh;
            self.evictions += 1;
            i
        };
        self.index.insert(sig, i as u32);
        debug_assert_eq!(self.index.len(), self.pcs.len());
        i
    }

    /// Empty the table (before loading a saved one).
    pub fn clear(&mut self) {
        self.index.clear();
        self.pcs.clear();
    }

    /// PCs evicted so far.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Entries + hash index slots (key, value).
    pub fn state_bytes(&self) -> usize {
        self.pcs.capacity() * std::mem::size_of::<PcEntry>()
            + self.index.capacity() * INDEX_SLOT_BYTES
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_table_entry_is_the_72_bytes_the_docs_give() {
        // docs/POLICIES.md and the module's "State" line quote 72 B per PC.
        assert_eq!(std::mem::size_of::<super::PcEntry>(), 72);
    }
}
