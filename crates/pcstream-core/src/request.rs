//! One host request of a block-level trace, as the simulator consumes it.
//!
//! Mirrors the Parquet columns of the block trace (design: `ts_ns op lpn pages pc file
//! file_class meta pid hint`). Absent columns are zero.

use crate::units::{Lpn, PcSig};

/// Request operation (the `op` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    Write = 0,
    Trim = 1,
    Read = 2,
    Flush = 3,
}

impl Op {
    /// Decode the `op` column; `None` for values outside 0..=3.
    pub fn from_u8(v: u8) -> Option<Op> {
        match v {
            0 => Some(Op::Write),
            1 => Some(Op::Trim),
            2 => Some(Op::Read),
            3 => Some(Op::Flush),
            _ => None,
        }
    }
}

/// Metadata class of a block write (the `meta` column).
pub mod meta {
    pub const DATA: u8 = 0;
    pub const JOURNAL: u8 = 1;
    pub const INODE: u8 = 2;
    pub const DIRECTORY: u8 = 3;
    pub const BITMAP: u8 = 4;
    pub const OTHER: u8 = 5;
}

/// A host request. `pages` ≥ 1 for writes, trims and reads; flushes carry no pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Request {
    pub ts_ns: u64,
    pub op: u8,
    pub lpn: u64,
    pub pages: u32,
    pub pc: u64,
    pub file: u32,
    pub file_class: u16,
    pub meta: u8,
    pub pid: u32,
    pub hint: u8,
}

impl Request {
    pub fn write(lpn: u64, pages: u32) -> Request {
        Request {
            op: Op::Write as u8,
            lpn,
            pages,
            ..Default::default()
        }
    }
    pub fn trim(lpn: u64, pages: u32) -> Request {
        Request {
            op: Op::Trim as u8,
            lpn,
            pages,
            ..Default::default()
        }
    }
    pub fn read(lpn: u64, pages: u32) -> Request {
        Request {
            op: Op::Read as u8,
            lpn,
            pages,
            ..Default::default()
        }
    }
    pub fn with_pc(mut self, pc: u64) -> Request {
        self.pc = pc;
        self
    }
    pub fn first(&self) -> Lpn {
        Lpn(self.lpn)
    }
    pub fn pc_sig(&self) -> PcSig {
        PcSig(self.pc)
    }
}
