//! The map stage: an ext4-like file-system model that turns a file-level trace (what programs
//! asked of the file system) into the block-level trace an ext4 file system on the device would
//! have issued. Pure and deterministic: the same events give the same requests. Memory is bounded
//! by the live files, open descriptors, dirty pages and the path table, not by the number of
//! events. docs/FSMODEL.md describes the model, its defaults and its simplifications.
//!
//! This file holds the model's state ([`FsModel`]), its construction, the end of a trace and
//! [`map_file_trace`] (Parquet in, Parquet out). The model's behaviour is split by what it does:
//! - `events`: applying one event (dispatch, checks, the handler of each op);
//! - `namespace`: paths, directories, inode incarnations, descriptors;
//! - `allocation`: mballoc's goals, preallocation, extent updates, freeing; on the free-space
//!   bitmaps of [`freespace`] and the extent maps of [`extent`];
//! - `writeback`: when dirty data reach the disk (and periodic `fstrim`); the dirty pages are
//!   kept by [`pagecache`];
//! - [`aging`]: the seeded cold files an aged file system starts with, and the state they leave;
//! - [`journal`]: jbd2 (transactions, commits, checkpoints) and the model's use of it;
//! - [`output`]: the requests emitted and the counters;
//! - [`layout`] (mke2fs's on-disk layout), [`classes`] (file-name classes), [`options`] (the
//!   parameters, from mount options).

pub mod aging;
mod allocation;
pub mod classes;
mod events;
pub mod extent;
pub mod freespace;
pub mod journal;
pub mod layout;
mod namespace;
pub mod options;
pub mod output;
pub mod pagecache;
mod ranked;
mod writeback;

use std::collections::BTreeMap;
use std::path::Path;

use pcstream_core::request::Request;
use pcstream_core::units::PAGE_BYTES;
use rustc_hash::FxHashMap;

use crate::blocktrace::{AgedRows, BlockTraceWriter, TraceMeta, DEFAULT_ROW_GROUP_ROWS};
use crate::error::TraceError;
use crate::filetrace::FileTraceReader;
use extent::ExtentMap;
use freespace::{FreeSpace, InodeMap};
use journal::Journal;
use layout::{Layout, FLEX_GROUPS, ROOT_INO};
pub use options::MapOptions;
use output::{Bits, Out};
pub use output::{FsError, MapSummary, MetaPages};
use pagecache::{DirtyPage, DirtyPages, DirtyQueue};

/// Bytes per block: ext4 with 4 KiB blocks, one page each.
const BLOCK: u64 = PAGE_BYTES;
/// Bytes of a directory block's first entries (`.` and `..`).
const DIR_HEAD_BYTES: u16 = 24;
/// Open flags (Linux generic values).
const O_CREAT: u32 = 0o100;
const O_TRUNC: u32 = 0o1000;
const O_CLOEXEC: u32 = 0o2_000_000;
const O_DIRECT: u32 = 0o40_000;
/// `sync_file_range` flag that starts writeback.
const SYNC_FILE_RANGE_WRITE: u32 = 2;
/// fallocate modes.
const FALLOC_KEEP_SIZE: u32 = 0x01;
const FALLOC_COLLAPSE_RANGE: u32 = 0x08;
const FALLOC_ZERO_RANGE: u32 = 0x10;
const FALLOC_INSERT_RANGE: u32 = 0x20;
/// Largest file offset ext4 allows with 4 KiB blocks (16 TiB).
const MAX_FILE_BYTES: u64 = 1 << 44;
/// Largest write-life hint Linux accepts (`RWH_WRITE_LIFE_EXTREME`).
const MAX_RW_HINT: u64 = crate::blocktrace::format::MAX_HINT as u64;
/// Timer rounds `finish` runs before it calls the model stuck: each round writes back or
/// commits something, so a real trace settles in a few thousand.
const SETTLE_ROUNDS: u32 = 1_000_000;
/// Largest single write Linux performs (`MAX_RW_COUNT`).
const MAX_WRITE_BYTES: u64 = 0x7fff_f000;

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
    /// Write-life hint set on the inode (`fcntl(F_SET_RW_HINT)`; 0 = not set).
    hint: u8,
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
    /// Opened with `O_DIRECT`: its writes bypass the page cache.
    direct: bool,
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
    /// mballoc's stream goals: the group of the last stream allocation, one per
    /// `ino mod stream_goals.len()` (see [`stream_goal_count`]).
    stream_goals: Vec<u32>,
    /// Metadata changes are not journalled while set (materialising pre-existing files).
    quiet: bool,
    // Time.
    t0: Option<u64>,
    next_wb_ns: u64,
    /// `fstrim=`: time of the next periodic trim, and the groups with blocks freed since the
    /// last one (ext4 skips groups it trimmed and that freed nothing since).
    next_fstrim_ns: u64,
    untrimmed: Vec<bool>,
    /// After aging: the share of blocks it used and the blocks it left free (for messages).
    aged_free: Option<(f64, u64)>,
    // Counters.
    events: u64,
    unknown_ops: u64,
    unsupported_falloc: u64,
    anonymous_writes: u64,
    /// Whether any descriptor was opened with `O_DIRECT`: until one is, a write needs no look
    /// at its descriptor to know it goes through the page cache.
    direct_opened: bool,
    scratch: Vec<(u64, DirtyPage)>,
}

