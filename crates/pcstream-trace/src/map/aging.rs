//! Aging the file system before a trace: the seeded plan of cold user files (and, with churn,
//! create/delete rounds that fragment the free space), its application to the model, and the
//! aged state it leaves on the device.
//!
//! The plan is a list of file operations, so the same plan ages the model and a real ext4
//! (`pcstream record --block --age`): create a file of a given size, delete a file, sync. File
//! sizes follow the file-count histogram of Agrawal et al., "A Five-Year Study of File-System
//! Metadata" (FAST'07), in power-of-4 size bins; within a bin a size is drawn log-uniformly. Files
//! are spread over a two-level directory tree so the allocator places them in many block groups.
//!
//! The aged state is what the device holds when the trace starts, one write per LBA: every block
//! the file system uses (data, metadata, journal; mke2fs without lazy initialisation writes them
//! all), plus, when deletes are not discarded, the blocks of deleted files that were not reused
//! (the device still holds them as valid). Deterministic: the same capacity, options and seed give
//! the same plan and the same state.

use pcstream_core::request::{Op, Request};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::*;
use crate::filetrace::{FileEvent, FileOp};

/// File-count histogram of Agrawal et al. (FAST'07): (upper bound of the size bin in bytes,
/// relative number of files). Bins are powers of 4; a bin holds sizes above the previous bound.
const SIZE_BINS: [(u64, u32); 11] = [
    (8, 1),
    (32, 7),
    (128, 16),
    (512, 40),
    (2048, 50),
    (8192, 46),
    (32_768, 35),
    (131_072, 20),
    (524_288, 10),
    (2_097_152, 4),
    (8_388_608, 1),
];
/// Files per leaf directory on average (the plan's directory tree is sized from it).
const FILES_PER_DIR: u64 = 32;
/// Each churn round fills the file system up to this share of its blocks before deleting random
/// files back down to the target: a used file system was fuller once, so its free space is
/// fragmented and (without discard) still holds the deleted files' data on the device.
const CHURN_HIGH_SHARE: f64 = 0.98;
/// Path ids of aged files live above every trace path id.
const AGED_PATH_BASE: u32 = 0xC000_0000;
/// The process the model attributes aging to (no trace uses it).
const AGING_PID: u32 = u32::MAX - 1;
/// Largest write of one aging event (a file's data is written in pieces of this size).
const AGING_WRITE_BYTES: u64 = 1 << 30;
/// Model time between two aging operations.
const AGING_STEP_NS: u64 = 1_000_000;
/// Operations planned between two checks for a stop request ([`crate::cancel`]).
const STOP_CHECK_OPS: usize = 4096;

/// How to age: fill to `share` of the blocks, after `churn` create/delete rounds, from `seed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AgingSpec {
    pub share: f64,
    pub seed: u64,
    pub churn: u32,
}

/// One operation of an aging plan (paths relative to the file system's root).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum AgeOp {
    Create {
        path: String,
        bytes: u64,
    },
    Delete {
        path: String,
    },
    /// Write back and commit everything (as `sync`): freed blocks become reusable.
    Sync,
}

/// What the aging left: the device state as extents (start, pages) in LBA order, and counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AgedState {
    #[serde(skip)]
    pub extents: Vec<(u64, u64)>,
    /// The part of `extents` that is free in the file system (deleted, not discarded).
    #[serde(skip)]
    pub stale: Vec<(u64, u64)>,
    /// Pages of the aged state (the `pcstream.aged_pages` of the trace).
    pub pages: u64,
    /// Blocks the file system uses after aging.
    pub used_blocks: u64,
    /// `used_blocks` / capacity.
    pub used_share: f64,
    /// Blocks of deleted files still valid on the device (not discarded).
    pub stale_blocks: u64,
    /// Live aged files and their data bytes.
    pub files: u64,
    pub bytes: u64,
}

