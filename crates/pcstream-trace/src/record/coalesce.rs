//! Coalescing of runs of small contiguous writes into fewer file-level records.
//!
//! Unbuffered or line-buffered programs (cc1 writing its assembly, shells with `printf`) issue
//! millions of writes of a few bytes: 7 M records for 26 MB in a GCC build. What the file-system
//! model needs from them is which pages became dirty, when, and which PC wrote each page last
//! (the model keeps the last writer's PC per dirty page). A run of contiguous writes of one thread
//! to one file, close in time, is therefore replaced by one record per stretch of pages whose
//! last writer has the same PC. Bytes, page contents' owners and the order of every other event
//! are kept; only the time at which a run's later bytes become dirty moves earlier, by at most
//! [`MAX_SPAN_NS`].

use std::collections::HashMap;

use crate::filetrace::{FileEvent, FileOp};

const PAGE: u64 = pcstream_core::units::PAGE_BYTES;
/// A run spans at most this much time (its records carry the time of their first write).
pub const MAX_SPAN_NS: u64 = 50_000_000;
/// A run holds at most this many bytes.
pub const MAX_RUN_BYTES: u64 = 4 << 20;

type Thread = (u32, u32);
type FileKey = (u64, u64);

struct Run {
    /// Input index of each write, and the write.
    writes: Vec<(usize, FileEvent)>,
    bytes: u64,
}

impl Run {
    fn first(&self) -> &FileEvent {
        &self.writes[0].1
    }

    fn end(&self) -> u64 {
        let last = &self.writes[self.writes.len() - 1].1;
        last.offset + last.len
    }

    /// Whether `ev` continues this run: the same thread (the caller's key), file, descriptor and
    /// flags, right at the run's end, within the span and size limits. The PC may differ.
    fn takes(&self, ev: &FileEvent) -> bool {
        let f = self.first();
        ev.fd == f.fd
            && ev.dev == f.dev
            && ev.ino == f.ino
            && ev.path == f.path
            && ev.flags == f.flags
            && ev.offset == self.end()
            && ev.ts_ns.saturating_sub(f.ts_ns) <= MAX_SPAN_NS
            && self.bytes + ev.len <= MAX_RUN_BYTES
    }

    /// The run's records, each tagged with the input index of its first write: one per stretch
    /// of pages whose last writer has the same PC.
    fn records(self, out: &mut Vec<(usize, FileEvent)>) {
        if self.writes.len() == 1 {
            out.push(self.writes[0]);
            return;
        }
        // One record per page (tagged with its first write), then stretches of pages with the
        // same last writer merged; a page's record ends where its last write in the run ends.
        let first = out.len();
        for &(idx, w) in &self.writes {
            let mut at = w.offset;
            let end = w.offset + w.len;
            while at < end {
                let seg_end = end.min((at / PAGE + 1) * PAGE);
                match out[first..].last_mut() {
                    Some((_, p)) if (p.offset + p.len - 1) / PAGE == at / PAGE => {
                        p.len = seg_end - p.offset;
                        p.pc = w.pc;
                    }
                    _ => out.push((
                        idx,
                        FileEvent {
                            offset: at,
                            len: seg_end - at,
                            ..w
                        },
                    )),
                }
                at = seg_end;
            }
        }
        let pages = out.split_off(first);
        for (idx, p) in pages {
            match out[first..].last_mut() {
                Some((_, c)) if c.pc == p.pc => c.len = p.offset + p.len - c.offset,
                _ => out.push((idx, p)),
            }
        }
    }
}

