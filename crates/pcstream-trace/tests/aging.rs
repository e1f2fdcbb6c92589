//! An aged file system (`map --age`): the plan, the aged state at the head of the trace, the
//! program running in what is left, each discard mode, and the simulator starting from exactly
//! the aged pages.

use std::collections::BTreeMap;
use std::path::Path;

use pcstream_core::request::{meta, Op, Request};
use pcstream_core::{SimOptions, SsdConfig};
use pcstream_trace::filetrace::{write_events, FileEvent, FileOp};
use pcstream_trace::map::aging::{plan, AgeOp, AgingSpec};
use pcstream_trace::map::{MapOptions, MapSummary};
use pcstream_trace::{map_file_trace, run_trace, BlockTraceReader};

const S: u64 = 1_000_000_000;
const O_CREAT: u32 = 0o100;
/// 256 MiB file system.
const CAP: u64 = 65_536;

fn ev(ts_ns: u64, op: FileOp, fd: i32, file: u32) -> FileEvent {
    FileEvent {
        ts_ns,
        pid: 7,
        tid: 7,
        op,
        fd,
        dev: 1,
        ino: file as u64,
        path: file,
        ..Default::default()
    }
}

/// A small database: log files written, synced and deleted, and a table file overwritten in
/// place, ~10 MiB of data over 60 s.
fn program(files: u32) -> Vec<FileEvent> {
    let mut out = Vec::new();
    let mut t = S;
    for f in 1..=files {
        out.push(FileEvent {
            flags: O_CREAT,
            ..ev(t, FileOp::Open, 3, f)
        });
        for i in 0..16u64 {
            t += S / 10;
            out.push(FileEvent {
                offset: i * 65_536,
                len: 65_536,
                pc: 100 + (f % 3) as u64,
                ..ev(t, FileOp::Write, 3, f)
            });
        }
        out.push(ev(t, FileOp::Fsync, 3, f));
        out.push(ev(t, FileOp::Close, 3, f));
        if f > 2 {
            out.push(ev(t, FileOp::Unlink, -1, f - 2));
        }
    }
    out
}

fn paths(n: u32) -> BTreeMap<u32, String> {
    (1..=n).map(|i| (i, format!("/db/{i:06}.log"))).collect()
}

/// Map `events` with `mount_opts` and aging `spec`; the block trace's rows and the summary.
fn map(
    dir: &Path,
    events: &[FileEvent],
    mount_opts: &str,
    spec: Option<AgingSpec>,
) -> (Vec<Request>, MapSummary, std::path::PathBuf) {
    let input = dir.join("t.file.parquet");
    write_events(&input, events, &paths(64), "test").unwrap();
    let out = dir.join(format!("t.{}.parquet", mount_opts.replace([',', '='], "_")));
    let mut opts = MapOptions::from_mount_opts(CAP, mount_opts).unwrap();
    opts.age = spec;
    let s = map_file_trace(&input, &out, &opts, &mut |_, _| true).unwrap();
    let mut r = BlockTraceReader::open(&out).unwrap();
    let (mut rows, mut buf) = (Vec::new(), Vec::new());
    while r.next_batch(&mut buf).unwrap() {
        rows.extend_from_slice(&buf);
    }
    (rows, s, out)
}

fn spec(share: f64, churn: u32) -> Option<AgingSpec> {
    Some(AgingSpec {
        share,
        seed: 3,
        churn,
    })
}

fn pages_of(extents: &[(u64, u64)]) -> Vec<bool> {
    let mut v = vec![false; CAP as usize];
    for &(s, n) in extents {
        v[s as usize..(s + n) as usize].fill(true);
    }
    v
}

