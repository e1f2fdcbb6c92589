//! Generators: determinism, the distributions' shape, the mix writers' behaviour, and that the
//! info summary counts what was generated.

use std::collections::{BTreeMap, BTreeSet};

use pcstream_core::request::{Op, Request};
use pcstream_trace::gen::{kind_pc, KINDS};
use pcstream_trace::{
    generate, generate_to_file, summarize, BlockTraceReader, GenParams, MixSpec, TraceMeta,
};

fn rows(kind: &str, p: &GenParams) -> (Vec<Request>, TraceMeta) {
    let mut v = Vec::new();
    let meta = generate(kind, p, &mut |r| {
        v.push(r);
        Ok(())
    })
    .unwrap();
    (v, meta)
}

fn params(writes: u64, seed: u64) -> GenParams {
    GenParams {
        writes,
        seed,
        ..Default::default()
    }
}

/// Share of the writes that hit the 10 % most written LPNs.
fn top10_share(rows: &[Request], n: u64) -> f64 {
    let mut count = vec![0u64; n as usize];
    for r in rows {
        count[r.lpn as usize] += 1;
    }
    count.sort_unstable_by(|a, b| b.cmp(a));
    count[..n as usize / 10].iter().sum::<u64>() as f64 / rows.len() as f64
}

#[test]
fn deterministic_per_seed_for_every_kind() {
    for kind in KINDS {
        let p = GenParams {
            req_pages: 2,
            read_ratio: 0.5,
            ..params(20_000, 7)
        };
        let (a, ma) = rows(kind, &p);
        let (b, mb) = rows(kind, &p);
        assert_eq!(a, b, "{kind}: same seed, same rows");
        assert_eq!(ma, mb);
        let (c, _) = rows(
            kind,
            &GenParams {
                seed: 8,
                ..p.clone()
            },
        );
        if *kind != "seq" {
            assert_ne!(a, c, "{kind}: another seed, other rows");
        }
        let cap = p.capacity_pages;
        for (i, r) in a.iter().enumerate() {
            assert_eq!(r.ts_ns, i as u64 * 10_000);
            assert!(r.lpn + r.pages as u64 <= cap, "{kind}: {r:?}");
            assert!(r.pages >= 1);
        }
        let writes = a.iter().filter(|r| r.op == Op::Write as u8).count();
        let reads = a.iter().filter(|r| r.op == Op::Read as u8).count();
        // `mix` and `lsm` count pages (in requests of their own sizes) and carry their own PCs.
        if !matches!(*kind, "mix" | "lsm") {
            assert_eq!(writes, 20_000, "{kind}");
            assert!(a
                .iter()
                .all(|r| r.pid == 1 && r.pc == kind_pc(kind) && r.file == 0 && r.meta == 0));
        }
        assert!(
            (reads as f64 / writes as f64 - 0.5).abs() < 0.01,
            "{kind}: {reads} reads"
        );
    }
}

#[test]
fn reads_do_not_change_the_writes() {
    let p = params(5_000, 3);
    let (a, _) = rows("zipf", &p);
    let (b, _) = rows(
        "zipf",
        &GenParams {
            read_ratio: 2.0,
            ..p
        },
    );
    let wb: Vec<_> = b
        .iter()
        .filter(|r| r.op == Op::Write as u8)
        .map(|r| r.lpn)
        .collect();
    assert_eq!(a.iter().map(|r| r.lpn).collect::<Vec<_>>(), wb);
}

#[test]
fn zipf_is_skewed_and_spread_uniform_is_not() {
    let p = GenParams {
        capacity_pages: 10_000,
        ..params(200_000, 1)
    };
    let (z, _) = rows("zipf", &p);
    let (u, _) = rows("uniform", &p);
    let zs = top10_share(&z, 10_000);
    let us = top10_share(&u, 10_000);
    assert!(zs > 0.6, "zipf 0.99: top 10 % get {zs}");
    assert!(us < 0.15, "uniform: top 10 % get {us}");
    // The hottest pages are not adjacent: the 20 hottest span most of the footprint.
    let mut c = BTreeMap::new();
    for r in &z {
        *c.entry(r.lpn).or_insert(0u64) += 1;
    }
    let mut hot: Vec<_> = c.into_iter().collect();
    hot.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let lpns: Vec<u64> = hot[..20].iter().map(|h| h.0).collect();
    let span = lpns.iter().max().unwrap() - lpns.iter().min().unwrap();
    assert!(span > 5_000, "hot LPNs {lpns:?}");
    // theta 0 is uniform.
    let (z0, _) = rows("zipf", &GenParams { theta: 0.0, ..p });
    assert!(top10_share(&z0, 10_000) < 0.15);
}

