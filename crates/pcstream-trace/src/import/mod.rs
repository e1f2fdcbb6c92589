//! Importers of block traces from the field into the block-trace Parquet format.
//!
//! Each format module turns one text line into an [`IoRecord`] (or nothing, for headers and
//! lines that carry no I/O); this module does the rest for all of them: decompression (`.gz`,
//! `.zst`), streaming line by line (memory does not grow with the input), `FILE:LINE` errors,
//! `--skip-bad`, the device/volume filter, byte → page conversion (a partial page counts as a page),
//! timestamps rebased to 0, capacity inference, and writing atomically (no partial output).

pub mod alibaba;
pub mod blkparse;
pub mod fio;
pub mod mqsim;
pub mod msr;
pub mod tencent;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pcstream_core::request::{Op, Request};
use pcstream_core::units::PAGE_BYTES;

use crate::blocktrace::{BlockTraceWriter, TraceMeta, DEFAULT_ROW_GROUP_ROWS};
use crate::error::{one_line, TraceError};

/// Formats `pcstream import` understands.
pub const FORMATS: &[&str] = &["blkparse", "msr", "alibaba", "tencent", "fio", "mqsim"];

/// One I/O of an input trace, in the input's own units converted to bytes and nanoseconds.
/// Parsers fill one record in place, line after line, so the device name's buffer is reused.
#[derive(Clone, Debug, PartialEq)]
pub struct IoRecord {
    pub ts_ns: u64,
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// Device / volume / disk identifier as written in the input.
    pub device: String,
    pub pid: u32,
}

impl Default for IoRecord {
    fn default() -> Self {
        IoRecord {
            ts_ns: 0,
            op: Op::Write,
            offset_bytes: 0,
            len_bytes: 0,
            device: String::new(),
            pid: 0,
        }
    }
}

impl IoRecord {
    /// Set every field but the device (which the parser writes into [`IoRecord::device`]).
    pub(crate) fn set(&mut self, ts_ns: u64, op: Op, offset_bytes: u64, len_bytes: u64, pid: u32) {
        self.ts_ns = ts_ns;
        self.op = op;
        self.offset_bytes = offset_bytes;
        self.len_bytes = len_bytes;
        self.pid = pid;
    }

    /// Replace the device name.
    pub(crate) fn device_from(&mut self, parts: &[&dyn std::fmt::Display]) {
        use std::fmt::Write;
        self.device.clear();
        for p in parts {
            let _ = write!(self.device, "{p}");
        }
    }
}

/// A line parser keeps state across lines (e.g. fio's file table, a header check).
pub trait LineParser {
    /// Fill `rec` from `line`: `Ok(true)` for an I/O, `Ok(false)` for lines without I/O
    /// (headers, comments, events that are not I/O); `Err(what is wrong)` for a malformed line.
    fn parse(&mut self, line: &str, rec: &mut IoRecord) -> Result<bool, String>;
}

pub fn parser(format: &str) -> Option<Box<dyn LineParser>> {
    Some(match format {
        "blkparse" => Box::new(blkparse::Blkparse::default()),
        "msr" => Box::new(msr::Msr),
        "alibaba" => Box::new(alibaba::Alibaba),
        "tencent" => Box::new(tencent::Tencent),
        "fio" => Box::new(fio::FioLog::default()),
        "mqsim" => Box::new(mqsim::MqSim),
        _ => return None,
    })
}

#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Keep only records of this device / volume / disk (as written in the input).
    pub device: Option<String>,
    /// Logical capacity in pages; inferred (max lpn + pages) when absent.
    pub capacity_pages: Option<u64>,
    /// Tolerate up to this many malformed lines (reported); the next one is an error.
    pub skip_bad: u64,
    /// Metadata classes by address, when the file system's layout is known (e.g. read from the
    /// image a trace was captured on): `(first page, pages, meta class)`, sorted and disjoint.
    /// A request is split where it crosses a range boundary; pages outside every range are data
    /// (class 0). Empty: every row is class 0.
    pub meta_map: Vec<(u64, u64, u8)>,
}

