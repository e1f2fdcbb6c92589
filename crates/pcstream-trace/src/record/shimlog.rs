//! Shim logs: the per-process files the record shim (`shim/include/pcshim.h`) leaves in its log
//! directory — `<pid>.<start>.bin` (a 32-byte header, then 88-byte little-endian records) and
//! `<pid>.<start>.txt` (path, signature and warning lines) — parsed into [`ShimLogs`].
//!
//! A process killed before it flushed leaves fewer records and no `E` line: that is reported as a
//! loss, not an error. Malformed files are errors naming the file and the byte offset. The shim's
//! per-process `W io_uring: ...` lines become one warning counting those processes.

use std::collections::BTreeMap;
use std::path::Path;

use thiserror::Error;

use crate::filetrace::FileOp;

/// Bytes in a `.bin` header and in one record (fixed by `pcshim.h`).
pub const HEADER_BYTES: usize = 32;
pub const RECORD_BYTES: usize = 88;
pub const MAGIC: &[u8; 8] = b"PCSHIM01";

/// What can be wrong with a log directory; one line naming the file and the byte offset.
#[derive(Debug, Error)]
pub enum ShimLogError {
    #[error("{path}: cannot read the shim logs ({why}); check that the directory exists")]
    Io { path: String, why: String },
    #[error("{path}: byte {offset}: {what}; the log was not written by this pcstream's shim (rebuild with 'make install')")]
    Bad {
        path: String,
        offset: usize,
        what: String,
    },
}

/// `flags` bits of a write record (`enum pcshim_write_via`): how the bytes reached the file.
pub const VIA_STDIO: u32 = 1 << 0;
pub const VIA_MSYNC: u32 = 1 << 1;
pub const VIA_AIO: u32 = 1 << 2;
pub const VIA_COPY: u32 = 1 << 3;
pub const VIA_SENDFILE: u32 = 1 << 4;
pub const VIA_SPLICE: u32 = 1 << 5;
pub const VIA_SYSCALL: u32 = 1 << 6;
/// Bytes the safety net found at close/exit (file position or size beyond what was recorded).
pub const VIA_RECOVERED: u32 = 1 << 7;
/// With [`VIA_STDIO`]: bytes that entered a stdio buffer through inline macros, accounted at the
/// next flush point.
pub const VIA_STDIO_INLINE: u32 = 1 << 8;

/// Start of the warning a process image writes once when it sets up an io_uring.
pub const IO_URING_WARNING: &str = "io_uring:";

/// One `struct pcshim_record`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShimRecord {
    pub ts_ns: u64,
    pub offset: u64,
    pub len: u64,
    pub pc: u64,
    pub dev: u64,
    pub ino: u64,
    pub path: u64,
    pub aux: u64,
    pub pid: u32,
    pub tid: u32,
    pub fd: i32,
    pub flags: u32,
    pub op: u16,
    pub nframes: u16,
}

/// One frame of a signature: module path, module id (build-id or path hash), offset from its load bias.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub module: String,
    pub module_id: u64,
    pub offset: u64,
}

/// Everything in a log directory.
#[derive(Debug, Default)]
pub struct ShimLogs {
    /// Records of every process, in file order (not yet sorted by time).
    pub records: Vec<ShimRecord>,
    /// Path hash → absolute path.
    pub paths: BTreeMap<u64, String>,
    /// Signature → frames, innermost first.
    pub sigs: BTreeMap<u64, Vec<Frame>>,
    /// Warnings of the shim, deduplicated, in order.
    pub warnings: Vec<String>,
    /// Process images (pid) in the logs.
    pub processes: Vec<u32>,
    /// Process images that did not end cleanly (killed): their unflushed records are lost.
    pub lost: Vec<u32>,
    /// Bytes at the end of `.bin` files that did not form a whole record.
    pub torn_bytes: u64,
    /// Processes (pid) that set up an io_uring: the I/O they submitted through it is not recorded.
    pub io_uring: Vec<u32>,
}

