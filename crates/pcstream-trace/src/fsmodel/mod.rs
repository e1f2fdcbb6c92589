//! An ext4-like file-system model: turns a file-level trace (what programs asked of the file
//! system) into the block-level trace an ext4 file system on the device would have issued.
//! Pure and deterministic: the same events give the same requests. Memory is bounded by the live
//! files, open descriptors, dirty pages and the path table, not by the number of events.
//!
//! What it owns: the mapping of files to blocks ([`alloc`], [`extent`]), the page cache's dirty
//! data and its writeback ([`pagecache`]), the jbd2 journal ([`journal`]), the on-disk layout
//! ([`layout`]), file-name classes ([`classes`]) and its parameters ([`options`]). What it leaves
//! to others: reading and writing Parquet (`filetrace_reader`, `writer`), the CLI.
//! docs/FSMODEL.md describes the model, its defaults and its simplifications.

pub mod alloc;
pub mod classes;
pub mod extent;
pub mod journal;
pub mod layout;
pub mod options;
pub mod pagecache;

use std::collections::BTreeMap;
use std::path::Path;

use pcstream_core::request::{meta, Op, Request};
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::error::TraceError;
use crate::filetrace::{FileEvent, FileOp};
use crate::filetrace_reader::FileTraceReader;
use crate::format::TraceMeta;
use crate::writer::{BlockTraceWriter, DEFAULT_ROW_GROUP_ROWS};
use alloc::{normalize, FreeSpace, InodeMap};
use extent::{tree_blocks, ExtentMap, EXTENTS_PER_BLOCK};
use journal::Journal;
use layout::{Layout, FLEX_GROUPS, ROOT_INO};
pub use options::MapOptions;
use pagecache::{DirtyPage, DirtyPages, DirtyQueue, Queued};

/// Bytes per block.
const BLOCK: u64 = 4096;
/// Open flags (Linux generic values).
const O_CREAT: u32 = 0o100;
const O_TRUNC: u32 = 0o1000;
const O_CLOEXEC: u32 = 0o2_000_000;
/// `sync_file_range` flag that starts writeback.
const SYNC_FILE_RANGE_WRITE: u32 = 2;
/// fallocate modes.
const FALLOC_KEEP_SIZE: u32 = 0x01;
const FALLOC_COLLAPSE_RANGE: u32 = 0x08;
const FALLOC_ZERO_RANGE: u32 = 0x10;
const FALLOC_INSERT_RANGE: u32 = 0x20;
/// Largest file offset ext4 allows with 4 KiB blocks (16 TiB).
const MAX_FILE_BYTES: u64 = 1 << 44;
/// Largest single write Linux performs (`MAX_RW_COUNT`).
const MAX_WRITE_BYTES: u64 = 0x7fff_f000;

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
    /// Pages discarded (TRIM).
    pub trim_pages: u64,
    /// Cache-flush requests.
    pub flushes: u64,
    /// Dirty page versions that never reached the disk (overwritten, truncated or deleted while
    /// dirty).
    pub absorbed_pages: u64,
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

/// Where requests go, with the current time and the counters.
pub(crate) struct Out {
    pub now: u64,
    pub barrier: bool,
    max_req: u64,
    s: MapSummary,
}

impl Out {
    fn push(&mut self, sink: &mut dyn FnMut(Request), r: Request) {
        self.s.requests += 1;
        sink(r);
    }

