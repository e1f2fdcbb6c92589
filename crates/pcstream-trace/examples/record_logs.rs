//! Synthetic shim logs and their conversion, for measuring the record stage at scale.
//!
//! ```text
//! cargo run --release -p pcstream-trace --example record_logs -- gen DIR --records N
//!     [--processes 4] [--threads 4] [--seed 1]
//! cargo run --release -p pcstream-trace --example record_logs -- convert DIR OUT.parquet [--coalesce]
//! ```
//! `gen` writes the logs of `record::synth::write_synthetic` (small stdio writes by several
//! processes and threads, interleaved as the shim appends them) into DIR; `convert` turns them
//! into a file-level trace as `pcstream record` does and prints its summary, records/s and wall
//! time (run it under `/usr/bin/time -v` for the peak RSS).

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use pcstream_trace::record::shimlog::read_dir;
use pcstream_trace::record::synth::{write_synthetic, SynthSpec};
use pcstream_trace::record::write_file_trace;

fn value(args: &[String], name: &str) -> Option<u64> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.replace('_', "").parse().ok()
}

fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("gen") => {
            let dir = args.get(1).ok_or("gen needs a directory")?;
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            let d = SynthSpec::default();
            let spec = SynthSpec {
                records: value(args, "--records").unwrap_or(d.records),
                processes: value(args, "--processes").map_or(d.processes, |v| v as u32),
                threads: value(args, "--threads").map_or(d.threads, |v| v as u32),
                seed: value(args, "--seed").unwrap_or(d.seed),
                ..d
            };
            let t = Instant::now();
            let totals = write_synthetic(Path::new(dir), &spec).map_err(|e| e.to_string())?;
            eprintln!("{totals:?} in {:.1} s", t.elapsed().as_secs_f64());
            Ok(())
        }
        Some("convert") => {
            let (dir, out) = match (args.get(1), args.get(2)) {
                (Some(d), Some(o)) => (d, o),
                _ => return Err("convert needs DIR OUT".into()),
            };
            let coalesce = args.iter().any(|a| a == "--coalesce");
            let t = Instant::now();
            let logs = read_dir(Path::new(dir)).map_err(|e| e.to_string())?;
            let indexed = t.elapsed().as_secs_f64();
            let s = write_file_trace(&logs, Path::new(out), "record_logs", coalesce)
                .map_err(|e| e.to_string())?;
            let wall = t.elapsed().as_secs_f64();
            let n = logs.records();
            println!(
                "{}",
                serde_json::json!({
                    "summary": s,
                    "input_records": n,
                    "index_s": indexed,
                    "wall_s": wall,
                    "records_per_s": n as f64 / wall,
                })
            );
            Ok(())
        }
        _ => Err("usage: record_logs gen DIR --records N | convert DIR OUT [--coalesce]".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("record_logs: error: {e}");
            ExitCode::from(2)
        }
    }
}
