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
pub mod text;

pub use text::MAX_LINE_BYTES;
pub(crate) use text::{fields, num, scaled, words};

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pcstream_core::request::{Op, Request};
use pcstream_core::units::PAGE_BYTES;

use crate::blocktrace::format::MAX_PAGES;
use crate::blocktrace::{BlockTraceWriter, TraceMeta, DEFAULT_ROW_GROUP_ROWS};
use crate::error::{one_line, TraceError};
use text::Line;

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
    /// The name the input goes by in the trace's `source` and in errors (`LABEL:LINE`), when
    /// it is not the file read: a volume's lines spilled from a larger input name that input.
    pub label: Option<String>,
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
    /// Requests whose time was earlier than the previous request's (the file's order is kept;
    /// the time is clamped to the previous one).
    pub reordered: u64,
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
        inner: crate::parquet::open_input(path)?,
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
/// line longer than [`MAX_LINE_BYTES`], a request beyond `capacity_pages` or [`MAX_PAGES`],
/// an input without a single request, or an unreadable file is [`TraceError::Io`] naming
/// `FILE:LINE`. No output file is left behind on any error.
pub fn import(
    format: &str,
    input: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<ImportReport, TraceError> {
    let label = opts
        .label
        .clone()
        .unwrap_or_else(|| input.display().to_string());
    if parser(format).is_none() {
        return Err(unknown_format(format));
    }
    opts.check_meta_map().map_err(TraceError::Gen)?;
    let read = Arc::new(AtomicU64::new(0));
    let mut reader = open_counted(input, read.clone())?;
    let file_bytes = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    let meta = TraceMeta {
        source: format!("pcstream import {format} {label}"),
        ..Default::default()
    };
    let mut w = BlockTraceWriter::create(out, &meta, DEFAULT_ROW_GROUP_ROWS)?;
    let rep = import_lines(
        format,
        &label,
        &mut *reader,
        opts,
        &mut |r| w.push(r),
        &mut || !crate::cancel::requested() && progress(read.load(Ordering::Relaxed), file_bytes),
    )
    .map_err(|e| {
        if crate::cancel::requested() {
            TraceError::Interrupted
        } else {
            e
        }
    })?;
    w.set_meta(&TraceMeta {
        capacity_pages: Some(rep.capacity_pages),
        ..meta
    });
    w.finish()?;
    progress(read.load(Ordering::Relaxed), file_bytes);
    Ok(rep)
}

fn unknown_format(format: &str) -> TraceError {
    TraceError::Gen(format!(
        "unknown import format '{format}'; use one of: {}",
        FORMATS.join(", ")
    ))
}

/// The heart of [`import`], on any line source: parse each line of `reader` (named `label` in
/// errors) as `format` and hand every resulting row to `sink`, in order. `tick()` is called every
/// 64 Ki lines; `false` stops the import. Returns the report with the capacity set.
///
/// Every row handed to `sink` is valid for the block-trace writer: op 0..=3, pages ≥ 1 unless a
/// flush, `lpn + pages` ≤ the capacity (given, or at most [`MAX_PAGES`]), timestamps
/// non-decreasing from 0.
pub fn import_lines(
    format: &str,
    label: &str,
    reader: &mut dyn BufRead,
    opts: &ImportOptions,
    sink: &mut dyn FnMut(&Request) -> Result<(), TraceError>,
    tick: &mut dyn FnMut() -> bool,
) -> Result<ImportReport, TraceError> {
    let mut p = parser(format).ok_or_else(|| unknown_format(format))?;
    opts.check_meta_map().map_err(TraceError::Gen)?;
    if let Some(c) = opts.capacity_pages.filter(|&c| c > MAX_PAGES) {
        return Err(TraceError::Gen(format!(
            "--capacity {c} pages is beyond {MAX_PAGES} pages (2^40, 4 PiB), the largest trace pcstream takes"
        )));
    }
    let mut rows = Rows {
        label,
        format,
        opts,
        rep: ImportReport::default(),
        first_ts: None,
        last_ts: 0,
        max_end: 0,
        pieces: Vec::new(),
    };
    let mut bytes = Vec::new();
    let mut rec = IoRecord::default();
    while rows.read_line(reader, &mut bytes)? {
        rows.rep.lines += 1;
        if rows.rep.lines.is_multiple_of(PROGRESS_LINES) && !tick() {
            return Err(TraceError::Gen("import interrupted".into()));
        }
        let Some(parsed) = parse_line(&mut *p, &bytes, format, &mut rec) else {
            continue;
        };
        // Lines of other devices are counted before their addresses are checked.
        let parsed = match parsed {
            Ok(true) if opts.device.as_ref().is_some_and(|d| &rec.device != d) => {
                rows.rep.filtered_out += 1;
                continue;
            }
            Ok(true) => pages_of(&rec).map(Some),
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        };
        match parsed {
            Ok(Some((lpn, end))) => rows.push(&rec, lpn, end, sink)?,
            Ok(None) => {}
            Err(what) => rows.skip_bad(what)?,
        }
    }
    rows.finish()
}

/// One line's text parsed by `p` into `rec`: `None` for a blank line, else the parser's answer,
/// or what makes the line unreadable as text (not UTF-8, a NUL byte).
fn parse_line(
    p: &mut dyn LineParser,
    bytes: &[u8],
    format: &str,
    rec: &mut IoRecord,
) -> Option<Result<bool, String>> {
    match std::str::from_utf8(bytes) {
        Err(e) => Some(Err(format!(
            "not UTF-8 text (invalid byte at column {}); is this a trace in the {format} format?",
            e.valid_up_to() + 1
        ))),
        Ok(text) => {
            let text = text.trim_end_matches('\r');
            if text.trim_start().is_empty() {
                return None;
            }
            Some(match text.find('\0') {
                Some(i) => Err(format!(
                    "NUL byte at column {}; is this a trace in the {format} format (text)?",
                    i + 1
                )),
                None => p.parse(text, rec),
            })
        }
    }
}

/// An import between two lines: the report so far and what the next row depends on.
struct Rows<'a> {
    /// The input's name and format, for errors.
    label: &'a str,
    format: &'a str,
    opts: &'a ImportOptions,
    rep: ImportReport,
    /// The first request's time (rows are rebased to it) and the latest time so far.
    first_ts: Option<u64>,
    last_ts: u64,
    /// End of the highest page range seen: the capacity when none is given.
    max_end: u64,
    /// A request split at the meta map's boundaries (reused).
    pieces: Vec<(u64, u64, u8)>,
}

