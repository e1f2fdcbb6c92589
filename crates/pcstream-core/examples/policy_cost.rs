//! Cost per write of every policy, engine only (`make bench`): `paper` preset, prefilled, a
//! 10 M-request mix of 1-page writes over a hot/cold skew (80 % of writes to 20 % of the LPNs),
//! each from one of 10,000 program contexts (PC = LPN band), 1/64 of requests trims, so learned
//! tables are large. Prints, per policy (median of 3 runs of the whole simulation, in rounds
//! that run every policy once, the oracle's
//! death-time pre-pass included; thread CPU time, so a busy machine skews it less): WAF, ns per
//! host page written (what a user waits for),
//! ns per page operation (host + GC copies: the simulator's speed, independent of how much GC
//! the policy's placement causes), each with its ratio to `baseline`, and the policy's state.
//! `cargo run --release -p pcstream-core --example policy_cost [--rounds N] [policy...]`, a policy
//! with parameters as `name?key=value&key=value` (e.g. `pcstream?hv_test=cv`), to compare two
//! settings of one policy in the same rounds.

use pcstream_core::placement::registry;
use pcstream_core::{Request, SimOptions, Simulator, SsdConfig};

/// CPU time of this thread in seconds (`/proc/thread-self/schedstat`, ns on the CPU), so other
/// processes competing for the cores do not inflate the figures; wall time where unavailable.
fn cpu_seconds(wall: std::time::Instant) -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or_else(|| wall.elapsed().as_secs_f64(), |ns| ns as f64 * 1e-9)
}

/// Runs of each policy by default; the median is shown.
const ROUNDS: usize = 3;

/// Requests in the mix.
const REQUESTS: u64 = 10_000_000;

/// Program contexts: each writes one band of the LPNs, so learned tables are large.
const PCS: u64 = 10_000;

/// One request in this many is a trim.
const TRIM_EVERY: u64 = 64;

/// One run's figures: ns per host page, ns per page operation, WAF, policy state bytes.
type Sample = (f64, f64, f64, usize);

/// The mix: 1-page writes, 80 % to 20 % of the LPNs, PC = LPN band, every `TRIM_EVERY`-th a trim.
fn workload(logical: u64) -> Vec<Request> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..REQUESTS)
        .map(|i| {
            let r = next();
            // 80 % of writes to 20 % of the LPNs.
            let lpn = if r % 10 < 8 {
                (r >> 8) % (logical / 5)
            } else {
                logical / 5 + (r >> 8) % (logical - logical / 5)
            };
            let pc = 1 + lpn * PCS / logical;
            if i % TRIM_EVERY == TRIM_EVERY - 1 {
                Request::trim(lpn, 1)
            } else {
                Request::write(lpn, 1).with_pc(pc)
            }
        })
        .collect()
}

/// `--rounds N` and the policies named (all by default), `baseline` first if not named.
fn parse_args() -> (usize, Vec<String>) {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = ROUNDS;
    if let Some(i) = args.iter().position(|a| a == "--rounds") {
        let n = args.get(i + 1).and_then(|v| v.parse::<usize>().ok());
        let Some(n) = n.filter(|&n| n > 0) else {
            eprintln!("policy_cost: --rounds needs a number ≥ 1");
            std::process::exit(2);
        };
        rounds = n;
        args.drain(i..i + 2);
    }
    let mut names: Vec<String> = if args.is_empty() {
        registry::names().into_iter().map(String::from).collect()
    } else {
        args
    };
    // The ratios are to `baseline`, measured in the same rounds.
    if !names.iter().any(|n| n == "baseline") {
        names.insert(0, "baseline".to_string());
    }
    (rounds, names)
}

/// One run of policy `spec` (`name?key=value&...`) on `reqs`, timed in CPU time.
fn run(cfg: &SsdConfig, reqs: &[Request], host_pages: f64, spec: &str) -> Sample {
    let (name, query) = spec.split_once('?').unwrap_or((spec, ""));
    let params = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or_else(|| {
                eprintln!("policy_cost: {spec}: parameters are key=value, joined by &");
                std::process::exit(2)
            });
            (k.to_string(), v.to_string())
        })
        .collect();
    let o = SimOptions {
        policy: name.into(),
        params,
        prefill: 1.0,
        ..Default::default()
    };
    let wall = std::time::Instant::now();
    let t0 = cpu_seconds(wall);
    let mut sim = Simulator::new(cfg, o).unwrap_or_else(|e| {
        eprintln!("policy_cost: {spec}: {e}");
        std::process::exit(2)
    });
    sim.run_requests(reqs).expect("run");
    let r = sim.finish();
    let s = cpu_seconds(wall) - t0;
    let ops = host_pages + r.gc_pages as f64;
    (
        1e9 * s / host_pages,
        1e9 * s / ops,
        r.waf,
        r.policy_state_bytes,
    )
}

fn main() {
    let cfg = SsdConfig::preset("paper").expect("preset");
    let reqs = workload(cfg.logical_pages());
    let (rounds, names) = parse_args();
    let host_pages = reqs.iter().filter(|r| r.op == 0).count() as f64;
    let mut base = None;
    println!(
        "{:16} {:>6}  {:>13}  {:>9}  {:>12}  {:>9}  state",
        "policy", "WAF", "ns/host page", "×baseline", "ns/page op", "×baseline"
    );
    // Rounds, each running every policy once, so that a machine slowing down or speeding up
    // during the minutes this takes shifts every policy alike, not the later ones only.
    let mut all: Vec<Vec<Sample>> = vec![Vec::new(); names.len()];
    for _ in 0..rounds {
        for (i, name) in names.iter().enumerate() {
            all[i].push(run(&cfg, &reqs, host_pages, name));
        }
    }
    for (name, mut runs) in names.iter().zip(all) {
        // Median of the rounds (the oracle's death-time pre-pass included).
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ns, op_ns, waf, state) = runs[rounds / 2];
        let (b_ns, b_op) = *base.get_or_insert((ns, op_ns));
        println!(
            "{name:16} {waf:6.3}  {ns:13.1}  {:8.2}×  {op_ns:12.1}  {:8.2}×  {state} B",
            ns / b_ns,
            op_ns / b_op
        );
    }
}