fn draw_size(rng: &mut ChaCha8Rng) -> u64 {
    let total: u32 = SIZE_BINS.iter().map(|b| b.1).sum();
    let mut pick = rng.random_range(0..total);
    let mut lo = 1u64;
    for &(hi, w) in &SIZE_BINS {
        if pick < w {
            let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
            return (a + (b - a) * rng.random::<f64>())
                .exp()
                .round()
                .clamp(1.0, hi as f64) as u64;
        }
        pick -= w;
        lo = hi + 1;
    }
    unreachable!("the pick is below the total weight")
}

fn blocks_of(bytes: u64) -> u64 {
    bytes.div_ceil(BLOCK)
}

/// The blocks a fresh file system of `opts` uses, and those `spec` fills it to; refused when
/// the share is not between the first and 99 %.
fn used_and_target(opts: &MapOptions, spec: AgingSpec) -> Result<(u64, u64), FsError> {
    let err = |what: String| FsError { event: 0, what };
    if !(spec.share > 0.0 && spec.share <= 0.99) {
        return Err(err(format!(
            "--age {}: the share of blocks in use must be above 0 and at most 0.99",
            spec.share
        )));
    }
    let fresh = FsModel::new(MapOptions {
        age: None,
        ..opts.clone()
    })?;
    let capacity = opts.capacity_pages;
    let base_used = capacity - fresh.free.free_blocks();
    let target = (spec.share * capacity as f64).round() as u64;
    if target <= base_used {
        return Err(err(format!(
            "--age {}: a fresh file system already uses {base_used} of its {capacity} blocks ({:.1} %); use a larger share",
            spec.share,
            100.0 * base_used as f64 / capacity as f64
        )));
    }
    Ok((base_used, target))
}

/// The aging plan for a file system of `opts.capacity_pages` blocks made as the model makes it.
/// Refused when the share is not between what a fresh file system uses and 99 %.
pub fn plan(opts: &MapOptions, spec: AgingSpec) -> Result<Vec<AgeOp>, FsError> {
    let err = |what: String| FsError { event: 0, what };
    let (base_used, target) = used_and_target(opts, spec)?;
    let capacity = opts.capacity_pages;
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    // The directory tree, sized for the expected number of files (mean size from the bins).
    let weights: u64 = SIZE_BINS.iter().map(|b| b.1 as u64).sum();
    let mean_bytes = SIZE_BINS.iter().map(|&(hi, w)| hi * w as u64).sum::<u64>() / (2 * weights);
    let expected_files = ((target - base_used) * BLOCK / mean_bytes.max(1)).max(1);
    let leaves = (expected_files / FILES_PER_DIR).max(1);
    let fanout = ((leaves as f64).sqrt().ceil() as u64).max(1);
    // Directory blocks: one per directory plus one per ~100 entries.
    let dir_blocks = 1 + fanout + fanout * fanout + expected_files / 100;
    let budget = (target - base_used).saturating_sub(dir_blocks);
    // What a churn round fills to first (never below the target itself).
    let high = ((CHURN_HIGH_SHARE * capacity as f64) as u64)
        .saturating_sub(base_used + dir_blocks)
        .max(budget);
    let mut ops = Vec::new();
    let mut live: Vec<(String, u64)> = Vec::new();
    let mut used = 0u64;
    let mut next = 0u64;
    let mut fill = |ops: &mut Vec<AgeOp>,
                    live: &mut Vec<(String, u64)>,
                    used: &mut u64,
                    rng: &mut ChaCha8Rng,
                    budget: u64|
     -> Result<(), FsError> {
        while *used < budget {
            // A plan for a large file system is millions of files: seconds of work.
            if ops.len().is_multiple_of(STOP_CHECK_OPS) && crate::cancel::requested() {
                return Err(err(TraceError::Interrupted.to_string()));
            }
            let mut bytes = draw_size(rng);
            let left = budget - *used;
            if blocks_of(bytes) > left {
                bytes = left * BLOCK;
            }
            let (a, b) = (rng.random_range(0..fanout), rng.random_range(0..fanout));
            let path = format!("aged/d{a:03}/d{b:03}/f{next:07}.dat");
            next += 1;
            *used += blocks_of(bytes);
            ops.push(AgeOp::Create {
                path: path.clone(),
                bytes,
            });
            live.push((path, bytes));
        }
        Ok(())
    };
    fill(&mut ops, &mut live, &mut used, &mut rng, budget)?;
    for _ in 0..spec.churn {
        // Fill up to the high share, make it durable, then delete random files (any age) until
        // the target is reached again, and make the frees reusable; the final top-up below
        // lands exactly on the target.
        fill(&mut ops, &mut live, &mut used, &mut rng, high)?;
        ops.push(AgeOp::Sync);
        while used > budget && !live.is_empty() {
            let (path, bytes) = live.swap_remove(rng.random_range(0..live.len()));
            used -= blocks_of(bytes);
            ops.push(AgeOp::Delete { path });
        }
        ops.push(AgeOp::Sync);
    }
    fill(&mut ops, &mut live, &mut used, &mut rng, budget)?;
    ops.push(AgeOp::Sync);
    Ok(ops)
}

