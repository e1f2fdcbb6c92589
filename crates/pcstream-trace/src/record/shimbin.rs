//! The `.bin` shim log, one file's bytes: its 32-byte header and its 88-byte little-endian
//! records (`struct pcshim_header`, `struct pcshim_record` of `shim/include/pcshim.h`), and the
//! error a malformed log is. The indexing and merging of whole files (`merge`) and the reading
//! of a log directory (`shimlog`) build on it; it uses neither.

use std::fs::{File, FileType, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

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

/// `O_NONBLOCK` of Linux's open(2) (0o4000 on x86, Arm and RISC-V, where the shim runs): a FIFO
/// opened for reading with it does not wait for a writer.
const O_NONBLOCK: i32 = 0o4000;

/// A log file opened by [`open_log`], or what stood in its place instead.
#[derive(Debug)]
pub enum Opened {
    File(File),
    /// Not a regular file (the traced program can make anything in its log directory): what it
    /// is, for the warning that skips it.
    NotRegular(&'static str),
}

/// What a file type is, in words ("a FIFO", "a directory", ...).
pub fn kind_of(t: FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else {
        "not a regular file"
    }
}

/// Open the log `path` for reading if it is a regular file: checked with lstat first, opened
/// non-blocking (a FIFO swapped in after the check must not block the open or a read) and
/// checked again with fstat on what was opened.
pub fn open_log(path: &Path) -> std::io::Result<Opened> {
    let t = std::fs::symlink_metadata(path)?.file_type();
    if !t.is_file() {
        return Ok(Opened::NotRegular(kind_of(t)));
    }
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    let t = f.metadata()?.file_type();
    Ok(if t.is_file() {
        Opened::File(f)
    } else {
        Opened::NotRegular(kind_of(t))
    })
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