#[test]
fn pareto_low_lpns_hot_normal_centered() {
    let p = GenParams {
        capacity_pages: 10_000,
        ..params(100_000, 2)
    };
    let (r, _) = rows("pareto", &p);
    let low = r.iter().filter(|r| r.lpn < 100).count() as f64 / r.len() as f64;
    // P(index < 100) = (1 − 101^−½)/(1 − 10001^−½) ≈ 0.9095 for alpha 0.5.
    assert!(
        (low - 0.9095).abs() < 0.01,
        "pareto: {low} of writes below LPN 100"
    );
    let zero = r.iter().filter(|r| r.lpn == 0).count() as f64 / r.len() as f64;
    assert!((zero - 0.2929).abs() < 0.01, "pareto: {zero} to LPN 0");

    let (r, _) = rows("normal", &p);
    let mean = r.iter().map(|r| r.lpn as f64).sum::<f64>() / r.len() as f64;
    let sd = (r.iter().map(|r| (r.lpn as f64 - mean).powi(2)).sum::<f64>() / r.len() as f64).sqrt();
    assert!((mean - 5_000.0).abs() < 50.0, "mean {mean}");
    assert!((sd - 1_000.0).abs() < 30.0, "sd {sd}");
}

#[test]
fn hotcold_ratio_and_footprint() {
    let p = GenParams {
        footprint: 0.5,
        ..params(100_000, 4)
    };
    let (r, _) = rows("hotcold", &p);
    let n = 32_768u64;
    let hot = n / 10;
    assert!(r.iter().all(|r| r.lpn < n), "inside the footprint");
    let share = r.iter().filter(|r| r.lpn < hot).count() as f64 / r.len() as f64;
    assert!((share - 0.9).abs() < 0.02, "hot share {share}");
    let cold_max = r.iter().map(|r| r.lpn).max().unwrap();
    assert!(
        cold_max > n - 100,
        "cold pages reach the end of the footprint"
    );
}

#[test]
fn seq_is_exactly_sequential() {
    let p = GenParams {
        capacity_pages: 1_000,
        req_pages: 3,
        ..params(1_000, 1)
    };
    let (r, _) = rows("seq", &p);
    let mut want = 0u64;
    for x in &r {
        assert_eq!(x.lpn, want);
        want += 3;
        if want + 3 > 1_000 {
            want = 0;
        }
    }
    assert_eq!(r[333].lpn, 0, "wraps after 333 requests of 3 pages in 1000");
}

#[test]
fn a_footprint_of_one_request_slot_is_valid_except_for_hotcold() {
    // One page, one-page requests: a single slot, which every kind but hotcold can use.
    let p = GenParams {
        capacity_pages: 1,
        writes: 2,
        ..Default::default()
    };
    for kind in ["uniform", "zipf", "pareto", "normal", "seq"] {
        let (rows, _) = rows(kind, &p);
        let lpns: Vec<u64> = rows
            .iter()
            .filter(|r| r.op == Op::Write as u8)
            .map(|r| r.lpn)
            .collect();
        assert_eq!(lpns, vec![0, 0], "{kind}");
    }
    let e = generate("hotcold", &p, &mut |_| Ok(())).unwrap_err();
    assert!(
        e.to_string()
            .contains("hotcold needs at least 2 request slots"),
        "{e}"
    );
}

