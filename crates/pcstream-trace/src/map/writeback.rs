//! Writeback of the page cache: which dirty pages reach the disk when — the periodic flusher
//! (dirty for longer than the expiry time), background writeback above the dirty threshold,
//! the free-space threshold below which ext4 stops delaying allocation, fsync — and how they are
//! written (runs of contiguous blocks with equal pc and pid, one request each). The dirty-page
//! bookkeeping itself is in [`super::pagecache`].

use super::output::DataTag;
use super::pagecache::Queued;
use super::*;

/// Pages written back between two checks for a stop request ([`crate::cancel`]).
const STOP_CHECK_PAGES: usize = 1 << 16;

impl FsModel {
    /// Write back the dirty pages of `slot` in `[from, to)`: allocate what is unmapped, write
    /// runs of contiguous blocks with equal pc and pid as one request each.
    pub(super) fn writeback(
        &mut self,
        slot: u32,
        from: u64,
        to: u64,
        sink: Sink,
    ) -> Result<(), FsError> {
        // Every writeback path (flusher, background, sync, the end) goes through here.
        self.check_stop()?;
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
    pub(super) fn write_pages(
        &mut self,
        f: &mut File,
        pages: &[(u64, DirtyPage)],
        sink: Sink,
    ) -> Result<bool, FsError> {
        let mut changed = false;
        // Pending request: (lpn, pages, who).
        let mut pend: Option<(u64, u64, DirtyPage)> = None;
        // The hint the inode holds now, at writeback, is what the data carries to the device (as
        // ext4 copies the inode's write-life hint into each bio it submits).
        let tag = DataTag {
            file: f.out_id,
            class: f.class,
            hint: f.hint,
        };
        let mut i = 0;
        let mut next_check = STOP_CHECK_PAGES;
        while i < pages.len() {
            // One writeback of a large page cache is millions of pages: a second or more.
            if i >= next_check {
                self.check_stop()?;
                next_check = i + STOP_CHECK_PAGES;
            }
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
                            self.out.data(sink, s, n, w, tag);
                        }
                        pend = Some((b, 1, who));
                    }
                }
            }
            i += k as usize;
        }
        if let Some((s, n, w)) = pend {
            self.out.data(sink, s, n, w, tag);
        }
        Ok(changed)
    }

    pub(super) fn live(&self, q: Queued) -> bool {
        self.gens.get(q.slot as usize) == Some(&q.gen)
            && self.files[q.slot as usize]
                .as_ref()
                .is_some_and(|f| f.dirtied_ns == Some(q.dirtied_ns))
    }

    /// The flusher's periodic pass at `now`: inodes dirty for the expiry time are written back,
    /// then expired metadata.
    pub(super) fn writeback_tick(&mut self, now: u64, sink: Sink) -> Result<(), FsError> {
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
    pub(super) fn background(&mut self, sink: Sink) -> Result<(), FsError> {
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
    pub(super) fn free_space_writeback(&mut self, sink: Sink) -> Result<(), FsError> {
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
    /// A group had blocks freed: the next periodic trim covers its free space.
    pub(super) fn mark_untrimmed(&mut self, block: u64) {
        let g = self.layout.group_of(block) as usize;
        self.untrimmed[g] = true;
    }

    /// `fstrim`: discard every free extent of the groups that freed blocks since the last trim.
    pub(super) fn fstrim(&mut self, sink: Sink) {
        let groups: Vec<u32> = (0..self.layout.groups)
            .filter(|&g| std::mem::take(&mut self.untrimmed[g as usize]))
            .collect();
        for g in groups {
            let (start, end) = (self.layout.group_start(g), self.layout.group_end(g));
            let runs: Vec<(u64, u64)> = self.free.extents_in(start, end).collect();
            for (s, l) in runs {
                self.out.trim(sink, s, l, 0, 0);
            }
        }
    }

    pub(super) fn advance(&mut self, t: u64, sink: Sink) -> Result<(), FsError> {
        let iv = self.opts.writeback_interval_ns.max(1);
        loop {
            self.check_stop()?;
            if self.queue.is_empty() && !self.journal.home_dirty() && self.next_wb_ns < t {
                // Nothing for the flusher: skip idle ticks.
                self.next_wb_ns = self.next_wb_ns.max(t - t % iv);
            }
            let commit_at = self
                .journal
                .started_ns
                .map_or(u64::MAX, |s| s.saturating_add(self.opts.commit_interval_ns));
            let next = self.next_wb_ns.min(commit_at).min(self.next_fstrim_ns);
            if next > t {
                return Ok(());
            }
            self.out.now = next;
            if self.next_fstrim_ns < self.next_wb_ns.min(commit_at) {
                self.fstrim(sink);
                let iv = self.opts.fstrim_interval_ns.unwrap_or(u64::MAX);
                self.next_fstrim_ns = self.next_fstrim_ns.saturating_add(iv);
            } else if self.next_wb_ns <= commit_at {
                self.writeback_tick(next, sink)?;
                self.next_wb_ns += iv;
            } else {
                self.commit(sink);
            }
        }
    }
}
