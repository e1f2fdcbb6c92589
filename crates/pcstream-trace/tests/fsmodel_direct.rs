//! O_DIRECT in the file-system model: direct writes reach the device at the call (after the
//! dirty cached pages of their range), buffered writes at writeback, on one file.

use pcstream_core::request::{meta, Op, Request};
use pcstream_trace::filetrace::flags::VIA_DIRECT;
use pcstream_trace::filetrace::{FileEvent, FileOp};
use pcstream_trace::map::{FsModel, MapOptions, MapSummary};

const S: u64 = 1_000_000_000;
const PAGE: u64 = 4096;
const O_CREAT: u32 = 0o100;
const O_WRONLY: u32 = 0o1;
const O_DIRECT: u32 = 0o40_000;
/// Signatures of the writes, one per call site.
const BUFFERED_A: u64 = 0xa;
const DIRECT_B: u64 = 0xb;
const BUFFERED_C: u64 = 0xc;
const FLAGGED_D: u64 = 0xd;

fn event(ts_ns: u64, op: FileOp, fd: i32) -> FileEvent {
    FileEvent {
        ts_ns,
        pid: 7,
        tid: 7,
        op,
        fd,
        dev: 1,
        ino: 1,
        path: 1,
        ..Default::default()
    }
}

fn open(ts: u64, fd: i32, flags: u32) -> FileEvent {
    FileEvent {
        flags: O_CREAT | O_WRONLY | flags,
        ..event(ts, FileOp::Open, fd)
    }
}

fn write(ts: u64, fd: i32, page: u64, pages: u64, pc: u64, flags: u32) -> FileEvent {
    FileEvent {
        offset: page * PAGE,
        len: pages * PAGE,
        pc,
        flags,
        ..event(ts, FileOp::Write, fd)
    }
}

fn run(events: &[FileEvent]) -> (Vec<Request>, MapSummary) {
    let mut m = FsModel::new(MapOptions::from_mount_opts(262_144, "").unwrap()).unwrap();
    m.register_path(1, "/data/file");
    let mut out = Vec::new();
    for e in events {
        m.apply(e, &mut |r| out.push(r)).unwrap();
    }
    let s = m.finish(&mut |r| out.push(r)).unwrap();
    (out, s)
}

/// (time, first logical page of the file, pages, pc) of each data write, in issue order; the
/// logical page is found from the block the first write of each page landed on.
fn data(reqs: &[Request]) -> Vec<(u64, u64, u32, u64)> {
    reqs.iter()
        .filter(|r| r.op == Op::Write as u8 && r.meta == meta::DATA)
        .map(|r| (r.ts_ns, r.lpn, r.pages, r.pc))
        .collect()
}

#[test]
fn direct_writes_reach_the_device_at_the_call_after_the_dirty_pages_of_their_range() {
    let evs = vec![
        open(0, 3, 0),
        open(0, 4, O_DIRECT),
        // buffered: pages 0 and 1 dirty
        write(S / 2, 3, 0, 2, BUFFERED_A, 0),
        // direct over pages 1..3: the dirty page 1 goes first (its own PC), then 1 and 2 direct
        write(S, 4, 1, 2, DIRECT_B, 0),
        // buffered again over page 2: dirty, written by the flusher later
        write(2 * S, 3, 2, 1, BUFFERED_C, 0),
        // a write the capture marked direct (F_SETFL O_DIRECT on the buffered fd)
        write(3 * S, 3, 5, 1, FLAGGED_D, VIA_DIRECT),
    ];
    let (reqs, s) = run(&evs);
    let d = data(&reqs);
    // Nothing reaches the device before the direct write.
    assert!(d.iter().all(|w| w.0 >= S), "{d:?}");
    let at =
        |t: u64| -> Vec<(u32, u64)> { d.iter().filter(|w| w.0 == t).map(|w| (w.2, w.3)).collect() };
    // At 1 s: page 1's cached version (A), then the direct pages 1..3 (B) in one request.
    assert_eq!(at(S), vec![(1, BUFFERED_A), (2, DIRECT_B)], "{d:?}");
    let direct = d.iter().find(|w| w.3 == DIRECT_B).unwrap();
    let cached = d.iter().find(|w| w.0 == S && w.3 == BUFFERED_A).unwrap();
    assert_eq!(
        direct.1, cached.1,
        "the direct write covers the page written back"
    );
    // At 3 s: the flagged write alone, at once.
    assert_eq!(at(3 * S), vec![(1, FLAGGED_D)], "{d:?}");
    // Page 0 (A) and page 2's later buffered version (C) wait for the flusher (30 s expiry).
    let late: Vec<_> = d.iter().filter(|w| w.0 >= 30 * S).collect();
    let late_pcs: Vec<u64> = late.iter().map(|w| w.3).collect();
    assert!(
        late_pcs.contains(&BUFFERED_A) && late_pcs.contains(&BUFFERED_C),
        "{d:?}"
    );
    let page0 = late.iter().find(|w| w.3 == BUFFERED_A).unwrap();
    // Page 0 was still delayed when page 1 was allocated: a block of its own, not 1's or 2's.
    assert!(![direct.1, direct.1 + 1].contains(&page0.1), "{d:?}");
    let page2 = late.iter().find(|w| w.3 == BUFFERED_C).unwrap();
    assert_eq!(
        page2.1,
        direct.1 + 1,
        "page 2 is the direct write's second page"
    );
    // No page is written twice by writeback: 2 (A) + 2 (B) + 1 (C) + 1 (D) pages in all.
    let pages: u64 = d.iter().map(|w| w.2 as u64).sum();
    assert_eq!(pages, 6, "{d:?}");
    assert_eq!(s.direct_pages, 3);
    assert_eq!(s.data_pages, 6);
    assert_eq!(s.dirtied_pages, 3, "A's two pages and C's one");
}

#[test]
fn a_direct_overwrite_of_a_dirty_page_leaves_nothing_to_write_back() {
    let evs = vec![
        open(0, 3, 0),
        open(0, 4, O_DIRECT),
        write(S, 3, 0, 4, BUFFERED_A, 0),
        // the whole dirty range rewritten directly: written back first, then direct
        write(2 * S, 4, 0, 4, DIRECT_B, 0),
    ];
    let (reqs, s) = run(&evs);
    let d = data(&reqs);
    assert_eq!(
        d.iter().map(|w| (w.0, w.2, w.3)).collect::<Vec<_>>(),
        vec![(2 * S, 4, BUFFERED_A), (2 * S, 4, DIRECT_B)],
        "nothing more at the flusher's expiry"
    );
    assert_eq!(d[0].1, d[1].1);
    assert_eq!(s.absorbed_pages, 0);
}

#[test]
fn direct_writes_are_deterministic_and_leave_buffered_files_alone() {
    // The same events without O_DIRECT: every page through the page cache, late.
    let buffered = vec![
        open(0, 3, 0),
        write(S, 3, 0, 2, BUFFERED_A, 0),
        write(2 * S, 3, 4, 2, BUFFERED_C, 0),
    ];
    let (reqs, s) = run(&buffered);
    assert_eq!(s.direct_pages, 0);
    assert!(data(&reqs).iter().all(|w| w.0 >= 30 * S));
    let mixed = vec![
        open(0, 3, 0),
        open(0, 4, O_DIRECT),
        write(S, 3, 0, 2, BUFFERED_A, 0),
        write(2 * S, 4, 4, 2, DIRECT_B, 0),
    ];
    assert_eq!(run(&mixed).0, run(&mixed).0);
}
