//! Tencent CBS (2018, SNIA IOTTA) CSV: `Timestamp,Offset,Size,IOType,VolumeID`; Timestamp in Unix
//! seconds, Offset and Size in 512-byte sectors, IOType 0 = read, 1 = write.

use super::{fields, num, IoRecord, LineParser};
use pcstream_core::request::Op;

pub struct Tencent;

impl LineParser for Tencent {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        let f = fields(line, 5, "Timestamp,Offset,Size,IOType,VolumeID")?;
        let op = match f[3].trim() {
            "0" => Op::Read,
            "1" => Op::Write,
            other => {
                return Err(format!(
                    "IOType '{other}' is neither 0 (read) nor 1 (write)"
                ))
            }
        };
        Ok(Some(IoRecord {
            ts_ns: num(f[0], "Timestamp")?.saturating_mul(1_000_000_000),
            op,
            offset_bytes: num(f[1], "Offset")?.saturating_mul(512),
            len_bytes: num(f[2], "Size")?.saturating_mul(512),
            device: num(f[4], "VolumeID")?.to_string(),
            pid: 0,
        }))
    }
}