/// What one `.txt` file said about its process image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxtEnd {
    /// It has its `E` (clean end) line.
    pub ended: bool,
    /// It set up an io_uring (a `W io_uring: ...` line).
    pub io_uring: bool,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Parse one `.bin` file's bytes (`label` names it in errors). Returns the pid and the records;
/// a torn tail (a process killed mid-write) is returned as its byte count.
pub fn parse_bin(label: &str, b: &[u8]) -> Result<(u32, Vec<ShimRecord>, u64), ShimLogError> {
    let bad = |offset: usize, what: String| ShimLogError::Bad {
        path: label.into(),
        offset,
        what,
    };
    if b.len() < HEADER_BYTES {
        return Err(bad(
            0,
            format!(
                "{} bytes, shorter than the {HEADER_BYTES}-byte header",
                b.len()
            ),
        ));
    }
    if &b[..8] != MAGIC {
        return Err(bad(0, "bad magic (expected PCSHIM01)".into()));
    }
    let version = u32_at(b, 8);
    if version != 1 {
        return Err(bad(8, format!("log version {version}, expected 1")));
    }
    let size = u32_at(b, 12) as usize;
    if size != RECORD_BYTES {
        return Err(bad(
            12,
            format!("record size {size}, expected {RECORD_BYTES}"),
        ));
    }
    let pid = u32_at(b, 16);
    let body = &b[HEADER_BYTES..];
    let whole = body.len() / RECORD_BYTES;
    let mut out = Vec::with_capacity(whole);
    for i in 0..whole {
        let at = i * RECORD_BYTES;
        let r = &body[at..at + RECORD_BYTES];
        let rec = ShimRecord {
            ts_ns: u64_at(r, 0),
            offset: u64_at(r, 8),
            len: u64_at(r, 16),
            pc: u64_at(r, 24),
            dev: u64_at(r, 32),
            ino: u64_at(r, 40),
            path: u64_at(r, 48),
            aux: u64_at(r, 56),
            pid: u32_at(r, 64),
            tid: u32_at(r, 68),
            fd: u32_at(r, 72) as i32,
            flags: u32_at(r, 76),
            op: u16::from_le_bytes([r[80], r[81]]),
            nframes: u16::from_le_bytes([r[82], r[83]]),
        };
        if FileOp::from_code(rec.op).is_none() {
            return Err(bad(
                HEADER_BYTES + at + 80,
                format!("record {i}: unknown op {}", rec.op),
            ));
        }
        out.push(rec);
    }
    Ok((pid, out, (body.len() % RECORD_BYTES) as u64))
}

/// Reads "<hex> <len> <bytes>\n" at `at`; returns (hex, bytes, next position).
fn field(at: usize, b: &[u8]) -> Option<(u64, &[u8], usize)> {
    let sp1 = at + b.get(at..)?.iter().position(|&c| c == b' ')?;
    let sp2 = sp1 + 1 + b[sp1 + 1..].iter().position(|&c| c == b' ')?;
    let v = u64::from_str_radix(std::str::from_utf8(&b[at..sp1]).ok()?, 16).ok()?;
    let n: usize = std::str::from_utf8(&b[sp1 + 1..sp2]).ok()?.parse().ok()?;
    let end = sp2.checked_add(1 + n)?;
    if end >= b.len() || b[end] != b'\n' {
        return None;
    }
    Some((v, &b[sp2 + 1..end], end + 1))
}