#[test]
fn the_plan_is_seeded_and_fills_to_the_share() {
    let opts = MapOptions::from_mount_opts(CAP, "").unwrap();
    let a = plan(&opts, spec(0.9, 2).unwrap()).unwrap();
    assert_eq!(
        a,
        plan(&opts, spec(0.9, 2).unwrap()).unwrap(),
        "same seed, same plan"
    );
    assert_ne!(
        a,
        plan(
            &opts,
            AgingSpec {
                seed: 4,
                ..spec(0.9, 2).unwrap()
            }
        )
        .unwrap()
    );
    let creates = a
        .iter()
        .filter(|o| matches!(o, AgeOp::Create { .. }))
        .count();
    let deletes = a
        .iter()
        .filter(|o| matches!(o, AgeOp::Delete { .. }))
        .count();
    assert!(
        creates > 500 && deletes > 50,
        "{creates} creates, {deletes} deletes"
    );
    // Each of the 2 churn rounds fills to 98 % and deletes back down to 90 %: about 8 % of the
    // blocks deleted per round.
    let sizes: std::collections::BTreeMap<&str, u64> = a
        .iter()
        .filter_map(|o| match o {
            AgeOp::Create { path, bytes } => Some((path.as_str(), bytes.div_ceil(4096))),
            _ => None,
        })
        .collect();
    let deleted: u64 = a
        .iter()
        .filter_map(|o| match o {
            AgeOp::Delete { path } => Some(sizes[path.as_str()]),
            _ => None,
        })
        .sum();
    let per_round = deleted as f64 / 2.0 / CAP as f64;
    assert!((0.06..0.09).contains(&per_round), "{per_round}");
    // Files spread over many directories, sizes spread over the histogram's bins.
    let dirs: std::collections::BTreeSet<&str> = a
        .iter()
        .filter_map(|o| match o {
            AgeOp::Create { path, .. } => path.rsplit_once('/').map(|p| p.0),
            _ => None,
        })
        .collect();
    assert!(dirs.len() > 10, "{} directories", dirs.len());
    for bad in [0.0, 1.0, -0.5] {
        assert!(
            plan(
                &opts,
                AgingSpec {
                    share: bad,
                    seed: 0,
                    churn: 0
                }
            )
            .is_err(),
            "{bad}"
        );
    }
    let e = plan(&opts, spec(0.001, 0).unwrap()).unwrap_err().what;
    assert!(e.contains("already uses"), "{e}");
}

#[test]
fn aged_to_ninety_percent_leads_the_trace_and_is_never_touched_by_the_program() {
    let dir = tempfile::tempdir().unwrap();
    for mount in ["discard", "nodiscard"] {
        let (rows, s, out) = map(dir.path(), &program(24), mount, spec(0.9, 1));
        let aged = s.aged.as_ref().expect("aged");
        assert!(
            (aged.used_share - 0.9).abs() <= 0.01,
            "{mount}: {}",
            aged.used_share
        );
        let m = BlockTraceReader::open(&out)
            .unwrap()
            .meta()
            .aged
            .expect("keys");
        assert_eq!(m.pages, aged.pages);
        let head = &rows[..m.rows as usize];
        assert!(head
            .iter()
            .all(|r| r.op == Op::Write as u8 && r.pc == 0 && r.ts_ns == 0));
        assert_eq!(head.iter().map(|r| r.pages as u64).sum::<u64>(), m.pages);
        // One write per LBA.
        let mut seen = vec![false; CAP as usize];
        for r in head {
            for l in r.lpn..r.lpn + r.pages as u64 {
                assert!(
                    !std::mem::replace(&mut seen[l as usize], true),
                    "lba {l} twice"
                );
            }
        }
        let stale = pages_of(&aged.stale);
        if mount == "discard" {
            assert_eq!(aged.stale_blocks, 0, "deleted blocks were discarded");
        } else {
            assert!(
                aged.stale_blocks > 0,
                "churn left deleted blocks on the device"
            );
        }
        // The program's data and discards never touch a block the aged file system uses.
        let in_use: Vec<bool> = seen.iter().zip(&stale).map(|(a, s)| *a && !s).collect();
        let program = &rows[m.rows as usize..];
        let data: u64 = program
            .iter()
            .filter(|r| r.op == Op::Write as u8 && r.meta == meta::DATA)
            .map(|r| r.pages as u64)
            .sum();
        assert!(data >= 24 * 16 * 16 - 16, "{mount}: program data {data}");
        for r in program {
            let touches = (r.lpn..r.lpn + r.pages as u64).any(|l| in_use[l as usize]);
            if r.op == Op::Trim as u8 || (r.op == Op::Write as u8 && r.meta == meta::DATA) {
                assert!(!touches, "{mount}: {r:?} touches an aged block in use");
            }
        }
        let trims = program.iter().filter(|r| r.op == Op::Trim as u8).count();
        assert_eq!(trims > 0, mount == "discard", "{mount}: {trims} trims");
        // The simulator starts from exactly the aged pages and measures only the program.
        let cfg = SsdConfig::from_toml(
            "t",
            "[geometry]\nchannels = 2\nways = 2\nblocks_per_die = 320\npages_per_block = 64\n[ftl]\nop = 0.07\n",
        )
        .unwrap();
        assert!(cfg.logical_pages() >= CAP);
        let opts = SimOptions {
            policy: "baseline".into(),
            timing: false,
            ..Default::default()
        };
        let r = run_trace(&out, &cfg, opts.clone(), None, &mut |_, _| true).unwrap();
        assert_eq!(r.aged_pages, m.pages);
        let written: u64 = program
            .iter()
            .filter(|r| r.op == Op::Write as u8)
            .map(|r| r.pages as u64)
            .sum();
        assert_eq!(
            r.host_pages, written,
            "{mount}: the aged rows are not host pages"
        );
        let oracle = run_trace(
            &out,
            &cfg,
            SimOptions {
                policy: "oracle".into(),
                ..opts.clone()
            },
            None,
            &mut |_, _| true,
        )
        .unwrap();
        assert_eq!(oracle.host_pages, written);
        assert!(oracle.waf <= r.waf + 1e-9);
        let e = run_trace(
            &out,
            &cfg,
            SimOptions {
                prefill: 0.5,
                ..opts
            },
            None,
            &mut |_, _| true,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("its own aged state") && e.contains("--prefill"),
            "{e}"
        );
    }
}

