//! Applying one file-level event to the model: the dispatch on the event's op, its checks, and
//! the handlers of writes, opens, syncs, fallocate, renames, fork, exec and exit.

use pcstream_core::request::Request;

use super::pagecache::Queued;
use super::*;
use crate::filetrace::flags::{HINT_INVALID, VIA_DIRECT};
use crate::filetrace::{FileEvent, FileOp};

impl FsModel {
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
            // A hint the kernel refused still says what the program meant (the level it asked
            // for); one without a level is ignored.
            FileOp::SetHint if ev.flags & HINT_INVALID != 0 => {}
            FileOp::SetHint => {
                if let Some(s) = self.lookup(ev, true) {
                    let f = self.files[s as usize].as_mut().expect("live file");
                    // Linux's hints are 0 (NOT_SET) to 5 (EXTREME); larger values are refused.
                    f.hint = ev.offset.min(MAX_RW_HINT) as u8;
                }
            }
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
    pub(super) fn fork(&mut self, parent: u32, child: u32, sink: Sink) -> Result<(), FsError> {
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
    pub(super) fn exec_or_exit(&mut self, pid: u32, exit: bool, sink: Sink) -> Result<(), FsError> {
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
    pub(super) fn check(&self, ev: &FileEvent) -> Result<(), FsError> {
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

    pub(super) fn on_write(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
        let Some(slot) = self.file_for(ev, sink)? else {
            self.anonymous_writes += 1;
            return Ok(());
        };
        if self.is_direct(ev) {
            return self.direct_write(slot, ev, sink);
        }
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
            self.out.s.absorbed_writes += (end - first) - added;
            self.out.s.dirtied_pages += added;
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

    /// Was `ev` written with `O_DIRECT`? The capture says so on the write (the description's
    /// flags at the call, `F_SETFL` included); a trace without that bit still has the open flags
    /// of the descriptor.
    fn is_direct(&self, ev: &FileEvent) -> bool {
        ev.flags & VIA_DIRECT != 0
            || self.direct_opened
                && self
                    .procs
                    .get(&ev.pid)
                    .and_then(|m| m.get(&ev.fd))
                    .is_some_and(|e| e.direct)
    }

    /// An `O_DIRECT` write, as Linux's direct I/O path does it: the dirty cached pages in its
    /// range are written back first (`filemap_write_and_wait_range`, with the PC that dirtied
    /// them), the range is then invalidated in the page cache (the model keeps no clean pages,
    /// so nothing is left of it), and the data go to the device at the time of the call with
    /// this write's PC. No writeback follows: the pages were never dirty. Blocks of holes are
    /// allocated at the call, as ext4 does for direct I/O.
    fn direct_write(&mut self, slot: u32, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
        if ev.len > 0 {
            let first = ev.offset / BLOCK;
            let end = (ev.offset + ev.len).div_ceil(BLOCK);
            self.writeback(slot, first, end, sink)?;
            let who = DirtyPage {
                pc: ev.pc,
                pid: ev.pid,
            };
            let mut f = self.files[slot as usize].take().expect("live file");
            f.size = f.size.max(ev.offset + ev.len);
            f.last_pid = ev.pid;
            let mut pages = std::mem::take(&mut self.scratch);
            pages.clear();
            pages.extend((first..end).map(|l| (l, who)));
            let res = self.write_pages(&mut f, &pages, sink);
            self.scratch = pages;
            self.files[slot as usize] = Some(f);
            self.out.s.direct_pages += end - first;
            // Blocks allocated or converted: fdatasync must commit that too.
            let changed = res?;
            self.touch_inode(slot, changed);
            return Ok(());
        }
        self.touch_inode(slot, false);
        Ok(())
    }

    pub(super) fn on_open(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
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
        let fd = Fd {
            slot,
            cloexec: ev.flags & O_CLOEXEC != 0,
            direct: ev.flags & O_DIRECT != 0,
        };
        self.direct_opened |= fd.direct;
        self.fd_open(ev.pid, ev.fd, fd, sink)
    }

    pub(super) fn on_fsync(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
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

    pub(super) fn on_fallocate(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
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

    pub(super) fn on_rename(&mut self, ev: &FileEvent, sink: Sink) -> Result<(), FsError> {
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
}
