//! WAF of chosen policies on block traces, each against `baseline`: the check that a policy
//! is never (much) worse than one stream, over the bundled suite or any set of traces.
//!
//! ```text
//! cargo run --release -p pcstream-trace --example trace_sweep -- [--ssd paper|FILE.toml]
//!     [--policy P]... [--param KEY=VALUE]... [--warmup PAGES] [--prefill F] TRACE.parquet...
//! ```
//! Default policies: `pcstream-star` and `pcstream`. `--param` goes to every policy but
//! `baseline`; `--policy NAME?KEY=VALUE&KEY=VALUE` gives that one its own. Prints one line per trace: baseline WAF, each policy's WAF and its ratio to
//! baseline; at the end the worst ratio of each policy. No timing; no warm-up unless given (as
//! `compare` runs the bundled suite, whose traces carry their aged state; `gen lsm` traces are
//! measured after 400000 pages, as `examples/lsm_grid.rs` does); no prefill unless given (`gen`
//! workloads are measured on an SSD aged to 90 %, `--prefill 0.9`, as `make policy-table` does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pcstream_core::config::SsdConfig;
use pcstream_core::SimOptions;
use pcstream_trace::run_trace;

struct Args {
    ssd: SsdConfig,
    policies: Vec<String>,
    params: BTreeMap<String, String>,
    warmup: u64,
    prefill: f64,
    traces: Vec<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut ssd = SsdConfig::preset("paper").map_err(|e| e.to_string())?;
    let mut policies = Vec::new();
    let mut params = BTreeMap::new();
    let mut traces = Vec::new();
    let mut warmup = 0;
    let mut prefill = 0.0;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--ssd" => {
                let v = val()?;
                ssd = match SsdConfig::preset(&v) {
                    Ok(c) => c,
                    Err(_) => {
                        let text = std::fs::read_to_string(&v).map_err(|e| format!("{v}: {e}"))?;
                        SsdConfig::from_toml(&v, &text).map_err(|e| format!("{v}: {e}"))?
                    }
                };
            }
            "--policy" => policies.push(val()?),
            "--warmup" => {
                let v = val()?;
                warmup = v.parse().map_err(|e| format!("--warmup {v}: {e}"))?;
            }
            "--prefill" => {
                let v = val()?;
                prefill = v.parse().map_err(|e| format!("--prefill {v}: {e}"))?;
            }
            "--param" => {
                let v = val()?;
                let (a, b) = v
                    .split_once('=')
                    .ok_or(format!("--param {v}: use KEY=VALUE"))?;
                params.insert(a.to_string(), b.to_string());
            }
            _ if k.starts_with("--") => {
                return Err(format!(
                    "unknown option '{k}'; use --ssd, --policy, --param, --warmup, --prefill"
                ))
            }
            _ => traces.push(PathBuf::from(k)),
        }
    }
    if policies.is_empty() {
        policies = vec!["pcstream-star".into(), "pcstream".into()];
    }
    if traces.is_empty() {
        return Err("no traces given".into());
    }
    Ok(Args {
        ssd,
        policies,
        params,
        warmup,
        prefill,
        traces,
    })
}

fn waf(a: &Args, trace: &Path, policy: &str) -> Result<f64, String> {
    // `NAME?KEY=VALUE&...`: parameters of this policy alone, over the `--param`s.
    let (name, own) = policy.split_once('?').unwrap_or((policy, ""));
    let mut params = if name == "baseline" {
        BTreeMap::new()
    } else {
        a.params.clone()
    };
    for kv in own.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or(format!("{policy}: use NAME?KEY=VALUE&KEY=VALUE"))?;
        params.insert(k.to_string(), v.to_string());
    }
    let opts = SimOptions {
        policy: name.into(),
        timing: false,
        params,
        trace_name: trace.display().to_string(),
        warmup: a.warmup,
        prefill: a.prefill,
        ..SimOptions::default()
    };
    run_trace(trace, &a.ssd, opts, None, &mut |_, _| true)
        .map(|r| r.waf)
        .map_err(|e| format!("{} / {policy}: {e}", trace.display()))
}

/// One line to stdout; a reader that went away (`| head`) ends the sweep quietly.
fn say(line: &str) -> Result<(), String> {
    use std::io::Write;
    match writeln!(std::io::stdout(), "{line}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        r => r.map_err(|e| format!("stdout: {e}")),
    }
}

fn main() -> ExitCode {
    let run = || -> Result<(), String> {
        let a = parse_args()?;
        let mut worst = vec![(0.0f64, String::new()); a.policies.len()];
        for t in &a.traces {
            let base = waf(&a, t, "baseline")?;
            let name = t
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into());
            let mut line = format!("{name:>34} baseline {base:.3}");
            for (i, p) in a.policies.iter().enumerate() {
                let w = waf(&a, t, p)?;
                let r = w / base;
                line += &format!("  {p} {w:.3} ({r:.3})");
                if r > worst[i].0 {
                    worst[i] = (r, name.clone());
                }
            }
            say(&line)?;
        }
        for (p, (r, t)) in a.policies.iter().zip(&worst) {
            say(&format!("worst {p}: {r:.3} × baseline on {t}"))?;
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
