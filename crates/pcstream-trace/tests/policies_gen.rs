//! Every placement policy on the `gen mix` presets, whose writers have known lifetime classes:
//! the orderings the papers report (docs/POLICIES.md has the full table, `make policy-table`);
//! and the PC policies against one stream on the single-writer presets.

mod common;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use pcstream_core::config::SsdConfig;
use pcstream_core::placement::registry;
use pcstream_core::{Request, SimOptions};
use pcstream_trace::{generate, GenParams};

/// One die of 512 blocks × 64 pages, 7 % OP, 8 host streams, block units (30 k logical pages).
fn device() -> SsdConfig {
    let toml = "[geometry]\nchannels = 1\nways = 1\nblocks_per_die = 512\npages_per_block = 64\n\
                [ftl]\nop = 0.07\nhost_streams = 8\ngc_unit = \"block\"\n";
    SsdConfig::from_toml("test", toml).expect("valid test config")
}

/// Default generator seed of these tests.
const SEED: u64 = 7;

fn mix(preset: &str, logical: u64, passes: u64, seed: u64) -> Vec<Request> {
    let p = GenParams {
        capacity_pages: logical,
        writes: passes * logical / 8,
        req_pages: 8,
        seed,
        mix: preset.into(),
        ..GenParams::default()
    };
    requests("mix", &p)
}

/// The requests generator `kind` makes with `p`.
fn requests(kind: &str, p: &GenParams) -> Vec<Request> {
    let mut out = Vec::new();
    generate(kind, p, &mut |r| {
        out.push(r);
        Ok(())
    })
    .expect("generates");
    out
}

/// WAF of every registered policy on `reqs`, aged to 90 %, the first 3 passes as warm-up.
fn wafs(cfg: &SsdConfig, reqs: &[Request]) -> BTreeMap<&'static str, f64> {
    registry::names()
        .into_iter()
        .map(|name| (name, waf_with(cfg, reqs, name, &[])))
        .collect()
}

/// WAF of `policy` with `params` on `reqs`, aged to 90 %, the first 3 passes as warm-up.
fn waf_with(cfg: &SsdConfig, reqs: &[Request], policy: &str, params: &[(&str, &str)]) -> f64 {
    waf_on(cfg, reqs, policy, params, 0.9)
}

/// WAF of `policy` with `params` on `reqs`, the device first filled to `prefill`, the first 3
/// passes as warm-up.
fn waf_on(
    cfg: &SsdConfig,
    reqs: &[Request],
    policy: &str,
    params: &[(&str, &str)],
    prefill: f64,
) -> f64 {
    let o = SimOptions {
        policy: policy.into(),
        prefill,
        warmup: 3 * cfg.logical_pages(),
        seed: 1,
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    common::waf(cfg, o, reqs)
}

/// Every policy's WAF on a preset, computed once for all tests (the runs dominate their time);
/// one cell per preset, so tests running in parallel compute different presets at once.
fn wafs_of(preset: &str) -> BTreeMap<&'static str, f64> {
    type Cell = OnceLock<BTreeMap<&'static str, f64>>;
    static CELLS: [(&str, Cell); 3] = [
        ("rocksdb-like", OnceLock::new()),
        ("hotcold-files", OnceLock::new()),
        ("append-only", OnceLock::new()),
    ];
    let (_, cell) = CELLS
        .iter()
        .find(|(p, _)| *p == preset)
        .expect("a preset of this test");
    cell.get_or_init(|| {
        let cfg = device();
        let w = wafs(&cfg, &mix(preset, cfg.logical_pages(), 8, SEED));
        show(preset, &w);
        w
    })
    .clone()
}

fn show(what: &str, w: &BTreeMap<&str, f64>) {
    let s: Vec<String> = w.iter().map(|(k, v)| format!("{k} {v:.3}")).collect();
    eprintln!("{what}: {}", s.join(", "));
}

#[test]
fn pcstream_orders_between_the_oracle_and_baseline_on_every_mix() {
    for preset in ["rocksdb-like", "hotcold-files", "append-only"] {
        let w = wafs_of(preset); // the other two are shared with the tests below
        let (o, pc, star, b) = (
            w["oracle"],
            w["pcstream"],
            w["pcstream-star"],
            w["baseline"],
        );
        assert!(o <= pc, "{preset}: oracle {o} ≤ pcstream {pc}");
        assert!(pc <= star, "{preset}: pcstream {pc} ≤ pcstream-star {star}");
        assert!(star <= b, "{preset}: pcstream-star {star} ≤ baseline {b}");
        assert!(
            b > 1.2,
            "{preset}: the mix needs GC to tell policies apart ({b})"
        );
        assert!(
            pc <= 1.1 * o,
            "{preset}: pcstream {pc} within 10 % of the oracle {o}"
        );
        for (p, &v) in &w {
            assert!(v >= o - 1e-9, "{preset}: {p} {v} below the oracle {o}");
        }
    }
}

#[test]
fn autostream_loses_to_pcstream_on_the_append_only_mix() {
    // Every LBA is written once per file and reused by whichever writer allocates next, so LBA
    // hotness carries little of the lifetime; the writer's PC carries it all.
    let w = wafs_of("append-only");
    for a in ["autostream-sfr", "autostream-mq"] {
        assert!(
            w[a] > 1.05 * w["pcstream"],
            "{a} {} clearly worse than pcstream {}",
            w[a],
            w["pcstream"]
        );
    }
}

