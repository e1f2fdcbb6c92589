//! The `.bin` shim log, one file's bytes: its 32-byte header and its 88-byte little-endian
//! records (`struct pcshim_header`, `struct pcshim_record` of `shim/include/pcshim.h`), and the
//! error a malformed log is. The indexing and merging of whole files (`merge`) and the reading
//! of a log directory (`shimlog`) build on it; it uses neither.

use thiserror::Error;

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

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decode one 88-byte record (`r` holds at least [`RECORD_BYTES`] bytes).
#[inline]
pub fn decode_record(r: &[u8]) -> ShimRecord {
    ShimRecord {
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
    }
}

/// Check a `.bin` header (`b` = the file's first bytes, at most [`HEADER_BYTES`] of them);
/// returns the pid. `label` names the file in errors.
pub fn check_header(label: &str, b: &[u8]) -> Result<u32, ShimLogError> {
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
    Ok(u32_at(b, 16))
}
