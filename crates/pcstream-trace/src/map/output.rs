//! What the model emits and counts: [`Out`] turns writes, trims and flushes into block requests
//! (split at the largest request size, stamped with the model's clock) and keeps the
//! [`MapSummary`] counters; [`FsError`] is a model error.

use pcstream_core::request::{meta, Op, Request};
use serde::Serialize;

use super::pagecache::DirtyPage;

/// Metadata pages written home, by class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MetaPages {
    pub inode: u64,
    pub directory: u64,
    pub bitmap: u64,
    pub other: u64,
}

/// What a mapping produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MapSummary {
    /// File-level events applied.
    pub events: u64,
    /// Block-level requests emitted (writes, trims, flushes).
    pub requests: u64,
    /// Data pages written.
    pub data_pages: u64,
    /// Journal pages written (descriptors, metadata copies, commit blocks, journal superblock).
    pub journal_pages: u64,
    /// Metadata pages written to their home locations, by class.
    pub metadata_pages: MetaPages,
    /// Pages discarded (TRIM), all of them.
    pub trim_pages: u64,
    /// Of `trim_pages`, pages that held no data when discarded: discarded before and not
    /// written since, or never written since mkfs (with `discard_free_tail` every delete
    /// discards the free space after the freed extent again; `fstrim` trims free space).
    pub trim_free_pages: u64,
    /// Cache-flush requests.
    pub flushes: u64,
    /// Pages that became dirty (each page once per dirty period: from clean to dirty).
    pub dirtied_pages: u64,
    /// Dirty pages that never reached the disk: dropped by a truncate, punch or delete while
    /// dirty. Once everything is written back, `dirtied_pages` = written-back data pages +
    /// `absorbed_pages`.
    pub absorbed_pages: u64,
    /// Page writes that landed on a page already dirty (the page's earlier version never
    /// reached the disk). Counts writes, not pages: 1000 small writes into one page before its
    /// writeback count 999.
    pub absorbed_writes: u64,
    /// Data pages written by `O_DIRECT` writes (part of `data_pages`): at the call, never dirty.
    pub direct_pages: u64,
    /// Files seen (each inode incarnation once).
    pub files: u64,
    pub commits: u64,
    pub checkpoints: u64,
    pub peak_dirty_pages: u64,
    pub capacity_pages: u64,
    /// Free blocks at the end.
    pub free_pages: u64,
    /// Events with an op this version does not model.
    pub unknown_ops: u64,
    pub warnings: Vec<String>,
    /// The aging the trace starts from (`--age`), if any.
    pub aged: Option<super::aging::AgedState>,
}

/// A model error: the event (0-based index among applied events) and a one-line reason with
/// what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsError {
    pub event: u64,
    pub what: String,
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "event {}: {}", self.event, self.what)
    }
}

impl std::error::Error for FsError {}

/// What the data requests of one file carry besides the writer of each page: the file id, its
/// name class and the write-life hint its inode holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DataTag {
    pub file: u32,
    pub class: u16,
    pub hint: u8,
}

/// Where requests go, with the current time and the counters.
pub(crate) struct Out {
    pub now: u64,
    pub barrier: bool,
    pub(super) max_req: u64,
    pub(super) s: MapSummary,
    /// A bit per block: it holds no data for the device (discarded since it was last freed, or
    /// never written since mkfs). Counts `trim_free_pages`.
    pub(super) discarded: Bits,
}

/// A fixed-size bitmap with range operations.
pub(crate) struct Bits {
    words: Vec<u64>,
    len: u64,
}

impl Bits {
    /// `n` bits, all set.
    pub(super) fn ones(n: u64) -> Bits {
        let mut v = vec![u64::MAX; n.div_ceil(64) as usize];
        if !n.is_multiple_of(64) {
            if let Some(last) = v.last_mut() {
                *last = (1u64 << (n % 64)) - 1;
            }
        }
        Bits { words: v, len: n }
    }

