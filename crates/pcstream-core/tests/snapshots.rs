//! The full JSON result of every policy on two small fixtures, as reviewed snapshots
//! (`tests/snapshots/`): any change of behaviour shows up as a snapshot diff. Wall-clock fields
//! are redacted. After an intended change: `INSTA_UPDATE=always cargo test -p pcstream-core
//! --test snapshots` (or `cargo insta review`), then review the diff.

mod common;
use common::*;
use pcstream_core::placement::registry;
use pcstream_core::request::{meta, Op};
use pcstream_core::{Request, SimOptions, Simulator};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Writers every kind of policy can tell apart: a hot table (random 1-page updates), an
/// append-only log trimmed behind its head, whole files trimmed after a random lifetime, and
/// journal blocks; each with its own PC, hint, file, file class and metadata class.
fn mixed(logical: u64, pages: u64, seed: u64) -> Vec<Request> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tag = |r: Request, pc: u64, hint: u8, class: u16, file: u32| Request {
        pc,
        hint,
        file_class: class,
        file,
        pid: hint as u32,
        ..r
    };
    let hot = logical / 10;
    let (log0, log_len) = (hot, logical / 10);
    let (files0, file_pages) = (log0 + log_len, 32u64);
    let journal0 = logical - logical / 20;
    let slots = (journal0 - files0) / file_pages;
    let mut free: Vec<u64> = (0..slots).rev().collect();
    let mut live: Vec<(u64, u64, u32)> = Vec::new(); // (death, slot, file)
    let (mut t, mut head, mut next_file) = (0u64, 0u64, 10u32);
    let mut out = Vec::new();
    while t < pages {
        let r = rng.random_range(0..100u32);
        if r < 50 {
            let l = rng.random_range(0..hot);
            out.push(tag(Request::write(l, 1), 0xA1, 1, 1, 1));
            t += 1;
        } else if r < 70 {
            out.push(tag(Request::write(log0 + head % log_len, 4), 0xB2, 2, 2, 2));
            if head >= log_len / 2 {
                let old = head - log_len / 2;
                out.push(tag(Request::trim(log0 + old % log_len, 4), 0xB2, 2, 2, 2));
            }
            head += 4;
            t += 4;
        } else if r < 95 {
            live.sort_unstable();
            while live.first().is_some_and(|&(d, _, _)| d <= t) || free.is_empty() {
                let (_, s, f) = live.remove(0);
                let lpn = files0 + s * file_pages;
                out.push(tag(Request::trim(lpn, file_pages as u32), 0xC3, 3, 3, f));
                free.push(s);
            }
            let s = free.pop().expect("a free slot");
            next_file += 1;
            let w = Request::write(files0 + s * file_pages, file_pages as u32);
            out.push(tag(w, 0xC3, 3, 3, next_file));
            t += file_pages;
            let life = rng.random_range(file_pages..8 * logical);
            live.push((t + life, s, next_file));
        } else {
            let l = journal0 + rng.random_range(0..logical / 20);
            out.push(Request {
                meta: meta::JOURNAL,
                ..Request::write(l, 1)
            });
            t += 1;
        }
    }
    debug_assert!(out.iter().all(|r| r.op != Op::Read as u8));
    out
}

fn snapshot_all(fixture: &str, reqs: &[Request]) {
    let cfg = device(256, 32, 0.15, "greedy", "block", 8);
    let logical = cfg.logical_pages();
    for name in registry::names() {
        let o = SimOptions {
            timing: true,
            trace_name: fixture.into(),
            ..opts(name, 0.5, logical)
        };
        let mut sim = Simulator::new(&cfg, o).expect("simulator");
        sim.run_requests(reqs).expect("run");
        let r = sim.finish();
        insta::assert_json_snapshot!(format!("{fixture}__{name}"), r, {
            ".wall_s" => "[wall]",
            ".host_pages_per_s" => "[wall]",
            ".page_ops_per_s" => "[wall]",
        });
    }
}

#[test]
fn every_policy_on_the_mixed_fixture() {
    let logical = device(256, 32, 0.15, "greedy", "block", 8).logical_pages();
    snapshot_all("mixed", &mixed(logical, 4 * logical, 11));
}

#[test]
fn every_policy_on_uniform_random_writes() {
    let logical = device(256, 32, 0.15, "greedy", "block", 8).logical_pages();
    snapshot_all("uniform", &uniform(3 * logical, logical, 12));
}

/// `merge=min_gain`, the rule before `fit_first`: its snapshots were made equal, but for the
/// redacted `params`, to the `pcstream` and `pcstream-star` snapshots of that time.
#[test]
fn pcstream_merge_min_gain_keeps_the_earlier_placement() {
    let cfg = device(256, 32, 0.15, "greedy", "block", 8);
    let logical = cfg.logical_pages();
    let fixtures = [
        ("mixed", mixed(logical, 4 * logical, 11)),
        ("uniform", uniform(3 * logical, logical, 12)),
    ];
    for (fixture, reqs) in &fixtures {
        for name in ["pcstream", "pcstream-star"] {
            let mut o = SimOptions {
                timing: true,
                trace_name: (*fixture).into(),
                ..opts(name, 0.5, logical)
            };
            o.params.insert("merge".into(), "min_gain".into());
            let mut sim = Simulator::new(&cfg, o).expect("simulator");
            sim.run_requests(reqs).expect("run");
            let r = sim.finish();
            insta::assert_json_snapshot!(format!("{fixture}__{name}__min_gain"), r, {
                ".params" => "[params]",
                ".wall_s" => "[wall]",
                ".host_pages_per_s" => "[wall]",
                ".page_ops_per_s" => "[wall]",
            });
        }
    }
}
