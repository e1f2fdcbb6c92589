//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`: the valid inputs the fuzzing
//! started from and every input that once crashed a target) through the targets' bodies
//! (`pcstream_trace::fuzzing`), so a regression shows in a normal `cargo test` without AFL++
//! (docs/HARDENING.md). Takes a few seconds.

use std::path::Path;

use pcstream_trace::fuzzing::{run, TARGETS};

#[test]
fn every_corpus_input_runs_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut failures = Vec::new();
    let mut total = 0;
    for target in TARGETS {
        let dir = root.join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: no corpus", dir.display());
        for f in files {
            let data = std::fs::read(&f).unwrap();
            total += 1;
            if std::panic::catch_unwind(|| run(target, &data)).is_err() {
                failures.push(f.display().to_string());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} inputs panicked: {failures:?}",
        failures.len()
    );
}

/// Everything `input` would do to a target's parser, as a message: `Ok` when it is accepted
/// whole (a trace to its last row).
fn parse(target: &str, data: &[u8]) -> Result<(), String> {
    use pcstream_core::{SimOptions, Simulator, SsdConfig};
    use pcstream_trace::filetrace::FileTraceReader;
    use pcstream_trace::BlockTraceReader;
    let bytes = bytes::Bytes::copy_from_slice(data);
    let e = |e: &dyn std::fmt::Display| e.to_string();
    match target {
        "block_trace" => {
            let mut r = BlockTraceReader::from_bytes("in.parquet", bytes).map_err(|x| e(&x))?;
            let mut buf = Vec::new();
            while r.next_batch(&mut buf).map_err(|x| e(&x))? {}
        }
        "file_trace" => {
            let mut r = FileTraceReader::from_bytes("in.parquet", bytes).map_err(|x| e(&x))?;
            let mut buf = Vec::new();
            while r.next_batch(&mut buf).map_err(|x| e(&x))? {}
        }
        "ssd_toml" => {
            SsdConfig::from_toml("in", std::str::from_utf8(data).unwrap()).map_err(|x| e(&x))?;
        }
        "table_json" => {
            let toml = "[geometry]\nchannels = 1\nways = 2\nblocks_per_die = 64\n\
                        pages_per_block = 16\n[ftl]\nop = 0.3\nhost_streams = 4\n";
            let cfg = SsdConfig::from_toml("t", toml).unwrap();
            let opts = SimOptions {
                policy: "pcstream".into(),
                ..Default::default()
            };
            let mut sim = Simulator::new(&cfg, opts).unwrap();
            let text = std::str::from_utf8(data).unwrap();
            sim.policy_mut().load_state(text).map_err(|x| e(&x))?;
        }
        _ => unreachable!("{target}"),
    }
    Ok(())
}

/// The corpus inputs named `refused-*` (one per check of what the readers take) are refused,
/// with a one-line message; the other inputs of those targets that are valid still read.
#[test]
fn refused_inputs_are_refused_with_one_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut refused = 0;
    for target in ["block_trace", "file_trace", "ssd_toml", "table_json"] {
        for entry in std::fs::read_dir(root.join(target)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let data = std::fs::read(&path).unwrap();
            let res = parse(target, &data);
            if name.starts_with("refused-") {
                let m = res.expect_err(&name);
                assert!(!m.contains('\n'), "{name}: {m}");
                refused += 1;
            } else if name.starts_with("codec-") {
                res.unwrap_or_else(|m| panic!("{name}: {m}"));
            }
        }
    }
    assert!(refused >= 15, "{refused} refused inputs");
}