#[test]
fn unknown_kind_and_bad_params() {
    let e = generate("zipfian", &GenParams::default(), &mut |_| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown generator 'zipfian'")
            && e.contains("uniform, zipf, pareto, normal, hotcold, seq, mix"),
        "{e}"
    );
    let e = generate(
        "uniform",
        &GenParams {
            footprint: 0.0,
            ..Default::default()
        },
        &mut |_| Ok(()),
    )
    .unwrap_err();
    assert!(e.to_string().contains("footprint 0 must be in (0, 1]"));
    let e = generate(
        "uniform",
        &GenParams {
            capacity_pages: 4,
            req_pages: 8,
            ..Default::default()
        },
        &mut |_| Ok(()),
    )
    .unwrap_err();
    assert!(e.to_string().contains("cannot hold requests of 8 pages"));
    let e = generate(
        "mix",
        &GenParams {
            mix: "nope".into(),
            ..Default::default()
        },
        &mut |_| Ok(()),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("neither a preset (rocksdb-like, hotcold-files, append-only)"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.parquet");
    assert!(generate_to_file("nope", &GenParams::default(), &out).is_err());
    assert!(!out.exists());
}

/// Per-writer (pages written, rows) and checks every row stays inside its writer's region.
fn check_mix(spec: &MixSpec, p: &GenParams) -> (Vec<Request>, TraceMeta) {
    let p = GenParams {
        mix: serde_json::to_string(spec).unwrap(),
        ..p.clone()
    };
    let (r, meta) = rows("mix", &p);
    let total: f64 = spec.writers.iter().map(|w| w.share).sum();
    let all_pages: u64 = r
        .iter()
        .filter(|r| r.op == Op::Write as u8)
        .map(|r| r.pages as u64)
        .sum();
    assert_eq!(all_pages, p.writes * p.req_pages as u64);
    let mut start = 0u64;
    for (i, w) in spec.writers.iter().enumerate() {
        let len = w
            .region_pages
            .unwrap_or_else(|| (w.region.unwrap() * p.capacity_pages as f64) as u64);
        let mine: Vec<_> = r.iter().filter(|r| r.pid == i as u32 + 1).collect();
        assert!(mine.iter().all(|r| r.pc == w.pc
            && r.file_class == i as u16 + 1
            && r.hint == (i as u8 + 1).min(5)));
        assert!(
            mine.iter()
                .all(|r| r.lpn >= start && r.lpn + r.pages as u64 <= start + len),
            "writer {} outside [{start}, {})",
            w.name,
            start + len
        );
        let pages: u64 = mine
            .iter()
            .filter(|r| r.op == Op::Write as u8)
            .map(|r| r.pages as u64)
            .sum();
        let share = pages as f64 / all_pages as f64;
        assert!(
            (share - w.share / total).abs() < 0.03,
            "{}: share {share}",
            w.name
        );
        assert_eq!(meta.file_classes[&(i as u16 + 1)], w.name);
        start += len;
    }
    (r, meta)
}

#[test]
fn presets_keep_shares_and_regions() {
    for name in ["rocksdb-like", "hotcold-files"] {
        let spec = MixSpec::preset(name).unwrap();
        let p = GenParams {
            req_pages: 4,
            ..params(60_000, 5)
        };
        let (r, meta) = check_mix(&spec, &p);
        assert!(
            r.iter().any(|r| r.op == Op::Trim as u8),
            "{name} trims files"
        );
        // Every written file is in the file table.
        let files: BTreeSet<u32> = r.iter().filter(|r| r.file != 0).map(|r| r.file).collect();
        assert!(files.iter().all(|f| meta.files.contains_key(f)));
        assert!(meta.files.len() > 10);
    }
}

#[test]
fn file_churn_trims_exactly_what_it_wrote() {
    let spec: MixSpec = MixSpec::parse(
        r#"
        [[writers]]
        name = "sst"
        pc = 77
        share = 0.7
        region_pages = 8000
        kind = { type = "file_churn", file_pages = 100, lifetime_files = { dist = "lognormal", mean = 20, sigma = 1.5 } }
        [[writers]]
        name = "tbl"
        pc = 78
        share = 0.3
        region = 0.5
        kind = { type = "random_update", dist = "zipf", theta = 0.9 }
        "#,
    )
    .unwrap();
    let p = GenParams {
        capacity_pages: 20_000,
        req_pages: 8,
        ..params(40_000, 9)
    };
    let (r, meta) = check_mix(&spec, &p);
    // Replay: each file's writes form one contiguous extent of 100 pages written in order; its
    // trim is exactly that extent; a live extent is never overwritten by another file.
    let mut extent: BTreeMap<u32, (u64, u64)> = BTreeMap::new(); // file → (start, pages written)
    let mut owner = vec![0u32; 8000];
    let mut trimmed = BTreeSet::new();
    for x in r.iter().filter(|x| x.pid == 1) {
        assert!(meta.files[&x.file].starts_with("sst/") && meta.files[&x.file].ends_with(".sst"));
        if x.op == Op::Write as u8 {
            let e = extent.entry(x.file).or_insert((x.lpn, 0));
            assert_eq!(x.lpn, e.0 + e.1, "file {} written sequentially", x.file);
            e.1 += x.pages as u64;
            assert!(e.1 <= 100);
            assert_eq!(e.0 % 100, 0, "extents are aligned slots");
            for l in x.lpn..x.lpn + x.pages as u64 {
                assert_eq!(owner[l as usize], 0, "LPN {l} of a live file overwritten");
                owner[l as usize] = x.file;
            }
        } else {
            assert_eq!(x.op, Op::Trim as u8);
            assert_eq!(
                (x.lpn, x.pages as u64),
                extent[&x.file],
                "trim = the file's extent"
            );
            assert!(trimmed.insert(x.file), "trimmed once");
            for l in x.lpn..x.lpn + x.pages as u64 {
                owner[l as usize] = 0;
            }
        }
    }
    assert!(trimmed.len() > 100, "{} files deleted", trimmed.len());
    // Lognormal lifetimes (in files) vary a lot: the deletion order is not the creation order.
    let order: Vec<u32> = r
        .iter()
        .filter(|x| x.pid == 1 && x.op == Op::Trim as u8)
        .map(|x| x.file)
        .collect();
    assert!(order.windows(2).any(|w| w[0] > w[1]));
    // The zipf table writer is skewed.
    let tbl: Vec<u64> = r.iter().filter(|x| x.pid == 2).map(|x| x.lpn).collect();
    let distinct = tbl.iter().collect::<BTreeSet<_>>().len();
    assert!(
        distinct < tbl.len() / 2,
        "{distinct} distinct of {}",
        tbl.len()
    );
}

#[test]
fn append_log_trims_its_oldest_segment() {
    let spec = MixSpec::parse(
        r#"{"writers": [
            {"name": "wal", "pc": 5, "share": 1, "region_pages": 500,
             "kind": {"type": "append_log", "segment_pages": 64, "live_segments": 3}}]}"#,
    )
    .unwrap();
    let p = GenParams {
        capacity_pages: 1_000,
        req_pages: 5,
        ..params(2_000, 1)
    };
    let (r, meta) = check_mix(&spec, &p);
    let mut live: std::collections::VecDeque<(u32, u64, u64)> = Default::default(); // (file, start, pages)
    let mut trims = 0;
    for x in &r {
        if x.op == Op::Write as u8 {
            match live.back_mut() {
                Some(s) if s.0 == x.file => {
                    assert_eq!(x.lpn, s.1 + s.2, "appends");
                    s.2 += x.pages as u64;
                }
                _ => {
                    assert!(live.len() < 3, "oldest trimmed before a 4th segment opens");
                    live.push_back((x.file, x.lpn, x.pages as u64));
                }
            }
            assert!(live.back().unwrap().2 <= 64);
        } else {
            let oldest = live.pop_front().unwrap();
            assert_eq!(
                (x.file, x.lpn, x.pages as u64),
                (oldest.0, oldest.1, 64),
                "trims the oldest, whole"
            );
            trims += 1;
        }
    }
    // 10 000 pages in segments of 64: 157 segments opened, all but 3 trimmed.
    assert_eq!(trims, 10_000usize.div_ceil(64) - 3);
    // 7 segments fit in 500 pages: the log wraps around to LPN 0.
    let starts: Vec<u64> = r
        .iter()
        .filter(|x| x.op == Op::Trim as u8)
        .map(|x| x.lpn)
        .take(8)
        .collect();
    assert_eq!(starts, vec![0, 64, 128, 192, 256, 320, 384, 0]);
    assert!(meta
        .files
        .values()
        .all(|f| f.starts_with("wal/") && f.ends_with(".log")));
}

