//! MQSim ASCII (DiskSim) trace: `ArrivalTime DeviceNumber StartLBA SizeInSectors Type`, space
//! separated; time in ns, LBA and size in 512-byte sectors, Type 0 = write, 1 = read (note: the
//! opposite of most formats).

use super::{num, scaled, words, IoRecord, LineParser};
use pcstream_core::request::Op;

pub struct MqSim;

impl LineParser for MqSim {
    fn parse(&mut self, line: &str, rec: &mut IoRecord) -> Result<bool, String> {
        let f: [&str; 5] = words(line, "ArrivalTime DeviceNumber StartLBA SizeInSectors Type")?;
        let op = match f[4] {
            "0" => Op::Write,
            "1" => Op::Read,
            other => return Err(format!("Type '{other}' is neither 0 (write) nor 1 (read)")),
        };
        rec.set(
            num(f[0], "ArrivalTime")?,
            op,
            scaled(num(f[2], "StartLBA")?, 512, "StartLBA", "sectors")?,
            scaled(num(f[3], "SizeInSectors")?, 512, "SizeInSectors", "sectors")?,
            0,
        );
        rec.device_from(&[&num(f[1], "DeviceNumber")?]);
        Ok(true)
    }
}
