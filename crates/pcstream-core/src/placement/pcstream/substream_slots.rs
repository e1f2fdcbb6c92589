//! pcstream's `high_variance` substream slots: which host streams send their GC survivors to a
//! substream, and which internal write point each survivor goes to.
//!
//! The policy has M internal write points after its N host streams (`N + 0 .. N + M`). They form
//! M / G slots of G write points each, one per GC generation: a selected host stream's survivors
//! go to generation 0 of its slot, a generation's survivors to the next, the last keeps its own
//! (G = 1, the default: a substream keeps its survivors). Which streams are selected is the
//! policy's rule (`substreams.rs`); this table keeps the assignment stable across reselections,
//! since every slot in use holds an open unit.

use crate::units::StreamId;

pub struct SubstreamSlots {
    /// Host streams N: internal write point `N + i` is index `i` of the slots' write points.
    host_streams: usize,
    /// Write points per slot (GC generations), G ≥ 1.
    generations: usize,
    /// Slots, M / G.
    slots: usize,
    /// Slot of each host stream whose survivors currently go to a substream.
    of: Vec<Option<u8>>,
}

impl SubstreamSlots {
    /// `write_points` internal write points (M) in slots of `generations` (G, dividing M).
    pub fn new(host_streams: usize, write_points: usize, generations: usize) -> SubstreamSlots {
        assert!(generations >= 1, "a slot has at least one generation");
        assert_eq!(write_points % generations, 0, "slots of whole generations");
        SubstreamSlots {
            host_streams,
            generations,
            slots: write_points / generations,
            of: vec![None; host_streams],
        }
    }

    /// Slots available (M / G): at most this many host streams get one.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Host streams that hold a slot.
    pub fn substreamed(&self) -> Vec<u8> {
        (0..self.of.len() as u8)
            .filter(|&s| self.of[s as usize].is_some())
            .collect()
    }

    /// Whether host stream `s` holds a slot.
    pub fn has(&self, s: usize) -> bool {
        self.of[s].is_some()
    }

    /// Give slots to `selected` host streams (at most `slots()`, by priority): streams that
    /// stay selected keep theirs (their open substream unit), the others take the freed slots.
    /// A reassigned slot's open unit then holds survivors of two streams, both long-lived.
    pub fn assign(&mut self, selected: &[usize]) {
        assert!(
            selected.len() <= self.slots,
            "at most `slots` streams are selected"
        );
        for s in 0..self.of.len() {
            if !selected.contains(&s) {
                self.of[s] = None;
            }
        }
        for &s in selected {
            if self.of[s].is_none() {
                let used: Vec<u8> = self.of.iter().flatten().copied().collect();
                let slot = (0..self.slots as u8)
                    .find(|k| !used.contains(k))
                    .expect("a free slot for every selected stream");
                self.of[s] = Some(slot);
            }
        }
    }

    /// Where the copies out of a victim of write point `victim_wp` go: a host stream's to
    /// generation 0 of its slot (or back to it without one), a generation's to the next.
    pub fn destination(&self, victim_wp: u8) -> StreamId {
        let (hs, g) = (self.host_streams, self.generations);
        let wp = victim_wp as usize;
        let to = match self.of.get(wp) {
            Some(&Some(k)) => hs + k as usize * g,
            Some(None) => wp,
            None if wp - hs < self.slots * g => {
                let (k, gen) = ((wp - hs) / g, (wp - hs) % g);
                hs + k * g + (gen + 1).min(g - 1)
            }
            None => wp,
        };
        StreamId(to as u8)
    }

    /// The host stream whose slot internal write point `wp` belongs to, if any.
    pub fn owner(&self, wp: u8) -> Option<usize> {
        let i = (wp as usize).checked_sub(self.host_streams)?;
        let k = (i / self.generations) as u8;
        (i < self.slots * self.generations)
            .then(|| self.of.iter().position(|&o| o == Some(k)))
            .flatten()
    }

    pub fn state_bytes(&self) -> usize {
        self.of.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_substream_keeps_its_survivors_or_moves_them_a_generation_on() {
        // Default: 4 host streams, 2 write points, one generation. Host stream 2 has slot 1
        // (write point 4 + 1); the substream's own survivors stay in it, a stream without a
        // slot keeps its own.
        let mut t = SubstreamSlots::new(4, 2, 1);
        t.assign(&[3, 2]);
        assert_eq!(t.substreamed(), vec![2, 3]);
        assert_eq!(t.destination(3), StreamId(4));
        assert_eq!(t.destination(2), StreamId(5));
        assert_eq!(t.destination(5), StreamId(5));
        assert_eq!(t.destination(1), StreamId(1));
        assert_eq!(t.owner(5), Some(2));
        assert_eq!(t.owner(1), None);
        // Four write points in generations of two: slot 0 = write points 4 (generation 0) and
        // 5 (1), slot 1 = 6 and 7. Survivors of a host stream start at generation 0 of its
        // slot, survivors of a generation move one on, the last keeps its own.
        let mut t = SubstreamSlots::new(4, 4, 2);
        assert_eq!(t.slots(), 2);
        t.assign(&[2, 1]);
        assert_eq!(t.destination(2), StreamId(4));
        assert_eq!(t.destination(4), StreamId(5));
        assert_eq!(t.destination(5), StreamId(5));
        assert_eq!(t.destination(1), StreamId(6));
        assert_eq!(t.destination(6), StreamId(7));
        assert_eq!(t.destination(7), StreamId(7));
        assert_eq!(t.destination(3), StreamId(3));
        assert_eq!(
            (t.owner(4), t.owner(5), t.owner(7)),
            (Some(2), Some(2), Some(1))
        );
    }

    #[test]
    fn a_stream_that_stays_selected_keeps_its_slot() {
        let mut t = SubstreamSlots::new(8, 2, 1);
        t.assign(&[5, 1]);
        assert_eq!(t.destination(5), StreamId(8));
        assert_eq!(t.destination(1), StreamId(9));
        // 1 stays, 5 leaves, 3 comes: 3 takes 5's freed slot, 1 keeps its own.
        t.assign(&[3, 1]);
        assert_eq!(t.destination(1), StreamId(9));
        assert_eq!(t.destination(3), StreamId(8));
        assert_eq!(t.destination(5), StreamId(5));
    }
}