#[test]
fn mix_spec_errors() {
    let bad = |s: &str| {
        generate(
            "mix",
            &GenParams {
                mix: s.into(),
                ..Default::default()
            },
            &mut |_| Ok(()),
        )
        .unwrap_err()
        .to_string()
    };
    let too_big = r#"{"writers": [{"name": "a", "pc": 1, "share": 1, "region_pages": 70000, "kind": {"type": "random_update"}}]}"#;
    assert!(bad(too_big).contains("total 70000 pages but the footprint has 65536"));
    let both = r#"{"writers": [{"name": "a", "pc": 1, "share": 1, "region_pages": 7, "region": 0.1, "kind": {"type": "random_update"}}]}"#;
    assert!(bad(both).contains("give exactly one of region_pages"));
    let typo = r#"{"writers": [{"name": "a", "pc": 1, "share": 1, "region": 0.1, "kind": {"type": "random_update", "thetta": 1}}]}"#;
    assert!(bad(typo).contains("invalid JSON spec"), "{}", bad(typo));
    let small = r#"{"writers": [{"name": "log", "pc": 1, "share": 1, "region_pages": 100, "kind": {"type": "append_log", "segment_pages": 64, "live_segments": 2}}]}"#;
    assert!(bad(small).contains("mix writer 'log'"));
}

