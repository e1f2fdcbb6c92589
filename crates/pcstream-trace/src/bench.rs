//! `pcstream bench`: the engine's throughput in steady state. A uniform random workload of 4 KiB
//! writes is generated for the SSD, the device is filled sequentially, one device-fill of the
//! trace is excluded as warm-up, and the rest is measured (Parquet decoding included, as in any
//! run). Memory is reported as the engine's state and the process's peak resident set.

use std::path::Path;

use pcstream_core::{SimOptions, SsdConfig};
use serde::Serialize;

use crate::error::TraceError;
use crate::gen::{generate_to_file, GenParams};
use crate::replay::{run_trace, RunError};

/// What [`bench`] measured (the `pcstream bench --json` object).
#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    pub ssd: String,
    pub policy: String,
    pub timing: bool,
    /// Pages the generated trace writes.
    pub trace_writes: u64,
    /// Host pages after the warm-up (what the rates are over).
    pub measured_host_pages: u64,
    pub gc_pages: u64,
    pub waf: f64,
    pub wall_s: f64,
    pub page_ops_per_s: f64,
    pub host_pages_per_s: f64,
    pub engine_state_bytes: usize,
    pub bytes_per_page: f64,
    /// Peak resident memory of this process (Linux `VmHWM`), if known.
    pub peak_rss_bytes: Option<u64>,
    pub note: &'static str,
}

/// Run `policy` on `cfg` over `pages` uniform random page writes (0: three device-fills), in a
/// temporary directory that is removed afterwards.
pub fn bench(
    cfg: &SsdConfig,
    policy: &str,
    pages: u64,
    timing: bool,
    seed: u64,
) -> Result<BenchResult, RunError> {
    let logical = cfg.logical_pages();
    let writes = if pages == 0 { 3 * logical } else { pages };
    let dir = std::env::temp_dir().join(format!("pcstream-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| TraceError::Io {
        path: dir.display().to_string(),
        why: format!("cannot create the benchmark directory ({e})"),
    })?;
    let result = bench_in(&dir, cfg, policy, writes, timing, seed);
    let _ = std::fs::remove_dir_all(&dir);
    let r = result?;
    Ok(BenchResult {
        ssd: cfg.name.clone(),
        policy: policy.to_string(),
        timing,
        trace_writes: writes,
        measured_host_pages: r.host_pages,
        gc_pages: r.gc_pages,
        waf: r.waf,
        wall_s: r.wall_s,
        page_ops_per_s: r.page_ops_per_s,
        host_pages_per_s: r.host_pages_per_s,
        engine_state_bytes: r.engine_state_bytes,
        bytes_per_page: r.bytes_per_page,
        peak_rss_bytes: peak_rss(),
        note: "steady state after a full sequential prefill and one device-fill of warm-up; Parquet decode included",
    })
}

fn bench_in(
    dir: &Path,
    cfg: &SsdConfig,
    policy: &str,
    writes: u64,
    timing: bool,
    seed: u64,
) -> Result<pcstream_core::SimResult, RunError> {
    let logical = cfg.logical_pages();
    let trace = dir.join("uniform.parquet");
    let p = GenParams {
        capacity_pages: logical,
        writes,
        seed,
        ..Default::default()
    };
    generate_to_file("uniform", &p, &trace)?;
    let opts = SimOptions {
        policy: policy.into(),
        prefill: 1.0,
        warmup: logical,
        seed,
        timing,
        trace_name: trace.display().to_string(),
        ..Default::default()
    };
    run_trace(&trace, cfg, opts, None, &mut |_, _| true)
}

/// Peak resident memory of this process (Linux), bytes.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}
