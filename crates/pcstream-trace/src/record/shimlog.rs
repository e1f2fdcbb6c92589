//! Shim logs: the per-process files the record shim (`shim/include/pcshim.h`) leaves in its log
//! directory — `<pid>.<start>.bin` (a 32-byte header, then 88-byte little-endian records) and
//! `<pid>.<start>.txt` (path, signature and warning lines) — read into [`ShimLogs`].
//!
//! [`read_dir`] does not keep the records: it reads every `.bin` once to check it and to index
//! each thread's runs of records ([`super::merge`]; one file's layout is [`super::shimbin`]'s),
//! and keeps the tables of the `.txt` files (paths, signatures, warnings). The records are read
//! again, in time order, by [`super::merge::Merge`]. Memory follows the number of files, threads
//! and table entries, not the number of records.
//!
//! A process killed before it flushed leaves fewer records and no `E` line: that is reported as a
//! loss, not an error. Malformed files are errors naming the file and the byte offset. Warning
//! lines the shim writes once per event are aggregated: `W io_uring: ...` (one warning counting
//! those processes), `W static: <path>` (execs of statically linked programs), `W mmap: <bytes>
//! <path>` (shared writable mappings never msync'ed) and `W unplaced: <bytes> <path>: <why>`
//! (bytes the shim knew of but could not place; also summed in [`ShimLogs::unplaced_bytes`]);
//! `W hint refused: ...` lines are counted per program ([`super::refused_hints`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use super::merge::{index_bin_file, BinLog};
use super::refused_hints::{RefusedHints, HINT_REFUSED_WARNING};
pub use super::shimbin::{
    check_header, decode_record, ShimLogError, ShimRecord, HEADER_BYTES, MAGIC, RECORD_BYTES,
};
use super::shimbin::{open_log, Opened};

/// Start of the warning a process image writes once when it sets up an io_uring.
pub const IO_URING_WARNING: &str = "io_uring:";
/// Start of the warning for an exec of a statically linked program: `static: <path>`.
pub const STATIC_WARNING: &str = "static: ";
/// Start of the line the BPF capture writes for a program it recorded because the shim cannot
/// enter it (`shim/include/pcsys.h`, PCSYS_CAPTURED_WARNING): `captured: <path>`. The shim's
/// `static:` lines for that program are then not losses.
pub const CAPTURED_WARNING: &str = "captured: ";
/// Start of the warning for a shared writable mapping never msync'ed: `mmap: <bytes> <path>`.
pub const MMAP_WARNING: &str = "mmap: ";
/// Start of the warning for bytes that could not be placed: `unplaced: <bytes> <path>: <why>`.
pub const UNPLACED_WARNING: &str = "unplaced: ";

/// Names listed in an aggregated warning before "and N more".
const LISTED: usize = 8;

/// One frame of a signature: module path, module id (build-id or path hash), offset from its load
/// bias, and the name an `N` line gave it (frames that are not machine code: a Java method).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    pub module: String,
    pub module_id: u64,
    pub offset: u64,
    pub symbol: Option<String>,
}

/// A log directory, indexed: the tables of its `.txt` files and, per `.bin` file, where each
/// thread's records are (not the records themselves).
#[derive(Debug, Default)]
pub struct ShimLogs {
    /// The `.bin` files in name order, with the index of their records.
    pub bins: Vec<BinLog>,
    /// Path hash → absolute path.
    pub paths: BTreeMap<u64, String>,
    /// Signature → frames, innermost first.
    pub sigs: BTreeMap<u64, Vec<Frame>>,
    /// Warnings of the shim, deduplicated, in order; the aggregated ones last.
    pub warnings: Vec<String>,
    /// Process images (pid) in the logs.
    pub processes: Vec<u32>,
    /// Process images that did not end cleanly (killed): their unflushed records are lost.
    pub lost: Vec<u32>,
    /// Bytes at the end of `.bin` files that did not form a whole record.
    pub torn_bytes: u64,
    /// Records an `E` line counts that its `.bin` does not hold (a file-size limit or a full
    /// disk stopped the appends, the process ran on): lost, counted.
    pub lost_records: u64,
    /// Processes (pid) that set up an io_uring: the I/O they submitted through it is not recorded.
    pub io_uring: Vec<u32>,
    /// `W static:` lines: execs of statically linked programs (not recorded), and the programs.
    pub static_execs: u64,
    pub static_programs: BTreeSet<String>,
    /// `W static:` lines per program.
    static_per_program: BTreeMap<String, u64>,
    /// `W captured:` lines: programs the BPF capture recorded (their `static:` lines are dropped).
    pub captured_programs: BTreeSet<String>,
    /// `W mmap:` lines: shared writable mappings never msync'ed, their bytes and files.
    pub mmap_mappings: u64,
    pub mmap_bytes: u64,
    pub mmap_paths: BTreeSet<String>,
    /// Sum of the bytes of the `W unplaced:` lines, and their "path (why)".
    pub unplaced_bytes: u64,
    pub unplaced: BTreeSet<String>,
    /// `W hint refused:` lines: write-lifetime hints the kernel refused, per program.
    pub refused_hints: RefusedHints,
}

