//! Input files opened by their type and read with a size cap: every file pcstream reads (a trace,
//! an importer's text, an SSD config, a mix spec, a PC table) is opened here, so a FIFO, a
//! device, a directory or a socket given where a file belongs is refused at once, and a small
//! text file is never read past its limit.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{one_line, TraceError};

/// The largest SSD config (TOML) read: a real one is a few KiB.
pub const SSD_CONFIG_MAX_BYTES: u64 = 1 << 20;
/// The largest workload-mix spec (JSON or TOML) read: a real one is a few KiB.
pub const MIX_SPEC_MAX_BYTES: u64 = 1 << 20;
/// The largest persistent PC table (JSON) read: a PC's entry is about 160 bytes, so this leaves
/// room for over a million PCs.
pub const PC_TABLE_MAX_BYTES: u64 = 256 << 20;

/// What a file that is not a regular file is, as a message names it; `None` for a regular file.
pub fn non_regular_kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

fn refuse(label: &str, kind: &str, what: &str) -> TraceError {
    TraceError::Io {
        path: label.to_string(),
        why: format!("is {kind}, not a regular file; give the {what} itself"),
    }
}

/// Open `path` (a `what`, named in errors) for reading if it is a regular file, symbolic links
/// followed: missing, unreadable or of another type is a one-line error, returned at once.
pub fn open_regular(path: &Path, what: &str) -> Result<File, TraceError> {
    let label = path.display().to_string();
    let cannot = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => TraceError::Missing {
            path: label.clone(),
        },
        _ => TraceError::Io {
            path: label.clone(),
            why: format!("cannot open ({}); check the permissions", one_line(e)),
        },
    };
    // The type is checked before opening: opening a FIFO without a writer blocks, and a
    // device reads forever (/dev/zero) or needs privileges.
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if let Some(kind) = non_regular_kind(&meta) {
        return Err(refuse(&label, kind, what));
    }
    // O_NONBLOCK so that a FIFO put in its place since the check cannot block the open either;
    // the open file is checked again. Reads of a regular file ignore the flag.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    let meta = f.metadata().map_err(cannot)?;
    if let Some(kind) = non_regular_kind(&meta) {
        return Err(refuse(&label, kind, what));
    }
    Ok(f)
}

/// The text of the regular file `path` (a `what`), refused when it holds more than `limit`
/// bytes (by its size, and by what is read: never more than `limit` + 1 bytes) or is not UTF-8.
pub fn read_capped(path: &Path, what: &str, limit: u64) -> Result<String, TraceError> {
    let label = path.display().to_string();
    let too_big = |size: u64| TraceError::Io {
        path: label.clone(),
        why: format!(
            "{size} bytes, over the limit of {limit} bytes for the {what}; is it the right file?"
        ),
    };
    let f = open_regular(path, what)?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    if size > limit {
        return Err(too_big(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| TraceError::Io {
            path: label.clone(),
            why: format!("cannot read the {what} ({})", one_line(e)),
        })?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| TraceError::Io {
        path: label.clone(),
        why: format!(
            "not UTF-8 text (byte {}); the {what} must be text",
            e.utf8_error().valid_up_to()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_open_and_others_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "x").unwrap();
        assert!(open_regular(&file, "file").is_ok());
        let e = open_regular(dir.path(), "trace file")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
        let e = open_regular(Path::new("/dev/zero"), "SSD config file")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/zero: is a character device"), "{e}");
        let e = open_regular(&dir.path().join("none"), "file")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such file"), "{e}");
    }

    #[test]
    fn reads_stop_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "a".repeat(11)).unwrap();
        assert_eq!(read_capped(&file, "spec", 11).unwrap().len(), 11);
        let e = read_capped(&file, "spec", 10).unwrap_err().to_string();
        assert!(
            e.contains("11 bytes, over the limit of 10 bytes for the spec"),
            "{e}"
        );
        std::fs::write(&file, [b'a', 0xff]).unwrap();
        let e = read_capped(&file, "spec", 10).unwrap_err().to_string();
        assert!(e.contains("not UTF-8 text (byte 1)"), "{e}");
    }
}