/// Parse one `.txt` file into `logs`; returns whether it ended cleanly and used io_uring
/// (io_uring lines are not added to `logs.warnings`: [`read_dir`] counts them).
pub fn parse_txt(label: &str, b: &[u8], logs: &mut ShimLogs) -> Result<TxtEnd, ShimLogError> {
    let bad = |offset: usize, what: &str| ShimLogError::Bad {
        path: label.into(),
        offset,
        what: what.into(),
    };
    let mut at = 0usize;
    let mut end = TxtEnd::default();
    while at < b.len() {
        if b.len() < at + 2 || b[at + 1] != b' ' {
            return Err(bad(at, "expected a line 'P|S|F|W|E ...'"));
        }
        let tag = b[at];
        let line_end = b[at..]
            .iter()
            .position(|&c| c == b'\n')
            .map(|p| at + p)
            .ok_or_else(|| bad(at, "line without a newline (torn write?)"))?;
        match tag {
            b'P' => {
                let (h, p, next) =
                    field(at + 2, b).ok_or_else(|| bad(at, "malformed path line"))?;
                logs.paths
                    .insert(h, String::from_utf8_lossy(p).into_owned());
                at = next;
            }
            b'S' => {
                let text = std::str::from_utf8(&b[at + 2..line_end])
                    .map_err(|_| bad(at, "signature line is not text"))?;
                let mut it = text.split(' ');
                let sig = it
                    .next()
                    .and_then(|s| u64::from_str_radix(s, 16).ok())
                    .ok_or_else(|| bad(at, "malformed signature"))?;
                let n: usize = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| bad(at, "malformed frame count"))?;
                at = line_end + 1;
                let mut frames = Vec::with_capacity(n);
                while frames.len() < n && at < b.len() && b[at] == b'F' {
                    let sp = at + 2 + b[at + 2..].iter().position(|&c| c == b' ').unwrap_or(0);
                    let id = std::str::from_utf8(&b[at + 2..sp])
                        .ok()
                        .and_then(|s| u64::from_str_radix(s, 16).ok())
                        .ok_or_else(|| bad(at, "malformed frame module id"))?;
                    let (off, m, next) =
                        field(sp + 1, b).ok_or_else(|| bad(at, "malformed frame line"))?;
                    frames.push(Frame {
                        module: String::from_utf8_lossy(m).into_owned(),
                        module_id: id,
                        offset: off,
                    });
                    at = next;
                }
                logs.sigs.entry(sig).or_insert(frames);
            }
            b'W' => {
                let w = String::from_utf8_lossy(&b[at + 2..line_end]).into_owned();
                if w.starts_with(IO_URING_WARNING) {
                    end.io_uring = true;
                } else if !logs.warnings.contains(&w) {
                    logs.warnings.push(w);
                }
                at = line_end + 1;
            }
            b'E' => {
                end.ended = true;
                at = line_end + 1;
            }
            _ => return Err(bad(at, "unknown line tag")),
        }
    }
    Ok(end)
}

/// The warning for `n` processes that set up an io_uring.
pub fn io_uring_warning(n: usize) -> String {
    format!("{n} process(es) used io_uring; their writes are not recorded")
}