#[test]
fn info_counts_what_was_generated() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mix.parquet");
    let p = GenParams {
        req_pages: 2,
        read_ratio: 0.25,
        ..params(30_000, 11)
    };
    let g = generate_to_file("mix", &p, &out).unwrap();
    let (r, meta) = rows("mix", &p);
    let reader = BlockTraceReader::open(&out).unwrap();
    assert_eq!(
        reader.meta(),
        &meta,
        "metadata tables filled during generation are written"
    );
    drop(reader);
    let s = summarize(&out).unwrap();
    let count = |op: u8| r.iter().filter(|x| x.op == op).count() as u64;
    let pages = |op: u8| {
        r.iter()
            .filter(|x| x.op == op)
            .map(|x| x.pages as u64)
            .sum::<u64>()
    };
    assert_eq!(s["rows"], r.len() as u64);
    assert_eq!(g["rows"], r.len() as u64);
    for (key, op) in [
        ("writes", Op::Write),
        ("trims", Op::Trim),
        ("reads", Op::Read),
    ] {
        let op = op as u8;
        assert_eq!(s[key]["requests"], count(op), "{key}");
        assert_eq!(s[key]["pages"], pages(op), "{key}");
        assert_eq!(g[key]["pages"], pages(op), "{key}");
    }
    assert_eq!(s["writes"]["pages"], 60_000);
    assert_eq!(s["flushes"], 0);
    let unique: BTreeSet<u64> = r
        .iter()
        .filter(|x| x.op == Op::Write as u8)
        .flat_map(|x| x.lpn..x.lpn + x.pages as u64)
        .collect();
    assert_eq!(s["unique_lpns_written"], unique.len() as u64);
    assert_eq!(s["footprint_bytes"], unique.len() as u64 * 4096);
    assert_eq!(s["capacity_pages"], 65_536);
    assert_eq!(s["capacity_bytes"], 65_536u64 * 4096);
    assert_eq!(s["pcs"]["count"], 4);
    assert_eq!(s["pids"], 4);
    let files: BTreeSet<u32> = r
        .iter()
        .filter(|x| x.op == Op::Write as u8 && x.file != 0)
        .map(|x| x.file)
        .collect();
    assert_eq!(s["files"], files.len() as u64);
    let top = s["pcs"]["top"].as_array().unwrap();
    assert_eq!(
        top[0]["pc"],
        MixSpec::preset("rocksdb-like").unwrap().writers[2]
            .pc
            .to_string()
    );
    let top_share = top[0]["share"].as_f64().unwrap();
    assert!((top_share - 0.57).abs() < 0.01, "{top_share}");
    let shares: f64 = top.iter().map(|t| t["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9);
    assert_eq!(s["meta_share"]["data"], 1.0);
    assert_eq!(s["ts"]["first_ns"], 0);
    assert_eq!(s["ts"]["last_ns"], (r.len() as u64 - 1) * 10_000);
    assert_eq!(s["row_groups"], 1);
    assert!(s["source"]
        .as_str()
        .unwrap()
        .starts_with("pcstream gen mix"));

    // Uniform: the summary of a single-kind trace written to a file equals the rows generated.
    let out = dir.path().join("u.parquet");
    let p = GenParams {
        capacity_pages: 1_000,
        ..params(5_000, 1)
    };
    generate_to_file("uniform", &p, &out).unwrap();
    let (r, _) = rows("uniform", &p);
    assert_eq!(common_read(&out), r);
    let s = summarize(&out).unwrap();
    let unique: BTreeSet<u64> = r.iter().map(|x| x.lpn).collect();
    assert_eq!(s["unique_lpns_written"], unique.len() as u64);
    assert_eq!(s["pcs"]["top"][0]["pc"], kind_pc("uniform").to_string());
}

fn common_read(path: &std::path::Path) -> Vec<Request> {
    let mut r = BlockTraceReader::open(path).unwrap();
    let (mut all, mut buf) = (Vec::new(), Vec::new());
    while r.next_batch(&mut buf).unwrap() {
        all.extend_from_slice(&buf);
    }
    all
}
