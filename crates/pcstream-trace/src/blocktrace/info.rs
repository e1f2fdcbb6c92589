//! Trace summary (`pcstream info`): one streaming pass (two when the capacity must be scanned),
//! memory bounded by the capacity bitset and the number of distinct PCs, files and pids. A
//! file-level trace (the output of `record`) is summarised by [`crate::filetrace::info`] instead
//! (`"kind": "file"`).
//!
//! Fields: kind ("block"), path, source, page_bytes, rows, row_groups, capacity_pages (metadata or scanned) and
//! capacity_scanned, capacity_bytes, writes / trims / reads `{requests, pages}`, flushes,
//! unique_lpns_written, footprint_bytes (unique pages written × page size), pcs `{count, top}`
//! (distinct PCs of writes; top 10 by pages written with their share), files (distinct non-zero
//! file ids written), file_table (entries in `pcstream.files`), pids (distinct pids of all rows),
//! meta_share (share of written pages per meta class), ts `{first_ns, last_ns, duration_s}`,
//! aged_rows / aged_pages (the aged state that leads a trace mapped with `--age`). The PC and
//! meta shares are of the pages the program wrote: the aged state's rows (the file system's
//! cold files, no PC) are counted in `writes` and the footprint, not in the shares.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pcstream_core::request::{Op, Request};
use serde_json::json;

use super::reader::{scan_capacity, BlockTraceReader};
use crate::error::TraceError;
use crate::pc_labels::{label_top, TopLabels};

/// Names of the `meta` classes 0..=5, in the order of `pcstream_core::request::meta`.
pub const META_CLASSES: [&str; 6] = ["data", "journal", "inode", "directory", "bitmap", "other"];

/// What one pass over the rows counts.
struct Tally {
    /// One bit per page: written at least once.
    seen: Vec<u64>,
    unique: u64,
    /// (requests, pages) per op.
    ops: [(u64, u64); 4],
    /// Pages written per PC.
    pcs: BTreeMap<u64, u64>,
    files: BTreeSet<u32>,
    pids: BTreeSet<u32>,
    meta_pages: [u64; 6],
    first: Option<u64>,
    last: u64,
    /// Leading rows still to come that belong to the aged state, and the pages written by it.
    aged_rows_left: u64,
    aged_pages: u64,
}

impl Tally {
    /// A tally for a trace of `capacity` pages, its bitmap checked against the memory available.
    fn new(path: &Path, capacity: u64, aged_rows: u64) -> Result<Tally, TraceError> {
        let words = usize::try_from(capacity.div_ceil(64)).map_err(|_| TraceError::Io {
            path: path.display().to_string(),
            why: format!("capacity of {capacity} pages is too large to summarise on this machine"),
        })?;
        crate::meminfo::check(
            words as u64 * 8,
            &format!("{}: summarising {capacity} pages", path.display()),
            "a bitmap of the pages written",
            "summarise a trace of a smaller capacity or use a machine with more memory",
        )
        .map_err(TraceError::Memory)?;
        Ok(Tally {
            seen: vec![0u64; words],
            unique: 0,
            ops: [(0, 0); 4],
            pcs: BTreeMap::new(),
            files: BTreeSet::new(),
            pids: BTreeSet::new(),
            meta_pages: [0; 6],
            first: None,
            last: 0,
            aged_rows_left: aged_rows,
            aged_pages: 0,
        })
    }

    fn add(&mut self, q: &Request) {
        let op = q.op as usize; // validated: 0..=3
        self.ops[op].0 += 1;
        self.ops[op].1 += q.pages as u64;
        self.first.get_or_insert(q.ts_ns);
        self.last = self.last.max(q.ts_ns);
        self.pids.insert(q.pid);
        let aged = self.aged_rows_left > 0;
        self.aged_rows_left = self.aged_rows_left.saturating_sub(1);
        if q.op != Op::Write as u8 {
            return;
        }
        if q.file != 0 {
            self.files.insert(q.file);
        }
        if aged {
            self.aged_pages += q.pages as u64;
        } else {
            *self.pcs.entry(q.pc).or_default() += q.pages as u64;
            self.meta_pages[(q.meta as usize).min(5)] += q.pages as u64;
        }
        for l in q.lpn..q.lpn + q.pages as u64 {
            let (w, bit) = ((l / 64) as usize, 1u64 << (l % 64));
            if self.seen[w] & bit == 0 {
                self.seen[w] |= bit;
                self.unique += 1;
            }
        }
    }