type Sink<'a> = &'a mut dyn FnMut(Request);

/// The group mke2fs starts the journal in (its `get_midpoint_journal_block`): the group of the
/// middle block; beyond the first flex group, the first group of that flex group with free
/// blocks; otherwise the emptiest of the middle group and its two neighbours, the lowest on a
/// tie. (A 12-group file system gets group 4: groups 4 and 6 are empty, 5 holds a superblock
/// backup; real mke2fs puts the journal at block 131072.)
fn journal_group(layout: &Layout, free: &FreeSpace) -> u32 {
    // Free extents may run from one group into the next: count each group's overlap (a fresh
    // file system has a few extents per group, so the whole list is walked).
    let free_in = |g: u32| -> u64 {
        let start = layout.group_start(g);
        let end = (start + layout::BLOCKS_PER_GROUP).min(layout.blocks);
        free.extents()
            .map(|(s, n)| (s + n).min(end).saturating_sub(s.max(start)))
            .sum()
    };
    let mut group = layout.group_of(layout.blocks / 2);
    let start = if group > FLEX_GROUPS {
        group &= !(FLEX_GROUPS - 1);
        while group < layout.groups && free_in(group) == 0 {
            group += 1;
        }
        if group == layout.groups {
            group = 0;
        }
        group
    } else {
        group.saturating_sub(1)
    };
    let end = (group + 1).min(layout.groups - 1);
    let mut best = start;
    for g in start + 1..=end {
        if free_in(g) > free_in(best) {
            best = g;
        }
    }
    best
}

/// How many stream goals mballoc keeps (Linux 6.17 on): one per possible CPU, at most one per
/// four block groups (rounded up), at least one. Earlier kernels kept a single one.
pub(super) fn stream_goal_count(cpus: u32, groups: u64) -> usize {
    (cpus as u64).min(groups.div_ceil(4)).max(1) as usize
}

