//! Parameters of the file-system model ([`MapOptions`]) and their parsing from an ext4-style
//! mount-option string (`discard,commit=5,...`). Every field has a default taken from ext4, jbd2,
//! mke2fs or the Linux writeback defaults; docs/FSMODEL.md lists them.

use crate::error::TraceError;

/// Nanoseconds per second.
const NS: u64 = 1_000_000_000;

/// What the model simulates. Times are in trace nanoseconds, sizes in 4 KiB blocks unless the
/// name says bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct MapOptions {
    /// File-system size in 4 KiB blocks (= `pcstream.capacity_pages` of the output).
    pub capacity_pages: u64,
    /// `discard`: TRIM freed extents when the transaction that freed them commits.
    pub discard: bool,
    /// With `discard`: each TRIM also covers the free blocks after the freed extent, up to the
    /// next used block or the end of the group, as Linux 6.18 issues them (measured). No effect
    /// on the device (those blocks were discarded when freed); it keeps discarded byte counts
    /// comparable with real traces. `false`: exactly the freed extents.
    pub discard_free_tail: bool,
    /// `barrier`: a cache flush (op 3) before each journal commit block and after fsync.
    pub barrier: bool,
    /// `auto_da_alloc`: start writeback of a file closed after truncation to 0 or renamed over
    /// another file.
    pub auto_da_alloc: bool,
    /// jbd2 commit interval (`commit=`), 5 s.
    pub commit_interval_ns: u64,
    /// `vm.dirty_expire_centisecs`, 30 s: an inode dirty for this long is written back.
    pub dirty_expire_ns: u64,
    /// `vm.dirty_writeback_centisecs`, 5 s: period of the flusher's expiry check.
    pub writeback_interval_ns: u64,
    /// Background writeback starts when dirty data exceed this (default 10 % of `ram_bytes`,
    /// `vm.dirty_background_ratio`).
    pub dirty_bytes_limit: u64,
    /// Memory the dirty limit is a share of (informational once `dirty_bytes_limit` is set).
    pub ram_bytes: u64,
    /// Journal size in blocks; 0 = mke2fs's default for the file-system size.
    pub journal_pages: u64,
    /// Checkpoint (write metadata home, free the journal) when the journal is fuller than this.
    pub checkpoint_fraction: f64,
    /// Largest request the block layer issues, in blocks (1 MiB).
    pub max_request_pages: u32,
    /// Locality groups for small-file preallocation (mballoc keeps one per CPU).
    pub cpus: u32,
    /// mballoc `stream_req`: files smaller than this (blocks) use the locality group.
    pub stream_request_pages: u64,
    /// mballoc `group_prealloc`: size of a locality-group preallocation window (blocks).
    pub group_prealloc_pages: u64,
    /// Largest inode preallocation window (blocks; 8 MiB).
    pub max_inode_prealloc_pages: u64,
    /// Model only the file system on this device (`st_dev` as the trace records it): events
    /// about files on other devices are skipped by [`map_file_trace`](super::map_file_trace)
    /// (events without a device, such as fork and exit, are kept). `None`: every event.
    pub only_dev: Option<u64>,
    /// `fstrim=SECONDS`: every SECONDS of trace time all free space is discarded, as a periodic
    /// `fstrim` does (with `nodiscard`, the usual way). `None`: never.
    pub fstrim_interval_ns: Option<u64>,
    /// Age the file system before the trace's first event (`map --age`); `None`: a fresh one.
    pub age: Option<super::aging::AgingSpec>,
}

impl Default for MapOptions {
    fn default() -> Self {
        let ram_bytes = 8u64 << 30;
        MapOptions {
            capacity_pages: 1 << 20, // 4 GiB
            discard: true,
            discard_free_tail: true,
            barrier: true,
            auto_da_alloc: true,
            commit_interval_ns: 5 * NS,
            dirty_expire_ns: 30 * NS,
            writeback_interval_ns: 5 * NS,
            dirty_bytes_limit: ram_bytes / 10,
            ram_bytes,
            journal_pages: 0,
            checkpoint_fraction: 0.75,
            max_request_pages: 256,
            cpus: 4,
            stream_request_pages: 16,
            group_prealloc_pages: 512,
            max_inode_prealloc_pages: 2048,
            only_dev: None,
            fstrim_interval_ns: None,
            age: None,
        }
    }
}

fn opt_err(opt: &str, why: &str) -> TraceError {
    TraceError::Gen(format!("mount option '{opt}': {why}"))
}

