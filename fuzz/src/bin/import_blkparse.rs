//! Fuzz target `import_blkparse`: see pcstream_trace::fuzzing and docs/HARDENING.md.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        pcstream_trace::fuzzing::run("import_blkparse", data);
    });
}
