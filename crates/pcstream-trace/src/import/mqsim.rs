//! MQSim ASCII (DiskSim) trace: `ArrivalTime DeviceNumber StartLBA SizeInSectors Type`, space
//! separated; time in ns, LBA and size in 512-byte sectors, Type 0 = write, 1 = read (note: the
//! opposite of most formats).

use super::{num, IoRecord, LineParser};
use pcstream_core::request::Op;

pub struct MqSim;

impl LineParser for MqSim {
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 5 {
            return Err(format!(
                "expected 5 space-separated fields (ArrivalTime DeviceNumber StartLBA SizeInSectors Type), found {}",
                f.len()
            ));
        }
        let op = match f[4] {
            "0" => Op::Write,
            "1" => Op::Read,
            other => return Err(format!("Type '{other}' is neither 0 (write) nor 1 (read)")),
        };
        Ok(Some(IoRecord {
            ts_ns: num(f[0], "ArrivalTime")?,
            op,
            offset_bytes: num(f[2], "StartLBA")?.saturating_mul(512),
            len_bytes: num(f[3], "SizeInSectors")?.saturating_mul(512),
            device: num(f[1], "DeviceNumber")?.to_string(),
            pid: 0,
        }))
    }
}
