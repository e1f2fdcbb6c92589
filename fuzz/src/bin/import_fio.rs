//! Fuzz target `import_fio`: see pcstream_trace::fuzzing and docs/HARDENING.md.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        pcstream_trace::fuzzing::run("import_fio", data);
    });
}
