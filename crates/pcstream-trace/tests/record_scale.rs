//! The record conversion's memory does not grow with the number of records: a counting global
//! allocator measures the peak heap while synthetic shim logs of 0.5 M and 2 M small writes (4
//! processes of 4 threads, interleaved as the shim appends them) are indexed and converted, with
//! and without coalescing; the output is checked (rows, bytes, time order). One test function:
//! the allocator counts every thread of this binary.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use pcstream_trace::filetrace::{FileOp, FileTraceReader};
use pcstream_trace::record::shimlog::read_dir;
use pcstream_trace::record::synth::{write_synthetic, SynthSpec};
use pcstream_trace::record::write_file_trace;

/// The system allocator, counting the bytes in use and their peak.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                grew(new - l.size());
            } else {
                CURRENT.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Heap bytes above the level at the call, at their peak during `f`.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed) - base)
}

/// Peak heap of a conversion, whatever the number of records (measured: 26 MiB at both sizes
/// with a row per call, 11–13 MiB coalesced: per-stream read buffers, a chunk of rows, its Arrow
/// batch and the row group being encoded; the rows written are not held).
const BOUND: usize = 40 << 20;

/// (rows, write rows, write bytes) of a file trace, read back in batches, checking time order.
fn read_back(path: &Path) -> (u64, u64, u64) {
    let mut r = FileTraceReader::open(path).unwrap();
    let mut buf = Vec::new();
    let (mut rows, mut writes, mut bytes, mut last) = (0, 0, 0, 0);
    while r.next_batch(&mut buf).unwrap() {
        for e in &buf {
            assert!(e.ts_ns >= last, "row {rows} goes back in time");
            last = e.ts_ns;
            rows += 1;
            if e.op == FileOp::Write {
                writes += 1;
                bytes += e.len;
            }
        }
    }
    (rows, writes, bytes)
}

#[test]
fn conversion_memory_does_not_grow_with_the_records() {
    let mut peaks = Vec::new();
    for n in [500_000u64, 2_000_000] {
        let dir = tempfile::tempdir().unwrap();
        let spec = SynthSpec {
            processes: 4,
            threads: 4,
            records: n,
            seed: 3,
            step_ns: 400,
        };
        let t = write_synthetic(dir.path(), &spec).unwrap();
        assert!(t.records > n);
        for coalesce in [false, true] {
            let out = dir.path().join(format!("t{coalesce}.parquet"));
            let (s, peak) = peak_during(|| {
                let logs = read_dir(dir.path()).unwrap();
                write_file_trace(&logs, &out, "scale test", coalesce).unwrap()
            });
            eprintln!(
                "{n} records, coalesce {coalesce}: {} rows, peak heap {:.1} MiB",
                s.records,
                peak as f64 / (1 << 20) as f64
            );
            peaks.push(peak);
            assert_eq!((s.writes, s.write_bytes), (t.writes, t.write_bytes));
            assert_eq!(s.records + s.coalesced_writes, t.records);
            let (rows, writes, bytes) = read_back(&out);
            assert_eq!((rows, bytes), (s.records, t.write_bytes));
            if coalesce {
                assert!(
                    rows * 10 < t.records,
                    "{rows} rows for {} records",
                    t.records
                );
            } else {
                assert_eq!((rows, writes), (t.records, t.writes));
            }
            assert!(peak < BOUND, "peak heap {peak} bytes for {n} records");
        }
    }
    // 4× the records: the peak is about the same (the index grows by 16 bytes per buffer
    // append, the row group being encoded up to its 256 Ki rows).
    for k in 0..2 {
        let (small, large) = (peaks[k], peaks[k + 2]);
        assert!(
            large < small + small / 4 + (1 << 20),
            "peak {small} bytes at 0.5 M records, {large} at 2 M"
        );
    }
}
