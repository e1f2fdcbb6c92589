//! fio iolog v2 and v3. The first line names the version (`fio version 2 iolog` or
//! `fio version 3 iolog`). v2 lines: `FILE add|open|close` or `FILE ACTION OFFSET LENGTH`; v3
//! lines carry a leading timestamp in ms: `TS FILE ACTION [OFFSET LENGTH]`. ACTION is
//! read/write/trim/sync/datasync; offsets and lengths in bytes. The device is the file name.

use super::{num, scaled, IoRecord, LineParser};
use pcstream_core::request::Op;

#[derive(Default)]
pub struct FioLog {
    version: Option<u8>,
    /// v2 has no timestamps: requests are 1 µs apart, in order.
    index: u64,
}

impl LineParser for FioLog {
    fn parse(&mut self, line: &str, rec: &mut IoRecord) -> Result<bool, String> {
        let Some(v) = self.version else {
            self.version = match line.trim() {
                "fio version 2 iolog" => Some(2),
                "fio version 3 iolog" => Some(3),
                other => return Err(format!("'{other:.40}' is not an iolog header ('fio version 2 iolog' or 'fio version 3 iolog')")),
            };
            return Ok(false);
        };
        let mut f: Vec<&str> = line.split_whitespace().collect();
        let ts_ns = if v == 3 {
            if f.is_empty() {
                return Ok(false);
            }
            scaled(num(f.remove(0), "timestamp")?, 1_000_000, "timestamp", "ms")?
        } else {
            self.index += 1;
            self.index * 1000
        };
        match f.as_slice() {
            [_, "add" | "open" | "close"] => Ok(false),
            [file, action] | [file, action, ..] if matches!(*action, "sync" | "datasync") => {
                rec.set(ts_ns, Op::Flush, 0, 0, 0);
                rec.device_from(&[file]);
                Ok(true)
            }
            [file, action, off, len] => {
                let op = match *action {
                    "read" => Op::Read,
                    "write" => Op::Write,
                    "trim" => Op::Trim,
                    other => {
                        return Err(format!(
                            "action '{other}' is not read, write, trim, sync or datasync"
                        ))
                    }
                };
                rec.set(ts_ns, op, num(off, "offset")?, num(len, "length")?, 0);
                rec.device_from(&[file]);
                Ok(true)
            }
            _ => Err("expected 'FILE ACTION OFFSET LENGTH' or 'FILE add|open|close'".into()),
        }
    }
}