#[test]
fn periodic_fstrim_trims_free_space_at_its_period_only() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, s, _) = map(
        dir.path(),
        &program(24),
        "nodiscard,fstrim=20",
        spec(0.8, 1),
    );
    let aged = s.aged.unwrap();
    let program = &rows[rows.iter().position(|r| r.ts_ns > 0).unwrap()..];
    let trim_times: std::collections::BTreeSet<u64> = program
        .iter()
        .filter(|r| r.op == Op::Trim as u8)
        .map(|r| r.ts_ns)
        .collect();
    assert!(!trim_times.is_empty());
    assert!(
        trim_times.iter().all(|t| t % (20 * S) == 0),
        "{trim_times:?}"
    );
    // The first trim after mounting discards the stale blocks the churn left.
    let stale = pages_of(&aged.stale);
    let first = *trim_times.iter().next().unwrap();
    let trimmed: u64 = program
        .iter()
        .filter(|r| r.op == Op::Trim as u8 && r.ts_ns == first)
        .map(|r| {
            (r.lpn..r.lpn + r.pages as u64)
                .filter(|&l| stale[l as usize])
                .count() as u64
        })
        .sum();
    assert!(trimmed > 0 && aged.stale_blocks > 0);
    assert!(s.trim_pages > 0);
}

#[test]
fn a_program_that_does_not_fit_the_aged_file_system_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.file.parquet");
    // 64 MiB of live data on a 256 MiB file system aged to 90 %.
    let mut events = vec![FileEvent {
        flags: O_CREAT,
        ..ev(S, FileOp::Open, 3, 1)
    }];
    events.push(FileEvent {
        offset: 0,
        len: 64 << 20,
        ..ev(2 * S, FileOp::Write, 3, 1)
    });
    events.push(ev(3 * S, FileOp::Fsync, 3, 1));
    write_events(&input, &events, &paths(1), "test").unwrap();
    let mut opts = MapOptions::from_mount_opts(CAP, "").unwrap();
    opts.age = spec(0.9, 0);
    let e = map_file_trace(&input, &dir.path().join("o.parquet"), &opts, &mut |_, _| {
        true
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("aged") && e.contains("--age"), "{e}");
    assert!(!dir.path().join("o.parquet").exists());
}

/// Files written, closed and written back later take exactly their blocks from the goal group
/// on (ext4's NOPREALLOC for files no one has open), so an aged file system fills the groups
/// after its first and leaves the first group — the one holding the flex group's metadata — for
/// last, as a real ext4 aged with the same plan does (docs/FSMODEL.md, validation).
#[test]
fn aging_fills_the_groups_after_the_first_and_leaves_the_first_for_last() {
    let dir = tempfile::tempdir().unwrap();
    let cap = 367_491; // the `medium` preset's file system: 12 groups
    let input = dir.path().join("t.file.parquet");
    write_events(&input, &program(2), &paths(8), "test").unwrap();
    let mut opts = MapOptions::from_mount_opts(cap, "discard").unwrap();
    opts.age = spec(0.9, 0);
    let out = dir.path().join("o.parquet");
    map_file_trace(&input, &out, &opts, &mut |_, _| true).unwrap();
    let mut r = BlockTraceReader::open(&out).unwrap();
    let aged = r.meta().aged.unwrap();
    let (mut used, mut buf, mut rows) = (vec![0u64; 12], Vec::new(), 0u64);
    while rows < aged.rows && r.next_batch(&mut buf).unwrap() {
        for q in buf.iter().take((aged.rows - rows) as usize) {
            for l in q.lpn..q.lpn + q.pages as u64 {
                used[(l / 32_768) as usize] += 1;
            }
        }
        rows += buf.len() as u64;
    }
    let free = |g: usize| 32_768u64.min(cap - g as u64 * 32_768) - used[g];
    let middle: u64 = (1..9).map(free).sum::<u64>() / 8;
    assert!(
        free(0) > 8 * middle.max(64),
        "free per group: {:?}",
        (0..12).map(free).collect::<Vec<_>>()
    );
}
