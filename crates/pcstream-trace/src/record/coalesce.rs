//! Coalescing of runs of small contiguous writes into fewer file-level rows, streaming.
//!
//! Unbuffered or line-buffered programs (cc1 writing its assembly, Redis's RDB code through
//! stdio) issue millions of writes of a few bytes: 7 M records for 26 MB in a GCC build, 35.7 M
//! in one Redis run. A row of the coalesced trace is one thread's contiguous writes to one file
//! from one PC: the same descriptor, file and flags, each write starting where the previous one
//! ended, at most [`MAX_SPAN_NS`] after the first and [`MAX_RUN_BYTES`] in all. A change of PC
//! starts a new row, and so does any other event of the thread or any event on the file by
//! another thread. So the bytes of every PC, every page's last writer and the order of every
//! other event are kept; only the time at which a row's later bytes were written moves earlier
//! (to its first write's), by at most [`MAX_SPAN_NS`].
//!
//! [`Coalescer`] takes events in time order and hands rows on in the order of their first write.
//! Its state is the open run of each thread and the rows that came after the oldest open run's
//! first write (held back to keep that order): a run ends once it can no longer grow (older than
//! the span), and a run holding back more than [`WINDOW_MAX`] rows is ended early (a row split in
//! two, nothing lost), so memory does not follow the trace length.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::filetrace::{FileEvent, FileOp};

/// A row spans at most this much time (it carries the time of its first write).
pub const MAX_SPAN_NS: u64 = 50_000_000;
/// A row holds at most this many bytes.
pub const MAX_RUN_BYTES: u64 = 4 << 20;
/// Most rows held back behind an open run before that run is ended.
pub const WINDOW_MAX: usize = 1 << 14;

type Thread = (u32, u32);
type FileKey = (u64, u64);

/// An open run: the row so far and its place among the rows.
struct Run {
    row: FileEvent,
    slot: u64,
}

impl Run {
    /// Whether `ev`, a write of the run's thread, continues the run: the same file, descriptor,
    /// flags and PC, right at the run's end, within the span and size limits.
    fn takes(&self, ev: &FileEvent) -> bool {
        let f = &self.row;
        ev.fd == f.fd
            && ev.dev == f.dev
            && ev.ino == f.ino
            && ev.path == f.path
            && ev.flags == f.flags
            && ev.pc == f.pc
            && ev.offset == f.offset + f.len
            && ev.ts_ns.saturating_sub(f.ts_ns) <= MAX_SPAN_NS
            && f.len + ev.len <= MAX_RUN_BYTES
    }
}

/// A row waiting to be handed on: done, or the open run of a thread.
enum Slot {
    Done(FileEvent),
    Open(Thread),
}

/// The streaming coalescer; see the module documentation.
#[derive(Default)]
pub struct Coalescer {
    open: FxHashMap<Thread, Run>,
    /// The thread whose open run is on a file (at most one: another thread's event ends it).
    run_on: FxHashMap<FileKey, Thread>,
    /// Rows from the oldest open run's on, in order; `base` is the index of the first.
    window: VecDeque<Slot>,
    base: u64,
    folded: u64,
}

impl Coalescer {
    pub fn new() -> Coalescer {
        Coalescer::default()
    }

    /// Write events folded into an earlier row so far.
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// Rows held back now (the reorder window).
    pub fn held(&self) -> usize {
        self.window.len()
    }

