//! The `flags` column of a file-level trace's write rows: how the bytes reached the file. The
//! bits are those of the shim's `enum pcshim_write_via` (the record stage copies them from its
//! logs); they belong to the format, so readers of a trace need nothing of the record stage.

pub const VIA_STDIO: u32 = 1 << 0;
pub const VIA_MSYNC: u32 = 1 << 1;
pub const VIA_AIO: u32 = 1 << 2;
pub const VIA_COPY: u32 = 1 << 3;
pub const VIA_SENDFILE: u32 = 1 << 4;
pub const VIA_SPLICE: u32 = 1 << 5;
pub const VIA_SYSCALL: u32 = 1 << 6;
/// Bytes the safety net found at close/exit (file position or size beyond what was recorded).
pub const VIA_RECOVERED: u32 = 1 << 7;
/// With [`VIA_STDIO`]: bytes that entered a stdio buffer through inline macros, accounted at the
/// next flush point.
pub const VIA_STDIO_INLINE: u32 = 1 << 8;
/// The file description had `O_DIRECT` when the write was made: the bytes went to the device at
/// the call, not through the page cache.
pub const VIA_DIRECT: u32 = 1 << 9;
/// An io_uring write at its submission (the BPF capture); `len` = the bytes asked for.
pub const VIA_URING: u32 = 1 << 10;

// The `flags` column of `set_hint` rows (the shim's `enum pcshim_hint_flags`). The row's `offset`
// is the level the program asked for (0..5), `len` the raw 64-bit argument when refused.

/// The kernel refused the hint (the program's `fcntl` failed); `offset` is still the level the
/// program meant: the argument if it is a level, else its low 32 bits if they are one (a 4-byte
/// value passed where Linux reads 8).
pub const HINT_REFUSED: u32 = 1 << 0;
/// With [`HINT_REFUSED`]: no level could be read from the argument; `map` ignores the row.
pub const HINT_INVALID: u32 = 1 << 1;