impl ShimLogs {
    /// Whole records in all `.bin` files.
    pub fn records(&self) -> u64 {
        self.bins.iter().map(|b| b.records).sum()
    }
}

/// What one `.txt` file said about its process image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxtEnd {
    /// It has its `E` (clean end) line.
    pub ended: bool,
    /// The records its `E` line says the process image logged.
    pub logged: Option<u64>,
    /// It set up an io_uring (a `W io_uring: ...` line).
    pub io_uring: bool,
    /// Bytes after its last newline: a line cut short (a file-size limit or a full disk stopped
    /// the shim's appends, or the process died in the middle of one); not read.
    pub torn_bytes: u64,
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

/// The "F ..." line at `at` and the "N ..." line naming its frame if one follows: the frame and
/// the next position, or the offset and what is wrong.
fn frame_at(at: usize, b: &[u8]) -> Result<(Frame, usize), (usize, &'static str)> {
    // "F <module id> <offset> <module>\n": a torn or mangled tail may end anywhere after the tag.
    let sp = b
        .get(at + 2..)
        .and_then(|rest| rest.iter().position(|&c| c == b' '))
        .map(|p| at + 2 + p)
        .ok_or((at, "malformed frame line"))?;
    let id = std::str::from_utf8(&b[at + 2..sp])
        .ok()
        .and_then(|s| u64::from_str_radix(s, 16).ok())
        .ok_or((at, "malformed frame module id"))?;
    let (off, m, next) = field(sp + 1, b).ok_or((at, "malformed frame line"))?;
    let mut frame = Frame {
        module: String::from_utf8_lossy(m).into_owned(),
        module_id: id,
        offset: off,
        symbol: None,
    };
    if b.get(next) != Some(&b'N') {
        return Ok((frame, next));
    }
    let (name, after) = name_line(next, b).ok_or((next, "malformed frame name line"))?;
    frame.symbol = Some(String::from_utf8_lossy(name).into_owned());
    Ok((frame, after))
}

/// "N <len> <bytes>\n" at `at`; returns (bytes, next position).
fn name_line(at: usize, b: &[u8]) -> Option<(&[u8], usize)> {
    if b.get(at + 1) != Some(&b' ') {
        return None;
    }
    let sp = at + 2 + b.get(at + 2..)?.iter().position(|&c| c == b' ')?;
    let n: usize = std::str::from_utf8(&b[at + 2..sp]).ok()?.parse().ok()?;
    let end = sp.checked_add(1 + n)?;
    if end >= b.len() || b[end] != b'\n' {
        return None;
    }
    Some((&b[sp + 1..end], end + 1))
}

/// "<bytes> <rest>" → (bytes, rest).
fn bytes_and_rest(s: &str) -> Option<(u64, &str)> {
    let (n, rest) = s.split_once(' ')?;
    Some((n.parse().ok()?, rest))
}

