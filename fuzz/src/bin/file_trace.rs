//! Fuzz target `file_trace`: see pcstream_trace::fuzzing and docs/HARDENING.md.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        pcstream_trace::fuzzing::run("file_trace", data);
    });
}
