//! Trace summary (`pcstream info`), computed streaming.

use std::collections::BTreeMap;
use std::path::Path;

use pcstream_core::request::Op;
use serde_json::json;

use crate::error::TraceError;
use crate::reader::{scan_capacity, BlockTraceReader};

pub fn summarize(path: &Path) -> Result<serde_json::Value, TraceError> {
    let mut r = BlockTraceReader::open(path)?;
    let capacity = match r.meta().capacity_pages {
        Some(c) => c,
        None => scan_capacity(path)?,
    };
    let mut seen = vec![0u64; (capacity as usize).div_ceil(64)];
    let mut unique = 0u64;
    let mut ops = [(0u64, 0u64); 4];
    let mut pcs: BTreeMap<u64, u64> = BTreeMap::new();
    let mut files = std::collections::BTreeSet::new();
    let mut pids = std::collections::BTreeSet::new();
    let mut meta_pages = [0u64; 6];
    let (mut first, mut last) = (None, 0u64);
    let mut buf = Vec::new();
    while r.next_batch(&mut buf)? {
        for q in &buf {
            let op = q.op as usize;
            ops[op].0 += 1;
            ops[op].1 += q.pages as u64;
            first.get_or_insert(q.ts_ns);
            last = last.max(q.ts_ns);
            if q.op == Op::Write as u8 {
                *pcs.entry(q.pc).or_default() += q.pages as u64;
                if q.file != 0 {
                    files.insert(q.file);
                }
                pids.insert(q.pid);
                meta_pages[(q.meta as usize).min(5)] += q.pages as u64;
                for l in q.lpn..q.lpn + q.pages as u64 {
                    let (w, b) = ((l / 64) as usize, l % 64);
                    if w < seen.len() && seen[w] & (1 << b) == 0 {
                        seen[w] |= 1 << b;
                        unique += 1;
                    }
                }
            }
        }
    }
    let written = ops[0].1.max(1) as f64;
    let mut top: Vec<(u64, u64)> = pcs.iter().map(|(&k, &v)| (k, v)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let top: Vec<_> = top
        .iter()
        .take(10)
        .map(|&(pc, p)| json!({"pc": pc.to_string(), "pages": p, "share": p as f64 / written}))
        .collect();
    let names = ["data", "journal", "inode", "directory", "bitmap", "other"];
    let meta_share: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .zip(meta_pages)
        .map(|(n, p)| (n.to_string(), json!(p as f64 / written)))
        .collect();
    let first = first.unwrap_or(0);
    let m = r.meta();
    Ok(json!({
        "path": path.display().to_string(),
        "rows": r.num_rows(),
        "row_groups": r.num_row_groups(),
        "capacity_pages": capacity,
        "capacity_bytes": capacity * m.page_bytes as u64,
        "page_bytes": m.page_bytes,
        "writes": {"requests": ops[0].0, "pages": ops[0].1},
        "trims": {"requests": ops[1].0, "pages": ops[1].1},
        "reads": {"requests": ops[2].0, "pages": ops[2].1},
        "flushes": ops[3].0,
        "unique_lpns_written": unique,
        "footprint_bytes": unique * m.page_bytes as u64,
        "pcs": {"count": pcs.len(), "top": top},
        "files": files.len(),
        "file_table": m.files.len(),
        "pids": pids.len(),
        "meta_share": meta_share,
        "ts": {"first_ns": first, "last_ns": last, "duration_s": (last - first) as f64 / 1e9},
        "source": m.source,
    }))
}