/// (first block, blocks).
type Extent = (u64, u64);

/// A bit per block: which blocks hold valid data on the device.
struct Valid(Vec<u64>);

impl Valid {
    fn set(&mut self, start: u64, len: u64, on: bool) {
        for b in start..start + len {
            let (w, m) = ((b / 64) as usize, 1u64 << (b % 64));
            if on {
                self.0[w] |= m
            } else {
                self.0[w] &= !m
            }
        }
    }
    fn get(&self, b: u64) -> bool {
        self.0[(b / 64) as usize] & (1 << (b % 64)) != 0
    }
}

impl FsModel {
    /// Apply `ops` before the trace's first event, then leave the model as a freshly mounted
    /// aged file system: every counter, clock and descriptor reset, aged files anonymous (file
    /// id 0). Returns the device state the aging left.
    pub fn age(&mut self, ops: &[AgeOp]) -> Result<AgedState, FsError> {
        let capacity = self.opts.capacity_pages;
        let mut valid = Valid(vec![0; capacity.div_ceil(64) as usize]);
        let mut sink = |r: Request| match Op::from_u8(r.op) {
            Some(Op::Write) => valid.set(r.lpn, r.pages as u64, true),
            Some(Op::Trim) => valid.set(r.lpn, r.pages as u64, false),
            _ => {}
        };
        // Periodic trims belong to the trace's time, not to the aging's.
        let fstrim = self.opts.fstrim_interval_ns.take();
        self.next_fstrim_ns = u64::MAX;
        self.apply_aging(ops, &mut sink)?;
        self.sync_all(&mut sink)?;
        self.opts.fstrim_interval_ns = fstrim;
        let mut state = self.device_state(&valid);
        for f in self.files.iter_mut().flatten() {
            state.files += 1;
            state.bytes += f.size;
            // Aged files are cold and anonymous: no `pcstream.files` entry, file id 0.
            f.out_id = 0;
        }
        self.out_paths.clear();
        self.procs.clear();
        self.reset_clocks_and_counters();
        self.aged_free = Some((state.used_share, self.free.free_blocks()));
        Ok(state)
    }