impl ShimLogs {
    /// Take one `W` line's text: aggregated kinds are counted, the others kept once each.
    /// Returns whether it is the io_uring line.
    fn warning(&mut self, w: String) -> bool {
        if w.starts_with(IO_URING_WARNING) {
            return true;
        }
        if let Some(p) = w.strip_prefix(STATIC_WARNING) {
            self.static_execs += 1;
            self.static_programs.insert(p.to_string());
            *self.static_per_program.entry(p.to_string()).or_default() += 1;
        } else if let Some(p) = w.strip_prefix(CAPTURED_WARNING) {
            self.captured_programs.insert(canonical(p));
        } else if let Some((n, p)) = w.strip_prefix(MMAP_WARNING).and_then(bytes_and_rest) {
            self.mmap_mappings += 1;
            self.mmap_bytes += n;
            self.mmap_paths.insert(p.to_string());
        } else if let Some((n, rest)) = w.strip_prefix(UNPLACED_WARNING).and_then(bytes_and_rest) {
            self.unplaced_bytes += n;
            let what = match rest.rsplit_once(": ") {
                Some((p, why)) => format!("{p} ({why})"),
                None => rest.to_string(),
            };
            self.unplaced.insert(what);
        } else if w
            .strip_prefix(HINT_REFUSED_WARNING)
            .is_some_and(|rest| self.refused_hints.take(rest))
        {
            // counted: one line per program among the aggregated warnings
        } else if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
        false
    }

    /// The aggregated warnings, appended after the others once every file is read.
    fn aggregate_warnings(&mut self) {
        if !self.captured_programs.is_empty() {
            // the shim names the program as exec'd, the BPF capture by its real path
            let captured = &self.captured_programs;
            let counts = &self.static_per_program;
            let mut dropped = 0;
            self.static_programs.retain(|p| {
                let keep = !captured.contains(&canonical(p));
                if !keep {
                    dropped += counts.get(p).copied().unwrap_or(0);
                }
                keep
            });
            self.static_execs = self.static_execs.saturating_sub(dropped);
        }
        if self.static_execs > 0 {
            self.warnings.push(format!(
                "{} exec(s) of statically linked programs were not recorded: {}",
                self.static_execs,
                listing(&self.static_programs)
            ));
        }
        if self.mmap_mappings > 0 {
            self.warnings.push(format!(
                "{} bytes may have been written through {} shared mappings never msync'ed (not recorded): {}",
                self.mmap_bytes,
                self.mmap_mappings,
                listing(&self.mmap_paths)
            ));
        }
        if !self.unplaced.is_empty() {
            self.warnings.push(format!(
                "{} written bytes could not be placed at a file offset (not recorded): {}",
                self.unplaced_bytes,
                listing(&self.unplaced)
            ));
        }
        if !self.io_uring.is_empty() {
            self.warnings.push(io_uring_warning(self.io_uring.len()));
        }
        self.warnings.extend(self.refused_hints.warnings());
    }
}

/// `p` with its symbolic links resolved when it exists, else as it is.
fn canonical(p: &str) -> String {
    std::fs::canonicalize(p).map_or_else(|_| p.to_string(), |c| c.to_string_lossy().into_owned())
}

/// "a, b, c" (at most [`LISTED`] names, then "and N more").
fn listing(names: &BTreeSet<String>) -> String {
    let mut s: Vec<&str> = names.iter().take(LISTED).map(String::as_str).collect();
    let more = names.len().saturating_sub(LISTED);
    let tail = format!("and {more} more");
    if more > 0 {
        s.push(&tail);
    }
    s.join(", ")
}

