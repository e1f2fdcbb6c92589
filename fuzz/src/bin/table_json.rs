//! Fuzz target `table_json`: see pcstream_trace::fuzzing and docs/HARDENING.md.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        pcstream_trace::fuzzing::run("table_json", data);
    });
}