    /// The aging's file operations as events, one [`AGING_STEP_NS`] apart (a sync catches the
    /// clock up with the writeback it ran).
    fn apply_aging(&mut self, ops: &[AgeOp], sink: Sink) -> Result<(), FsError> {
        let mut ids: FxHashMap<&str, u32> = FxHashMap::default();
        let mut t = 0u64;
        let ev = |op: FileOp, path: u32, t: u64| FileEvent {
            ts_ns: t,
            pid: AGING_PID,
            tid: AGING_PID,
            op,
            fd: 3,
            path,
            ..Default::default()
        };
        for op in ops {
            self.check_stop()?;
            t += AGING_STEP_NS;
            match op {
                AgeOp::Create { path, bytes } => {
                    let id = AGED_PATH_BASE + ids.len() as u32;
                    ids.insert(path.as_str(), id);
                    self.register_path(id, &format!("/{path}"));
                    let open = FileEvent {
                        flags: O_CREAT,
                        ..ev(FileOp::Open, id, t)
                    };
                    self.apply(&open, sink)?;
                    let mut off = 0;
                    while off < *bytes {
                        let len = (*bytes - off).min(AGING_WRITE_BYTES);
                        let w = FileEvent {
                            offset: off,
                            len,
                            ..ev(FileOp::Write, id, t)
                        };
                        self.apply(&w, sink)?;
                        off += len;
                    }
                    self.apply(&ev(FileOp::Close, id, t), sink)?;
                }
                AgeOp::Delete { path } => {
                    let id = ids.get(path.as_str()).copied().unwrap_or(0);
                    self.apply(&ev(FileOp::Unlink, id, t), sink)?;
                }
                AgeOp::Sync => {
                    self.sync_all(sink)?;
                    t = t.max(self.out.now);
                }
            }
        }
        Ok(())
    }

    /// The device after aging: the blocks in use, and those free in the file system that still
    /// hold data (`valid`: written and not trimmed), as LBA runs and counts.
    fn device_state(&self, valid: &Valid) -> AgedState {
        let capacity = self.opts.capacity_pages;
        // Every block in use was written (mke2fs without lazy initialisation writes the inode
        // tables and the journal), whatever the aging itself wrote.
        let mut in_use = Valid(vec![u64::MAX; capacity.div_ceil(64) as usize]);
        for (s, l) in self.free.extents() {
            in_use.set(s, l, false);
        }
        let mut state = AgedState::default();
        let (mut run, mut stale_run): (Option<Extent>, Option<Extent>) = (None, None);
        let extend = |run: &mut Option<Extent>, out: &mut Vec<Extent>, b: u64| {
            *run = match *run {
                Some((s, n)) if s + n == b => Some((s, n + 1)),
                other => {
                    out.extend(other);
                    Some((b, 1))
                }
            };
        };
        for b in 0..capacity {
            let used = in_use.get(b);
            let on = used || valid.get(b);
            state.used_blocks += used as u64;
            if on {
                extend(&mut run, &mut state.extents, b);
            }
            if on && !used {
                state.stale_blocks += 1;
                extend(&mut stale_run, &mut state.stale, b);
            }
        }
        state.extents.extend(run);
        state.stale.extend(stale_run);
        state.pages = state.extents.iter().map(|e| e.1).sum();
        state.used_share = state.used_blocks as f64 / capacity as f64;
        state
    }

    /// Write back every dirty page, commit and checkpoint, as `sync` does.
    fn sync_all(&mut self, sink: Sink) -> Result<(), FsError> {
        let slots: Vec<u32> = (0..self.files.len() as u32)
            .filter(|&s| {
                self.files[s as usize]
                    .as_ref()
                    .is_some_and(|f| !f.dirty.is_empty())
            })
            .collect();
        for s in slots {
            self.writeback(s, 0, u64::MAX, sink)?;
        }
        self.commit(sink);
        self.finish(sink)?;
        Ok(())
    }

    /// After aging: the trace starts at time 0 on an idle, freshly mounted file system.
    fn reset_clocks_and_counters(&mut self) {
        debug_assert!(self.idle(), "aging ends with a sync");
        self.t0 = None;
        self.out.now = 0;
        self.next_wb_ns = self.opts.writeback_interval_ns.max(1);
        self.next_fstrim_ns = self.opts.fstrim_interval_ns.unwrap_or(u64::MAX);
        self.untrimmed.fill(true);
        self.journal.started_ns = None;
        self.out.s = MapSummary {
            capacity_pages: self.opts.capacity_pages,
            ..Default::default()
        };
        self.events = 0;
        self.unknown_ops = 0;
        self.unsupported_falloc = 0;
        self.anonymous_writes = 0;
    }
}
