//! On-disk layout of the modelled ext4 file system, fixed at construction as mke2fs would make
//! it with its defaults (4 KiB blocks, 32768 blocks and 8192 inodes of 256 bytes per block group,
//! `flex_bg` of 16 groups, `sparse_super`): where the superblock and group descriptors, the block
//! and inode bitmaps and the inode tables lie, and the journal size. The journal's blocks are
//! allocated by the model (see `mod.rs`) in the middle of the file system as mke2fs places them.

use pcstream_core::units::Lpn;

/// Blocks per block group (4 KiB blocks: 8 × 4096 bits of block bitmap).
pub const BLOCKS_PER_GROUP: u64 = 32_768;
/// Inodes per group (mke2fs `inode_ratio` 16 KiB: one inode per 4 blocks).
pub const INODES_PER_GROUP: u32 = 8192;
/// 256-byte inodes: 16 per block.
pub const INODES_PER_BLOCK: u32 = 16;
/// Inode-table blocks per group.
pub const ITABLE_BLOCKS: u64 = (INODES_PER_GROUP / INODES_PER_BLOCK) as u64;
/// Groups whose metadata is packed together (`flex_bg` size).
pub const FLEX_GROUPS: u32 = 16;
/// 64-byte group descriptors: 64 per block.
pub const DESCRIPTORS_PER_BLOCK: u64 = 64;
/// Smallest file system the model accepts (32 MiB).
pub const MIN_BLOCKS: u64 = 8192;
/// Largest file system the model accepts (16 TiB: ext4 without the 64bit feature).
pub const MAX_BLOCKS: u64 = 1 << 32;
/// The first inodes of group 0 are reserved (1..=11: bad blocks, root, journal, lost+found, ...).
pub const FIRST_INO: u32 = 12;
/// Inode number of the root directory.
pub const ROOT_INO: u32 = 2;

/// The fixed layout; see the module documentation.
#[derive(Clone, Debug)]
pub struct Layout {
    pub blocks: u64,
    pub groups: u32,
    /// Primary group-descriptor table blocks (after the superblock in group 0).
    pub gdt_blocks: u64,
    /// Blocks kept after the descriptors for on-line growth (mke2fs: room for 1024× growth).
    pub reserved_gdt_blocks: u64,
    pub journal_blocks: u64,
    block_bitmap: Vec<u64>,
    inode_bitmap: Vec<u64>,
    inode_table: Vec<u64>,
    /// Blocks no file may use (superblock copies, descriptors, bitmaps, inode tables), sorted.
    pub reserved: Vec<(u64, u64)>,
}

/// Does group `g` hold a superblock copy (`sparse_super`: 0, 1 and powers of 3, 5, 7)?
pub fn has_super(g: u32) -> bool {
    if g <= 1 {
        return true;
    }
    [3u32, 5, 7].iter().any(|&b| {
        let mut p = b;
        while p < g {
            p = match p.checked_mul(b) {
                Some(n) => n,
                None => return false,
            };
        }
        p == g
    })
}

/// mke2fs's default journal size (blocks) for a file system of `blocks` 4 KiB blocks.
pub fn default_journal_blocks(blocks: u64) -> u64 {
    const K: u64 = 1024;
    match blocks {
        b if b < 2048 => 0,
        b if b < 32 * K => 1024,
        b if b < 256 * K => 4096,
        b if b < 512 * K => 8192,
        b if b < 4096 * K => 16_384,
        b if b < 8192 * K => 32_768,
        b if b < 16_384 * K => 65_536,
        b if b < 32_768 * K => 131_072,
        _ => 262_144,
    }
}

