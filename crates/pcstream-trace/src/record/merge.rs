//! The records of a log directory in time order, without holding them in memory.
//!
//! The shim appends each thread's records to its process's `.bin` file by whole per-thread
//! buffers (at most 256 records per append, `shim/src/logs.c`), so within one file one thread's
//! records are in time order while threads interleave. [`index_bin`] reads a file once, checks
//! every record and notes, per thread, the runs of consecutive records it owns (a *stream*; a
//! thread whose time or pid ever went back would start a second stream, so every stream is
//! sorted). [`Merge`] then merges all streams of all files with a heap, reading each stream with
//! buffered `pread`s, into the order (ts_ns, pid, tid, file, position in the file) — the order a
//! sort of all records by (ts_ns, pid, tid, log order) gives.
//!
//! Memory: per stream its runs (one per buffer append when threads interleave: 16 bytes per 256
//! records at worst, nothing more for a single thread) and, while it is being read, a buffer of
//! at most [`REFILL_MAX`] records (the buffers of all live streams share [`MERGE_BUDGET`]
//! records); time: one read of every file to index it, one to merge, O(N log S) for N records
//! in S streams.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::shimbin::{
    check_header, decode_record, open_log, Opened, ShimLogError, ShimRecord, HEADER_BYTES,
    RECORD_BYTES,
};
use crate::error::{one_line, TraceError};
use crate::filetrace::FileOp;

/// Records read at a time by the indexing pass.
const SCAN_RECORDS: usize = 4096;
/// Records the buffers of all live streams hold together (each gets its share, within
/// [`REFILL_MIN`]..=[`REFILL_MAX`]).
pub const MERGE_BUDGET: usize = 64 * 1024;
/// Most records one stream reads at a time.
pub const REFILL_MAX: usize = 4096;
/// Fewest records one stream reads at a time.
const REFILL_MIN: usize = 16;
/// `.bin` files kept open by a merge.
const OPEN_FILES: usize = 32;

/// One thread's records in one `.bin` file, in time order: where they are.
#[derive(Debug)]
pub struct Stream {
    pub tid: u32,
    /// (ts_ns, pid) of its first record, and of its last (while indexing).
    first: (u64, u32),
    last: (u64, u32),
    /// (first record, records) of each run of consecutive records, in file order.
    runs: Vec<(u64, u32)>,
    pub records: u64,
}

impl Stream {
    /// Runs of consecutive records (the index's size).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }
}

/// One `.bin` file, indexed by [`index_bin`].
#[derive(Debug)]
pub struct BinLog {
    pub path: PathBuf,
    /// The pid of its header.
    pub pid: u32,
    /// Whole records.
    pub records: u64,
    /// Bytes after the last whole record (a torn tail).
    pub torn_bytes: u64,
    /// Its threads' streams, in order of their first record in the file.
    pub streams: Vec<Stream>,
}

/// Read the `.bin` file `path` once: check its header and every record's op, and index each
/// thread's runs. Errors name the file and the byte offset, as a whole-file parse would; a path
/// that is not a regular file is an error too (it is never opened blocking: [`open_log`]).
pub fn index_bin(path: &Path) -> Result<BinLog, ShimLogError> {
    match open_log(path).map_err(|e| io_error(path, e))? {
        Opened::File(f) => index_bin_file(path, f),
        Opened::NotRegular(kind) => Err(io_error(path, format!("{kind}, not a log"))),
    }
}

fn io_error(path: &Path, why: impl std::fmt::Display) -> ShimLogError {
    ShimLogError::Io {
        path: path.display().to_string(),
        why: one_line(why),
    }
}

/// [`index_bin`] on the file `f` opened from `path`.
pub fn index_bin_file(path: &Path, mut f: File) -> Result<BinLog, ShimLogError> {
    let len = f.metadata().map_err(|e| io_error(path, e))?.len();
    index_bin_from(path, &mut f, len)
}

