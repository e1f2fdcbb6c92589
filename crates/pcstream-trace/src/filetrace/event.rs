//! The event model of file-level traces: one [`FileEvent`] per row, its operation a [`FileOp`].
//! The record stage produces these events (from shim logs), the map stage consumes them (the
//! file-system model), and the file-trace reader and writer turn them into Parquet rows and back.

/// Operation of a file-level event (the `op` column). Codes are those of `enum pcshim_op`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FileOp {
    #[default]
    Open = 1,
    Write = 2,
    Fsync = 3,
    Fdatasync = 4,
    SyncRange = 5,
    Truncate = 6,
    PunchHole = 7,
    Fallocate = 8,
    Unlink = 9,
    Rename = 10,
    Close = 11,
    Fork = 12,
    Exec = 13,
    Exit = 14,
    /// posix_spawn in the parent (`offset` = the child's pid).
    Spawn = 15,
    /// The program set the file's write-life hint (`fcntl(F_SET_RW_HINT)`; `offset` = the hint,
    /// 0 NOT_SET … 5 EXTREME).
    SetHint = 16,
    /// A well-formed op name this version does not know (the format allows new ones).
    Unknown = 255,
}

impl FileOp {
    const ALL: [FileOp; 16] = [
        FileOp::Open,
        FileOp::Write,
        FileOp::Fsync,
        FileOp::Fdatasync,
        FileOp::SyncRange,
        FileOp::Truncate,
        FileOp::PunchHole,
        FileOp::Fallocate,
        FileOp::Unlink,
        FileOp::Rename,
        FileOp::Close,
        FileOp::Fork,
        FileOp::Exec,
        FileOp::Exit,
        FileOp::Spawn,
        FileOp::SetHint,
    ];

    /// The op of a shim record code, if known.
    pub fn from_code(code: u16) -> Option<FileOp> {
        FileOp::ALL.iter().copied().find(|o| *o as u16 == code)
    }

    /// The op named `name` (the strings of the `op` column), if known.
    pub fn from_name(name: &str) -> Option<FileOp> {
        // Match on the bytes: this runs once per row when the column is not dictionary-encoded.
        Some(match name {
            "open" => FileOp::Open,
            "write" => FileOp::Write,
            "fsync" => FileOp::Fsync,
            "fdatasync" => FileOp::Fdatasync,
            "sync_range" => FileOp::SyncRange,
            "truncate" => FileOp::Truncate,
            "punch_hole" => FileOp::PunchHole,
            "fallocate" => FileOp::Fallocate,
            "unlink" => FileOp::Unlink,
            "rename" => FileOp::Rename,
            "close" => FileOp::Close,
            "fork" => FileOp::Fork,
            "exec" => FileOp::Exec,
            "exit" => FileOp::Exit,
            "spawn" => FileOp::Spawn,
            "set_hint" => FileOp::SetHint,
            _ => return None,
        })
    }

    /// The name written in the `op` column ("unknown" for [`FileOp::Unknown`]).
    pub fn name(self) -> &'static str {
        match self {
            FileOp::Open => "open",
            FileOp::Write => "write",
            FileOp::Fsync => "fsync",
            FileOp::Fdatasync => "fdatasync",
            FileOp::SyncRange => "sync_range",
            FileOp::Truncate => "truncate",
            FileOp::PunchHole => "punch_hole",
            FileOp::Fallocate => "fallocate",
            FileOp::Unlink => "unlink",
            FileOp::Rename => "rename",
            FileOp::Close => "close",
            FileOp::Fork => "fork",
            FileOp::Exec => "exec",
            FileOp::Exit => "exit",
            FileOp::Spawn => "spawn",
            FileOp::SetHint => "set_hint",
            FileOp::Unknown => "unknown",
        }
    }
}

/// One row of a file-level trace. Field meanings follow `shim/include/pcshim.h`; `path` and
/// `path2` are ids in the `pcstream.paths` table (0 = none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileEvent {
    pub ts_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub op: FileOp,
    pub fd: i32,
    pub dev: u64,
    pub ino: u64,
    pub offset: u64,
    pub len: u64,
    pub pc: u64,
    pub flags: u32,
    pub path: u32,
    pub path2: u32,
}
