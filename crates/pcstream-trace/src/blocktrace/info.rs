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
//! meta_share (share of written pages per meta class), ts `{first_ns, last_ns, duration_s}`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pcstream_core::request::Op;
use serde_json::json;

use super::reader::{scan_capacity, BlockTraceReader};
use crate::error::TraceError;

/// Names of the `meta` classes 0..=5, in the order of `pcstream_core::request::meta`.
pub const META_CLASSES: [&str; 6] = ["data", "journal", "inode", "directory", "bitmap", "other"];

/// Summarise the trace at `path`; see the module documentation for the fields.
pub fn summarize(path: &Path) -> Result<serde_json::Value, TraceError> {
    if crate::filetrace::info::is_file_trace(path) {
        return crate::filetrace::info::summarize(path);
    }
    let mut r = BlockTraceReader::open(path)?;
    let (capacity, scanned) = match r.meta().capacity_pages {
        Some(c) => (c, false),
        None => (scan_capacity(path)?, true),
    };
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
    let mut seen = vec![0u64; words];
    let mut unique = 0u64;
    let mut ops = [(0u64, 0u64); 4];
    let mut pcs: BTreeMap<u64, u64> = BTreeMap::new();
    let mut files = BTreeSet::new();
    let mut pids = BTreeSet::new();
    let mut meta_pages = [0u64; 6];
    let (mut first, mut last) = (None, 0u64);
    let mut buf = Vec::new();
    while r.next_batch(&mut buf)? {
        for q in &buf {
            let op = q.op as usize; // validated: 0..=3
            ops[op].0 += 1;
            ops[op].1 += q.pages as u64;
            first.get_or_insert(q.ts_ns);
            last = last.max(q.ts_ns);
            pids.insert(q.pid);
            if q.op != Op::Write as u8 {
                continue;
            }
            *pcs.entry(q.pc).or_default() += q.pages as u64;
            if q.file != 0 {
                files.insert(q.file);
            }
            meta_pages[(q.meta as usize).min(5)] += q.pages as u64;
            for l in q.lpn..q.lpn + q.pages as u64 {
                let (w, bit) = ((l / 64) as usize, 1u64 << (l % 64));
                if seen[w] & bit == 0 {
                    seen[w] |= bit;
                    unique += 1;
                }
            }
        }
    }
    let written = ops[0].1;
    let share = |p: u64| {
        if written == 0 {
            0.0
        } else {
            p as f64 / written as f64
        }
    };
    let mut top: Vec<(u64, u64)> = pcs.iter().map(|(&k, &v)| (k, v)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let top: Vec<_> = top
        .iter()
        .take(10)
        .map(|&(pc, p)| json!({"pc": pc.to_string(), "pages": p, "share": share(p)}))
        .collect();
    let meta_share: serde_json::Map<String, serde_json::Value> = META_CLASSES
        .iter()
        .zip(meta_pages)
        .map(|(n, p)| (n.to_string(), json!(share(p))))
        .collect();
    let first = first.unwrap_or(0);
    let m = r.meta();
    let page = m.page_bytes as u64;
    let pair = |o: (u64, u64)| json!({"requests": o.0, "pages": o.1});
    Ok(json!({
        "kind": "block",
        "path": path.display().to_string(),
        "source": m.source,
        "page_bytes": m.page_bytes,
        "rows": r.num_rows(),
        "row_groups": r.num_row_groups(),
        "capacity_pages": capacity,
        "capacity_scanned": scanned,
        "capacity_bytes": capacity * page,
        "writes": pair(ops[0]),
        "trims": pair(ops[1]),
        "reads": pair(ops[2]),
        "flushes": ops[3].0,
        "unique_lpns_written": unique,
        "footprint_bytes": unique * page,
        "pcs": {"count": pcs.len(), "top": top},
        "files": files.len(),
        "file_table": m.files.len(),
        "pids": pids.len(),
        "meta_share": meta_share,
        "ts": {"first_ns": first, "last_ns": last, "duration_s": last.saturating_sub(first) as f64 / 1e9},
        // The aged state (`map --age`): the leading rows, counted in `writes` too.
        "aged_rows": m.aged.map_or(0, |a| a.rows),
        "aged_pages": m.aged.map_or(0, |a| a.pages),
    }))
}