/// Coalesce `rows` (in time order); returns the new rows, in time order, and how many write
/// records were folded into others.
pub fn coalesce(rows: Vec<FileEvent>) -> (Vec<FileEvent>, u64) {
    let n = rows.len();
    let mut out: Vec<(usize, FileEvent)> = Vec::with_capacity(n);
    let mut open: HashMap<Thread, Run> = HashMap::new();
    // The thread whose open run is on a file (at most one: another thread's event ends it).
    let mut run_on: HashMap<FileKey, Thread> = HashMap::new();
    let close = |thread: Thread,
                 open: &mut HashMap<Thread, Run>,
                 run_on: &mut HashMap<FileKey, Thread>,
                 out: &mut Vec<(usize, FileEvent)>| {
        if let Some(run) = open.remove(&thread) {
            let f = run.first();
            run_on.remove(&(f.dev, f.ino));
            run.records(out);
        }
    };
    for (i, ev) in rows.into_iter().enumerate() {
        let thread = (ev.pid, ev.tid);
        let write = ev.op == FileOp::Write && ev.len > 0 && ev.ino != 0;
        if write {
            if let Some(run) = open.get_mut(&thread) {
                if run.takes(&ev) {
                    run.bytes += ev.len;
                    run.writes.push((i, ev));
                    continue;
                }
            }
        }
        close(thread, &mut open, &mut run_on, &mut out);
        if ev.ino != 0 {
            if let Some(&other) = run_on.get(&(ev.dev, ev.ino)) {
                close(other, &mut open, &mut run_on, &mut out);
            }
        }
        if write {
            run_on.insert((ev.dev, ev.ino), thread);
            open.insert(
                thread,
                Run {
                    writes: vec![(i, ev)],
                    bytes: ev.len,
                },
            );
        } else {
            out.push((i, ev));
        }
    }
    let mut rest: Vec<Thread> = open.keys().copied().collect();
    rest.sort_unstable();
    for thread in rest {
        close(thread, &mut open, &mut run_on, &mut out);
    }
    // Input order is time order, so a record's first write index places it.
    out.sort_by_key(|(i, _)| *i);
    debug_assert!(out.windows(2).all(|w| w[0].1.ts_ns <= w[1].1.ts_ns));
    let folded = (n - out.len()) as u64;
    (out.into_iter().map(|(_, e)| e).collect(), folded)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn tiny_contiguous_writes_become_one_record() {
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
    fn each_page_keeps_its_last_writers_pc() {
        // Page 0: PCs 1 then 2 (last 2); page 1: PC 2 only; page 2: PC 2 then 3 (last 3).
        let rows = vec![
            w(0, 1, 5, 0, 100, 1),
            w(1, 1, 5, 100, 5000, 2),
            w(2, 1, 5, 5100, 3100, 2),
            w(3, 1, 5, 8200, 50, 3),
        ];
        let (out, _) = coalesce(rows);
        let got: Vec<_> = out
            .iter()
            .map(|e| (e.offset, e.len, e.pc, e.ts_ns))
            .collect();
        // Pages 0-1 (last writer 2) from the first write's time; page 2 (last writer 3) from
        // the time of its first byte's write.
        assert_eq!(got, vec![(0, 8192, 2, 0), (8192, 58, 3, 2)]);
        assert_eq!(bytes(&out), 8250);
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
    fn bytes_and_final_page_owners_are_kept_on_random_interleavings() {
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
        for ts in 0..5000u64 {
            let tid = next(3) as u32;
            let ino = 5 + next(2);
            if next(20) == 0 {
                rows.push(ev(ts, tid, FileOp::Fsync, ino));
                continue;
            }
            let at = if next(10) == 0 {
                next(1 << 16)
            } else {
                ends[tid as usize]
            };
            let len = 1 + next(300);
            ends[tid as usize] = at + len;
            rows.push(w(ts, tid, ino, at, len, 1 + next(3)));
        }
        // The last writer's PC of every page of every file, before and after.
        let owners = |rows: &[FileEvent]| {
            let mut m: HashMap<(u64, u64), u64> = HashMap::new();
            for e in rows.iter().filter(|e| e.op == FileOp::Write) {
                for p in e.offset / PAGE..=(e.offset + e.len - 1) / PAGE {
                    m.insert((e.ino, p), e.pc);
                }
            }
            m
        };
        let (out, folded) = coalesce(rows.clone());
        assert!(folded > 500, "folded {folded}");
        assert_eq!(bytes(&out), bytes(&rows));
        assert_eq!(owners(&out), owners(&rows));
        let fsyncs = |r: &[FileEvent]| r.iter().filter(|e| e.op == FileOp::Fsync).count();
        assert_eq!(fsyncs(&out), fsyncs(&rows));
    }
}