/// Parse one `.txt` file into `logs`; returns whether it ended cleanly and used io_uring
/// (io_uring lines are not added to `logs.warnings`: [`read_dir`] counts them; `static`, `mmap`
/// and `unplaced` lines are counted in `logs`, and [`read_dir`] turns them into one warning each).
pub fn parse_txt(label: &str, b: &[u8], logs: &mut ShimLogs) -> Result<TxtEnd, ShimLogError> {
    let bad = |offset: usize, what: &str| ShimLogError::Bad {
        path: label.into(),
        offset,
        what: what.into(),
    };
    let mut end = TxtEnd::default();
    let whole = b.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
    end.torn_bytes = (b.len() - whole) as u64;
    let b = &b[..whole];
    let mut at = 0usize;
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
                let mut frames = Vec::with_capacity(n.min(64));
                while frames.len() < n && at < b.len() && b[at] == b'F' {
                    let (frame, next) = frame_at(at, b).map_err(|(o, what)| bad(o, what))?;
                    frames.push(frame);
                    at = next;
                }
                logs.sigs.entry(sig).or_insert(frames);
            }
            b'W' => {
                let w = String::from_utf8_lossy(&b[at + 2..line_end]).into_owned();
                if logs.warning(w) {
                    end.io_uring = true;
                }
                at = line_end + 1;
            }
            b'E' => {
                end.ended = true;
                end.logged = std::str::from_utf8(&b[(at + 2).min(line_end)..line_end])
                    .ok()
                    .and_then(|n| n.parse().ok());
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

/// Read and index every log of the directory `dir` (see the module documentation). A `.bin` or
/// `.txt` name that is not a regular file (the traced program can make a FIFO, a socket or a
/// directory there) is skipped with one warning naming it, never opened blocking.
pub fn read_dir(dir: &Path) -> Result<ShimLogs, ShimLogError> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |e: std::io::Error| ShimLogError::Io {
            path,
            why: crate::error::one_line(e),
        }
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    names.sort();
    let mut logs = ShimLogs::default();
    for name in names {
        let bin = dir.join(&name);
        let txt = dir.join(format!("{}.txt", name.trim_end_matches(".bin")));
        let index = match open_log(&bin).map_err(io(&bin))? {
            Opened::File(f) => index_bin_file(&bin, f)?,
            Opened::NotRegular(kind) => {
                logs.warning(not_a_log(&bin, kind));
                continue;
            }
        };
        let (pid, torn, kept) = (index.pid, index.torn_bytes, index.records);
        logs.bins.push(index);
        logs.torn_bytes += torn;
        logs.processes.push(pid);
        let end = match read_txt(&txt).map_err(io(&txt))? {
            Ok(t) => parse_txt(&txt.display().to_string(), &t, &mut logs)?,
            Err(kind) => {
                logs.warning(not_a_log(&txt, kind));
                TxtEnd::default()
            }
        };
        let missing = end.logged.map_or(0, |n| n.saturating_sub(kept));
        logs.lost_records += missing;
        logs.torn_bytes += end.torn_bytes;
        if !end.ended || torn > 0 || end.torn_bytes > 0 || missing > 0 {
            logs.lost.push(pid);
        }
        if end.io_uring && !logs.io_uring.contains(&pid) {
            logs.io_uring.push(pid);
        }
    }
    logs.aggregate_warnings();
    Ok(logs)
}

/// The bytes of the `.txt` log `txt`: empty when it cannot be opened, `Err(kind)` when something
/// else than a regular file has its name.
fn read_txt(txt: &Path) -> std::io::Result<Result<Vec<u8>, &'static str>> {
    match open_log(txt) {
        Ok(Opened::File(mut f)) => {
            let mut b = Vec::new();
            f.read_to_end(&mut b)?;
            Ok(Ok(b))
        }
        Ok(Opened::NotRegular(kind)) => Ok(Err(kind)),
        // None at all (a process killed before it wrote one), or unreadable: no `E` line.
        Err(_) => Ok(Ok(Vec::new())),
    }
}