/// [`index_bin`] on `len` bytes read from `f` (a file, or a byte slice for the fuzz targets);
/// `path` names them.
pub fn index_bin_from(path: &Path, f: &mut impl Read, len: u64) -> Result<BinLog, ShimLogError> {
    let label = path.display().to_string();
    let io = |e: std::io::Error| ShimLogError::Io {
        path: label.clone(),
        why: one_line(e),
    };
    let mut head = vec![0u8; (len as usize).min(HEADER_BYTES)];
    f.read_exact(&mut head).map_err(io)?;
    let pid = check_header(&label, &head)?;
    let body = len - HEADER_BYTES as u64;
    let whole = body / RECORD_BYTES as u64;
    let mut log = BinLog {
        path: path.to_path_buf(),
        pid,
        records: whole,
        torn_bytes: body % RECORD_BYTES as u64,
        streams: Vec::new(),
    };
    let mut current: FxHashMap<u32, usize> = FxHashMap::default();
    let mut buf = vec![0u8; SCAN_RECORDS * RECORD_BYTES];
    let mut i = 0u64;
    while i < whole {
        let n = (whole - i).min(SCAN_RECORDS as u64) as usize;
        let chunk = &mut buf[..n * RECORD_BYTES];
        f.read_exact(chunk).map_err(io)?;
        for r in chunk.chunks_exact(RECORD_BYTES) {
            let op = u16::from_le_bytes([r[80], r[81]]);
            if FileOp::from_code(op).is_none() {
                return Err(ShimLogError::Bad {
                    path: label,
                    offset: HEADER_BYTES + i as usize * RECORD_BYTES + 80,
                    what: format!("record {i}: unknown op {op}"),
                });
            }
            let ts = u64::from_le_bytes(r[0..8].try_into().expect("8 bytes"));
            let pid = u32::from_le_bytes(r[64..68].try_into().expect("4 bytes"));
            let tid = u32::from_le_bytes(r[68..72].try_into().expect("4 bytes"));
            let key = (ts, pid);
            let s = match current.get(&tid) {
                Some(&s) if log.streams[s].last <= key => s,
                _ => {
                    log.streams.push(Stream {
                        tid,
                        first: key,
                        last: key,
                        runs: Vec::new(),
                        records: 0,
                    });
                    current.insert(tid, log.streams.len() - 1);
                    log.streams.len() - 1
                }
            };
            let st = &mut log.streams[s];
            st.last = key;
            st.records += 1;
            match st.runs.last_mut() {
                Some((start, n)) if *start + *n as u64 == i && *n < u32::MAX => *n += 1,
                _ => st.runs.push((i, 1)),
            }
            i += 1;
        }
    }
    Ok(log)
}

/// Merge key: (ts_ns, pid, tid, file, record index in the file).
type Key = (u64, u32, u32, u32, u64);

/// Where one stream's reading is.
struct Cursor {
    bin: u32,
    stream: u32,
    /// Next run and record within it to read.
    run: usize,
    at: u32,
    /// Records read and not yet merged, with their index in the file.
    buf: Vec<(u64, ShimRecord)>,
    pos: usize,
}

/// All records of the indexed `.bin` files (`ShimLogs::bins` of a log directory) in time
/// order; see the module documentation.
pub struct Merge<'a> {
    bins: &'a [BinLog],
    heap: BinaryHeap<Reverse<(Key, u32)>>,
    cursors: Vec<Cursor>,
    files: Vec<(u32, File)>,
    raw: Vec<u8>,
}