impl Rows<'_> {
    /// `FILE:LINE` of line `line`.
    fn at(&self, line: u64) -> String {
        format!("{}:{line}", self.label)
    }

    /// Read the next line into `bytes`: false at the end of the input.
    fn read_line(&self, reader: &mut dyn BufRead, bytes: &mut Vec<u8>) -> Result<bool, TraceError> {
        let kind = text::read_line(reader, bytes, MAX_LINE_BYTES).map_err(|e| TraceError::Io {
            path: self.at(self.rep.lines + 1),
            why: format!(
                "cannot read ({}); is the file complete, text, and of the compression its name says?",
                one_line(e)
            ),
        })?;
        match kind {
            Line::End => Ok(false),
            Line::TooLong => Err(TraceError::Io {
                path: self.at(self.rep.lines + 1),
                why: format!(
                    "line longer than {MAX_LINE_BYTES} bytes (1 MiB); is this a trace in the {} format? check the file and the format",
                    self.format
                ),
            }),
            Line::Text => Ok(true),
        }
    }

    /// A malformed line: skipped and noted while `--skip-bad` allows, else the error.
    fn skip_bad(&mut self, what: String) -> Result<(), TraceError> {
        self.rep.skipped_count += 1;
        if self.rep.skipped_count > self.opts.skip_bad {
            let hint = if self.opts.skip_bad == 0 {
                "; fix the line or pass --skip-bad N to tolerate N bad lines".to_string()
            } else {
                format!("; more than --skip-bad {} bad lines", self.opts.skip_bad)
            };
            return Err(TraceError::Io {
                path: self.at(self.rep.lines),
                why: format!("{what}{hint}"),
            });
        }
        if self.rep.skipped.len() < 100 {
            let line = format!("{}: {what}", self.at(self.rep.lines));
            self.rep.skipped.push(line);
        }
        Ok(())
    }

    /// The request of `rec` (pages `lpn..end`) as rows for `sink`: checked against the
    /// capacity, its time rebased and kept in order, counted, split at the meta map's
    /// boundaries.
    fn push(
        &mut self,
        rec: &IoRecord,
        lpn: u64,
        end: u64,
        sink: &mut dyn FnMut(&Request) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        if rec.len_bytes == 0 && rec.op != Op::Flush {
            return Ok(()); // zero-length I/O moves no page
        }
        if let Some(cap) = self.opts.capacity_pages {
            if rec.op != Op::Flush && end > cap {
                return Err(TraceError::Io {
                    path: self.at(self.rep.lines),
                    why: format!(
                        "offset {} + {} bytes ends at page {end}, beyond --capacity {cap} pages; raise --capacity or filter the device",
                        rec.offset_bytes, rec.len_bytes
                    ),
                });
            }
        }
        // Times keep the file's order: one earlier than the previous request's (reordered by
        // the tracer, as real MSR and blkparse traces are) is clamped to it and counted.
        let base = *self.first_ts.get_or_insert(rec.ts_ns);
        let rep = &mut self.rep;
        if rec.ts_ns < self.last_ts {
            rep.reordered += 1;
        }
        self.last_ts = self.last_ts.max(rec.ts_ns);
        let pages = if rec.op == Op::Flush {
            0
        } else {
            (end - lpn) as u32 // at most 2^32 - 1: checked by `pages_of`
        };
        if rec.op != Op::Flush {
            self.max_end = self.max_end.max(end);
        }
        match rec.op {
            Op::Write => (rep.writes += 1, rep.write_pages += pages as u64),
            Op::Read => (rep.reads += 1, rep.read_pages += pages as u64),
            Op::Trim => (rep.trims += 1, rep.trim_pages += pages as u64),
            Op::Flush => (rep.flushes += 1, ()),
        };
        let mut r = Request {
            ts_ns: self.last_ts - base,
            op: rec.op as u8,
            lpn,
            pages,
            pid: rec.pid,
            ..Default::default()
        };
        if self.opts.meta_map.is_empty() || rec.op == Op::Flush {
            sink(&r)?;
            rep.rows += 1;
            return Ok(());
        }
        let pieces = &mut self.pieces;
        pieces.clear();
        classify(&self.opts.meta_map, lpn, pages as u64, &mut |l, n, c| {
            pieces.push((l, n, c))
        });
        for &(l, n, c) in pieces.iter() {
            r.lpn = l;
            r.pages = n as u32;
            r.meta = c;
            sink(&r)?;
            rep.rows += 1;
        }
        Ok(())
    }

    /// The report with the capacity set, or the error of an input that gave no request.
    fn finish(self) -> Result<ImportReport, TraceError> {
        let mut rep = self.rep;
        if rep.rows == 0 {
            let mut why = format!("no requests to import in {} lines", rep.lines);
            if rep.filtered_out > 0 {
                why += &format!(", {} of other devices than --device", rep.filtered_out);
            }
            if rep.skipped_count > 0 {
                why += &format!(", {} malformed lines skipped", rep.skipped_count);
            }
            return Err(TraceError::Io {
                path: self.label.to_string(),
                why: format!(
                    "{why}; check that the file is a {} trace with read, write, trim or flush lines (and --device)",
                    self.format
                ),
            });
        }
        rep.capacity_pages = self.opts.capacity_pages.unwrap_or(self.max_end);
        Ok(rep)
    }
}

/// The page range `(lpn, end)` of a parsed record: a partial page at either end counts as a
/// page; it must end within [`MAX_PAGES`] and span fewer than 2^32 pages. Flushes carry no range.
fn pages_of(rec: &IoRecord) -> Result<(u64, u64), String> {
    if rec.op == Op::Flush {
        return Ok((0, 0));
    }
    let lpn = rec.offset_bytes / PAGE_BYTES;
    let end = rec
        .offset_bytes
        .checked_add(rec.len_bytes)
        .map(|e| e.div_ceil(PAGE_BYTES))
        .filter(|&e| e <= MAX_PAGES)
        .ok_or_else(|| {
            format!(
                "offset {} + {} bytes ends beyond {MAX_PAGES} pages (2^40 pages, 4 PiB), the largest address pcstream takes",
                rec.offset_bytes, rec.len_bytes
            )
        })?;
    if end - lpn > u32::MAX as u64 {
        return Err(format!(
            "length {} bytes spans more than 2^32 - 1 pages; split the request",
            rec.len_bytes
        ));
    }
    Ok((lpn, end))
}