impl FsModel {
    /// A freshly made file system of `opts.capacity_pages` blocks.
    pub fn new(opts: MapOptions) -> Result<FsModel, FsError> {
        let err = |what: String| FsError { event: 0, what };
        let layout = Layout::new(opts.capacity_pages, opts.journal_pages).map_err(err)?;
        let mut free = FreeSpace::new(&layout);
        let mut area = Vec::new();
        let mut left = layout.journal_blocks;
        let mut goal = layout.group_start(journal_group(&layout, &free));
        while left > 0 {
            let (s, n) = free
                .first_fit(goal, left)
                .ok_or_else(|| err("no room for the journal; raise --capacity".into()))?;
            free.take(s, n);
            area.push((s, n));
            left -= n;
            goal = s + n;
        }
        let journal = Journal::new(area, opts.checkpoint_fraction);
        let inodes = InodeMap::new(layout.groups);
        let groups = layout.groups as usize;
        let root_block = free
            .first_fit(0, 1)
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
            // mke2fs discards the device; free space holds no data.
            discarded: Bits::ones(opts.capacity_pages),
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
                free: vec![BLOCK as u16 - DIR_HEAD_BYTES],
            }],
            dir_index,
            out_paths: Vec::new(),
            procs: FxHashMap::default(),
            queue: DirtyQueue::default(),
            dirty_pages: 0,
            dirty_limit_pages,
            pending_free: Vec::new(),
            stream_goals: vec![0; stream_goal_count(opts.cpus, groups as u64)],
            quiet: false,
            t0: None,
            next_wb_ns: opts.writeback_interval_ns.max(1),
            next_fstrim_ns: opts.fstrim_interval_ns.unwrap_or(u64::MAX),
            untrimmed: vec![false; groups],
            aged_free: None,
            events: 0,
            unknown_ops: 0,
            unsupported_falloc: 0,
            anonymous_writes: 0,
            direct_opened: false,
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

    fn idle(&self) -> bool {
        self.dirty_pages == 0 && self.journal.running_len() == 0 && !self.journal.home_dirty()
    }

    /// An error if a stop was requested ([`crate::cancel`]): the model's long loops (aging,
    /// writeback, the timers at the end) make no progress call, so they check this instead.
    /// Reading the flag changes nothing in the model: a run that is not stopped is unchanged.
    pub(super) fn check_stop(&self) -> Result<(), FsError> {
        if crate::cancel::requested() {
            return Err(FsError {
                event: self.events,
                what: TraceError::Interrupted.to_string(),
            });
        }
        Ok(())
    }

    /// End of the trace: the system stays up with no more events, so the timers run until all
    /// dirty data, the running transaction and dirty metadata have reached the disk. Returns the
    /// summary.
    pub fn finish(&mut self, sink: &mut dyn FnMut(Request)) -> Result<MapSummary, FsError> {
        self.settle(sink, SETTLE_ROUNDS)?;
        Ok(self.summary())
    }

    /// Run the timers until the model is idle, at most `rounds` times: a model that is still
    /// busy after that would never settle, and is an error naming what it still holds rather
    /// than a summary of a half-written disk.
    fn settle(&mut self, sink: &mut dyn FnMut(Request), rounds: u32) -> Result<(), FsError> {
        let mut round = 0;
        while !self.idle() {
            self.check_stop()?;
            if round == rounds {
                return Err(FsError {
                    event: self.events.saturating_sub(1),
                    what: format!(
                        "the model did not settle after the last event in {rounds} timer rounds \
                         ({} dirty pages, {} blocks in the running transaction, home metadata {}); \
                         the trace's output would be incomplete, please report this trace",
                        self.dirty_pages,
                        self.journal.running_len(),
                        if self.journal.home_dirty() {
                            "dirty"
                        } else {
                            "clean"
                        },
                    ),
                });
            }
            let commit_at = self
                .journal
                .started_ns
                .map_or(u64::MAX, |s| s.saturating_add(self.opts.commit_interval_ns));
            let next = self.next_wb_ns.min(commit_at).max(self.out.now);
            self.advance(next, sink)?;
            round += 1;
        }
        Ok(())
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
    let mut model = None;
    let res = map_to_writer(input, output, opts, &mut model, progress);
    if let Some(model) = model {
        free_in_background(model);
    }
    // A model error after a stop was requested is the stop (the model's loops end with one).
    res.map_err(|e| {
        if crate::cancel::requested() {
            TraceError::Interrupted
        } else {
            e
        }
    })
}

/// Free `value` on a thread of its own. The model of a large file system, and its aging plan,
/// are millions of small allocations: freeing them takes a second or more, which would delay the
/// answer (and the exit after a signal) for nothing. If no thread can be started, `value` is
/// freed here.
fn free_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("map-free".into())
        .spawn(move || drop(value));
}