    /// Share of the pages the program wrote (the aged state's left out).
    fn share(&self, pages: u64) -> f64 {
        let written = self.ops[0].1 - self.aged_pages;
        if written == 0 {
            0.0
        } else {
            pages as f64 / written as f64
        }
    }

    /// The 10 PCs with the most pages written (ties to the smaller PC).
    fn top_pcs(&self) -> Vec<serde_json::Value> {
        let mut top: Vec<(u64, u64)> = self.pcs.iter().map(|(&k, &v)| (k, v)).collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        top.iter()
            .take(10)
            .map(|&(pc, p)| json!({"pc": pc.to_string(), "pages": p, "share": self.share(p)}))
            .collect()
    }
}

/// Summarise the trace at `path`; see the module documentation for the fields.
pub fn summarize(path: &Path) -> Result<serde_json::Value, TraceError> {
    summarize_labelled(path, false).map(|(summary, _)| summary)
}

/// [`summarize`], and when `labels` the labels of its top PCs ([`label_top`]): from the PC table
/// the reader parsed for the summary, so `pcstream info` parses it once.
pub fn summarize_labelled(
    path: &Path,
    labels: bool,
) -> Result<(serde_json::Value, TopLabels), TraceError> {
    if crate::filetrace::info::is_file_trace(path) {
        return crate::filetrace::info::summarize_labelled(path, labels);
    }
    let mut r = BlockTraceReader::open(path)?;
    let (capacity, scanned) = match r.meta().capacity_pages {
        Some(c) => (c, false),
        None => (scan_capacity(path)?, true),
    };
    let mut t = Tally::new(path, capacity, r.meta().aged.map_or(0, |a| a.rows))?;
    let mut buf = Vec::new();
    while r.next_batch(&mut buf)? {
        for q in &buf {
            t.add(q);
        }
    }
    let meta_share: serde_json::Map<String, serde_json::Value> = META_CLASSES
        .iter()
        .zip(t.meta_pages)
        .map(|(n, p)| (n.to_string(), json!(t.share(p))))
        .collect();
    let (first, last) = (t.first.unwrap_or(0), t.last);
    let m = r.meta();
    let page = m.page_bytes as u64;
    let pair = |o: (u64, u64)| json!({"requests": o.0, "pages": o.1});
    let summary = json!({
        "kind": "block",
        "path": path.display().to_string(),
        "source": m.source,
        "page_bytes": m.page_bytes,
        "rows": r.num_rows(),
        "row_groups": r.num_row_groups(),
        "capacity_pages": capacity,
        "capacity_scanned": scanned,
        "capacity_bytes": capacity * page,
        "writes": pair(t.ops[0]),
        "trims": pair(t.ops[1]),
        "reads": pair(t.ops[2]),
        "flushes": t.ops[3].0,
        "unique_lpns_written": t.unique,
        "footprint_bytes": t.unique * page,
        "pcs": {"count": t.pcs.len(), "top": t.top_pcs()},
        "files": t.files.len(),
        "file_table": m.files.len(),
        "pids": t.pids.len(),
        "meta_share": meta_share,
        "ts": {"first_ns": first, "last_ns": last, "duration_s": last.saturating_sub(first) as f64 / 1e9},
        // The aged state (`map --age`): the leading rows, counted in `writes` too.
        "aged_rows": m.aged.map_or(0, |a| a.rows),
        "aged_pages": m.aged.map_or(0, |a| a.pages),
    });
    let top = labels.then(|| label_top(&summary, &m.pcs)).flatten();
    Ok((summary, top))
}