#[test]
fn no_policy_is_worse_than_baseline_on_the_hot_cold_mix() {
    let w = wafs_of("hotcold-files");
    let b = w["baseline"];
    for (p, &v) in &w {
        assert!(v <= b + 1e-9, "{p} {v} above baseline {b}");
    }
}

/// Worst `pcstream-star` / `per-pc` over generator seeds 1–6 of `preset` on the `small` SSD,
/// with the defaults and with `old` (the rule a test guards against), as (defaults, old).
fn worst_against_per_pc(preset: &str, old: &[(&str, &str)]) -> (f64, f64) {
    let cfg = SsdConfig::preset("small").expect("preset");
    let (mut worst, mut old_worst): (f64, f64) = (0.0, 0.0);
    for seed in 1..=6 {
        let reqs = mix(preset, cfg.logical_pages(), 8, seed);
        let per_pc = waf_with(&cfg, &reqs, "per-pc", &[]);
        let star = waf_with(&cfg, &reqs, "pcstream-star", &[]);
        let with_old = waf_with(&cfg, &reqs, "pcstream-star", old);
        eprintln!(
            "{preset} seed {seed}: per-pc {per_pc:.3} pcstream-star {star:.3} (with {old:?} {with_old:.3})"
        );
        worst = worst.max(star / per_pc);
        old_worst = old_worst.max(with_old / per_pc);
    }
    (worst, old_worst)
}

#[test]
fn a_cold_writer_with_few_completed_lifetimes_still_gets_a_stream_of_its_own() {
    // hotcold-files: the cold writer's files live most of a region, so when it first becomes
    // known it has seen one or two files die while it wrote a fifth of the pages. Weighed by
    // completed lifetimes its cluster counted for next to nothing and was merged into the hot
    // table's stream until the next period, on some seeds of the generator (seed 2 on the
    // `small` SSD: 2.02 against per-pc's 1.07); weighed by pages written it keeps its stream.
    // (The case is one of clustering: `merge=min_gain`, which clusters while streams are free.)
    let (worst, by_lifetimes) = worst_against_per_pc(
        "hotcold-files",
        &[("merge", "min_gain"), ("merge_weight", "lifetimes")],
    );
    assert!(worst <= 1.1, "pcstream-star up to {worst:.3} × per-pc");
    // The case this guards against does occur on these seeds.
    assert!(
        by_lifetimes > 1.3,
        "weighed by lifetimes, at most {by_lifetimes:.3} × per-pc"
    );
}

#[test]
fn a_writer_that_joined_a_cluster_on_its_short_first_lifetimes_moves_when_they_grow() {
    // append-only: the compaction writer becomes known after its first files die, the short
    // ones, and joins the flush stream's centroid (within 2×); its mean lifetime then grows past
    // twice that. Waiting for the period kept it there for most of the measured window on
    // generator seeds 3–6 (1.08–1.10 against per-pc's 1.000); reclustering once it has drifted
    // (`join_drift`) moves it.
    // (The case is one of clustering: `merge=min_gain`, which clusters while streams are free.)
    let (worst, waiting) =
        worst_against_per_pc("append-only", &[("merge", "min_gain"), ("join_drift", "0")]);
    assert!(worst <= 1.02, "pcstream-star up to {worst:.3} × per-pc");
    // The case this guards against does occur on these seeds.
    assert!(
        waiting > 1.05,
        "waiting for the period, at most {waiting:.3} × per-pc"
    );
}

#[test]
fn pc_policies_stay_within_2_percent_of_baseline_on_the_single_writer_presets() {
    // uniform, zipf and hotcold come from one PC: nothing to separate but that writer from the
    // device's earlier data, so a PC policy can only lose the space of the units it holds open
    // (the `make policy-table` rows: at most 1.01 × baseline). Under uniform overwrites that
    // data (the aged state, or the writer's own pages from before it was known) dies like the
    // writer's pages, and the writer shares stream 0 from the first clustering on: baseline's
    // layout, to the page. A stream of its own cost 0.8 % here with the device aged and 0.7 %
    // fresh, 2.8 % and 3.9 % on `medium`, where a unit is a larger share of the spare space.
    let cfg = SsdConfig::preset("small").expect("preset");
    let logical = cfg.logical_pages();
    for kind in ["uniform", "zipf", "hotcold"] {
        for seed in [1, 2] {
            let p = GenParams {
                capacity_pages: logical,
                writes: 8 * logical,
                req_pages: 1,
                seed,
                ..GenParams::default()
            };
            let reqs = requests(kind, &p);
            for prefill in [0.9, 0.0] {
                let what = format!("{kind} seed {seed} prefill {prefill}");
                let base = waf_on(&cfg, &reqs, "baseline", &[], prefill);
                let star = waf_on(&cfg, &reqs, "pcstream-star", &[], prefill);
                let full = waf_on(&cfg, &reqs, "pcstream", &[], prefill);
                eprintln!("{what}: baseline {base:.3} pcstream-star {star:.3} pcstream {full:.3}");
                for (policy, w) in [("pcstream-star", star), ("pcstream", full)] {
                    assert!(
                        w <= 1.02 * base,
                        "{what}: {policy} {w:.3} > 1.02 × baseline {base:.3}"
                    );
                    if kind == "uniform" {
                        assert_eq!(w, base, "{what}: {policy} as baseline");
                    }
                }
                if kind == "hotcold" && prefill == 0.0 {
                    // The writer shares stream 0 and takes stream 0's substream: its GC
                    // survivors (the cold pages) still leave the units of its new writes.
                    assert!(
                        full < 0.99 * star,
                        "{what}: pcstream {full:.3} below pcstream-star {star:.3}"
                    );
                }
            }
        }
    }
}
