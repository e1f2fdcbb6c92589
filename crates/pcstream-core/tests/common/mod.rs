//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use pcstream_core::{Request, SimOptions, SimResult, Simulator, SsdConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A one-die device with block GC units and minimal GC reserve, for analytic comparisons.
pub fn device(
    blocks: u32,
    pages_per_block: u32,
    op: f64,
    victim: &str,
    unit: &str,
    streams: u32,
) -> SsdConfig {
    let toml = format!(
        "[geometry]\nchannels = 1\nways = 1\nblocks_per_die = {blocks}\npages_per_block = {pages_per_block}\n\
         [ftl]\nop = {op}\nhost_streams = {streams}\ngc_unit = \"{unit}\"\ngc_victim = \"{victim}\"\n\
         gc_low_watermark = 0.0\ngc_high_watermark = 0.0\n"
    );
    SsdConfig::from_toml("test", &toml).expect("valid test config")
}

pub fn opts(policy: &str, prefill: f64, warmup: u64) -> SimOptions {
    SimOptions {
        policy: policy.into(),
        prefill,
        warmup,
        seed: 1,
        trace_name: "test".into(),
        ..Default::default()
    }
}

/// Run `reqs` through a fresh simulator (with the oracle pre-pass when needed).
pub fn run(cfg: &SsdConfig, o: SimOptions, reqs: &[Request], verify: bool) -> SimResult {
    let mut sim = Simulator::new(cfg, o).expect("simulator");
    sim.set_verify_each_gc(verify);
    sim.run_requests(reqs).expect("run");
    if verify {
        sim.verify().expect("final state");
    }
    sim.finish()
}

pub fn uniform(n: u64, logical: u64, seed: u64) -> Vec<Request> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| Request::write(rng.random_range(0..logical), 1))
        .collect()
}

/// `hot_share` of the writes go to the first `hot_frac` of the LPNs.
pub fn hotcold(n: u64, logical: u64, hot_frac: f64, hot_share: f64, seed: u64) -> Vec<Request> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let hot = ((logical as f64 * hot_frac) as u64).max(1);
    (0..n)
        .map(|_| {
            let lpn = if rng.random_bool(hot_share) {
                rng.random_range(0..hot)
            } else {
                rng.random_range(hot..logical)
            };
            Request::write(lpn, 1)
        })
        .collect()
}

/// Non-trivial root of u = exp(−α(1 − u)) (α = physical / logical > 1) by bisection: the valid
/// fraction of a cleaned unit under uniform random writes (Desnoyers; Xiang & Kurkoski).
pub fn lrw_victim_valid(alpha: f64) -> f64 {
    let f = |u: f64| u - (-alpha * (1.0 - u)).exp();
    let (mut lo, mut hi) = (0.0f64, 1.0 - 1e-12);
    // f(0) < 0 and f(1 − δ) ≈ (α − 1)δ > 0
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

pub fn model_waf(alpha: f64) -> f64 {
    1.0 / (1.0 - lrw_victim_valid(alpha))
}

/// Mean-field model of greedy GC under uniform random writes with `b` pages per unit (our
/// derivation in docs/FTL.md, in the style of Van Houdt, SIGMETRICS'13): a unit with i valid pages
/// loses one at rate i/U per host write; greedy collects at level j* (and j*−1). Tends to
/// `model_waf` as b grows.
pub fn greedy_model_waf(alpha: f64, b: u32) -> f64 {
    let rho = 1.0 / alpha;
    let bf = b as f64;
    let h = |n: u32| (1..=n).map(|i| 1.0 / i as f64).sum::<f64>();
    for j in 1..b {
        let jf = j as f64;
        let dh = h(b) - h(j);
        let r = (1.0 - jf / (rho * bf)) / ((bf - jf) - jf * dh);
        let x = 1.0 - r * rho * bf * dh;
        let d = x * jf / (rho * bf);
        if r > 0.0 && x >= 0.0 && (0.0..=r).contains(&d) {
            return 1.0 + r * jf - d;
        }
    }
    panic!("no greedy steady state for alpha {alpha}, b {b}")
}