impl<'a> Merge<'a> {
    pub fn new(bins: &'a [BinLog]) -> Merge<'a> {
        let mut cursors = Vec::new();
        let mut heap = BinaryHeap::new();
        for (b, bin) in bins.iter().enumerate() {
            for (s, st) in bin.streams.iter().enumerate() {
                let Some(&(first, _)) = st.runs.first() else {
                    continue;
                };
                let key = (st.first.0, st.first.1, st.tid, b as u32, first);
                heap.push(Reverse((key, cursors.len() as u32)));
                cursors.push(Cursor {
                    bin: b as u32,
                    stream: s as u32,
                    run: 0,
                    at: 0,
                    buf: Vec::new(),
                    pos: 0,
                });
            }
        }
        Merge {
            bins,
            heap,
            cursors,
            files: Vec::new(),
            raw: Vec::new(),
        }
    }

    /// The next record in time order, `None` at the end. An error means a file changed or
    /// vanished since it was indexed.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<ShimRecord>, TraceError> {
        let live = self.heap.len();
        let chunk = (MERGE_BUDGET / live.max(1)).clamp(REFILL_MIN, REFILL_MAX);
        let Merge {
            bins,
            heap,
            cursors,
            files,
            raw,
        } = self;
        let Some(mut top) = heap.peek_mut() else {
            return Ok(None);
        };
        let c = &mut cursors[(top.0).1 as usize];
        if c.pos == c.buf.len() {
            c.fill(bins, files, raw, chunk)?;
        }
        let rec = c.buf[c.pos].1;
        c.pos += 1;
        if c.pos == c.buf.len() {
            c.fill(bins, files, raw, chunk)?;
        }
        match c.buf.get(c.pos) {
            Some(&(idx, r)) => (top.0).0 = (r.ts_ns, r.pid, r.tid, c.bin, idx),
            None => {
                c.buf = Vec::new();
                PeekMut::pop(top);
            }
        }
        Ok(Some(rec))
    }
}

impl Cursor {
    /// Read up to `n` more records of the stream into `buf` (left empty at its end).
    fn fill(
        &mut self,
        bins: &[BinLog],
        files: &mut Vec<(u32, File)>,
        raw: &mut Vec<u8>,
        n: usize,
    ) -> Result<(), TraceError> {
        self.buf.clear();
        self.pos = 0;
        if self.buf.capacity() > 2 * n {
            self.buf.shrink_to(n);
        }
        let bin = &bins[self.bin as usize];
        let stream = &bin.streams[self.stream as usize];
        if self.run >= stream.runs.len() {
            return Ok(());
        }
        let changed = |why: String| TraceError::Io {
            path: bin.path.display().to_string(),
            why: format!(
                "cannot read the shim log again ({why}); it changed while it was converted"
            ),
        };
        let f = open(files, self.bin, &bin.path).map_err(|e| changed(one_line(e)))?;
        let mut want = n;
        while want > 0 && self.run < stream.runs.len() {
            let (start, len) = stream.runs[self.run];
            let take = ((len - self.at) as usize).min(want);
            let first = start + self.at as u64;
            if raw.len() < take * RECORD_BYTES {
                raw.resize(take * RECORD_BYTES, 0);
            }
            let raw = &mut raw[..take * RECORD_BYTES];
            f.read_exact_at(raw, HEADER_BYTES as u64 + first * RECORD_BYTES as u64)
                .map_err(|e| changed(one_line(e)))?;
            for (k, r) in raw.chunks_exact(RECORD_BYTES).enumerate() {
                let rec = decode_record(r);
                if rec.tid != stream.tid {
                    return Err(changed(format!(
                        "record {} belongs to thread {}, expected {}",
                        first + k as u64,
                        rec.tid,
                        stream.tid
                    )));
                }
                self.buf.push((first + k as u64, rec));
            }
            self.at += take as u32;
            want -= take;
            if self.at == len {
                self.run += 1;
                self.at = 0;
            }
        }
        Ok(())
    }
}

/// The open file of `.bin` number `bin` (at most [`OPEN_FILES`] stay open).
fn open<'f>(files: &'f mut Vec<(u32, File)>, bin: u32, path: &Path) -> std::io::Result<&'f File> {
    let i = match files.iter().position(|(b, _)| *b == bin) {
        Some(i) => i,
        None => {
            if files.len() == OPEN_FILES {
                files.remove(0);
            }
            let f = match open_log(path)? {
                Opened::File(f) => f,
                Opened::NotRegular(kind) => {
                    let why = format!("{kind} now, no longer the log it indexed");
                    return Err(std::io::Error::other(why));
                }
            };
            files.push((bin, f));
            files.len() - 1
        }
    };
    Ok(&files[i].1)
}