    /// Write `pages` blocks from `lpn`, split at the largest request size.
    fn write(&mut self, sink: &mut dyn FnMut(Request), mut r: Request, pages: u64) {
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
        file: u32,
        class: u16,
    ) {
        self.s.data_pages += pages;
        let r = Request {
            op: Op::Write as u8,
            lpn,
            pc: page.pc,
            pid: page.pid,
            file,
            file_class: class,
            meta: meta::DATA,
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

    fn trim(&mut self, sink: &mut dyn FnMut(Request), lpn: u64, pages: u64, file: u32, class: u16) {
        self.s.trim_pages += pages;
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

/// An inode preallocation: physical blocks reserved for logical blocks `lstart..lstart+len`.
#[derive(Clone, Copy, Debug)]
struct Prealloc {
    lstart: u64,
    pstart: u64,
    len: u64,
}

/// A directory entry: directory, block index in it, record length.
#[derive(Clone, Copy, Debug)]
struct Entry {
    dir: u32,
    block: u32,
    rec: u16,
}

/// One inode incarnation.
struct File {
    // Fixed at creation.
    out_id: u32,
    ino: u32,
    key: Option<(u64, u64)>,
    // Name.
    path: u32,
    class: u16,
    entry: Option<Entry>,
    linked: bool,
    orphan: bool,
    // Data.
    size: u64,
    ext: ExtentMap,
    tree: Vec<u64>,
    pa: Option<Prealloc>,
    dirty: DirtyPages,
    dirtied_ns: Option<u64>,
    // Open state.
    open_fds: u32,
    da_alloc_close: bool,
    last_pid: u32,
    // Journal bookkeeping: transaction of the last change needing fsync / fdatasync, and the
    // transaction the inode block was last added to.
    meta_tid: u64,
    datasync_tid: u64,
    inode_tid: u64,
}

struct Dir {
    ino: u32,
    blocks: Vec<u64>,
    free: Vec<u16>,
}

#[derive(Clone, Copy)]
struct PathInfo {
    dir: u32,
    name_len: u16,
    class: u16,
    hash: u32,
}

#[derive(Clone, Copy)]
struct Fd {
    slot: u32,
    cloexec: bool,
}

/// A freed extent waiting for its transaction to commit (then released and discarded).
#[derive(Clone, Copy)]
struct PendingFree {
    start: u64,
    len: u64,
    file: u32,
    class: u16,
}

fn fnv(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The in-memory model; see the module documentation. Feed events in time order with
/// [`FsModel::apply`], then call [`FsModel::finish`].
pub struct FsModel {
    opts: MapOptions,
    layout: Layout,
    free: FreeSpace,
    inodes: InodeMap,
    journal: Journal,
    out: Out,
    // Files and names.
    files: Vec<Option<File>>,
    gens: Vec<u32>,
    free_slots: Vec<u32>,
    by_key: FxHashMap<(u64, u64), u32>,
    by_path: FxHashMap<u32, u32>,
    paths: FxHashMap<u32, PathInfo>,
    path_names: FxHashMap<u32, String>,
    dirs: Vec<Dir>,
    dir_index: FxHashMap<String, u32>,
    /// Output file id − 1 → path id.
    out_paths: Vec<u32>,
    procs: FxHashMap<u32, FxHashMap<i32, Fd>>,
    // Page cache.
    queue: DirtyQueue,
    dirty_pages: u64,
    dirty_limit_pages: u64,
    // Allocation.
    pending_free: Vec<PendingFree>,
    lg: Vec<Option<(u64, u64)>>,
    cursor_group: u32,
    /// Metadata changes are not journalled while set (materialising pre-existing files).
    quiet: bool,
    // Time.
    t0: Option<u64>,
    next_wb_ns: u64,
    // Counters.
    events: u64,
    unknown_ops: u64,
    unsupported_falloc: u64,
    anonymous_writes: u64,
    scratch: Vec<(u64, DirtyPage)>,
}

type Sink<'a> = &'a mut dyn FnMut(Request);

impl FsModel {
    /// A freshly made file system of `opts.capacity_pages` blocks.
    pub fn new(opts: MapOptions) -> Result<FsModel, FsError> {
        let err = |what: String| FsError { event: 0, what };
        let layout = Layout::new(opts.capacity_pages, opts.journal_pages).map_err(err)?;
        let mut free = FreeSpace::new(&layout);
        // The journal: contiguous from the start of the middle flex group's data area.
        let mid = ((layout.groups - 1) / 2) & !(FLEX_GROUPS - 1);
        let mut area = Vec::new();
        let mut left = layout.journal_blocks;
        let mut goal = layout.group_start(mid);
        while left > 0 {
            let (s, n) = free
                .find(goal, left, None)
                .ok_or_else(|| err("no room for the journal; raise --capacity".into()))?;
            free.take(s, n);
            area.push((s, n));
            left -= n;
            goal = s + n;
        }
        let journal = Journal::new(area, opts.checkpoint_fraction);
        let inodes = InodeMap::new(layout.groups);
        let root_block = free
            .find(0, 1, None)
            .ok_or_else(|| err("no room for the root directory; raise --capacity".into()))?;
        free.take(root_block.0, 1);
        let dirty_limit_pages = (opts.dirty_bytes_limit / BLOCK).max(16);
        let out = Out {
            now: 0,
            barrier: opts.barrier,
            max_req: opts.max_request_pages.max(1) as u64,
            s: MapSummary {
                capacity_pages: opts.capacity_pages,
                ..Default::default()
            },
        };
        let mut dir_index = FxHashMap::default();
        dir_index.insert(String::new(), 0);
        Ok(FsModel {
            lg: vec![None; opts.cpus.max(1) as usize],
            layout,
            free,
            inodes,
            journal,
            out,
            files: Vec::new(),
            gens: Vec::new(),
            free_slots: Vec::new(),
            by_key: FxHashMap::default(),
            by_path: FxHashMap::default(),
            paths: FxHashMap::default(),
            path_names: FxHashMap::default(),
            dirs: vec![Dir {
                ino: ROOT_INO,
                blocks: vec![root_block.0],
                free: vec![4096 - 24],
            }],
            dir_index,
            out_paths: Vec::new(),
            procs: FxHashMap::default(),
            queue: DirtyQueue::default(),
            dirty_pages: 0,
            dirty_limit_pages,
            pending_free: Vec::new(),
            cursor_group: 0,
            quiet: false,
            t0: None,
            next_wb_ns: opts.writeback_interval_ns.max(1),
            events: 0,
            unknown_ops: 0,
            unsupported_falloc: 0,
            anonymous_writes: 0,
            scratch: Vec::new(),
            opts,
        })
    }

    /// The layout in use (journal size, groups, ...).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Physical extents of the live file named `path` (path id) as (lpn, pages), in logical
    /// order; empty when unknown. For tests and diagnostics.
    pub fn extents_of(&self, path: u32) -> Vec<(u64, u64)> {
        self.by_path
            .get(&path)
            .and_then(|&s| self.files[s as usize].as_ref())
            .map(|f| f.ext.iter().map(|e| (e.phys, e.len)).collect())
            .unwrap_or_default()
    }

    /// Dirty pages in the page cache now.
    pub fn dirty_pages(&self) -> u64 {
        self.dirty_pages
    }

    /// Tell the model the name of path id `id` (the `pcstream.paths` table). Paths must be
    /// registered before events that use them; unknown ids behave as files in the root.
    pub fn register_path(&mut self, id: u32, path: &str) {
        if id == 0 {
            return;
        }
        let trimmed = path.trim_end_matches('/');
        let (dir, name) = match trimmed.rfind('/') {
            Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
            None => ("", trimmed),
        };
        let dir = self.ensure_dir(dir);
        self.paths.insert(
            id,
            PathInfo {
                dir,
                name_len: name.len().clamp(1, 255) as u16,
                class: classes::classify(trimmed),
                hash: fnv(name),
            },
        );
        self.path_names.insert(id, path.to_string());
    }

    /// The directory at `path` (no trailing '/'), made on first use as a pre-existing directory
    /// (no I/O): an inode near its parent's (top-level directories spread over the groups by
    /// name, as Orlov spreads them) and one block.
    fn ensure_dir(&mut self, path: &str) -> u32 {
        if let Some(&d) = self.dir_index.get(path) {
            return d;
        }
        let (parent, name) = match path.rfind('/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => ("", path),
        };
        let p = self.ensure_dir(parent);
        let groups = self.layout.groups;
        let pref = if p == 0 {
            fnv(name) % groups
        } else {
            self.layout.inode_group(self.dirs[p as usize].ino)
        };
        let ino = self.inodes.alloc(pref).unwrap_or(ROOT_INO);
        let g = self.layout.inode_group(ino) & !(FLEX_GROUPS - 1);
        let block = match self.free.find(self.layout.group_start(g), 1, None) {
            Some((b, _)) => {
                self.free.take(b, 1);
                b
            }
            None => self.dirs[0].blocks[0],
        };
        let d = self.dirs.len() as u32;
        self.dirs.push(Dir {
            ino,
            blocks: vec![block],
            free: vec![4096 - 24],
        });
        self.dir_index.insert(path.to_string(), d);
        d
    }

    // ---------------------------------------------------------------- journal helpers

    #[inline]
    fn jadd(&mut self, lpn: u64, class: u8) {
        if !self.quiet {
            self.journal.add(lpn, class, self.out.now);
        }
    }

    fn jadd_group(&mut self, start: u64, len: u64) {
        let g0 = self.layout.group_of(start);
        let g1 = self.layout.group_of(start + len - 1);
        for g in g0..=g1 {
            self.jadd(self.layout.block_bitmap(g).0, meta::BITMAP);
            self.jadd(self.layout.descriptor_block(g).0, meta::BITMAP);
        }
    }

    /// The inode of `f` changed in the running transaction (`data`: a change fdatasync must
    /// commit: size or allocation).
    fn touch_inode(&mut self, slot: u32, data: bool) {
        let tid = self.journal.tid;
        let f = self.files[slot as usize].as_mut().expect("live file");
        f.meta_tid = tid;
        if data {
            f.datasync_tid = tid;
        }
        if f.inode_tid != tid || self.journal.running_len() == 0 {
            f.inode_tid = tid;
            let b = self.layout.inode_block(f.ino).0;
            self.jadd(b, meta::INODE);
        }
    }

    /// Commit the running transaction, then release (and discard) the extents it freed.
    ///
    /// With `discard_free_tail` a discard covers the freed extent and the free blocks that
    /// follow it up to the next used block or the end of the group, as measured on Linux 6.18
    /// (`-o discard`: deleting the last file of a group discards the group's whole free tail).
    /// Free blocks were discarded when they were freed, so the extension invalidates nothing
    /// more on the device; it keeps the discarded byte count comparable.
    fn commit(&mut self, sink: Sink) {
        self.journal.commit(&mut self.out, sink);
        if self.pending_free.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending_free);
        for p in &pending {
            self.free.release(p.start, p.len);
        }
        for p in &pending {
            if self.opts.discard {
                let len = if self.opts.discard_free_tail {
                    let group_end = self.layout.group_end(self.layout.group_of(p.start));
                    self.free
                        .free_run_at(p.start)
                        .min(group_end - p.start)
                        .max(p.len)
                } else {
                    p.len
                };
                self.out.trim(sink, p.start, len, p.file, p.class);
            }
        }
        self.pending_free = pending;
        self.pending_free.clear();
    }

    // ---------------------------------------------------------------- allocation

    /// Free now (preallocated blocks never written: no journal wait, no discard).
    fn release_now(&mut self, start: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.free.release(start, len);
        self.jadd_group(start, len);
    }

    /// Free when the running transaction commits (blocks that held data or metadata).
    fn free_later(&mut self, start: u64, len: u64, file: u32, class: u16) {
        if len == 0 {
            return;
        }
        self.jadd_group(start, len);
        if let Some(last) = self.pending_free.last_mut() {
            if last.start + last.len == start && last.file == file {
                last.len += len;
                return;
            }
        }
        self.pending_free.push(PendingFree {
            start,
            len,
            file,
            class,
        });
    }

    /// Take up to `want` blocks near `goal` (see [`FreeSpace::find`]); on a full file system,
    /// commit (releasing blocks freed by the running transaction) and drop preallocations, then
    /// try again.
    fn take(
        &mut self,
        goal: u64,
        want: u64,
        from_group: Option<u32>,
        sink: Sink,
    ) -> Result<(u64, u64), FsError> {
        for attempt in 0..2 {
            if let Some((s, n)) = self.free.find(goal, want, from_group) {
                self.free.take(s, n);
                self.jadd_group(s, n);
                return Ok((s, n));
            }
            if attempt == 0 {
                self.commit(sink);
                self.drop_all_preallocations();
            }
        }
        Err(FsError {
            event: self.events.saturating_sub(1),
            what: format!(
                "the modelled file system is full ({} blocks of 4 KiB, {} MiB); raise --capacity",
                self.opts.capacity_pages,
                self.opts.capacity_pages / 256
            ),
        })
    }

    fn drop_all_preallocations(&mut self) {
        for i in 0..self.lg.len() {
            if let Some((s, n)) = self.lg[i].take() {
                self.release_now(s, n);
            }
        }
        for i in 0..self.files.len() {
            if let Some(pa) = self.files[i].as_mut().and_then(|f| f.pa.take()) {
                self.release_now(pa.pstart, pa.len);
            }
        }
    }

    fn discard_pa(&mut self, f: &mut File) {
        if let Some(pa) = f.pa.take() {
            self.release_now(pa.pstart, pa.len);
        }
    }

    /// Allocation goal for logical block `l` of `f`: continue the previous extent, else the
    /// start of the group after the inode's flex group base (ext4 keeps data off the group that
    /// carries the flex group's metadata).
    fn goal(&self, f: &File, l: u64) -> u64 {
        if let Some(g) = f.ext.goal_for(l) {
            return g;
        }
        let mut g = self.layout.inode_group(f.ino) & !(FLEX_GROUPS - 1);
        if g + 1 < self.layout.groups {
            g += 1;
        }
        self.layout.group_start(g)
    }

    /// Record a new mapping in `f` and the extent-tree blocks it may need.
    fn map(
        &mut self,
        f: &mut File,
        l: u64,
        phys: u64,
        n: u64,
        unwritten: bool,
        sink: Sink,
    ) -> Result<(), FsError> {
        let idx = f.ext.insert(l, phys, n, unwritten);
        self.update_tree(f, idx, sink)
    }

    /// Keep `f.tree` as large as its extents need; dirty the leaf holding extent `idx`.
    fn update_tree(&mut self, f: &mut File, idx: usize, sink: Sink) -> Result<(), FsError> {
        let need = tree_blocks(f.ext.len());
        while f.tree.len() < need {
            let goal = f.tree.last().map_or_else(|| self.goal(f, 0), |b| b + 1);
            let (b, _) = self.take(goal, 1, None, sink)?;
            f.tree.push(b);
        }
        while f.tree.len() > need {
            let b = f.tree.pop().expect("non-empty");
            self.free_later(b, 1, 0, 0);
        }
        if !f.tree.is_empty() {
            let leaf = (idx / EXTENTS_PER_BLOCK).min(f.tree.len() - 1);
            self.jadd(f.tree[leaf], meta::OTHER);
        }
        Ok(())
    }

    /// Allocate and map `[l, l + n)` (unmapped) of `f`, as mballoc would: from the inode's
    /// preallocation, from the locality group's window for small files, or a normalised window
    /// (the surplus kept as the inode's preallocation) for larger ones.
    fn allocate(
        &mut self,
        f: &mut File,
        l: u64,
        n: u64,
        unwritten: bool,
        sink: Sink,
    ) -> Result<(), FsError> {
        let (mut l, mut rem) = (l, n);
        while rem > 0 {
            if let Some(pa) = f.pa {
                if l >= pa.lstart && l < pa.lstart + pa.len {
                    let skip = l - pa.lstart;
                    self.release_now(pa.pstart, skip);
                    let k = rem.min(pa.len - skip);
                    let phys = pa.pstart + skip;
                    let left = pa.len - skip - k;
                    f.pa = (left > 0).then_some(Prealloc {
                        lstart: l + k,
                        pstart: phys + k,
                        len: left,
                    });
                    self.map(f, l, phys, k, unwritten, sink)?;
                    l += k;
                    rem -= k;
                    continue;
                }
                self.discard_pa(f);
            }
            let size_blocks = f.size.div_ceil(BLOCK).max(l + rem);
            let goal = self.goal(f, l);
            if size_blocks < self.opts.stream_request_pages {
                // Small file: the locality group's window.
                let lgi = (f.last_pid % self.lg.len() as u32) as usize;
                if let Some((s, k)) = self.lg[lgi] {
                    if k >= rem {
                        self.lg[lgi] = (k > rem).then_some((s + rem, k - rem));
                        self.map(f, l, s, rem, unwritten, sink)?;
                        return Ok(());
                    }
                    self.lg[lgi] = None;
                    self.release_now(s, k);
                }
                let (s, k) =
                    self.take(goal, self.opts.group_prealloc_pages.max(rem), None, sink)?;
                let used = k.min(rem);
                if k > used {
                    self.lg[lgi] = Some((s + used, k - used));
                }
                self.map(f, l, s, used, unwritten, sink)?;
                l += used;
                rem -= used;
                continue;
            }
            // Stream allocation: a normalised window, tried at the goal, then from the group of
            // the last stream allocation (mballoc's global goal).
            let (ws, wl) = normalize(l, rem, size_blocks, self.opts.max_inode_prealloc_pages);
            let wend = (ws + wl)
                .max(l + rem)
                .min(f.ext.next_mapped(l))
                .max(l + rem);
            let total = wend - l;
            let from = Some(self.cursor_group);
            let found = match self.free.find(goal, total, from) {
                Some((s, k)) if k >= total => Some((s, k)),
                _ => None,
            };
            let (s, k) = match found {
                Some((s, k)) => {
                    self.free.take(s, k);
                    self.jadd_group(s, k);
                    (s, k)
                }
                None => self.take(goal, rem, from, sink)?,
            };
            self.cursor_group = self.layout.group_of(s);
            let used = k.min(rem);
            if k > used {
                f.pa = Some(Prealloc {
                    lstart: l + used,
                    pstart: s + used,
                    len: k - used,
                });
            }
            self.map(f, l, s, used, unwritten, sink)?;
            l += used;
            rem -= used;
        }
        Ok(())
    }

    // ---------------------------------------------------------------- writeback

    /// Write back the dirty pages of `slot` in `[from, to)`: allocate what is unmapped, write
    /// runs of contiguous blocks with equal pc and pid as one request each.
    fn writeback(&mut self, slot: u32, from: u64, to: u64, sink: Sink) -> Result<(), FsError> {
        let mut f = self.files[slot as usize].take().expect("live file");
        let mut pages = std::mem::take(&mut self.scratch);
        f.dirty.take_range(from, to, &mut pages);
        let res = self.write_pages(&mut f, &pages, sink);
        self.dirty_pages -= pages.len() as u64;
        if f.dirty.is_empty() {
            f.dirtied_ns = None;
            if f.open_fds == 0 {
                self.discard_pa(&mut f);
            }
        }
        self.scratch = pages;
        let allocated = matches!(res, Ok(true));
        self.files[slot as usize] = Some(f);
        if allocated {
            self.touch_inode(slot, true);
        }
        res.map(|_| ())
    }

    /// Returns whether blocks were allocated or converted (the inode changed).
    fn write_pages(
        &mut self,
        f: &mut File,
        pages: &[(u64, DirtyPage)],
        sink: Sink,
    ) -> Result<bool, FsError> {
        let mut changed = false;
        // Pending request: (lpn, pages, who).
        let mut pend: Option<(u64, u64, DirtyPage)> = None;
        let (file, class) = (f.out_id, f.class);
        let mut i = 0;
        while i < pages.len() {
            let l = pages[i].0;
            // Extent of the stretch starting at l: mapped part, or unmapped up to the next
            // mapped block / the end of this run of consecutive dirty pages.
            let mut run = 1;
            while i + run < pages.len() && pages[i + run].0 == l + run as u64 {
                run += 1;
            }
            let (phys, k) = match f.ext.find(l) {
                Some(x) => {
                    let e = f.ext.get(x);
                    let k = (e.end() - l).min(run as u64);
                    if e.unwritten {
                        f.ext.mark_written(l, l + k);
                        let idx = f.ext.find(l).expect("still mapped");
                        self.update_tree(f, idx, sink)?;
                        changed = true;
                    }
                    (e.phys + (l - e.logical), k)
                }
                None => {
                    let k = (f.ext.next_mapped(l) - l).min(run as u64);
                    self.allocate(f, l, k, false, sink)?;
                    changed = true;
                    // The allocation may be in pieces: take the first.
                    let e = f.ext.get(f.ext.find(l).expect("just mapped"));
                    ((e.phys + (l - e.logical)), (e.end() - l).min(k))
                }
            };
            for (j, &(_, who)) in pages[i..i + k as usize].iter().enumerate() {
                let b = phys + j as u64;
                match &mut pend {
                    Some((s, n, w)) if *s + *n == b && *w == who && *n < self.out.max_req => {
                        *n += 1
                    }
                    _ => {
                        if let Some((s, n, w)) = pend.take() {
                            self.out.data(sink, s, n, w, file, class);
                        }
                        pend = Some((b, 1, who));
                    }
                }
            }
            i += k as usize;
        }
        if let Some((s, n, w)) = pend {
            self.out.data(sink, s, n, w, file, class);
        }
        Ok(changed)
    }

    fn live(&self, q: Queued) -> bool {
        self.gens.get(q.slot as usize) == Some(&q.gen)
            && self.files[q.slot as usize]
                .as_ref()
                .is_some_and(|f| f.dirtied_ns == Some(q.dirtied_ns))
    }

    /// The flusher's periodic pass at `now`: inodes dirty for the expiry time are written back,
    /// then expired metadata.
    fn writeback_tick(&mut self, now: u64, sink: Sink) -> Result<(), FsError> {
        let expire = self.opts.dirty_expire_ns;
        while let Some(q) = self.queue.front() {
            if q.dirtied_ns.saturating_add(expire) > now {
                break;
            }
            self.queue.pop();
            if self.live(q) {
                self.writeback(q.slot, 0, u64::MAX, sink)?;
            }
        }
        self.journal.expire_home(now, expire, &mut self.out, sink);
        Ok(())
    }

    /// Background writeback: oldest dirty inodes first until dirty data are under the limit.
    fn background(&mut self, sink: Sink) -> Result<(), FsError> {
        while self.dirty_pages > self.dirty_limit_pages {
            let Some(q) = self.queue.pop() else { break };
            if self.live(q) {
                self.writeback(q.slot, 0, u64::MAX, sink)?;
            }
        }
        Ok(())
    }

    /// ext4 starts writeback of every dirty inode when dirty data exceed half the free blocks
    /// (`ext4_nonda_switch` at each buffered write), so a nearly full file system writes back
    /// long before the expiry time. Free blocks include those freed by the running transaction
    /// (ext4's free-cluster counter is raised when blocks are freed, before the commit). The
    /// kernel counts only delayed-allocation pages as dirty here; the model counts every dirty
    /// page (overwrites of allocated blocks too), so it may start a little early.
    fn free_space_writeback(&mut self, sink: Sink) -> Result<(), FsError> {
        if self.dirty_pages == 0 {
            return Ok(());
        }
        let pending: u64 = self.pending_free.iter().map(|p| p.len).sum();
        if self.free.free_blocks() + pending >= 2 * self.dirty_pages {
            return Ok(());
        }
        while let Some(q) = self.queue.pop() {
            if self.live(q) {
                self.writeback(q.slot, 0, u64::MAX, sink)?;
            }
        }
        Ok(())
    }

    /// Run the timers (flusher ticks, commit timer) up to `t`.
    fn advance(&mut self, t: u64, sink: Sink) -> Result<(), FsError> {
        let iv = self.opts.writeback_interval_ns.max(1);
        loop {
            if self.queue.is_empty() && !self.journal.home_dirty() && self.next_wb_ns < t {
                // Nothing for the flusher: skip idle ticks.
                self.next_wb_ns = self.next_wb_ns.max(t - t % iv);
            }
            let commit_at = self
                .journal
                .started_ns
                .map_or(u64::MAX, |s| s.saturating_add(self.opts.commit_interval_ns));
            let next = self.next_wb_ns.min(commit_at);
            if next > t {
                return Ok(());
            }
            self.out.now = next;
            if self.next_wb_ns <= commit_at {
                self.writeback_tick(next, sink)?;
                self.next_wb_ns += iv;
            } else {
                self.commit(sink);
            }
        }
    }

    // ---------------------------------------------------------------- files and names

    fn path_info(&self, path: u32) -> PathInfo {
        self.paths.get(&path).copied().unwrap_or(PathInfo {
            dir: 0,
            name_len: 16,
            class: classes::OTHER,
            hash: path,
        })
    }

    /// Add a name to directory `dir`; the block chosen by the name's hash once the directory
    /// has more than one block (htree leaves), a new block when it is full.
    fn dir_add(&mut self, info: PathInfo, sink: Sink) -> Result<Entry, FsError> {
        let rec = 8 + (info.name_len as u64).div_ceil(4) as u16 * 4;
        let d = info.dir as usize;
        let nb = self.dirs[d].blocks.len();
        let mut b = if nb == 1 {
            0
        } else {
            1 + (info.hash as usize % (nb - 1))
        };
        if self.dirs[d].free[b] < rec {
            // Split: a new block takes half of the full one's entries.
            let goal = self.dirs[d].blocks[nb - 1] + 1;
            let (nbk, _) = self.take(goal, 1, None, sink)?;
            let used = 4096 - self.dirs[d].free[b];
            let moved = used / 2;
            self.dirs[d].free[b] += moved;
            self.dirs[d].blocks.push(nbk);
            self.dirs[d].free.push(4096 - moved);
            let old = self.dirs[d].blocks[b];
            self.jadd(old, meta::DIRECTORY);
            if nb > 1 {
                self.jadd(self.dirs[d].blocks[0], meta::DIRECTORY);
            }
            b = nb;
        }
        self.dirs[d].free[b] -= rec;
        let blk = self.dirs[d].blocks[b];
        self.jadd(blk, meta::DIRECTORY);
        let dino = self.dirs[d].ino;
        self.jadd(self.layout.inode_block(dino).0, meta::INODE);
        Ok(Entry {
            dir: info.dir,
            block: b as u32,
            rec,
        })
    }

    fn dir_remove(&mut self, e: Entry) {
        let d = e.dir as usize;
        let b = e.block as usize;
        self.dirs[d].free[b] = (self.dirs[d].free[b] + e.rec).min(4096);
        self.jadd(self.dirs[d].blocks[b], meta::DIRECTORY);
        let dino = self.dirs[d].ino;
        self.jadd(self.layout.inode_block(dino).0, meta::INODE);
    }

    /// A new inode incarnation for `key`/`path`. `created`: made by this event (journalled);
    /// otherwise it existed before the trace (materialised without I/O, no known blocks).
    fn new_file(
        &mut self,
        key: Option<(u64, u64)>,
        path: u32,
        pid: u32,
        created: bool,
        sink: Sink,
    ) -> Result<u32, FsError> {
        if path != 0 {
            if let Some(&old) = self.by_path.get(&path) {
                // The name now belongs to a new inode: the old one lost it unseen.
                self.unname(old, sink);
            }
        }
        self.quiet = !created;
        let res = self.new_file_inner(key, path, pid, sink);
        self.quiet = false;
        res
    }

    fn new_file_inner(
        &mut self,
        key: Option<(u64, u64)>,
        path: u32,
        pid: u32,
        sink: Sink,
    ) -> Result<u32, FsError> {
        let info = self.path_info(path);
        let pref = self.layout.inode_group(self.dirs[info.dir as usize].ino);
        let ino = self.inodes.alloc(pref).ok_or_else(|| FsError {
            event: self.events.saturating_sub(1),
            what: format!(
                "the modelled file system has no free inode ({} inodes); raise --capacity",
                self.layout.inodes()
            ),
        })?;
        let g = self.layout.inode_group(ino);
        self.jadd(self.layout.inode_bitmap(g).0, meta::BITMAP);
        self.jadd(self.layout.descriptor_block(g).0, meta::BITMAP);
        let entry = self.dir_add(info, sink)?;
        let out_id = self.out_paths.len() as u32 + 1;
        self.out_paths.push(path);
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.files.push(None);
                self.gens.push(0);
                (self.files.len() - 1) as u32
            }
        };
        let tid = self.journal.tid;
        self.files[slot as usize] = Some(File {
            out_id,
            ino,
            key,
            path,
            class: info.class,
            entry: Some(entry),
            linked: true,
            orphan: false,
            size: 0,
            ext: ExtentMap::default(),
            tree: Vec::new(),
            pa: None,
            dirty: DirtyPages::default(),
            dirtied_ns: None,
            open_fds: 0,
            da_alloc_close: false,
            last_pid: pid,
            meta_tid: tid,
            datasync_tid: tid,
            inode_tid: 0,
        });
        if !self.quiet {
            self.touch_inode(slot, true);
        } else {
            let f = self.files[slot as usize].as_mut().expect("just made");
            f.meta_tid = 0;
            f.datasync_tid = 0;
        }
        if let Some(k) = key {
            self.by_key.insert(k, slot);
        }
        if path != 0 {
            self.by_path.insert(path, slot);
        }
        self.out.s.files += 1;
        Ok(slot)
    }

    /// The file at `slot` loses its name (unlink, or replaced by a rename or a new file).
    /// Deleted now if no descriptor holds it, else when the last one closes (orphan list).
    fn unname(&mut self, slot: u32, sink: Sink) {
        let f = self.files[slot as usize].as_mut().expect("live file");
        let entry = f.entry.take();
        let path = f.path;
        f.linked = false;
        f.path = 0;
        if let Some(e) = entry {
            self.dir_remove(e);
        }
        if path != 0 && self.by_path.get(&path) == Some(&slot) {
            self.by_path.remove(&path);
        }
        self.touch_inode(slot, false);
        let f = self.files[slot as usize].as_mut().expect("live file");
        if f.open_fds == 0 {
            self.delete(slot, sink);
        } else {
            f.orphan = true;
            self.jadd(self.layout.superblock().0, meta::OTHER);
        }
    }

    /// Free everything of the file at `slot`: dirty pages (absorbed), blocks (freed at commit,
    /// then discarded), preallocation, inode.
    fn delete(&mut self, slot: u32, _sink: Sink) {
        let mut f = self.files[slot as usize].take().expect("live file");
        let n = f.dirty.drop_range(0, u64::MAX);
        self.dirty_pages -= n;
        self.out.s.absorbed_pages += n;
        let mut freed = Vec::new();
        f.ext.remove_range(0, u64::MAX, |p, l| freed.push((p, l)));
        for (p, l) in freed {
            self.free_later(p, l, f.out_id, f.class);
        }
        for b in std::mem::take(&mut f.tree) {
            self.free_later(b, 1, 0, 0);
        }
        self.discard_pa(&mut f);
        self.inodes.release(f.ino);
        let g = self.layout.inode_group(f.ino);
        self.jadd(self.layout.inode_bitmap(g).0, meta::BITMAP);
        self.jadd(self.layout.descriptor_block(g).0, meta::BITMAP);
        self.jadd(self.layout.inode_block(f.ino).0, meta::INODE);
        if f.orphan {
            self.jadd(self.layout.superblock().0, meta::OTHER);
        }
        if let Some(k) = f.key {
            if self.by_key.get(&k) == Some(&slot) {
                self.by_key.remove(&k);
            }
        }
        if f.path != 0 && self.by_path.get(&f.path) == Some(&slot) {
            self.by_path.remove(&f.path);
        }
        self.gens[slot as usize] = self.gens[slot as usize].wrapping_add(1);
        self.free_slots.push(slot);
    }

    /// Set the size of `slot` to `size` bytes, dropping dirty pages and freeing blocks past it.
    fn truncate(&mut self, slot: u32, size: u64) {
        let mut f = self.files[slot as usize].take().expect("live file");
        let first = size.div_ceil(BLOCK);
        let n = f.dirty.drop_range(first, u64::MAX);
        self.dirty_pages -= n;
        self.out.s.absorbed_pages += n;
        if f.dirty.is_empty() {
            f.dirtied_ns = None;
        }
        let mut freed = Vec::new();
        f.ext
            .remove_range(first, u64::MAX, |p, l| freed.push((p, l)));
        for (p, l) in freed {
            self.free_later(p, l, f.out_id, f.class);
        }
        let need = tree_blocks(f.ext.len());
        while f.tree.len() > need {
            let b = f.tree.pop().expect("non-empty");
            self.free_later(b, 1, 0, 0);
        }
        self.discard_pa(&mut f);
        f.size = size;
        if size == 0 && self.opts.auto_da_alloc {
            f.da_alloc_close = true;
        }
        self.files[slot as usize] = Some(f);
        self.touch_inode(slot, true);
    }

    /// Drop dirty pages and free blocks of the whole blocks in `[from, to)` (punch, zero range).
    fn punch(&mut self, slot: u32, from: u64, to: u64) {
        let mut f = self.files[slot as usize].take().expect("live file");
        let n = f.dirty.drop_range(from, to);
        self.dirty_pages -= n;
        self.out.s.absorbed_pages += n;
        if f.dirty.is_empty() {
            f.dirtied_ns = None;
        }
        let mut freed = Vec::new();
        f.ext.remove_range(from, to, |p, l| freed.push((p, l)));
        for (p, l) in freed {
            self.free_later(p, l, f.out_id, f.class);
        }
        self.discard_pa(&mut f);
        self.files[slot as usize] = Some(f);
        self.touch_inode(slot, true);
    }

    fn fd_open(
        &mut self,
        pid: u32,
        fd: i32,
        slot: u32,
        cloexec: bool,
        sink: Sink,
    ) -> Result<(), FsError> {
        if fd < 0 {
            return Ok(());
        }
        let old = self
            .procs
            .entry(pid)
            .or_default()
            .insert(fd, Fd { slot, cloexec });
        self.files[slot as usize]
            .as_mut()
            .expect("live file")
            .open_fds += 1;
        if let Some(old) = old {
            self.release_fd(old.slot, sink)?;
        }
        Ok(())
    }

    /// A descriptor of `slot` was closed.
    fn release_fd(&mut self, slot: u32, sink: Sink) -> Result<(), FsError> {
        let f = self.files[slot as usize].as_mut().expect("live file");
        f.open_fds = f.open_fds.saturating_sub(1);
        if f.da_alloc_close {
            f.da_alloc_close = false;
            if !f.dirty.is_empty() {
                self.writeback(slot, 0, u64::MAX, sink)?;
            }
        }
        let f = self.files[slot as usize].as_mut().expect("live file");
        if f.open_fds == 0 {
            if f.dirty.is_empty() {
                let mut f = self.files[slot as usize].take().expect("live file");
                self.discard_pa(&mut f);
                self.files[slot as usize] = Some(f);
            }
            let f = self.files[slot as usize].as_ref().expect("live file");
            if !f.linked {
                self.delete(slot, sink);
            }
        }
        Ok(())
    }

    fn close_fd(&mut self, pid: u32, fd: i32, sink: Sink) -> Result<(), FsError> {
        let slot = self
            .procs
            .get_mut(&pid)
            .and_then(|m| m.remove(&fd))
            .map(|e| e.slot);
        match slot {
            Some(s) => self.release_fd(s, sink),
            None => Ok(()),
        }
    }

    /// The file an event is about: by (dev, ino), else by the pid's descriptor, else by path.
    /// A descriptor or name that belongs to another inode than the event's is not followed; a
    /// file known only by name learns the event's (dev, ino).
    fn lookup(&mut self, ev: &FileEvent, use_fd: bool) -> Option<u32> {
        let key = (ev.ino != 0).then_some((ev.dev, ev.ino));
        if let Some(k) = key {
            if let Some(&s) = self.by_key.get(&k) {
                return Some(s);
            }
        }
        let matches = |f: &File| key.is_none() || f.key.is_none() || f.key == key;
        let mut found = None;
        if use_fd && ev.fd >= 0 {
            if let Some(e) = self.procs.get(&ev.pid).and_then(|m| m.get(&ev.fd)) {
                if matches(self.files[e.slot as usize].as_ref().expect("live file")) {
                    found = Some(e.slot);
                }
            }
        }
        if found.is_none() && ev.path != 0 {
            if let Some(&s) = self.by_path.get(&ev.path) {
                if matches(self.files[s as usize].as_ref().expect("live file")) {
                    found = Some(s);
                }
            }
        }
        if let (Some(s), Some(k)) = (found, key) {
            let f = self.files[s as usize].as_mut().expect("live file");
            if f.key.is_none() {
                f.key = Some(k);
                self.by_key.insert(k, s);
            }
        }
        found
    }

    /// The file of an event that needs one: looked up, else materialised as pre-existing.
    fn file_for(&mut self, ev: &FileEvent, sink: Sink) -> Result<Option<u32>, FsError> {
        if let Some(s) = self.lookup(ev, true) {
            return Ok(Some(s));
        }
        if ev.ino == 0 && ev.path == 0 {
            return Ok(None);
        }
        let key = (ev.ino != 0).then_some((ev.dev, ev.ino));
        self.new_file(key, ev.path, ev.pid, false, sink).map(Some)
    }

    // ---------------------------------------------------------------- events

    /// Apply one event (events must come in time order; earlier times are taken as the latest
    /// time seen). Requests go to `sink` in issue order.
    pub fn apply(&mut self, ev: &FileEvent, sink: &mut dyn FnMut(Request)) -> Result<(), FsError> {
        self.events += 1;
        self.check(ev)?;
        let t0 = *self.t0.get_or_insert(ev.ts_ns);
        let t = ev.ts_ns.saturating_sub(t0).max(self.out.now);
        self.advance(t, sink)?;
        self.out.now = t;
        match ev.op {
            FileOp::Write => self.on_write(ev, sink)?,
            FileOp::Open => self.on_open(ev, sink)?,
            FileOp::Close => self.close_fd(ev.pid, ev.fd, sink)?,
            FileOp::Fsync | FileOp::Fdatasync => self.on_fsync(ev, sink)?,
            FileOp::SyncRange => {
                if ev.flags & SYNC_FILE_RANGE_WRITE != 0 {
                    if let Some(s) = self.lookup(ev, true) {
                        let from = ev.offset / BLOCK;
                        let to = if ev.len == 0 {
                            u64::MAX
                        } else {
                            (ev.offset + ev.len).div_ceil(BLOCK)
                        };
                        self.writeback(s, from, to, sink)?;
                    }
                }
            }
            FileOp::Truncate => {
                if let Some(s) = self.file_for(ev, sink)? {
                    self.truncate(s, ev.offset);
                }
            }
            FileOp::PunchHole => {
                if let Some(s) = self.lookup(ev, true) {
                    self.punch(s, ev.offset.div_ceil(BLOCK), (ev.offset + ev.len) / BLOCK);
                }
            }
            FileOp::Fallocate => self.on_fallocate(ev, sink)?,
            FileOp::Unlink => {
                if let Some(s) = self.lookup(ev, false) {
                    self.unname(s, sink);
                }
            }
            FileOp::Rename => self.on_rename(ev, sink)?,
            FileOp::Fork => self.fork(ev.pid, ev.offset as u32, sink)?,
            // posix_spawn: a fork whose child executes a new image at once.
            FileOp::Spawn => {
                self.fork(ev.pid, ev.offset as u32, sink)?;
                self.exec_or_exit(ev.offset as u32, false, sink)?;
            }
            FileOp::Exec => self.exec_or_exit(ev.pid, false, sink)?,
            FileOp::Exit => self.exec_or_exit(ev.pid, true, sink)?,
            FileOp::Unknown => self.unknown_ops += 1,
        }
        if self.journal.running_len() >= self.journal.max_transaction {
            self.commit(sink);
        }
        if self.dirty_pages > self.dirty_limit_pages {
            self.background(sink)?;
        }
        if ev.op == FileOp::Write {
            self.free_space_writeback(sink)?;
        }
        self.out.s.peak_dirty_pages = self.out.s.peak_dirty_pages.max(self.dirty_pages);
        Ok(())
    }

    /// `child` gets a copy of `parent`'s descriptor table (replacing a stale one of a reused pid).
    fn fork(&mut self, parent: u32, child: u32, sink: Sink) -> Result<(), FsError> {
        if let Some(fds) = self.procs.get(&parent).cloned() {
            for e in fds.values() {
                self.files[e.slot as usize]
                    .as_mut()
                    .expect("live file")
                    .open_fds += 1;
            }
            if let Some(old) = self.procs.insert(child, fds) {
                let mut fds: Vec<_> = old.into_iter().collect();
                fds.sort_unstable_by_key(|(fd, _)| *fd);
                for (_, e) in fds {
                    self.release_fd(e.slot, sink)?;
                }
            }
        }
        Ok(())
    }

    /// exec closes `pid`'s `O_CLOEXEC` descriptors; exit closes all of them.
    fn exec_or_exit(&mut self, pid: u32, exit: bool, sink: Sink) -> Result<(), FsError> {
        if let Some(m) = self.procs.get_mut(&pid) {
            let mut gone: Vec<(i32, Fd)> = m
                .iter()
                .filter(|(_, e)| exit || e.cloexec)
                .map(|(&fd, &e)| (fd, e))
                .collect();
            gone.sort_unstable_by_key(|(fd, _)| *fd);
            for (fd, _) in &gone {
                m.remove(fd);
            }
            if exit {
                self.procs.remove(&pid);
            }
            for (_, e) in gone {
                self.release_fd(e.slot, sink)?;
            }
        }
        Ok(())
    }

    /// Reject ranges no kernel would have accepted (a corrupt trace), before they can overflow.
    fn check(&self, ev: &FileEvent) -> Result<(), FsError> {
        let ranged = matches!(
            ev.op,
            FileOp::Write
                | FileOp::SyncRange
                | FileOp::Truncate
                | FileOp::PunchHole
                | FileOp::Fallocate
        );
        if !ranged {
            return Ok(());
        }
        let bad = |what: String| FsError {
            event: self.events - 1,
            what,
        };
        if ev.op == FileOp::Write && ev.len > MAX_WRITE_BYTES {
            return Err(bad(format!(
                "write of {} bytes is longer than Linux performs in one call ({MAX_WRITE_BYTES}); the trace is corrupt, re-record it",
                ev.len
            )));
        }
        match ev.offset.checked_add(ev.len) {
            Some(end) if end <= MAX_FILE_BYTES => Ok(()),
            _ => Err(bad(format!(
                "{} at offset {} + {} bytes is past ext4's largest file size (16 TiB); the trace is corrupt, re-record it",
                ev.op.name(),
                ev.offset,
                ev.len
            ))),
        }
    }

    fn on_write(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
        let Some(slot) = self.file_for(ev, sink)? else {
            self.anonymous_writes += 1;
            return Ok(());
        };
        if ev.len > 0 {
            let first = ev.offset / BLOCK;
            let end = (ev.offset + ev.len).div_ceil(BLOCK);
            let page = DirtyPage {
                pc: ev.pc,
                pid: ev.pid,
            };
            let f = self.files[slot as usize].as_mut().expect("live file");
            let mut added = 0;
            for l in first..end {
                added += f.dirty.dirty(l, page) as u64;
            }
            self.out.s.absorbed_pages += (end - first) - added;
            self.dirty_pages += added;
            f.size = f.size.max(ev.offset + ev.len);
            f.last_pid = ev.pid;
            if f.dirtied_ns.is_none() && added > 0 {
                f.dirtied_ns = Some(self.out.now);
                self.queue.push(Queued {
                    dirtied_ns: self.out.now,
                    slot,
                    gen: self.gens[slot as usize],
                });
            }
        }
        // mtime (and i_size) changed: the inode joins the running transaction.
        self.touch_inode(slot, false);
        Ok(())
    }

    fn on_open(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
        let slot = match self.lookup(ev, false) {
            Some(s) => {
                if ev.path != 0 {
                    let cur = self.files[s as usize].as_ref().expect("live file").path;
                    if cur != ev.path {
                        // Opened under another name (a rename we did not see): follow it.
                        if let Some(&other) = self.by_path.get(&ev.path) {
                            if other != s {
                                self.unname(other, sink);
                            }
                        }
                        if cur != 0 && self.by_path.get(&cur) == Some(&s) {
                            self.by_path.remove(&cur);
                        }
                        self.by_path.insert(ev.path, s);
                        let class = self.path_info(ev.path).class;
                        let f = self.files[s as usize].as_mut().expect("live file");
                        f.path = ev.path;
                        f.class = class;
                        f.linked = true;
                        self.out_paths[f.out_id as usize - 1] = ev.path;
                    }
                }
                s
            }
            None => {
                let key = (ev.ino != 0).then_some((ev.dev, ev.ino));
                if key.is_none() && ev.path == 0 {
                    return Ok(());
                }
                self.new_file(key, ev.path, ev.pid, ev.flags & O_CREAT != 0, sink)?
            }
        };
        if ev.flags & O_TRUNC != 0 {
            let f = self.files[slot as usize].as_ref().expect("live file");
            if f.size > 0 || !f.ext.is_empty() || !f.dirty.is_empty() {
                self.truncate(slot, 0);
            }
        }
        self.files[slot as usize]
            .as_mut()
            .expect("live file")
            .last_pid = ev.pid;
        self.fd_open(ev.pid, ev.fd, slot, ev.flags & O_CLOEXEC != 0, sink)
    }

    fn on_fsync(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
        let Some(slot) = self.lookup(ev, true) else {
            if self.opts.barrier {
                self.out.flush(sink);
            }
            return Ok(());
        };
        self.writeback(slot, 0, u64::MAX, sink)?;
        let f = self.files[slot as usize].as_ref().expect("live file");
        let tid = if ev.op == FileOp::Fsync {
            f.meta_tid
        } else {
            f.datasync_tid
        };
        if tid == self.journal.tid && self.journal.running_len() > 0 {
            self.commit(sink);
        } else if self.opts.barrier {
            self.out.flush(sink);
        }
        Ok(())
    }

    fn on_fallocate(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
        if ev.flags & (FALLOC_COLLAPSE_RANGE | FALLOC_INSERT_RANGE) != 0 {
            self.unsupported_falloc += 1;
            return Ok(());
        }
        let Some(slot) = self.lookup(ev, true) else {
            return Ok(());
        };
        let from = ev.offset / BLOCK;
        let to = (ev.offset + ev.len).div_ceil(BLOCK);
        if ev.flags & FALLOC_ZERO_RANGE != 0 {
            self.punch(slot, from, to);
        }
        let mut f = self.files[slot as usize].take().expect("live file");
        if ev.flags & FALLOC_KEEP_SIZE == 0 {
            f.size = f.size.max(ev.offset + ev.len);
        }
        let mut l = from;
        let mut res = Ok(());
        while l < to {
            if let Some(i) = f.ext.find(l) {
                l = f.ext.get(i).end();
                continue;
            }
            let k = f.ext.next_mapped(l).min(to) - l;
            if let Err(e) = self.allocate(&mut f, l, k, true, sink) {
                res = Err(e);
                break;
            }
            l += k;
        }
        self.files[slot as usize] = Some(f);
        self.touch_inode(slot, true);
        res
    }

    fn on_rename(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
        let slot = match self.lookup(ev, false) {
            Some(s) => s,
            None => {
                if ev.path == 0 && ev.ino == 0 {
                    return Ok(());
                }
                let key = (ev.ino != 0).then_some((ev.dev, ev.ino));
                self.new_file(key, ev.path, ev.pid, false, sink)?
            }
        };
        let target = ev.path2;
        if target != 0 {
            if let Some(&other) = self.by_path.get(&target) {
                if other != slot {
                    self.unname(other, sink);
                    // auto_da_alloc: replacing a file by rename starts writeback of the new one.
                    let dirty = !self.files[slot as usize]
                        .as_ref()
                        .expect("live file")
                        .dirty
                        .is_empty();
                    if self.opts.auto_da_alloc && dirty {
                        self.writeback(slot, 0, u64::MAX, sink)?;
                    }
                }
            }
        }
        let f = self.files[slot as usize].as_mut().expect("live file");
        let old_entry = f.entry.take();
        let old_path = f.path;
        if let Some(e) = old_entry {
            self.dir_remove(e);
        }
        if old_path != 0 && self.by_path.get(&old_path) == Some(&slot) {
            self.by_path.remove(&old_path);
        }
        let info = self.path_info(target);
        let entry = self.dir_add(info, sink)?;
        let f = self.files[slot as usize].as_mut().expect("live file");
        f.entry = Some(entry);
        f.path = target;
        f.class = info.class;
        f.linked = true;
        if target != 0 {
            // `pcstream.files` names each file by its last name.
            self.out_paths[f.out_id as usize - 1] = target;
            self.by_path.insert(target, slot);
        }
        self.touch_inode(slot, false);
        Ok(())
    }

    fn idle(&self) -> bool {
        self.dirty_pages == 0 && self.journal.running_len() == 0 && !self.journal.home_dirty()
    }

    /// End of the trace: the system stays up with no more events, so the timers run until all
    /// dirty data, the running transaction and dirty metadata have reached the disk. Returns the
    /// summary.
    pub fn finish(&mut self, sink: &mut dyn FnMut(Request)) -> Result<MapSummary, FsError> {
        let mut guard = 0;
        while !self.idle() {
            let commit_at = self
                .journal
                .started_ns
                .map_or(u64::MAX, |s| s.saturating_add(self.opts.commit_interval_ns));
            let next = self.next_wb_ns.min(commit_at).max(self.out.now);
            self.advance(next, sink)?;
            guard += 1;
            if guard > 1_000_000 {
                break;
            }
        }
        Ok(self.summary())
    }

    /// The counters so far.
    pub fn summary(&self) -> MapSummary {
        let mut s = self.out.s.clone();
        s.events = self.events;
        s.commits = self.journal.commits;
        s.checkpoints = self.journal.checkpoints;
        s.free_pages = self.free.free_blocks();
        s.unknown_ops = self.unknown_ops;
        if self.unsupported_falloc > 0 {
            s.warnings.push(format!(
                "{} fallocate calls with collapse/insert range were ignored (not modelled)",
                self.unsupported_falloc
            ));
        }
        if self.anonymous_writes > 0 {
            s.warnings.push(format!(
                "{} writes named no file (no inode, descriptor or path) and were ignored",
                self.anonymous_writes
            ));
        }
        s
    }

    /// `pcstream.files`: output file id → path.
    pub fn files_table(&self) -> BTreeMap<u32, String> {
        self.out_paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let name = self
                    .path_names
                    .get(p)
                    .cloned()
                    .unwrap_or_else(|| format!("(path {p})"));
                (i as u32 + 1, name)
            })
            .collect()
    }
}