    /// Take the next event (in time order); rows that are complete go to `emit`, in order.
    pub fn push<E>(
        &mut self,
        ev: FileEvent,
        emit: &mut impl FnMut(FileEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        self.drain(ev.ts_ns, emit)?;
        let thread = (ev.pid, ev.tid);
        let write = ev.op == FileOp::Write && ev.len > 0 && ev.ino != 0;
        if write {
            if let Some(run) = self.open.get_mut(&thread) {
                if run.takes(&ev) {
                    run.row.len += ev.len;
                    self.folded += 1;
                    return Ok(());
                }
            }
        }
        self.close(thread);
        if ev.ino != 0 {
            if let Some(&other) = self.run_on.get(&(ev.dev, ev.ino)) {
                self.close(other);
            }
        }
        let slot = self.base + self.window.len() as u64;
        if write {
            self.window.push_back(Slot::Open(thread));
            self.open.insert(thread, Run { row: ev, slot });
            self.run_on.insert((ev.dev, ev.ino), thread);
        } else {
            self.window.push_back(Slot::Done(ev));
        }
        self.drain(ev.ts_ns, emit)
    }

    /// End every open run and hand on the remaining rows; returns the write events folded.
    pub fn finish<E>(
        mut self,
        emit: &mut impl FnMut(FileEvent) -> Result<(), E>,
    ) -> Result<u64, E> {
        let threads: Vec<Thread> = self.open.keys().copied().collect();
        for t in threads {
            self.close(t);
        }
        self.drain(0, emit)?;
        debug_assert!(self.window.is_empty());
        Ok(self.folded)
    }

    /// End `thread`'s open run, if any: its row is complete.
    fn close(&mut self, thread: Thread) {
        if let Some(run) = self.open.remove(&thread) {
            self.run_on.remove(&(run.row.dev, run.row.ino));
            self.window[(run.slot - self.base) as usize] = Slot::Done(run.row);
        }
    }

    /// Hand on the complete rows at the front; end a front run that can no longer grow at time
    /// `now` or that holds back too many rows.
    fn drain<E>(
        &mut self,
        now: u64,
        emit: &mut impl FnMut(FileEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        loop {
            match self.window.front() {
                Some(Slot::Done(_)) => {
                    let Some(Slot::Done(row)) = self.window.pop_front() else {
                        unreachable!("the front is a done row")
                    };
                    self.base += 1;
                    emit(row)?;
                }
                Some(&Slot::Open(t)) => {
                    let first = self.open[&t].row.ts_ns;
                    if now.saturating_sub(first) > MAX_SPAN_NS || self.window.len() > WINDOW_MAX {
                        self.close(t);
                    } else {
                        return Ok(());
                    }
                }
                None => return Ok(()),
            }
        }
    }
}

/// Coalesce `rows` (in time order) at once; returns the rows, in time order, and how many write
/// events were folded into others.
pub fn coalesce(rows: Vec<FileEvent>) -> (Vec<FileEvent>, u64) {
    let mut out = Vec::with_capacity(rows.len());
    let mut emit = |e: FileEvent| -> Result<(), std::convert::Infallible> {
        out.push(e);
        Ok(())
    };
    let mut c = Coalescer::new();
    for ev in rows {
        let Ok(()) = c.push(ev, &mut emit);
    }
    let Ok(folded) = c.finish(&mut emit);
    debug_assert!(out.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    (out, folded)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const PAGE: u64 = pcstream_core::units::PAGE_BYTES;

    fn w(ts: u64, tid: u32, ino: u64, offset: u64, len: u64, pc: u64) -> FileEvent {
        FileEvent {
            ts_ns: ts,
            pid: 1,
            tid,
            op: FileOp::Write,
            fd: 3,
            dev: 7,
            ino,
            offset,
            len,
            pc,
            flags: 0,
            path: ino as u32,
            path2: 0,
        }
    }

    fn ev(ts: u64, tid: u32, op: FileOp, ino: u64) -> FileEvent {
        FileEvent {
            op,
            len: 0,
            ..w(ts, tid, ino, 0, 0, 0)
        }
    }

    fn bytes(rows: &[FileEvent]) -> u64 {
        rows.iter()
            .filter(|e| e.op == FileOp::Write)
            .map(|e| e.len)
            .sum()
    }

    #[test]
    fn tiny_contiguous_writes_become_one_row() {
        let rows: Vec<_> = (0..1000).map(|i| w(i * 10, 1, 5, i * 3, 3, 42)).collect();
        let (out, folded) = coalesce(rows);
        assert_eq!(out.len(), 1);
        assert_eq!(folded, 999);
        assert_eq!(
            (out[0].offset, out[0].len, out[0].pc, out[0].ts_ns),
            (0, 3000, 42, 0)
        );
    }

    #[test]
    fn a_change_of_pc_starts_a_new_row() {
        // Two PCs within one page stay two rows (the old per-page coalescer made them one).
        let rows = vec![
            w(0, 1, 5, 0, 100, 1),
            w(1, 1, 5, 100, 5000, 2),
            w(2, 1, 5, 5100, 3100, 2),
            w(3, 1, 5, 8200, 50, 3),
            w(4, 1, 5, 8250, 50, 3),
        ];
        let (out, folded) = coalesce(rows);
        let got: Vec<_> = out
            .iter()
            .map(|e| (e.offset, e.len, e.pc, e.ts_ns))
            .collect();
        assert_eq!(
            got,
            vec![(0, 100, 1, 0), (100, 8100, 2, 1), (8200, 100, 3, 3)]
        );
        assert_eq!(folded, 2);
        assert_eq!(bytes(&out), 8300);
    }

    #[test]
    fn other_events_end_a_run_in_order() {
        let rows = vec![
            w(0, 1, 5, 0, 10, 1),
            w(1, 1, 5, 10, 10, 1),
            // Another thread writing another file does not end it...
            w(2, 2, 6, 0, 10, 9),
            w(3, 1, 5, 20, 10, 1),
            // ...an fsync of the same thread does.
            ev(4, 1, FileOp::Fsync, 5),
            w(5, 1, 5, 30, 10, 1),
            // Another thread's event on the same file ends the run too.
            ev(6, 2, FileOp::Truncate, 5),
            w(7, 1, 5, 40, 10, 1),
            // A gap in offsets starts a new run.
            w(8, 1, 5, 60, 10, 1),
        ];
        let (out, folded) = coalesce(rows);
        let got: Vec<_> = out
            .iter()
            .map(|e| (e.ts_ns, e.op, e.offset, e.len))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, FileOp::Write, 0, 30),
                (2, FileOp::Write, 0, 10),
                (4, FileOp::Fsync, 0, 0),
                (5, FileOp::Write, 30, 10),
                (6, FileOp::Truncate, 0, 0),
                (7, FileOp::Write, 40, 10),
                (8, FileOp::Write, 60, 10),
            ]
        );
        assert_eq!(folded, 2);
    }