impl ImportOptions {
    /// Check `meta_map`: sorted, disjoint, non-empty ranges of known classes (one-line error).
    pub fn check_meta_map(&self) -> Result<(), String> {
        let mut end = 0u64;
        for (i, &(start, pages, class)) in self.meta_map.iter().enumerate() {
            if pages == 0 || class > pcstream_core::request::meta::OTHER {
                return Err(format!(
                    "meta map entry {i} ({start}, {pages}, {class}) is empty or of an unknown class (0..=5)"
                ));
            }
            if start < end {
                return Err(format!(
                    "meta map entry {i} starts at page {start}, inside the previous range; sort the ranges and merge overlaps"
                ));
            }
            end = start
                .checked_add(pages)
                .ok_or_else(|| format!("meta map entry {i} ({start} + {pages} pages) overflows"))?;
        }
        Ok(())
    }
}

/// Split `[lpn, lpn + pages)` at the boundaries of `map` (see [`ImportOptions::meta_map`]) and
/// call `emit(lpn, pages, class)` for each piece, in address order.
fn classify(map: &[(u64, u64, u8)], lpn: u64, pages: u64, emit: &mut dyn FnMut(u64, u64, u8)) {
    let end = lpn + pages;
    // First range that ends after `lpn`.
    let mut i = map.partition_point(|&(s, n, _)| s + n <= lpn);
    let mut at = lpn;
    while at < end {
        match map.get(i) {
            Some(&(s, n, class)) if s < end => {
                if at < s {
                    emit(at, s - at, 0);
                    at = s;
                }
                let stop = (s + n).min(end);
                emit(at, stop - at, class);
                at = stop;
                i += 1;
            }
            _ => {
                emit(at, end - at, 0);
                at = end;
            }
        }
    }
}

/// What an import did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ImportReport {
    pub lines: u64,
    pub rows: u64,
    pub writes: u64,
    pub reads: u64,
    pub trims: u64,
    pub flushes: u64,
    /// Pages (4 KiB) written, read and trimmed.
    pub write_pages: u64,
    pub read_pages: u64,
    pub trim_pages: u64,
    /// Lines of other devices (`--device`).
    pub filtered_out: u64,
    pub capacity_pages: u64,
    /// The malformed lines skipped, as `FILE:LINE: what` (at most 100 kept).
    pub skipped: Vec<String>,
    pub skipped_count: u64,
}

/// Counts the bytes read from the file itself (compressed bytes for `.gz`/`.zst`), so progress
/// can be shown against the file's size.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Open `path`, decompressing `.gz` and `.zst` by extension.
pub fn open_text(path: &Path) -> Result<Box<dyn BufRead>, TraceError> {
    open_counted(path, Arc::new(AtomicU64::new(0)))
}

/// As [`open_text`]; `read` counts the bytes taken from the file.
fn open_counted(path: &Path, read: Arc<AtomicU64>) -> Result<Box<dyn BufRead>, TraceError> {
    let label = path.display().to_string();
    let f = Counted {
        inner: crate::blocktrace::reader::open_input(path)?,
        read,
    };
    let name = label.to_ascii_lowercase();
    let r: Box<dyn Read> = if name.ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    } else if name.ends_with(".zst") {
        Box::new(
            zstd::stream::read::Decoder::new(f).map_err(|e| TraceError::Io {
                path: label,
                why: e.to_string(),
            })?,
        )
    } else {
        Box::new(f)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 20, r)))
}

/// Lines between two progress calls.
const PROGRESS_LINES: u64 = 1 << 16;

