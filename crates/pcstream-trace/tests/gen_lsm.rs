//! The `lsm` generator: determinism, the store's file discipline (no page written while live,
//! every trimmed page live), the compaction PC's share, the build writer's share, and one-line
//! errors for impossible parameters.

use std::collections::BTreeMap;

use pcstream_core::request::{Op, Request};
use pcstream_trace::gen::{LsmActivity, LSM_PC_BASE};
use pcstream_trace::{generate, GenParams, SstAlloc, TraceMeta};

fn rows(p: &GenParams) -> Result<(Vec<Request>, TraceMeta), String> {
    let mut v = Vec::new();
    let meta = generate("lsm", p, &mut |r| {
        v.push(r);
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok((v, meta))
}

fn params(levels: u32, ratio: u32, skew: f64, build_share: f64, seed: u64) -> GenParams {
    GenParams {
        capacity_pages: 40_000,
        writes: 200_000,
        levels,
        ratio,
        skew,
        build_share,
        sst_pages: 64,
        seed,
        ..GenParams::default()
    }
}

/// Host pages written per PC.
fn pages_per_pc(rows: &[Request]) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for r in rows.iter().filter(|r| r.op == Op::Write as u8) {
        *m.entry(r.pc).or_insert(0) += r.pages as u64;
    }
    m
}

#[test]
fn same_seed_same_rows_other_seed_other_rows() {
    let p = params(3, 4, 0.99, 0.3, 1);
    let (a, ma) = rows(&p).unwrap();
    let (b, mb) = rows(&p).unwrap();
    assert_eq!(a, b);
    assert_eq!(ma, mb);
    let (c, _) = rows(&GenParams {
        seed: 2,
        ..p.clone()
    })
    .unwrap();
    assert_ne!(a, c);
    let written: u64 = pages_per_pc(&a).values().sum();
    assert_eq!(written, p.writes, "writes counts host pages");
    for (i, r) in a.iter().enumerate() {
        assert_eq!(r.ts_ns, i as u64 * 10_000);
        assert!(
            r.pages >= 1 && r.lpn + r.pages as u64 <= p.capacity_pages,
            "{r:?}"
        );
    }
}

#[test]
fn files_are_written_once_and_trimmed_only_while_live() {
    for (levels, ratio, skew, build, sst_alloc) in [
        (3, 4, 0.0, 0.0, SstAlloc::Next),
        (5, 10, 0.99, 0.3, SstAlloc::Next),
        (4, 10, 0.99, 0.0, SstAlloc::Next),
        (4, 10, 0.0, 0.3, SstAlloc::Lowest),
    ] {
        let p = GenParams {
            sst_alloc,
            ..params(levels, ratio, skew, build, 1)
        };
        let (rows, meta) = rows(&p).unwrap();
        let mut live = vec![false; p.capacity_pages as usize];
        let mut trims = 0u64;
        for (i, r) in rows.iter().enumerate() {
            let range = r.lpn as usize..(r.lpn + r.pages as u64) as usize;
            match r.op {
                0 => {
                    // An LSM store and a build never overwrite in place: every write goes to
                    // space that was never written or was trimmed since.
                    assert!(
                        live[range.clone()].iter().all(|l| !l),
                        "row {i}: {r:?} overwrites"
                    );
                    live[range].iter_mut().for_each(|l| *l = true);
                    assert!(meta.files.contains_key(&r.file), "row {i}: unknown file");
                }
                1 => {
                    assert!(
                        live[range.clone()].iter().all(|&l| l),
                        "row {i}: {r:?} trims unwritten pages"
                    );
                    live[range].iter_mut().for_each(|l| *l = false);
                    trims += 1;
                }
                _ => {}
            }
        }
        assert!(
            trims > 100,
            "{levels}/{ratio}: SSTs and WAL files are deleted ({trims})"
        );
        // The store keeps a realistic share of the device live at the end.
        let share = live.iter().filter(|&&l| l).count() as f64 / p.capacity_pages as f64;
        assert!(
            (0.4..0.95).contains(&share),
            "{levels}/{ratio}: live share {share}"
        );
    }
}

#[test]
fn the_compaction_pc_writes_most_pages_at_ratio_10() {
    for (levels, skew) in [(3, 0.0), (4, 0.99), (5, 0.0)] {
        let (rows, meta) = rows(&params(levels, 10, skew, 0.0, 1)).unwrap();
        let m = pages_per_pc(&rows);
        let total: u64 = m.values().sum();
        let share = |a: LsmActivity| *m.get(&a.pc()).unwrap_or(&0) as f64 / total as f64;
        let c = share(LsmActivity::Compaction);
        assert!(
            c > 0.5,
            "levels {levels}, skew {skew}: compaction writes {c:.2} of the pages"
        );
        // One PC per activity, all named in the metadata.
        assert!(m
            .keys()
            .all(|pc| (LSM_PC_BASE + 1..=LSM_PC_BASE + 4).contains(pc)));
        assert!(share(LsmActivity::Wal) > 0.05 && share(LsmActivity::Flush) > 0.02);
        assert_eq!(
            meta.pcs[LsmActivity::Compaction.pc().to_string()][0]["symbol"],
            "compaction"
        );
    }
}

#[test]
fn the_build_writer_takes_its_share_with_its_own_pcs() {
    let (rows, _) = rows(&params(4, 10, 0.0, 0.3, 1)).unwrap();
    let m = pages_per_pc(&rows);
    let load = m[&LsmActivity::Load.pc()];
    let after: u64 = m.values().sum::<u64>() - load;
    let build: u64 = [LsmActivity::Cc, LsmActivity::Tmp, LsmActivity::Ld]
        .iter()
        .map(|a| m.get(&a.pc()).copied().unwrap_or(0))
        .sum();
    let share = build as f64 / after as f64;
    assert!(
        (share - 0.3).abs() < 0.01,
        "build writes {share:.3} of the pages after the load"
    );
    assert!(rows.iter().any(|r| r.pid == 2) && rows.iter().any(|r| r.pid == 1));
}

#[test]
fn skew_concentrates_the_puts() {
    // The WAL pages carry no key, but the flushes do: with skewed keys a memtable holds fewer
    // distinct keys, so flushes write fewer pages per put.
    let flush_per_put = |skew: f64| {
        let (rows, _) = rows(&params(4, 10, skew, 0.0, 1)).unwrap();
        let m = pages_per_pc(&rows);
        m[&LsmActivity::Flush.pc()] as f64 / m[&LsmActivity::Wal.pc()] as f64
    };
    let (u, z) = (flush_per_put(0.0), flush_per_put(0.99));
    assert!(
        u > 0.9 && z < 0.9 * u,
        "flush pages per put: uniform {u:.3}, zipf {z:.3}"
    );
}

#[test]
fn impossible_parameters_are_one_line_errors() {
    let base = params(4, 10, 0.0, 0.0, 1);
    for (p, what) in [
        (
            GenParams {
                levels: 0,
                ..base.clone()
            },
            "levels=0",
        ),
        (
            GenParams {
                ratio: 1,
                ..base.clone()
            },
            "ratio=1",
        ),
        (
            GenParams {
                skew: -1.0,
                ..base.clone()
            },
            "skew=-1",
        ),
        (
            GenParams {
                build_share: 1.0,
                ..base.clone()
            },
            "build_share=1",
        ),
        (
            GenParams {
                sst_pages: 0,
                ..base.clone()
            },
            "sst_pages",
        ),
        (
            GenParams {
                capacity_pages: 2_000,
                ..base.clone()
            },
            "too small",
        ),
        (
            GenParams {
                levels: 8,
                ratio: 100,
                ..base.clone()
            },
            "too small",
        ),
        (
            GenParams {
                capacity_pages: 400,
                sst_pages: 1,
                levels: 1,
                ratio: 2,
                build_share: 0.3,
                ..base.clone()
            },
            "no room for the build writer",
        ),
    ] {
        let e = rows(&p).err().unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(e.contains(what) && !e.contains('\n'), "{what}: {e}");
    }
}

/// First LPN of every SST, in the order the store creates them (file ids are dense, in order).
fn sst_starts(rows: &[Request], meta: &TraceMeta) -> Vec<u64> {
    let mut first = BTreeMap::new();
    for r in rows.iter().filter(|r| r.op == Op::Write as u8) {
        if meta.files[&r.file].ends_with(".sst") {
            first.entry(r.file).or_insert(r.lpn);
        }
    }
    first.into_values().collect()
}

#[test]
fn next_takes_the_slots_in_turn_and_lowest_takes_freed_low_slots_again() {
    let run = |sst_alloc| {
        let p = GenParams {
            sst_alloc,
            ..params(4, 10, 0.0, 0.0, 1)
        };
        let (rows, meta) = rows(&p).unwrap();
        let starts = sst_starts(&rows, &meta);
        // Times a new SST lands below the one before: a wrap for `next`.
        let back = starts.windows(2).filter(|w| w[1] < w[0]).count();
        // Share of the SSTs in the lowest tenth of the slots used.
        let (lo, hi) = (starts.iter().min().unwrap(), starts.iter().max().unwrap());
        let low = starts.iter().filter(|&&s| s - lo < (hi - lo) / 10).count();
        (
            pages_per_pc(&rows),
            starts.len(),
            back,
            low as f64 / starts.len() as f64,
        )
    };
    let (next_pages, n, next_back, next_low) = run(SstAlloc::Next);
    let (lowest_pages, _, _, lowest_low) = run(SstAlloc::Lowest);
    eprintln!("{n} SSTs; next: {next_back} wraps, {next_low:.2} low; lowest: {lowest_low:.2} low");
    // Where files go changes nothing of what the store writes.
    assert_eq!(next_pages, lowest_pages);
    // Each pass over the slots wraps once, or a few times when the slots ahead hold live files
    // to the end; the slots are used about evenly.
    let passes = (n as u64 * 64).div_ceil(40_000);
    assert!(
        next_back >= 1 && next_back as u64 <= 3 * passes,
        "next: {next_back} wraps in {n} SSTs ({passes} passes)"
    );
    assert!((0.05..0.15).contains(&next_low), "next: {next_low} low");
    // The lowest free slots are the ones short-lived SSTs keep freeing: SSTs crowd there.
    assert!(lowest_low > 2.0 * next_low, "lowest: {lowest_low} low");
}