/// The warning for a log name that something else than a regular file holds.
fn not_a_log(path: &Path, kind: &str) -> String {
    format!(
        "{}: {kind} in the log directory, not a log the shim wrote; skipped",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filetrace::FileOp;
    use crate::record::merge::Merge;
    use crate::record::synth::{encode_header, encode_record, LogWriter};

    fn record(op: u16, ts: u64) -> ShimRecord {
        ShimRecord {
            ts_ns: ts,
            offset: 4096,
            len: 100,
            pc: 7,
            dev: 1,
            ino: 2,
            path: 9,
            pid: 42,
            tid: 43,
            fd: 5,
            op,
            nframes: 3,
            ..Default::default()
        }
    }

    fn write_bin(dir: &Path, name: &str, recs: &[ShimRecord], tail: &[u8]) -> std::path::PathBuf {
        let mut b = encode_header(42, 1).to_vec();
        for r in recs {
            b.extend(encode_record(r));
        }
        b.extend(tail);
        let p = dir.join(name);
        std::fs::write(&p, b).unwrap();
        p
    }

    fn all(logs: &ShimLogs) -> Vec<ShimRecord> {
        let mut m = Merge::new(&logs.bins);
        let mut v = Vec::new();
        while let Some(r) = m.next().unwrap() {
            v.push(r);
        }
        v
    }

    #[test]
    fn bin_round_trip_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let recs = [
            record(FileOp::Write as u16, 10),
            record(FileOp::Close as u16, 20),
        ];
        write_bin(dir.path(), "42.1.bin", &recs, &[1, 2, 3]);
        std::fs::write(dir.path().join("42.1.txt"), "E 2\n").unwrap();
        let logs = read_dir(dir.path()).unwrap();
        assert_eq!(logs.processes, vec![42]);
        assert_eq!(logs.torn_bytes, 3);
        assert_eq!(logs.lost, vec![42], "a torn tail is a loss");
        assert_eq!(logs.records(), 2);
        let got = all(&logs);
        assert_eq!(got, recs);
        assert_eq!(
            (got[0].offset, got[0].fd, got[1].op, got[0].nframes),
            (4096, 5, 11, 3)
        );
    }

    #[test]
    fn records_an_end_line_counts_beyond_the_log_are_lost_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let recs = [record(FileOp::Write as u16, 10)];
        write_bin(dir.path(), "42.1.bin", &recs, &[]);
        std::fs::write(dir.path().join("42.1.txt"), "E 5\n").unwrap();
        let logs = read_dir(dir.path()).unwrap();
        assert_eq!((logs.lost_records, logs.lost.clone()), (4, vec![42]));
        std::fs::write(dir.path().join("42.1.txt"), "E 1\n").unwrap();
        let logs = read_dir(dir.path()).unwrap();
        assert_eq!((logs.lost_records, logs.lost.len()), (0, 0));
    }

    #[test]
    fn fifos_sockets_and_directories_in_the_log_directory_are_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        write_bin(
            dir.path(),
            "42.1.bin",
            &[record(FileOp::Write as u16, 10)],
            &[],
        );
        let fifo = |name: &str| {
            let made = std::process::Command::new("mkfifo")
                .arg(dir.path().join(name))
                .status()
                .unwrap();
            assert!(made.success());
        };
        fifo("42.1.txt"); // the log's own .txt: a reader would wait for a writer forever
        fifo("x.bin");
        let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("s.bin")).unwrap();
        std::fs::create_dir(dir.path().join("d.bin")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("z.bin")).unwrap();
        let logs = read_dir(dir.path()).unwrap();
        assert_eq!((logs.records(), logs.lost.clone()), (1, vec![42]));
        let d = dir.path().display();
        let skipped = |name: &str, kind: &str| {
            format!("{d}/{name}: {kind} in the log directory, not a log the shim wrote; skipped")
        };
        assert_eq!(
            logs.warnings,
            vec![
                skipped("42.1.txt", "a FIFO"),
                skipped("d.bin", "a directory"),
                skipped("s.bin", "a socket"),
                skipped("x.bin", "a FIFO"),
                skipped("z.bin", "a symbolic link"),
            ]
        );
        let e = crate::record::merge::index_bin(&dir.path().join("x.bin")).unwrap_err();
        assert!(e.to_string().contains("a FIFO, not a log"), "{e}");
    }

    #[test]
    fn bad_bins_name_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.bin");
        std::fs::write(&p, b"short").unwrap();
        let e = crate::record::merge::index_bin(&p).unwrap_err().to_string();
        assert!(
            e.contains("x.bin: byte 0") && e.contains("5 bytes, shorter"),
            "{e}"
        );
        let mut h = encode_header(42, 1);
        h[0] = b'Q';
        std::fs::write(&p, h).unwrap();
        let e = read_dir(dir.path()).unwrap_err().to_string();
        assert!(e.contains("x.bin: byte 0: bad magic"), "{e}");
        let write = record(FileOp::Write as u16, 1);
        let p = write_bin(dir.path(), "x.bin", &[write, record(99, 2)], &[]); // 99: no op has it
        let e = crate::record::merge::index_bin(&p).unwrap_err().to_string();
        assert!(
            e.contains("byte 200") && e.contains("record 1: unknown op 99"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_txt_cut_short_keeps_its_whole_lines() {
        // a file-size limit stopped the appends inside the second frame line of a signature
        let t = b"P 00000000000000ff 2 /a\nS 0000000000000010 2\nF 1 a0 3 /m1\nF 2 b";
        let mut logs = ShimLogs::default();
        let end = parse_txt("cut.txt", t, &mut logs).unwrap();
        assert_eq!((end.ended, end.torn_bytes), (false, 5));
        assert_eq!(logs.paths[&255], "/a");
        assert_eq!(logs.sigs[&16].len(), 1, "the frames before the cut");
        let end = parse_txt("p.txt", b"P 00000000000000ff 2 /", &mut logs).unwrap();
        assert_eq!(end.torn_bytes, 22);
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
        assert_eq!(logs.sigs[&16][0].symbol, None);
        // N lines name the frame before them (a name may hold spaces and newlines)
        let n = b"S 0000000000000020 2\nF 3 53 4 java\nN 11 W.short\nX y\nF 3 0 4 java\nE 1\n";
        assert!(parse_txt("n.txt", n, &mut logs).unwrap().ended);
        assert_eq!(logs.sigs[&32][0].symbol.as_deref(), Some("W.short\nX y"));
        assert_eq!(
            (
                logs.sigs[&32][0].offset,
                logs.sigs[&32][1].symbol.as_deref()
            ),
            (0x53, None)
        );
        let e = parse_txt(
            "m.txt",
            b"S 0000000000000030 1\nF 3 0 4 java\nN 99 W\n",
            &mut logs,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("m.txt: byte 34: malformed frame name line"),
            "{e}"
        );
        let u = parse_txt("u.txt", b"W io_uring: set up\n", &mut logs).unwrap();
        assert_eq!(
            u,
            TxtEnd {
                ended: false,
                logged: None,
                io_uring: true,
                torn_bytes: 0
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
        for pid in [42u32, 43, 44] {
            let mut w = LogWriter::create(dir.path(), pid, 1, 1).unwrap();
            w.record(&ShimRecord {
                pid,
                tid: pid,
                ..record(FileOp::Spawn as u16, 5)
            })
            .unwrap();
            if pid != 44 {
                w.warn("io_uring: this process set up an io_uring").unwrap();
            }
            w.finish(true).unwrap();
        }
        let logs = read_dir(dir.path()).unwrap();
        assert_eq!(logs.io_uring, vec![42, 43]);
        assert_eq!(logs.warnings, vec![io_uring_warning(2)]);
        assert_eq!(
            logs.warnings[0],
            "2 process(es) used io_uring; their writes are not recorded"
        );
        assert_eq!(FileOp::from_code(all(&logs)[0].op), Some(FileOp::Spawn));
        assert!(logs.lost.is_empty());
    }

    #[test]
    fn static_mmap_and_unplaced_lines_are_aggregated() {
        let dir = tempfile::tempdir().unwrap();
        for pid in [42u32, 43] {
            let mut w = LogWriter::create(dir.path(), pid, 1, 1).unwrap();
            w.warn("static: /usr/bin/busybox").unwrap();
            w.warn(&format!("static: /opt/static-{pid}")).unwrap();
            w.warn("mmap: 8192 /data/a b.db").unwrap();
            w.warn("unplaced: 100 /data/x: the file position is unknown")
                .unwrap();
            w.warn("terminated by SIGTERM").unwrap();
            w.finish(pid == 42).unwrap();
        }
        let logs = read_dir(dir.path()).unwrap();
        assert_eq!(logs.lost, vec![43], "a .bin without an E line");
        assert_eq!((logs.static_execs, logs.mmap_mappings), (4, 2));
        assert_eq!((logs.mmap_bytes, logs.unplaced_bytes), (16384, 200));
        assert_eq!(
            logs.warnings,
            vec![
                "terminated by SIGTERM".to_string(),
                "4 exec(s) of statically linked programs were not recorded: /opt/static-42, /opt/static-43, /usr/bin/busybox".into(),
                "16384 bytes may have been written through 2 shared mappings never msync'ed (not recorded): /data/a b.db".into(),
                "200 written bytes could not be placed at a file offset (not recorded): /data/x (the file position is unknown)".into(),
            ]
        );
        // a program the BPF capture recorded is not a loss
        let mut w = LogWriter::create(dir.path(), 44, 1, 1).unwrap();
        w.warn("captured: /usr/bin/busybox").unwrap();
        w.finish(true).unwrap();
        let logs = read_dir(dir.path()).unwrap();
        assert!(
            logs.warnings.contains(&"2 exec(s) of statically linked programs were not recorded: /opt/static-42, /opt/static-43".to_string()),
            "{:?}",
            logs.warnings
        );
        let many: BTreeSet<String> = (0..20).map(|i| format!("/p{i:02}")).collect();
        assert!(
            listing(&many).ends_with("/p07, and 12 more"),
            "{}",
            listing(&many)
        );
    }
}
