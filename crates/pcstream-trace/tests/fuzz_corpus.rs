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