/// Map the file-level trace `input` to the block-level trace `output` (written atomically).
/// `progress(done, total)` is called every 64 Ki events and at the end; returning `false` stops
/// the mapping (an error; no output is left).
pub fn map_file_trace(
    input: &Path,
    output: &Path,
    opts: &MapOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<MapSummary, TraceError> {
    let mut reader = FileTraceReader::open(input)?;
    let total = reader.num_rows();
    let mut model = FsModel::new(opts.clone()).map_err(|e| TraceError::Gen(e.what))?;
    for (id, p) in reader.paths() {
        model.register_path(*id, p);
    }
    let src_meta = reader.meta().clone();
    let mut meta = TraceMeta {
        capacity_pages: Some(opts.capacity_pages),
        source: if src_meta.source.is_empty() {
            format!("pcstream map {}", input.display())
        } else {
            format!("{} | pcstream map", src_meta.source)
        },
        file_classes: classes::class_table(),
        pcs: src_meta.pcs.clone(),
        ..Default::default()
    };
    let mut writer = BlockTraceWriter::create(output, &meta, DEFAULT_ROW_GROUP_ROWS)?;
    // Requests of a batch of events are collected, then written (the writer checks each row).
    let mut reqs: Vec<Request> = Vec::new();
    let mut batch = Vec::new();
    let mut row = 0u64;
    let mut other_dev = 0u64;
    while reader.next_batch(&mut batch)? {
        for ev in &batch {
            if opts.only_dev.is_some_and(|d| ev.dev != 0 && ev.dev != d) {
                other_dev += 1;
                row += 1;
                continue;
            }
            if let Err(e) = model.apply(ev, &mut |r| reqs.push(r)) {
                return Err(reader.bad_row(row, e.what));
            }
            row += 1;
        }
        for r in reqs.drain(..) {
            writer.push(&r)?;
        }
        if !progress(row, total) {
            return Err(TraceError::Gen("map interrupted".into()));
        }
    }
    let mut summary = model
        .finish(&mut |r| reqs.push(r))
        .map_err(|e| reader.bad_row(row.saturating_sub(1), e.what))?;
    for r in reqs.drain(..) {
        writer.push(&r)?;
    }
    if other_dev > 0 {
        summary.warnings.push(format!(
            "{other_dev} events about files on other devices than {} were skipped",
            opts.only_dev.unwrap_or(0)
        ));
    }
    for (name, n) in reader.unknown_ops() {
        summary
            .warnings
            .push(format!("{n} events with op '{name}' were not modelled"));
    }
    meta.files = model.files_table();
    writer.set_meta(&meta);
    writer.finish()?;
    Ok(summary)
}
