//! Fuzz target `import_alibaba`: see pcstream_trace::fuzzing and docs/HARDENING.md.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        pcstream_trace::fuzzing::run("import_alibaba", data);
    });
}