/// Read every log of the directory `dir`.
pub fn read_dir(dir: &Path) -> Result<ShimLogs, ShimLogError> {
    let label = dir.display().to_string();
    let io = |e: std::io::Error| ShimLogError::Io {
        path: label.clone(),
        why: crate::error::one_line(e),
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    names.sort();
    let mut logs = ShimLogs::default();
    for name in names {
        let bin = dir.join(&name);
        let txt = dir.join(format!("{}.txt", name.trim_end_matches(".bin")));
        let bytes = std::fs::read(&bin).map_err(io)?;
        let (pid, recs, torn) = parse_bin(&bin.display().to_string(), &bytes)?;
        logs.records.extend(recs);
        logs.torn_bytes += torn;
        logs.processes.push(pid);
        let end = match std::fs::read(&txt) {
            Ok(t) => parse_txt(&txt.display().to_string(), &t, &mut logs)?,
            Err(_) => TxtEnd::default(),
        };
        if !end.ended || torn > 0 {
            logs.lost.push(pid);
        }
        if end.io_uring && !logs.io_uring.contains(&pid) {
            logs.io_uring.push(pid);
        }
    }
    if !logs.io_uring.is_empty() {
        logs.warnings.push(io_uring_warning(logs.io_uring.len()));
    }
    Ok(logs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Vec<u8> {
        let mut h = MAGIC.to_vec();
        for v in [1u32, 88, 42, 1, 12, 3] {
            h.extend(v.to_le_bytes());
        }
        h
    }

    fn record(op: u16, ts: u64) -> Vec<u8> {
        let mut r = Vec::new();
        for v in [ts, 4096, 100, 7, 1, 2, 9, 0] {
            r.extend(v.to_le_bytes());
        }
        for v in [42u32, 43, 5, 0] {
            r.extend(v.to_le_bytes());
        }
        r.extend(op.to_le_bytes());
        r.extend(3u16.to_le_bytes());
        r.extend(0u32.to_le_bytes());
        r
    }

    #[test]
    fn bin_round_trip_and_torn_tail() {
        let mut b = header();
        b.extend(record(2, 10));
        b.extend(record(11, 20));
        b.extend([1, 2, 3]);
        let (pid, recs, torn) = parse_bin("x.bin", &b).unwrap();
        assert_eq!(pid, 42);
        assert_eq!(torn, 3);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].offset, 4096);
        assert_eq!(recs[0].fd, 5);
        assert_eq!(recs[1].op, 11);
        assert_eq!(recs[0].nframes, 3);
    }

    #[test]
    fn bad_bins_name_the_offset() {
        let e = parse_bin("x.bin", b"short").unwrap_err().to_string();
        assert!(e.contains("x.bin: byte 0"), "{e}");
        let mut b = header();
        b[0] = b'Q';
        assert!(parse_bin("x.bin", &b)
            .unwrap_err()
            .to_string()
            .contains("magic"));
        let mut b = header();
        b.extend(record(99, 1));
        let e = parse_bin("x.bin", &b).unwrap_err().to_string();
        assert!(
            e.contains("byte 112") && e.contains("record 0: unknown op 99"),
            "{e}"
        );
    }

    #[test]
    fn txt_lines() {
        let t = b"P 00000000000000ff 5 /a b\n\nS 0000000000000010 2\nF 1 a0 3 /m1\nF 2 b0 3 /m2\nW io_uring\nW io_uring\nE 3\n";
        let mut logs = ShimLogs::default();
        // a path containing a newline is length-prefixed, so it parses
        assert!(parse_txt("x.txt", t, &mut logs).unwrap().ended);
        assert_eq!(logs.paths[&255], "/a b\n");
        assert_eq!(logs.sigs[&16].len(), 2);
        assert_eq!(logs.sigs[&16][1].offset, 0xb0);
        assert_eq!(logs.sigs[&16][1].module, "/m2");
        assert_eq!(logs.warnings, vec!["io_uring".to_string()]);
        let u = parse_txt("u.txt", b"W io_uring: set up\n", &mut logs).unwrap();
        assert_eq!(
            u,
            TxtEnd {
                ended: false,
                io_uring: true
            }
        );
        assert_eq!(logs.warnings, vec!["io_uring".to_string()]);
        let e = parse_txt("x.txt", b"Q zz\n", &mut logs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.txt: byte 0: unknown line tag"), "{e}");
    }

    #[test]
    fn io_uring_processes_are_counted_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let mut bin = header();
        bin.extend(record(15, 5));
        for (name, pid) in [("42.1", 42u32), ("43.1", 43), ("44.1", 44)] {
            let mut b = bin.clone();
            b[16..20].copy_from_slice(&pid.to_le_bytes());
            std::fs::write(dir.path().join(format!("{name}.bin")), b).unwrap();
            let w = if pid == 44 {
                ""
            } else {
                "W io_uring: this process set up an io_uring\n"
            };
            std::fs::write(dir.path().join(format!("{name}.txt")), format!("{w}E 1\n")).unwrap();
        }
        let logs = read_dir(dir.path()).unwrap();
        assert_eq!(logs.io_uring, vec![42, 43]);
        assert_eq!(logs.warnings, vec![io_uring_warning(2)]);
        assert_eq!(
            logs.warnings[0],
            "2 process(es) used io_uring; their writes are not recorded"
        );
        assert_eq!(FileOp::from_code(logs.records[0].op), Some(FileOp::Spawn));
        assert!(logs.lost.is_empty());
    }
}
