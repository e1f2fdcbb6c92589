//! Files and names: paths and directories (entries in directory blocks, made on first use),
//! inode incarnations (create, unlink, delete when the last name and descriptor are gone,
//! truncate, punch), open descriptors per process, and the lookup of the file an event is about.

use pcstream_core::request::meta;

use super::extent::tree_blocks;
use super::*;
use crate::filetrace::FileEvent;

impl FsModel {
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
            free: vec![BLOCK as u16 - DIR_HEAD_BYTES],
        });
        self.dir_index.insert(path.to_string(), d);
        d
    }

    pub(super) fn path_info(&self, path: u32) -> PathInfo {
        self.paths.get(&path).copied().unwrap_or(PathInfo {
            dir: 0,
            name_len: 16,
            class: classes::OTHER,
            hash: path,
        })
    }

    /// Add a name to directory `dir`; the block chosen by the name's hash once the directory
    /// has more than one block (htree leaves), a new block when it is full.
    pub(super) fn dir_add(&mut self, info: PathInfo, sink: Sink) -> Result<Entry, FsError> {
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
            let used = BLOCK as u16 - self.dirs[d].free[b];
            let moved = used / 2;
            self.dirs[d].free[b] += moved;
            self.dirs[d].blocks.push(nbk);
            self.dirs[d].free.push(BLOCK as u16 - moved);
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

    pub(super) fn dir_remove(&mut self, e: Entry) {
        let d = e.dir as usize;
        let b = e.block as usize;
        self.dirs[d].free[b] = (self.dirs[d].free[b] + e.rec).min(BLOCK as u16);
        self.jadd(self.dirs[d].blocks[b], meta::DIRECTORY);
        let dino = self.dirs[d].ino;
        self.jadd(self.layout.inode_block(dino).0, meta::INODE);
    }

    /// A new inode incarnation for `key`/`path`. `created`: made by this event (journalled);
    /// otherwise it existed before the trace (materialised without I/O, no known blocks).
    pub(super) fn new_file(
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

    pub(super) fn new_file_inner(
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
            hint: 0,
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
    pub(super) fn unname(&mut self, slot: u32, sink: Sink) {
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
    pub(super) fn delete(&mut self, slot: u32, _sink: Sink) {
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
    pub(super) fn truncate(&mut self, slot: u32, size: u64) {
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
    pub(super) fn punch(&mut self, slot: u32, from: u64, to: u64) {
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

    pub(super) fn fd_open(&mut self, pid: u32, fd: i32, e: Fd, sink: Sink) -> Result<(), FsError> {
        if fd < 0 {
            return Ok(());
        }
        let slot = e.slot;
        let old = self.procs.entry(pid).or_default().insert(fd, e);
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
    pub(super) fn release_fd(&mut self, slot: u32, sink: Sink) -> Result<(), FsError> {
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

    pub(super) fn close_fd(&mut self, pid: u32, fd: i32, sink: Sink) -> Result<(), FsError> {
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
    pub(super) fn lookup(&mut self, ev: &FileEvent, use_fd: bool) -> Option<u32> {
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
    pub(super) fn file_for(&mut self, ev: &FileEvent, sink: Sink) -> Result<Option<u32>, FsError> {
        if let Some(s) = self.lookup(ev, true) {
            return Ok(Some(s));
        }
        if ev.ino == 0 && ev.path == 0 {
            return Ok(None);
        }
        let key = (ev.ino != 0).then_some((ev.dev, ev.ino));
        self.new_file(key, ev.path, ev.pid, false, sink).map(Some)
    }
}