impl Layout {
    /// The layout of a `blocks`-block file system with a journal of `journal_blocks` (0: the
    /// mke2fs default). Errors (one line) when it is too small to hold its own metadata.
    pub fn new(blocks: u64, journal_blocks: u64) -> Result<Layout, String> {
        if blocks < MIN_BLOCKS {
            return Err(format!(
                "a file system of {blocks} blocks is too small to model (at least {MIN_BLOCKS} blocks of 4 KiB, 32 MiB); raise --capacity"
            ));
        }
        if blocks > MAX_BLOCKS {
            return Err(format!(
                "a file system of {blocks} blocks is larger than the model handles ({MAX_BLOCKS} blocks of 4 KiB, 16 TiB); lower --capacity"
            ));
        }
        let groups = blocks.div_ceil(BLOCKS_PER_GROUP) as u32;
        let gdt_blocks = (groups as u64).div_ceil(DESCRIPTORS_PER_BLOCK);
        let growth_groups = (blocks.saturating_mul(1024)).min(1 << 32) / BLOCKS_PER_GROUP;
        let reserved_gdt_blocks = growth_groups
            .div_ceil(DESCRIPTORS_PER_BLOCK)
            .saturating_sub(gdt_blocks)
            .min(1024);
        let journal_blocks = if journal_blocks == 0 {
            default_journal_blocks(blocks)
        } else {
            journal_blocks
        };
        if journal_blocks < 1024 {
            return Err(format!(
                "a journal of {journal_blocks} blocks is smaller than jbd2 allows (1024); use journal_pages=1024 or more, or 0 for the default"
            ));
        }
        let mut l = Layout {
            blocks,
            groups,
            gdt_blocks,
            reserved_gdt_blocks,
            journal_blocks,
            block_bitmap: vec![0; groups as usize],
            inode_bitmap: vec![0; groups as usize],
            inode_table: vec![0; groups as usize],
            reserved: Vec::new(),
        };
        let sb_area = 1 + gdt_blocks + reserved_gdt_blocks;
        for g in 0..groups {
            let start = g as u64 * BLOCKS_PER_GROUP;
            let mut at = start;
            if has_super(g) {
                l.reserved.push((start, sb_area));
                at += sb_area;
            }
            if g % FLEX_GROUPS == 0 {
                let members = (g..groups.min(g + FLEX_GROUPS)).collect::<Vec<_>>();
                let meta = members.len() as u64 * (2 + ITABLE_BLOCKS);
                l.reserved.push((at, meta));
                for (i, &m) in members.iter().enumerate() {
                    l.block_bitmap[m as usize] = at + i as u64;
                    l.inode_bitmap[m as usize] = at + members.len() as u64 + i as u64;
                    l.inode_table[m as usize] =
                        at + 2 * members.len() as u64 + i as u64 * ITABLE_BLOCKS;
                }
                at += meta;
            }
            let end = (start + BLOCKS_PER_GROUP).min(blocks);
            if at > end {
                return Err(format!(
                    "a file system of {blocks} blocks cannot hold the metadata of its last block group; raise --capacity to a multiple of {BLOCKS_PER_GROUP} blocks"
                ));
            }
        }
        let meta: u64 = l.reserved.iter().map(|r| r.1).sum();
        if meta + journal_blocks + 64 > blocks {
            return Err(format!(
                "a file system of {blocks} blocks has no room for data after its metadata and a {journal_blocks}-block journal; raise --capacity"
            ));
        }
        Ok(l)
    }

    /// Block group of block `b`.
    #[inline]
    pub fn group_of(&self, b: u64) -> u32 {
        (b / BLOCKS_PER_GROUP) as u32
    }
    /// First block of group `g`.
    #[inline]
    pub fn group_start(&self, g: u32) -> u64 {
        g as u64 * BLOCKS_PER_GROUP
    }
    /// One past the last block of group `g`.
    #[inline]
    pub fn group_end(&self, g: u32) -> u64 {
        (self.group_start(g) + BLOCKS_PER_GROUP).min(self.blocks)
    }
    pub fn superblock(&self) -> Lpn {
        Lpn(0)
    }
    /// The primary descriptor block that holds group `g`'s descriptor.
    pub fn descriptor_block(&self, g: u32) -> Lpn {
        Lpn(1 + g as u64 / DESCRIPTORS_PER_BLOCK)
    }
    pub fn block_bitmap(&self, g: u32) -> Lpn {
        Lpn(self.block_bitmap[g as usize])
    }
    pub fn inode_bitmap(&self, g: u32) -> Lpn {
        Lpn(self.inode_bitmap[g as usize])
    }
    /// Group of inode number `ino` (from 1).
    pub fn inode_group(&self, ino: u32) -> u32 {
        (ino - 1) / INODES_PER_GROUP
    }
    /// The inode-table block that holds inode `ino`.
    pub fn inode_block(&self, ino: u32) -> Lpn {
        let g = self.inode_group(ino);
        let idx = (ino - 1) % INODES_PER_GROUP;
        Lpn(self.inode_table[g as usize] + (idx / INODES_PER_BLOCK) as u64)
    }
    /// Number of inodes.
    pub fn inodes(&self) -> u64 {
        self.groups as u64 * INODES_PER_GROUP as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_super_groups() {
        let with: Vec<u32> = (0..100).filter(|&g| has_super(g)).collect();
        assert_eq!(with, vec![0, 1, 3, 5, 7, 9, 25, 27, 49, 81]);
    }

    #[test]
    fn one_gib_layout() {
        let l = Layout::new(262_144, 0).unwrap();
        assert_eq!(l.groups, 8);
        assert_eq!(l.gdt_blocks, 1);
        assert_eq!(l.reserved_gdt_blocks, 127);
        assert_eq!(l.journal_blocks, 8192);
        // flex group 0: bitmaps of the 8 groups, then their inode tables
        assert_eq!(l.block_bitmap(0), Lpn(129));
        assert_eq!(l.inode_bitmap(0), Lpn(137));
        assert_eq!(l.inode_block(1).0, 145);
        assert_eq!(l.inode_block(8193).0, 145 + 512);
        assert!(Layout::new(4000, 0)
            .unwrap_err()
            .contains("raise --capacity"));
    }
}
