//! Tencent CBS (2018, SNIA IOTTA) CSV: `Timestamp,Offset,Size,IOType,VolumeID`; Timestamp in Unix
//! seconds, Offset and Size in 512-byte sectors, IOType 0 = read, 1 = write.

use super::{fields, num, scaled, IoRecord, LineParser};
use pcstream_core::request::Op;

pub struct Tencent;

impl LineParser for Tencent {
    fn parse(&mut self, line: &str, rec: &mut IoRecord) -> Result<bool, String> {
        let f: [&str; 5] = fields(line, "Timestamp,Offset,Size,IOType,VolumeID")?;
        let op = match f[3].trim() {
            "0" => Op::Read,
            "1" => Op::Write,
            other => {
                return Err(format!(
                    "IOType '{other}' is neither 0 (read) nor 1 (write)"
                ))
            }
        };
        rec.set(
            scaled(num(f[0], "Timestamp")?, 1_000_000_000, "Timestamp", "s")?,
            op,
            scaled(num(f[1], "Offset")?, 512, "Offset", "sectors")?,
            scaled(num(f[2], "Size")?, 512, "Size", "sectors")?,
            0,
        );
        rec.device_from(&[&num(f[4], "VolumeID")?]);
        Ok(true)
    }
}
