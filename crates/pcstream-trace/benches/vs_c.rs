//! The engine against a bare C loop (`benches/ref_ftl.c`, built here with `cc -O2`) on the same
//! run: `baseline`, the `paper` preset, every logical page written once in order, then 3 device
//! fills of uniform random single-page writes (a Parquet trace), greedy GC, no timing.
//!
//! The engine runs the Parquet trace through `run_trace` (decode included); the C loop reads the
//! trace's LPNs as a file of u32 written from the same trace. Both are timed as a whole run
//! (wall clock, the C loop's process start and file read included), interleaved, and the medians
//! and their ratios printed; the C loop also built with `-DREF_PREFETCH` (its host loop prefetches
//! the map entries a few writes ahead, as the engine does). Fails when the WAFs differ by more
//! than 2 %.
//! `PCSTREAM_BENCH_RUNS` (default 3) sets the runs, `PCSTREAM_BENCH_PRESET` the device.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use pcstream_core::request::Op;
use pcstream_core::{SimOptions, SsdConfig};
use pcstream_trace::{generate_to_file, run_trace, BlockTraceReader, GenParams};

/// Host page writes of the trace, as device fills.
const FILLS: u64 = 3;
/// Largest relative WAF difference accepted between the two.
const WAF_TOLERANCE: f64 = 0.02;

/// The LPN of every page the trace writes, in order, as little-endian u32.
fn write_lpns(trace: &Path, out: &Path) -> u64 {
    let mut r = BlockTraceReader::open(trace).expect("open the trace");
    let (mut buf, mut bytes) = (Vec::new(), Vec::new());
    while r.next_batch(&mut buf).expect("read the trace") {
        for q in buf.iter().filter(|q| q.op == Op::Write as u8) {
            for l in q.lpn..q.lpn + q.pages as u64 {
                bytes.extend_from_slice(&u32::try_from(l).expect("LPN fits u32").to_le_bytes());
            }
        }
    }
    std::fs::write(out, &bytes).expect("write the LPN file");
    bytes.len() as u64 / 4
}

/// `ref_ftl.c` built with `cc -O2` and the `extra` flags.
fn build_c(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ref_ftl.c");
    let exe = dir.join(name);
    let st = Command::new("cc")
        .arg("-O2")
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("run cc");
    assert!(st.success(), "cc -O2 {} failed", src.display());
    exe
}

/// (seconds, WAF) of one C run.
fn run_c(exe: &Path, lpns: &Path, cfg: &SsdConfig) -> (f64, f64) {
    let (low, high) = pcstream_core::ftl::gc_watermarks(cfg, cfg.ftl.host_streams, 1);
    let t = Instant::now();
    let out = Command::new(exe)
        .arg(lpns)
        .args([
            cfg.logical_pages().to_string(),
            cfg.units().to_string(),
            cfg.unit_pages().to_string(),
            low.to_string(),
            high.to_string(),
        ])
        .output()
        .expect("run ref_ftl");
    let secs = t.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ref_ftl failed: {text}");
    let field = |name: &str| -> f64 {
        let mut it = text.split_whitespace();
        it.position(|w| w == name)
            .and_then(|_| it.next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in ref_ftl's output: {text}"))
    };
    (secs, field("waf"))
}

/// (seconds, WAF) of one engine run.
fn run_engine(trace: &Path, cfg: &SsdConfig) -> (f64, f64) {
    let o = SimOptions {
        policy: "baseline".into(),
        prefill: 1.0,
        ..Default::default()
    };
    let t = Instant::now();
    let r = run_trace(trace, cfg, o, None, &mut |_, _| true).expect("run");
    (t.elapsed().as_secs_f64(), r.waf)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if cfg!(debug_assertions) {
        eprintln!("warning: benchmark built without optimisation");
    }
    // `cargo bench` passes `--bench`; a filter argument selects nothing here.
    let runs: usize = std::env::var("PCSTREAM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let preset = std::env::var("PCSTREAM_BENCH_PRESET").unwrap_or_else(|_| "paper".into());
    let cfg = SsdConfig::preset(&preset).expect("preset");
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("uniform.parquet");
    let p = GenParams {
        capacity_pages: cfg.logical_pages(),
        writes: FILLS * cfg.logical_pages(),
        seed: 1,
        ..Default::default()
    };
    generate_to_file("uniform", &p, &trace).expect("generate");
    let lpns = dir.path().join("lpns.u32");
    let pages = write_lpns(&trace, &lpns);
    let exe = build_c(dir.path(), "ref_ftl", &[]);
    let exe_pf = build_c(dir.path(), "ref_ftl_prefetch", &["-DREF_PREFETCH"]);
    let (mut e_times, mut c_times, mut pf_times) = (Vec::new(), Vec::new(), Vec::new());
    let (mut e_waf, mut c_waf) = (0.0, 0.0);
    for _ in 0..runs {
        let (t, w) = run_engine(&trace, &cfg);
        e_times.push(t);
        e_waf = w;
        let (t, w) = run_c(&exe, &lpns, &cfg);
        c_times.push(t);
        c_waf = w;
        let (t, w) = run_c(&exe_pf, &lpns, &cfg);
        pf_times.push(t);
        assert_eq!(w, c_waf, "the prefetching build simulates the same");
    }
    let (e, c) = (median(e_times.clone()), median(c_times.clone()));
    let pf = median(pf_times.clone());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "engine vs C loop: {preset}, baseline, prefill + {FILLS} fills of uniform single-page \
         writes ({pages} pages), no timing, {runs} interleaved runs, load {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("  engine (Parquet trace)   median {e:.3} s  runs {e_times:.3?}  WAF {e_waf:.4}");
    println!("  C loop ref_ftl.c (-O2)   median {c:.3} s  runs {c_times:.3?}  WAF {c_waf:.4}");
    println!("  C loop with prefetch     median {pf:.3} s  runs {pf_times:.3?}");
    println!("  wall ratio engine / C    {:.3}", e / c);
    println!("  wall ratio engine / C with prefetch {:.3}", e / pf);
    let diff = (e_waf - c_waf).abs() / c_waf;
    assert!(
        diff <= WAF_TOLERANCE,
        "the WAFs differ by {:.2} % (more than {:.0} %)",
        diff * 100.0,
        WAF_TOLERANCE * 100.0
    );
}