    #[test]
    fn runs_are_bounded_in_time_and_size() {
        let rows: Vec<_> = (0..4)
            .map(|i| w(i * (MAX_SPAN_NS / 2 + 1), 1, 5, i * 10, 10, 1))
            .collect();
        let (out, _) = coalesce(rows);
        assert_eq!(out.iter().map(|e| e.len).collect::<Vec<_>>(), vec![20, 20]);
        let big = MAX_RUN_BYTES / 2;
        let rows: Vec<_> = (0..3).map(|i| w(i, 1, 5, i * big, big, 1)).collect();
        let (out, _) = coalesce(rows);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn the_reorder_window_stays_small() {
        fn sink(out: &mut Vec<FileEvent>) -> impl FnMut(FileEvent) -> Result<(), ()> + '_ {
            |e| {
                out.push(e);
                Ok(())
            }
        }
        // Thread 1 writes once and falls silent; thread 2 writes 100 k separate rows. The open
        // run ends once it is older than the span, so the rows behind it are handed on.
        let mut out = Vec::new();
        let mut c = Coalescer::new();
        c.push(w(0, 1, 5, 0, 10, 1), &mut sink(&mut out)).unwrap();
        let mut most = 0;
        for i in 1..100_000u64 {
            c.push(w(i * 1000, 2, 6, i * 100, 10, 2), &mut sink(&mut out))
                .unwrap();
            most = most.max(c.held());
        }
        assert!(most <= MAX_SPAN_NS as usize / 1000 + 2, "held {most}");
        assert!(out.len() > 99_000 - MAX_SPAN_NS as usize / 1000);
        c.finish(&mut sink(&mut out)).unwrap();
        assert_eq!(out.len(), 100_000);
        assert!(out.windows(2).all(|p| p[0].ts_ns <= p[1].ts_ns));
        // Without time passing, the window's size limit ends the run (split, nothing lost).
        let mut out = Vec::new();
        let mut c = Coalescer::new();
        c.push(w(0, 1, 5, 0, 10, 1), &mut sink(&mut out)).unwrap();
        for i in 0..(WINDOW_MAX as u64 + 10) {
            c.push(w(1, 2, 6, i * 100, 10, 2), &mut sink(&mut out))
                .unwrap();
            assert!(c.held() <= WINDOW_MAX + 1);
        }
        c.push(w(1, 1, 5, 10, 10, 1), &mut sink(&mut out)).unwrap();
        c.finish(&mut sink(&mut out)).unwrap();
        let t1: Vec<_> = out
            .iter()
            .filter(|e| e.tid == 1)
            .map(|e| (e.offset, e.len))
            .collect();
        assert_eq!(t1, vec![(0, 10), (10, 10)], "split in two");
        assert!(out.windows(2).all(|p| p[0].ts_ns <= p[1].ts_ns));
    }

