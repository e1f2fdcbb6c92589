//! blkparse default text output: `maj,min cpu seq sec.nsec pid action rwbs sector + nsectors [comm]`.
//! Only `D` (issue) lines are kept, so each request counts once; rwbs `W` = write, `R` = read,
//! `D` = discard, `F` alone = flush; an empty write with `F` (`FWS 0 + 0`, how a cache flush
//! appears at bio level) is a flush too, while a write with data and a preflush (`FWFSM`) is a
//! write. Summary and message lines (e.g. `CPU0 (…)`, `Total`) and other
//! actions are skipped. The device is `maj,min`.

use super::{num, scaled, IoRecord, LineParser};
use pcstream_core::request::Op;

/// The letters of a blkparse rwbs field: F (flush / FUA), W, R, D (discard), E (secure erase),
/// N (no data), A (read-ahead), S (sync), M (metadata).
const RWBS: &str = "FWRDENASM";

#[derive(Default)]
pub struct Blkparse {
    /// Past the per-CPU summary that ends blkparse's output: nothing more to read.
    done: bool,
}

impl LineParser for Blkparse {
    fn parse(&mut self, line: &str, rec: &mut IoRecord) -> Result<bool, String> {
        if self.done {
            return Ok(false);
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first()
            .is_some_and(|s| s.starts_with("CPU") || *s == "Total")
        {
            self.done = true;
            return Ok(false);
        }
        if f.len() < 7 || !f[0].contains(',') {
            return Err(
                "not a blkparse event line (maj,min cpu seq sec.nsec pid action rwbs ...)".into(),
            );
        }
        if f[5] != "D" {
            return Ok(false);
        }
        let rwbs = f[6];
        if let Some(c) = rwbs.chars().find(|c| !RWBS.contains(*c)) {
            return Err(format!(
                "rwbs '{rwbs:.16}' has the letter '{c}', not one of blkparse's ({RWBS})"
            ));
        }
        let op = if rwbs.contains('D') {
            Op::Trim
        } else if rwbs.contains('W') {
            Op::Write
        } else if rwbs.contains('R') {
            Op::Read
        } else if rwbs.contains('F') {
            Op::Flush
        } else {
            return Ok(false); // N (no data), or only modifiers: not a request that moves pages
        };
        let (sec, nsec) = f[3]
            .split_once('.')
            .ok_or_else(|| format!("time '{:.40}' is not sec.nsec", f[3]))?;
        let ts_ns = scaled(num(sec, "seconds")?, 1_000_000_000, "time", "s")?
            .checked_add(num(nsec, "nanoseconds")?)
            .ok_or_else(|| format!("time '{}' overflows 64-bit nanoseconds; fix the line", f[3]))?;
        let pid = u32::try_from(num(f[4], "pid")?)
            .map_err(|_| format!("pid '{}' is larger than 2^32 - 1", f[4]))?;
        let (sector, sectors) = if op == Op::Flush && f.len() < 10 {
            (0, 0)
        } else {
            if f.len() < 10 || f[8] != "+" {
                return Err("expected 'sector + nsectors' after rwbs".into());
            }
            (num(f[7], "sector")?, num(f[9], "nsectors")?)
        };
        let op = if op == Op::Write && sectors == 0 && rwbs.contains('F') {
            Op::Flush
        } else {
            op
        };
        rec.set(
            ts_ns,
            op,
            scaled(sector, 512, "sector", "512 B")?,
            scaled(sectors, 512, "nsectors", "512 B")?,
            pid,
        );
        rec.device_from(&[&f[0]]);
        Ok(true)
    }
}