    /// Set (`on`) or clear the bits `[start, start + len)` (clipped to the map); returns how
    /// many of them were set before.
    pub(super) fn set_range(&mut self, start: u64, len: u64, on: bool) -> u64 {
        let end = start.saturating_add(len).min(self.len);
        let mut was = 0;
        let mut b = start;
        while b < end {
            let w = (b / 64) as usize;
            let lo = b % 64;
            let hi = (end - w as u64 * 64).min(64);
            let mask = if hi - lo == 64 {
                u64::MAX
            } else {
                ((1u64 << (hi - lo)) - 1) << lo
            };
            was += (self.words[w] & mask).count_ones() as u64;
            if on {
                self.words[w] |= mask;
            } else {
                self.words[w] &= !mask;
            }
            b = w as u64 * 64 + hi;
        }
        was
    }
}

impl Out {
    pub(super) fn push(&mut self, sink: &mut dyn FnMut(Request), r: Request) {
        self.s.requests += 1;
        sink(r);
    }

    /// Write `pages` blocks from `lpn`, split at the largest request size.
    pub(super) fn write(&mut self, sink: &mut dyn FnMut(Request), mut r: Request, pages: u64) {
        let mut left = pages;
        while left > 0 {
            let n = left.min(self.max_req);
            r.pages = n as u32;
            r.ts_ns = self.now;
            self.push(sink, r);
            r.lpn += n;
            left -= n;
        }
    }

    pub fn data(
        &mut self,
        sink: &mut dyn FnMut(Request),
        lpn: u64,
        pages: u64,
        page: DirtyPage,
        tag: DataTag,
    ) {
        self.s.data_pages += pages;
        let r = Request {
            op: Op::Write as u8,
            lpn,
            pc: page.pc,
            pid: page.pid,
            file: tag.file,
            file_class: tag.class,
            meta: meta::DATA,
            hint: tag.hint,
            ..Default::default()
        };
        self.write(sink, r, pages);
    }

    pub fn meta_write(&mut self, sink: &mut dyn FnMut(Request), lpn: u64, pages: u64, class: u8) {
        match class {
            meta::JOURNAL => self.s.journal_pages += pages,
            meta::INODE => self.s.metadata_pages.inode += pages,
            meta::DIRECTORY => self.s.metadata_pages.directory += pages,
            meta::BITMAP => self.s.metadata_pages.bitmap += pages,
            _ => self.s.metadata_pages.other += pages,
        }
        let r = Request {
            op: Op::Write as u8,
            lpn,
            meta: class,
            ..Default::default()
        };
        self.write(sink, r, pages);
    }

    pub(super) fn trim(
        &mut self,
        sink: &mut dyn FnMut(Request),
        lpn: u64,
        pages: u64,
        file: u32,
        class: u16,
    ) {
        self.s.trim_pages += pages;
        self.s.trim_free_pages += self.discarded.set_range(lpn, pages, true);
        let r = Request {
            op: Op::Trim as u8,
            lpn,
            file,
            file_class: class,
            ..Default::default()
        };
        // Discards are not limited by the write request size; split only to fit u32.
        let mut left = pages;
        let mut r = r;
        while left > 0 {
            let n = left.min(u32::MAX as u64);
            r.pages = n as u32;
            r.ts_ns = self.now;
            self.push(sink, r);
            r.lpn += n;
            left -= n;
        }
    }

    /// Blocks `[start, start + len)` that held data were freed: a discard of them is not one of
    /// free space.
    pub(super) fn freed(&mut self, start: u64, len: u64) {
        self.discarded.set_range(start, len, false);
    }

    pub fn flush(&mut self, sink: &mut dyn FnMut(Request)) {
        self.s.flushes += 1;
        let r = Request {
            ts_ns: self.now,
            op: Op::Flush as u8,
            ..Default::default()
        };
        self.push(sink, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_ranges_count_what_was_set() {
        let mut b = Bits::ones(200);
        assert_eq!(b.set_range(10, 150, false), 150);
        assert_eq!(b.set_range(0, 64, true), 10);
        assert_eq!(b.set_range(60, 10, true), 4);
        // Clipped at the end of the map; bits past 200 do not exist.
        assert_eq!(b.set_range(150, 1000, true), 40);
        assert_eq!(b.set_range(0, u64::MAX, true), 120);
        assert_eq!(b.set_range(64, 64, false), 64);
        assert_eq!(b.set_range(0, 200, true), 136);
    }
}
