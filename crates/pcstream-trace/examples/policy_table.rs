//! The WAF of every placement policy on the `gen` workloads, as a Markdown table.
//!
//! ```text
//! cargo run --release -p pcstream-trace --example policy_table -- [--ssd small] [--passes 8]
//!     [--update docs/POLICIES.md]
//! ```
//! Each workload addresses the SSD's logical pages, the SSD is aged to 90 % (`--prefill 0.9`),
//! `passes` × the logical pages are written and the first 3 passes are warm-up. With `--update`
//! the table replaces the text between the `waf-table` markers of that file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pcstream_core::config::SsdConfig;
use pcstream_core::placement::registry;
use pcstream_core::SimOptions;
use pcstream_trace::{generate_to_file, run_trace, GenParams};

const BEGIN: &str = "<!-- waf-table:begin -->";
const END: &str = "<!-- waf-table:end -->";

/// (column label, generator, request pages, mix preset)
const WORKLOADS: &[(&str, &str, u32, &str)] = &[
    ("uniform", "uniform", 1, ""),
    ("zipf 0.99", "zipf", 1, ""),
    ("hotcold 10/90", "hotcold", 1, ""),
    ("mix rocksdb-like", "mix", 8, "rocksdb-like"),
    ("mix hotcold-files", "mix", 8, "hotcold-files"),
    ("mix append-only", "mix", 8, "append-only"),
];

struct Args {
    ssd: String,
    passes: u64,
    update: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        ssd: "small".into(),
        passes: 8,
        update: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--ssd" => a.ssd = val()?,
            "--passes" => {
                a.passes = val()?
                    .parse()
                    .map_err(|e| format!("--passes: {e}"))
                    .and_then(|p: u64| {
                        if p > 3 {
                            Ok(p)
                        } else {
                            Err("--passes must be > 3 (3 are warm-up)".into())
                        }
                    })?
            }
            "--update" => a.update = Some(val()?.into()),
            _ => {
                return Err(format!(
                    "unknown argument '{k}'; use --ssd, --passes, --update"
                ))
            }
        }
    }
    Ok(a)
}

fn table(a: &Args, dir: &Path) -> Result<String, String> {
    let cfg = SsdConfig::preset(&a.ssd)
        .or_else(|_| {
            std::fs::read_to_string(&a.ssd)
                .map_err(|e| e.to_string())
                .and_then(|t| SsdConfig::from_toml(&a.ssd, &t).map_err(|e| e.to_string()))
        })
        .map_err(|e| format!("--ssd {}: {e}", a.ssd))?;
    let logical = cfg.logical_pages();
    let policies = registry::names();
    let mut waf = vec![vec![0f64; WORKLOADS.len()]; policies.len()];
    for (j, &(label, kind, req, mix)) in WORKLOADS.iter().enumerate() {
        let path = dir.join(format!("w{j}.parquet"));
        let p = GenParams {
            capacity_pages: logical,
            writes: a.passes * logical / req as u64,
            req_pages: req,
            seed: 42,
            mix: mix.into(),
            ..GenParams::default()
        };
        generate_to_file(kind, &p, &path).map_err(|e| format!("{label}: {e}"))?;
        for (i, &name) in policies.iter().enumerate() {
            let opts = SimOptions {
                policy: name.into(),
                prefill: 0.9,
                warmup: 3 * logical,
                timing: false,
                trace_name: label.into(),
                ..SimOptions::default()
            };
            let r = run_trace(&path, &cfg, opts, None, &mut |_, _| true)
                .map_err(|e| format!("{label} / {name}: {e}"))?;
            waf[i][j] = r.waf;
            eprintln!("{label:>18} {name:>15} WAF {:.3}", r.waf);
            if std::env::var_os("POLICY_TABLE_DEBUG").is_some() {
                eprintln!(
                    "{}",
                    serde_json::to_string(&r.per_stream).unwrap_or_default()
                );
            }
        }
    }
    let base = policies
        .iter()
        .position(|&p| p == "baseline")
        .expect("baseline is registered");
    let mut s = format!(
        "WAF per policy and `gen` workload on the `{}` SSD ({} logical pages), aged to 90 %, {} passes \
         of the logical pages written, the first 3 excluded; in parentheses the ratio to `baseline`. \
         Produced by `make policy-table`.\n\n| policy |",
        a.ssd, logical, a.passes
    );
    for w in WORKLOADS {
        s += &format!(" {} |", w.0);
    }
    s += "\n|---|";
    s += &"---:|".repeat(WORKLOADS.len());
    s += "\n";
    for (i, name) in policies.iter().enumerate() {
        s += &format!("| `{name}` |");
        for (w, b) in waf[i].iter().zip(&waf[base]) {
            s += &format!(" {w:.2} ({:.2}) |", w / b);
        }
        s += "\n";
    }
    Ok(s)
}

fn update(file: &Path, body: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let (Some(a), Some(b)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!(
            "{}: no '{BEGIN}' … '{END}' markers; add them where the table goes",
            file.display()
        ));
    };
    let new = format!("{}{BEGIN}\n{body}{}", &text[..a], &text[b..]);
    std::fs::write(file, new).map_err(|e| format!("{}: {e}", file.display()))
}

fn main() -> ExitCode {
    let run = || -> Result<(), String> {
        let a = parse_args()?;
        let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        let t = table(&a, dir.path())?;
        match &a.update {
            Some(f) => update(f, &t),
            None => {
                print!("{t}");
                Ok(())
            }
        }
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