/// [`map_file_trace`]'s steps, the model made in `model`.
fn map_to_writer(
    input: &Path,
    output: &Path,
    opts: &MapOptions,
    model: &mut Option<FsModel>,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<MapSummary, TraceError> {
    let mut reader = FileTraceReader::open(input)?;
    let model = model.insert(FsModel::new(opts.clone()).map_err(|e| TraceError::Gen(e.what))?);
    let aged = match opts.age {
        Some(spec) => {
            let ops = aging::plan(opts, spec).map_err(|e| TraceError::Gen(e.what))?;
            let aged = model.age(&ops);
            free_in_background(ops);
            Some(aged.map_err(|e| TraceError::Gen(format!("aging: {}", e.what)))?)
        }
        None => None,
    };
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
    if let Some(a) = &aged {
        meta.aged = Some(write_aged(&mut writer, a)?);
    }
    let mut summary = map_events(&mut reader, model, &mut writer, opts, progress)?;
    for (name, n) in reader.unknown_ops() {
        summary
            .warnings
            .push(format!("{n} events with op '{name}' were not modelled"));
    }
    summary.aged = aged;
    meta.files = model.files_table();
    writer.set_meta(&meta);
    writer.finish()?;
    Ok(summary)
}

/// The aged state leads the trace: one write per LBA run (split at 2^32 − 1 pages), all at
/// time 0. Returns what the trace's metadata says of them.
fn write_aged(writer: &mut BlockTraceWriter, a: &aging::AgedState) -> Result<AgedRows, TraceError> {
    for &(lpn, pages) in &a.extents {
        let mut left = pages;
        let mut at = lpn;
        while left > 0 {
            let n = left.min(u32::MAX as u64);
            writer.push(&Request::write(at, n as u32))?;
            at += n;
            left -= n;
        }
    }
    Ok(AgedRows {
        rows: a
            .extents
            .iter()
            .map(|e| e.1.div_ceil(u32::MAX as u64))
            .sum(),
        pages: a.pages,
    })
}

/// Every event of `reader` through `model` (those of other devices than `--dev` skipped), then
/// the model's end, the requests into `writer`; a model error names the event's row.
fn map_events(
    reader: &mut FileTraceReader,
    model: &mut FsModel,
    writer: &mut BlockTraceWriter,
    opts: &MapOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<MapSummary, TraceError> {
    let total = reader.num_rows();
    // Requests of a batch of events are collected, then written (the writer checks each row).
    let mut reqs: Vec<Request> = Vec::new();
    let mut batch = Vec::new();
    let mut row = 0u64;
    let mut other_dev = 0u64;
    while reader.next_batch(&mut batch)? {
        for ev in &batch {
            // One event may take a while (a write of a gigabyte), a batch many of them.
            crate::cancel::check()?;
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
        crate::cancel::check()?;
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
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The journal's first block as mke2fs places it, against `mkfs.ext4 -b 4096 -i 16384 -I 256`
    /// images of 12, 100, 2 and 512 groups (`debugfs -R 'stat <8>'`: 131072, 1606659, 32801,
    /// 8421376).
    #[test]
    fn the_journal_goes_where_mke2fs_puts_it() {
        let first_block = |blocks: u64| {
            let layout = Layout::new(blocks, 0).unwrap();
            let mut free = FreeSpace::new(&layout);
            let goal = layout.group_start(journal_group(&layout, &free));
            free.first_fit(goal, layout.journal_blocks).unwrap().0
        };
        // 12 groups: the middle block is in group 5 (a superblock backup); 4 and 6 are empty.
        assert_eq!(first_block(367_491), 131_072);
        // 100 groups: past the first flex group, the middle group's flex group (48..64) and the
        // next group; 48 carries that flex group's bitmaps and inode tables, so 49.
        assert_eq!(first_block(3_276_800), 1_606_659);
        // 2 groups: group 0 holds the metadata; group 1, after its superblock backup.
        assert_eq!(first_block(65_536), 32_801);
        assert_eq!(first_block(16_777_216), 8_421_376);
    }

    /// A model that cannot settle in the rounds allowed is an error that says what it holds,
    /// not a summary of a disk with dirty pages left in memory.
    #[test]
    fn a_model_that_does_not_settle_is_an_error() {
        use crate::filetrace::{FileEvent, FileOp};
        let mut m = FsModel::new(MapOptions::from_mount_opts(262_144, "").unwrap()).unwrap();
        m.register_path(1, "/data/a");
        let ev = |op, flags, len| FileEvent {
            ts_ns: 1,
            pid: 1,
            tid: 1,
            op,
            fd: 3,
            dev: 1,
            ino: 1,
            path: 1,
            flags,
            len,
            ..Default::default()
        };
        let mut sink = |_: Request| {};
        m.apply(&ev(FileOp::Open, O_CREAT | 0o1, 0), &mut sink)
            .unwrap();
        m.apply(&ev(FileOp::Write, 0, 8 * BLOCK), &mut sink)
            .unwrap();
        let e = m.settle(&mut sink, 0).unwrap_err();
        assert_eq!(e.event, 1);
        assert!(
            e.what.starts_with("the model did not settle") && e.what.contains("8 dirty pages"),
            "{e}"
        );
        // With the rounds it needs, the same model settles.
        m.settle(&mut sink, SETTLE_ROUNDS).unwrap();
        assert!(m.idle());
    }
}
