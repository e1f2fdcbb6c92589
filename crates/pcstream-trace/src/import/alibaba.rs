//! Alibaba cloud block traces (2020) `io_traces.csv`: `device_id,opcode,offset,length,timestamp`;
//! opcode `R`/`W`, offset and length in bytes, timestamp in µs since the Unix epoch.

use super::{fields, num, scaled, IoRecord, LineParser};
use pcstream_core::request::Op;

pub struct Alibaba;

impl LineParser for Alibaba {
    fn parse(&mut self, line: &str, rec: &mut IoRecord) -> Result<bool, String> {
        let f: [&str; 5] = fields(line, "device_id,opcode,offset,length,timestamp")?;
        let op = match f[1].trim() {
            "R" | "r" => Op::Read,
            "W" | "w" => Op::Write,
            other => return Err(format!("opcode '{other}' is neither R nor W")),
        };
        rec.set(
            scaled(num(f[4], "timestamp")?, 1000, "timestamp", "µs")?,
            op,
            num(f[2], "offset")?,
            num(f[3], "length")?,
            0,
        );
        rec.device_from(&[&num(f[0], "device_id")?]);
        Ok(true)
    }
}
