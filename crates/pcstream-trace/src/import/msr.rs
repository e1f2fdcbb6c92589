//! SNIA IOTTA MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`;
//! Timestamp in Windows FILETIME ticks (100 ns), Type `Read`/`Write`, Offset and Size in bytes.
//! The device is `Hostname_DiskNumber` (e.g. `hm_0`, as the files are named).

use super::{fields, num, scaled, IoRecord, LineParser};
use pcstream_core::request::Op;

pub struct Msr;

impl LineParser for Msr {
    fn parse(&mut self, line: &str, rec: &mut IoRecord) -> Result<bool, String> {
        let f: [&str; 7] = fields(
            line,
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
        )?;
        let kind = f[3].trim();
        let op = if kind.eq_ignore_ascii_case("write") {
            Op::Write
        } else if kind.eq_ignore_ascii_case("read") {
            Op::Read
        } else {
            return Err(format!(
                "Type '{}' is neither Read nor Write",
                kind.to_ascii_lowercase()
            ));
        };
        rec.set(
            scaled(num(f[0], "Timestamp")?, 100, "Timestamp", "100 ns")?,
            op,
            num(f[4], "Offset")?,
            num(f[5], "Size")?,
            0,
        );
        rec.device_from(&[&f[1].trim(), &'_', &f[2].trim()]);
        Ok(true)
    }
}