/// Import `input` (in `format`) into the block trace `out`. `progress(bytes_read, file_bytes)`
/// is called every 64 Ki lines and at the end with the bytes taken from the file so far (the
/// compressed bytes for `.gz`/`.zst`) and the file's size; returning `false` stops the import
/// (an error, no output).
///
/// Errors: an unknown format is [`TraceError::Gen`]; a malformed line (beyond `skip_bad`), a
/// request beyond `capacity_pages`, or an unreadable file is [`TraceError::Io`] naming
/// `FILE:LINE`. No output file is left behind on any error.
pub fn import(
    format: &str,
    input: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<ImportReport, TraceError> {
    let label = input.display().to_string();
    let mut p = parser(format).ok_or_else(|| {
        TraceError::Gen(format!(
            "unknown import format '{format}'; use one of: {}",
            FORMATS.join(", ")
        ))
    })?;
    opts.check_meta_map().map_err(TraceError::Gen)?;
    let read = Arc::new(AtomicU64::new(0));
    let mut reader = open_counted(input, read.clone())?;
    let file_bytes = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    let meta = TraceMeta {
        source: format!("pcstream import {format} {label}"),
        ..Default::default()
    };
    let mut w = BlockTraceWriter::create(out, &meta, DEFAULT_ROW_GROUP_ROWS)?;
    let mut rep = ImportReport::default();
    let mut first_ts: Option<u64> = None;
    let mut max_end = 0u64;
    let mut line = String::new();
    let mut rec = IoRecord::default();
    let mut pieces: Vec<(u64, u64, u8)> = Vec::new();
    let at = |line: u64| format!("{label}:{line}");
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| TraceError::Io {
            path: at(rep.lines + 1),
            why: format!(
                "cannot read ({}); is the file complete, text, and of the compression its name says?",
                one_line(e)
            ),
        })?;
        if n == 0 {
            break;
        }
        rep.lines += 1;
        if rep.lines % PROGRESS_LINES == 0 && !progress(read.load(Ordering::Relaxed), file_bytes) {
            return Err(TraceError::Gen("import interrupted".into()));
        }
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim_start().is_empty() {
            continue;
        }
        match p.parse(text, &mut rec) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(what) => {
                rep.skipped_count += 1;
                if rep.skipped_count > opts.skip_bad {
                    let hint = if opts.skip_bad == 0 {
                        "; fix the line or pass --skip-bad N to tolerate N bad lines".to_string()
                    } else {
                        format!("; more than --skip-bad {} bad lines", opts.skip_bad)
                    };
                    return Err(TraceError::Io {
                        path: at(rep.lines),
                        why: format!("{what}{hint}"),
                    });
                }
                if rep.skipped.len() < 100 {
                    rep.skipped.push(format!("{}: {what}", at(rep.lines)));
                }
                continue;
            }
        }
        if let Some(d) = &opts.device {
            if &rec.device != d {
                rep.filtered_out += 1;
                continue;
            }
        }
        if rec.len_bytes == 0 && rec.op != Op::Flush {
            continue; // zero-length I/O moves no page
        }
        let base = *first_ts.get_or_insert(rec.ts_ns);
        let lpn = rec.offset_bytes / PAGE_BYTES;
        let end = rec
            .offset_bytes
            .checked_add(rec.len_bytes)
            .map(|e| e.div_ceil(PAGE_BYTES))
            .filter(|&e| e - lpn <= u32::MAX as u64)
            .ok_or_else(|| TraceError::Io {
                path: at(rep.lines),
                why: format!(
                    "offset {} + {} bytes is not a valid range (it overflows or spans more than 2^32 pages); fix the line",
                    rec.offset_bytes, rec.len_bytes
                ),
            })?;
        let pages = if rec.op == Op::Flush {
            0
        } else {
            (end - lpn) as u32
        };
        if let Some(cap) = opts.capacity_pages {
            if rec.op != Op::Flush && end > cap {
                return Err(TraceError::Io {
                    path: at(rep.lines),
                    why: format!(
                        "offset {} + {} bytes ends at page {end}, beyond --capacity {cap} pages; raise --capacity or filter the device",
                        rec.offset_bytes, rec.len_bytes
                    ),
                });
            }
        }
        if rec.op != Op::Flush {
            max_end = max_end.max(end);
        }
        match rec.op {
            Op::Write => rep.writes += 1,
            Op::Read => rep.reads += 1,
            Op::Trim => rep.trims += 1,
            Op::Flush => rep.flushes += 1,
        }
        match rec.op {
            Op::Write => rep.write_pages += pages as u64,
            Op::Read => rep.read_pages += pages as u64,
            Op::Trim => rep.trim_pages += pages as u64,
            Op::Flush => {}
        }
        let mut r = Request {
            ts_ns: rec.ts_ns.saturating_sub(base),
            op: rec.op as u8,
            lpn,
            pages,
            pid: rec.pid,
            ..Default::default()
        };
        if opts.meta_map.is_empty() || rec.op == Op::Flush {
            w.push(&r)?;
            rep.rows += 1;
        } else {
            pieces.clear();
            classify(&opts.meta_map, lpn, pages as u64, &mut |l, n, c| {
                pieces.push((l, n, c))
            });
            for &(l, n, c) in &pieces {
                r.lpn = l;
                r.pages = n as u32;
                r.meta = c;
                w.push(&r)?;
                rep.rows += 1;
            }
        }
    }
    rep.capacity_pages = opts.capacity_pages.unwrap_or(max_end);
    w.set_meta(&TraceMeta {
        capacity_pages: Some(rep.capacity_pages),
        ..meta
    });
    w.finish()?;
    progress(read.load(Ordering::Relaxed), file_bytes);
    Ok(rep)
}

