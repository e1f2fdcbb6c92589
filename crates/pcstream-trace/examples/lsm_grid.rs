//! WAF of the PC-based policies and their references on the `gen lsm` grid, as a Markdown table.
//!
//! ```text
//! cargo run --release -p pcstream-trace --example lsm_grid -- [--seed 1] [--pages 1200000]
//!     [--warmup 400000] [--sst-alloc next|lowest] [--update docs/POLICIES.md]
//! ```
//! The grid: levels {3, 4, 5} × ratio {4, 10} × skew {0, 0.99} × build share {0, 0.3}, SSTs of
//! 256 pages, on a 1 GiB SSD (16 dies, 512 lines of 512 pages, 7 % OP, greedy, 8 streams); each
//! trace addresses the SSD's logical pages and writes `pages` host pages, the first `warmup`
//! excluded; no prefill (the store loads itself), no timing. Besides the WAF, each row shows
//! the PC that writes the most pages: its share and the coefficient of variation of its pages'
//! lifetimes (write to overwrite or trim, in host pages, over the whole trace). With `--update`
//! the table replaces the text between the `lsm-table` markers of that file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pcstream_core::config::SsdConfig;
use pcstream_core::SimOptions;
use pcstream_trace::gen::TopPc;
use pcstream_trace::{generate, generate_to_file, run_trace, GenParams, SstAlloc};

const BEGIN: &str = "<!-- lsm-table:begin -->";
const END: &str = "<!-- lsm-table:end -->";

const POLICIES: &[&str] = &[
    "baseline",
    "autostream-sfr",
    "autostream-mq",
    "pcstream-star",
    "pcstream",
    "per-pc",
    "oracle",
];

const SSD: &str = "[geometry]\nchannels = 4\nways = 4\nblocks_per_die = 512\npages_per_block = 32\n\
                   [ftl]\nop = 0.07\nhost_streams = 8\ngc_unit = \"line\"\ngc_victim = \"greedy\"\n";

struct Args {
    seed: u64,
    pages: u64,
    warmup: u64,
    sst_alloc: SstAlloc,
    update: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        seed: 1,
        pages: 1_200_000,
        warmup: 400_000,
        sst_alloc: SstAlloc::Next,
        update: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or(format!("{k} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--seed" => a.seed = num(val()?)?,
            "--pages" => a.pages = num(val()?)?,
            "--warmup" => a.warmup = num(val()?)?,
            "--sst-alloc" => a.sst_alloc = val()?.parse()?,
            "--update" => a.update = Some(val()?.into()),
            _ => {
                return Err(format!(
                    "unknown argument '{k}'; use --seed, --pages, --warmup, --sst-alloc, --update"
                ))
            }
        }
    }
    if a.warmup >= a.pages {
        return Err(format!(
            "--warmup {} must be below --pages {}",
            a.warmup, a.pages
        ));
    }
    Ok(a)
}

/// The PC writing the most pages: (its share of the pages, the CV of its lifetimes).
fn top_pc(p: &GenParams) -> Result<(f64, f64), String> {
    let mut top = TopPc::new();
    generate("lsm", p, &mut |r| {
        top.push(&r);
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    top.share_and_cv().ok_or("the trace writes nothing".into())
}

fn table(a: &Args, dir: &Path) -> Result<String, String> {
    let cfg = SsdConfig::from_toml("1g-512-lines", SSD).map_err(|e| e.to_string())?;
    let logical = cfg.logical_pages();
    let mut s = format!(
        "WAF on `gen lsm` (SSTs of 256 pages, `--sst-alloc {}`, seed {}), {} host pages of which the first {} are \
         warm-up, on a 1 GiB SSD (16 dies, 512 lines of 512 pages, 7 % OP, greedy, 8 streams; {} \
         logical pages), no prefill; top PC: the PC writing the most pages, its share and the CV \
         of its lifetimes. Produced by `cargo run --release -p pcstream-trace --example lsm_grid \
         -- --update docs/POLICIES.md`.\n\n| levels | ratio | skew | build | top PC share, CV |",
        a.sst_alloc, a.seed, a.pages, a.warmup, logical
    );
    for p in POLICIES {
        s += &format!(" `{p}` |");
    }
    s += "\n|---:|---:|---:|---:|---:|";
    s += &"---:|".repeat(POLICIES.len());
    s += "\n";
    let path = dir.join("lsm.parquet");
    for levels in [3u32, 4, 5] {
        for ratio in [4u32, 10] {
            for skew in [0.0, 0.99] {
                for build_share in [0.0, 0.3] {
                    let p = GenParams {
                        capacity_pages: logical,
                        writes: a.pages,
                        levels,
                        ratio,
                        skew,
                        build_share,
                        sst_pages: 256,
                        sst_alloc: a.sst_alloc,
                        seed: a.seed,
                        ..GenParams::default()
                    };
                    let label = format!("L{levels} R{ratio} θ{skew} B{build_share}");
                    generate_to_file("lsm", &p, &path).map_err(|e| format!("{label}: {e}"))?;
                    let (share, cv) = top_pc(&p).map_err(|e| format!("{label}: {e}"))?;
                    s += &format!(
                        "| {levels} | {ratio} | {skew} | {build_share} | {:.0} %, {cv:.2} |",
                        100.0 * share
                    );
                    for &name in POLICIES {
                        let opts = SimOptions {
                            policy: name.into(),
                            warmup: a.warmup,
                            seed: a.seed,
                            trace_name: label.clone(),
                            ..SimOptions::default()
                        };
                        let r = run_trace(&path, &cfg, opts, None, &mut |_, _| true)
                            .map_err(|e| format!("{label} / {name}: {e}"))?;
                        eprintln!("{label:>22} {name:>15} WAF {:.3}", r.waf);
                        s += &format!(" {:.3} |", r.waf);
                    }
                    s += "\n";
                }
            }
        }
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
