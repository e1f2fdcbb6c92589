//! Helpers shared by the integration tests: hand-built Parquet files (any column order, types
//! and metadata), reading a whole trace back, the test devices and one simulation's WAF.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use pcstream_core::config::SsdConfig;
use pcstream_core::request::Request;
use pcstream_core::{SimOptions, Simulator};
use pcstream_trace::{BlockTraceReader, TraceError};

/// Write `cols` (name, array) as a Parquet file with `kv` metadata and `group` rows per row group.
pub fn write_raw(path: &Path, cols: Vec<(&str, ArrayRef)>, kv: &[(&str, &str)], group: usize) {
    let schema = Arc::new(Schema::new(
        cols.iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let kv = kv
        .iter()
        .map(|(k, v)| KeyValue::new(k.to_string(), v.to_string()))
        .collect();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .set_key_value_metadata(Some(kv))
        .build();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        schema.clone(),
        Some(props),
    )
    .unwrap();
    let batch = RecordBatch::try_new(schema, cols.into_iter().map(|(_, a)| a).collect()).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Every row of the trace, or the first error.
pub fn read_all(path: &Path) -> Result<Vec<Request>, TraceError> {
    let mut r = BlockTraceReader::open(path)?;
    let mut all = Vec::new();
    let mut buf = Vec::new();
    while r.next_batch(&mut buf)? {
        all.extend_from_slice(&buf);
    }
    Ok(all)
}

/// The error message of reading `path` to the end (panics if it reads fine).
pub fn read_err(path: &Path) -> String {
    match read_all(path) {
        Ok(rows) => panic!("expected an error, read {} rows", rows.len()),
        Err(e) => e.to_string(),
    }
}

/// A device of `channels` × `ways` dies of `blocks` blocks of `pages` pages, GC by whole lines,
/// 7 % OP, greedy victims, 8 host streams: the shape every policy test runs on.
pub fn greedy_device(name: &str, channels: u32, ways: u32, blocks: u32, pages: u32) -> SsdConfig {
    let toml = format!(
        "[geometry]\nchannels = {channels}\nways = {ways}\nblocks_per_die = {blocks}\n\
         pages_per_block = {pages}\n[ftl]\nop = 0.07\nhost_streams = 8\ngc_unit = \"line\"\n\
         gc_victim = \"greedy\"\n"
    );
    SsdConfig::from_toml(name, &toml).expect("valid config")
}

/// WAF of one simulation of `reqs` with options `o` (the death-time pre-pass run first when the
/// policy needs it). Whole-state checks after every GC are off: they would dominate, and
/// tests/invariants.rs in the core crate runs them for every policy.
pub fn waf(cfg: &SsdConfig, o: SimOptions, reqs: &[Request]) -> f64 {
    let mut sim = Simulator::new(cfg, o).expect("simulator");
    sim.set_verify_each_gc(false);
    sim.run_requests(reqs).expect("run");
    sim.finish().waf
}