/// Parse a field as an unsigned integer (surrounding blanks allowed), naming it in the error.
/// A byte loop rather than `str::parse`: this is the importers' innermost step.
pub(crate) fn num(field: &str, what: &str) -> Result<u64, String> {
    let t = field.trim_matches([' ', '\t']);
    let mut v = 0u64;
    let ok = !t.is_empty()
        && t.bytes().all(|b| {
            let d = b.wrapping_sub(b'0');
            match v.checked_mul(10).and_then(|x| x.checked_add(d as u64)) {
                Some(x) if d < 10 => {
                    v = x;
                    true
                }
                _ => false,
            }
        });
    if ok {
        Ok(v)
    } else {
        Err(format!(
            "{what} '{}' is not a non-negative integer",
            field.trim()
        ))
    }
}

/// Split a CSV line into exactly `N` fields (no allocation; one pass over the bytes).
pub(crate) fn fields<'a, const N: usize>(
    line: &'a str,
    layout: &str,
) -> Result<[&'a str; N], String> {
    let mut out = [""; N];
    let mut n = 0;
    let mut from = 0;
    for (i, &b) in line.as_bytes().iter().enumerate() {
        if b == b',' {
            if n < N {
                // ',' is ASCII, so `from..i` lies on character boundaries.
                out[n] = &line[from..i];
            }
            n += 1;
            from = i + 1;
        }
    }
    if n < N {
        out[n] = &line[from..];
    }
    n += 1;
    if n != N {
        return Err(format!(
            "expected {N} comma-separated fields ({layout}), found {n}"
        ));
    }
    Ok(out)
}

/// Split a line at runs of whitespace into exactly `N` fields (no allocation).
pub(crate) fn words<'a, const N: usize>(
    line: &'a str,
    layout: &str,
) -> Result<[&'a str; N], String> {
    let mut out = [""; N];
    let mut it = line.split_ascii_whitespace();
    let mut n = 0;
    for f in it.by_ref() {
        if n == N {
            n += 1;
            break;
        }
        out[n] = f;
        n += 1;
    }
    if n != N {
        let found = n + it.count();
        return Err(format!(
            "expected {N} space-separated fields ({layout}), found {found}"
        ));
    }
    Ok(out)
}
