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

use pcstream_core::request::{Op, Request};

use crate::error::TraceError;
use crate::format::TraceMeta;
use crate::writer::{BlockTraceWriter, DEFAULT_ROW_GROUP_ROWS};

pub const PAGE_BYTES: u64 = 4096;

/// Formats `pcstream import` understands.
pub const FORMATS: &[&str] = &["blkparse", "msr", "alibaba", "tencent", "fio", "mqsim"];

/// One I/O of an input trace, in the input's own units converted to bytes and nanoseconds.
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

/// A line parser keeps state across lines (e.g. fio's file table, a header check).
pub trait LineParser {
    /// `Ok(None)` for lines without I/O (headers, comments, events that are not I/O).
    fn parse(&mut self, line: &str) -> Result<Option<IoRecord>, String>;
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
}

/// What an import did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ImportReport {
    pub lines: u64,
    pub rows: u64,
    pub writes: u64,
    pub reads: u64,
    pub trims: u64,
    pub filtered_out: u64,
    pub capacity_pages: u64,
    /// The malformed lines skipped, as `FILE:LINE: what` (at most 100 kept).
    pub skipped: Vec<String>,
    pub skipped_count: u64,
}

/// Open `path`, decompressing `.gz` and `.zst` by extension.
pub fn open_text(path: &Path) -> Result<Box<dyn BufRead>, TraceError> {
    let label = path.display().to_string();
    let f = crate::reader::open_input(path)?;
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

/// Import `input` (in `format`) into the block trace `out`. `progress(bytes_lines)` is called
/// every 1 Mi lines with the number of lines read.
pub fn import(
    format: &str,
    input: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<ImportReport, TraceError> {
    let label = input.display().to_string();
    let mut p = parser(format).ok_or_else(|| {
        TraceError::Gen(format!(
            "unknown import format '{format}'; use one of: {}",
            FORMATS.join(", ")
        ))
    })?;
    let mut reader = open_text(input)?;
    let meta = TraceMeta {
        source: format!("pcstream import {format} {label}"),
        ..Default::default()
    };
    let mut w = BlockTraceWriter::create(out, &meta, DEFAULT_ROW_GROUP_ROWS)?;
    let mut rep = ImportReport::default();
    let mut first_ts: Option<u64> = None;
    let mut max_end = 0u64;
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| TraceError::Io {
            path: label.clone(),
            why: format!(
                "line {}: cannot read ({e}); is the file complete and of the named compression?",
                rep.lines + 1
            ),
        })?;
        if n == 0 {
            break;
        }
        rep.lines += 1;
        if rep.lines % (1 << 20) == 0 {
            progress(rep.lines);
        }
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        let rec = match p.parse(text) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(what) => {
                let msg = format!("{label}:{}: {what}", rep.lines);
                rep.skipped_count += 1;
                if rep.skipped_count > opts.skip_bad {
                    let hint = if opts.skip_bad == 0 {
                        "; fix the line or pass --skip-bad N to tolerate N bad lines".to_string()
                    } else {
                        format!("; more than --skip-bad {} bad lines", opts.skip_bad)
                    };
                    return Err(TraceError::Gen(format!("{msg}{hint}")));
                }
                if rep.skipped.len() < 100 {
                    rep.skipped.push(msg);
                }
                continue;
            }
        };
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
        let end = (rec.offset_bytes + rec.len_bytes).div_ceil(PAGE_BYTES);
        let pages = if rec.op == Op::Flush {
            0
        } else {
            (end - lpn) as u32
        };
        if let Some(cap) = opts.capacity_pages {
            if rec.op != Op::Flush && end > cap {
                return Err(TraceError::Gen(format!(
                    "{label}:{}: offset {} + {} bytes ends at page {end}, beyond --capacity {cap} pages; raise --capacity or filter the device",
                    rep.lines, rec.offset_bytes, rec.len_bytes
                )));
            }
        }
        if rec.op != Op::Flush {
            max_end = max_end.max(end);
        }
        match rec.op {
            Op::Write => rep.writes += 1,
            Op::Read => rep.reads += 1,
            Op::Trim => rep.trims += 1,
            Op::Flush => {}
        }
        let r = Request {
            ts_ns: rec.ts_ns.saturating_sub(base),
            op: rec.op as u8,
            lpn,
            pages,
            pid: rec.pid,
            ..Default::default()
        };
        w.push(&r)?;
        rep.rows += 1;
    }
    rep.capacity_pages = opts.capacity_pages.unwrap_or(max_end);
    w.set_meta(&TraceMeta {
        capacity_pages: Some(rep.capacity_pages),
        ..meta
    });
    w.finish()?;
    Ok(rep)
}

/// Parse a field as an unsigned integer, naming it in the error.
pub(crate) fn num(field: &str, what: &str) -> Result<u64, String> {
    field
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("{what} '{}' is not a non-negative integer", field.trim()))
}

/// Split a CSV line into exactly `n` fields.
pub(crate) fn fields<'a>(line: &'a str, n: usize, layout: &str) -> Result<Vec<&'a str>, String> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() != n {
        return Err(format!(
            "expected {n} comma-separated fields ({layout}), found {}",
            f.len()
        ));
    }
    Ok(f)
}