impl MapOptions {
    /// Defaults for a file system of `capacity_pages` blocks, changed by the comma-separated
    /// mount options `opts`. Understood: `discard`, `nodiscard`, `barrier`, `nobarrier`,
    /// `barrier=0|1`, `auto_da_alloc`, `noauto_da_alloc`, `commit=SECONDS`, `fstrim=SECONDS`,
    /// `dirty_expire=SECONDS`, `writeback_interval=SECONDS`, `dirty_bytes=BYTES`,
    /// `ram=BYTES` (dirty limit 10 % of it), `journal_pages=N`, `max_request_pages=N`,
    /// `cpus=N`, and (accepted, no effect here) `data=ordered`, `noatime`, `relatime`, `rw`,
    /// `defaults`. Sizes take K/M/G suffixes (powers of 1024). Anything else is an error.
    pub fn from_mount_opts(capacity_pages: u64, opts: &str) -> Result<MapOptions, TraceError> {
        let mut o = MapOptions {
            capacity_pages,
            ..Default::default()
        };
        let mut dirty_set = false;
        for opt in opts.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, val) = match opt.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (opt, None),
            };
            match (key, val) {
                ("discard", None) => o.discard = true,
                ("nodiscard", None) => o.discard = false,
                ("barrier", None) => o.barrier = true,
                ("nobarrier", None) => o.barrier = false,
                ("barrier", Some("1")) => o.barrier = true,
                ("barrier", Some("0")) => o.barrier = false,
                ("auto_da_alloc", None) => o.auto_da_alloc = true,
                ("noauto_da_alloc", None) => o.auto_da_alloc = false,
                ("commit", v) => o.commit_interval_ns = secs(opt, v)?,
                ("fstrim", v) => o.fstrim_interval_ns = Some(secs(opt, v)?),
                ("dirty_expire", v) => o.dirty_expire_ns = secs(opt, v)?,
                ("writeback_interval", v) => o.writeback_interval_ns = secs(opt, v)?,
                ("dirty_bytes", v) => {
                    o.dirty_bytes_limit = count(opt, v)?;
                    dirty_set = true;
                }
                ("ram", v) => o.ram_bytes = count(opt, v)?,
                ("journal_pages", v) => o.journal_pages = count(opt, v)?,
                ("max_request_pages", v) => {
                    o.max_request_pages = u32::try_from(count(opt, v)?)
                        .map_err(|_| opt_err(opt, "too large; at most 4294967295"))?
                }
                ("cpus", v) => {
                    o.cpus = u32::try_from(count(opt, v)?)
                        .map_err(|_| opt_err(opt, "too large"))?
                        .min(1024)
                }
                ("data", Some("ordered"))
                | ("noatime", None)
                | ("relatime", None)
                | ("rw", None)
                | ("defaults", None) => {}
                ("data", Some(_)) => {
                    return Err(opt_err(
                        opt,
                        "only data=ordered is modelled; remove the option",
                    ))
                }
                _ => {
                    return Err(opt_err(
                        opt,
                        "unknown; use discard, nodiscard, barrier, nobarrier, auto_da_alloc, noauto_da_alloc, commit=S, dirty_expire=S, writeback_interval=S, dirty_bytes=B, ram=B, journal_pages=N, max_request_pages=N or cpus=N",
                    ))
                }
            }
        }
        if !dirty_set {
            o.dirty_bytes_limit = o.ram_bytes / 10;
        }
        Ok(o)
    }
}

/// The value of the mount option `opt` (`v`), which must have one.
fn need<'a>(opt: &str, v: Option<&'a str>) -> Result<&'a str, TraceError> {
    v.filter(|v| !v.is_empty())
        .ok_or_else(|| opt_err(opt, "needs a value, e.g. commit=5"))
}

/// The value of `opt` as a positive number of seconds, in nanoseconds.
fn secs(opt: &str, v: Option<&str>) -> Result<u64, TraceError> {
    let v = need(opt, v)?;
    let s: f64 = v
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s < 1e9)
        .ok_or_else(|| opt_err(opt, "expected a positive number of seconds"))?;
    Ok((s * NS as f64).round() as u64)
}

/// The value of `opt` as a positive count or size (K/M/G suffixes).
fn count(opt: &str, v: Option<&str>) -> Result<u64, TraceError> {
    let v = need(opt, v)?;
    parse_size(v).ok_or_else(|| opt_err(opt, "expected a positive number (K/M/G suffixes allowed)"))
}

/// "123", "64K", "8M", "2G" (powers of 1024); `None` for 0 or garbage.
fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mul) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&v[..i], 1 << 20),
        (i, 'g' | 'G') => (&v[..i], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let o = MapOptions::from_mount_opts(1000, "nodiscard, commit=2.5,ram=1G,cpus=2").unwrap();
        assert!(!o.discard);
        assert_eq!(o.commit_interval_ns, 2_500_000_000);
        assert_eq!(o.dirty_bytes_limit, (1u64 << 30) / 10);
        assert_eq!(o.cpus, 2);
        assert_eq!(o.capacity_pages, 1000);
        let o = MapOptions::from_mount_opts(1000, "").unwrap();
        assert_eq!(o, MapOptions::from_mount_opts(1000, "defaults").unwrap());
    }

    #[test]
    fn unknown_option_is_one_line() {
        let e = MapOptions::from_mount_opts(1000, "discard,journal_checksum")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("mount option 'journal_checksum': unknown"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = MapOptions::from_mount_opts(1000, "commit=-1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive number of seconds"), "{e}");
    }
}
