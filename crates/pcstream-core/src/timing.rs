//! FEMU-style timing: every die has a next-free time; reads, programs, erases and GC copies
//! occupy dies. Channel transfer time is not modelled (the die operation dominates for the
//! default latencies). All times are nanoseconds of simulated time.

use crate::config::Timing;
use crate::units::DieId;

pub struct DieClock {
    free_at: Vec<u64>,
    pub read_ns: u64,
    pub program_ns: u64,
    pub erase_ns: u64,
}

impl DieClock {
    pub fn new(dies: u32, t: &Timing) -> DieClock {
        DieClock {
            free_at: vec![0; dies as usize],
            read_ns: (t.read_us * 1000.0).round() as u64,
            program_ns: (t.program_us * 1000.0).round() as u64,
            erase_ns: (t.erase_us * 1000.0).round() as u64,
        }
    }

    #[inline]
    fn occupy(&mut self, die: DieId, at: u64, dur: u64) -> u64 {
        let f = &mut self.free_at[die.0 as usize];
        let end = (*f).max(at) + dur;
        *f = end;
        end
    }

    /// Program one page on `die`, not before `at`; returns the completion time.
    #[inline]
    pub fn program(&mut self, die: DieId, at: u64) -> u64 {
        self.occupy(die, at, self.program_ns)
    }

    #[inline]
    pub fn read(&mut self, die: DieId, at: u64) -> u64 {
        self.occupy(die, at, self.read_ns)
    }

    #[inline]
    pub fn erase(&mut self, die: DieId, at: u64) -> u64 {
        self.occupy(die, at, self.erase_ns)
    }

    pub fn bytes(&self) -> usize {
        self.free_at.len() * 8
    }
}

/// Closed-loop issue at a fixed queue depth: requests issue in trace order, at most `depth` are
/// outstanding, and a request issues as soon as a slot frees (never before its predecessor).
pub struct QueueSlots {
    /// Min-heap of completion times of the outstanding requests.
    heap: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
    depth: usize,
    last_issue_ns: u64,
    pub last_completion_ns: u64,
}

impl QueueSlots {
    pub fn new(depth: u32) -> QueueSlots {
        QueueSlots {
            heap: std::collections::BinaryHeap::with_capacity(depth as usize + 1),
            depth: depth as usize,
            last_issue_ns: 0,
            last_completion_ns: 0,
        }
    }

    /// Issue time of the next request.
    #[inline]
    pub fn issue(&mut self) -> u64 {
        if self.heap.len() >= self.depth {
            let freed = self.heap.pop().map_or(0, |r| r.0);
            self.last_issue_ns = self.last_issue_ns.max(freed);
        }
        self.last_issue_ns
    }

    /// Record the completion of the request just issued.
    #[inline]
    pub fn complete(&mut self, done_ns: u64) {
        self.heap.push(std::cmp::Reverse(done_ns));
        self.last_completion_ns = self.last_completion_ns.max(done_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_depth_one_serialises() {
        let mut q = QueueSlots::new(1);
        assert_eq!(q.issue(), 0);
        q.complete(100);
        assert_eq!(q.issue(), 100);
        q.complete(250);
        assert_eq!(q.issue(), 250);
    }

    #[test]
    fn queue_fills_then_waits_for_the_earliest_completion() {
        let mut q = QueueSlots::new(2);
        assert_eq!(q.issue(), 0);
        q.complete(300);
        assert_eq!(q.issue(), 0);
        q.complete(100);
        assert_eq!(q.issue(), 100);
        q.complete(400);
        assert_eq!(q.issue(), 300);
    }
}
