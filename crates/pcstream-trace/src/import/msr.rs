//! SNIA IOTTA MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`;
//! Timestamp in Windows FILETIME ticks (100 ns), Type `Read`/`Write`, Offset and Size in bytes.
//! The device is `Hostname_DiskNumber` (e.g. `hm_0`, as the files are named).

use super::{fields, num, IoRecord, LineParser};
use pcstream_core::request::Op;

pub struct Msr;

impl LineParser for Msr {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        let f = fields(
            line,
            7,
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
        )?;
        let op = match f[3].trim().to_ascii_lowercase().as_str() {
            "read" => Op::Read,
            "write" => Op::Write,
            other => return Err(format!("Type '{other}' is neither Read nor Write")),
        };
        Ok(Some(IoRecord {
            ts_ns: num(f[0], "Timestamp")?.saturating_mul(100),
            op,
            offset_bytes: num(f[4], "Offset")?,
            len_bytes: num(f[5], "Size")?,
            device: format!("{}_{}", f[1].trim(), f[2].trim()),
            pid: 0,
        }))
    }
}