    /// Bytes per (PC, file), and the last writer's PC of every page of every file.
    #[allow(clippy::type_complexity)]
    fn accounting(rows: &[FileEvent]) -> (HashMap<(u64, u64), u64>, HashMap<(u64, u64), u64>) {
        let mut bytes = HashMap::new();
        let mut owners = HashMap::new();
        for e in rows.iter().filter(|e| e.op == FileOp::Write) {
            *bytes.entry((e.pc, e.ino)).or_insert(0) += e.len;
            for p in e.offset / PAGE..=(e.offset + e.len - 1) / PAGE {
                owners.insert((e.ino, p), e.pc);
            }
        }
        (bytes, owners)
    }

    #[test]
    fn bytes_per_pc_and_page_owners_are_kept_on_random_interleavings() {
        // A small LCG: deterministic, no dependency.
        let mut x: u64 = 12345;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut rows = Vec::new();
        let mut ends = [0u64; 3];
        let mut pcs = [1u64; 3];
        for ts in 0..20_000u64 {
            let tid = next(3) as u32;
            let ino = 5 + next(2);
            if next(20) == 0 {
                rows.push(ev(ts * 1000, tid, FileOp::Fsync, ino));
                continue;
            }
            let at = if next(10) == 0 {
                next(1 << 16)
            } else {
                ends[tid as usize]
            };
            // Small writes, PCs that change now and then, several PCs within a page.
            let len = 1 + next(300);
            if next(6) == 0 {
                pcs[tid as usize] = 1 + next(3);
            }
            ends[tid as usize] = at + len;
            rows.push(w(ts * 1000, tid, ino, at, len, pcs[tid as usize]));
        }
        let (out, folded) = coalesce(rows.clone());
        assert!(folded > 2000, "folded {folded}");
        assert_eq!(out.len() as u64 + folded, rows.len() as u64);
        assert!(out.len() < rows.len());
        assert_eq!(bytes(&out), bytes(&rows));
        let (b0, o0) = accounting(&rows);
        let (b1, o1) = accounting(&out);
        assert_eq!(b1, b0, "bytes per (PC, file)");
        assert_eq!(o1, o0, "every page's last writer");
        let fsyncs = |r: &[FileEvent]| r.iter().filter(|e| e.op == FileOp::Fsync).count();
        assert_eq!(fsyncs(&out), fsyncs(&rows));
        assert!(out.windows(2).all(|p| p[0].ts_ns <= p[1].ts_ns));
    }
}
