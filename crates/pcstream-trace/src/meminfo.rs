//! The memory this process may use, and the check made before a large allocation.
//!
//! Available = `MemAvailable` of /proc/meminfo, or what the process's cgroup still allows
//! (cgroup v2 `memory.max − memory.current`, v1 `memory.limit_in_bytes − memory.usage_in_bytes`)
//! when that is lower. `PCSTREAM_MEM_AVAILABLE` (bytes) overrides both, for tests and for users
//! who know better. When nothing can be read (not Linux) the check passes.

use std::path::Path;

use pcstream_core::ftl::page_map::PageLayout;
use pcstream_core::state_size::Estimate;
use pcstream_core::{ConfigError, SsdConfig};

/// Environment variable that overrides the memory available (bytes).
pub const ENV_MEM_AVAILABLE: &str = "PCSTREAM_MEM_AVAILABLE";

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn meminfo_available() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// What the process's cgroup still allows, if it has a limit.
fn cgroup_available() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut best: Option<u64> = None;
    for line in own.lines() {
        // "0::/path" (v2) or "N:memory:/path" (v1).
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, rel) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = rel.trim_start_matches('/');
        let room = if ctrl.is_empty() {
            let dir = Path::new("/sys/fs/cgroup").join(rel);
            let max = read_u64(&dir.join("memory.max"))?; // "max": no limit, not a number
            max.saturating_sub(read_u64(&dir.join("memory.current")).unwrap_or(0))
        } else if ctrl.split(',').any(|c| c == "memory") {
            let dir = Path::new("/sys/fs/cgroup/memory").join(rel);
            let max = read_u64(&dir.join("memory.limit_in_bytes"))?;
            if max >= 1 << 60 {
                continue; // v1's "no limit" is a huge number
            }
            max.saturating_sub(read_u64(&dir.join("memory.usage_in_bytes")).unwrap_or(0))
        } else {
            continue;
        };
        best = Some(best.map_or(room, |b| b.min(room)));
    }
    best
}

/// Bytes this process may still allocate, and where the figure comes from; `None` if unknown.
pub fn available() -> Option<(u64, &'static str)> {
    if let Some(v) = std::env::var(ENV_MEM_AVAILABLE)
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return Some((v, ENV_MEM_AVAILABLE));
    }
    match (meminfo_available(), cgroup_available()) {
        (Some(m), Some(c)) if c < m => Some((c, "the cgroup's memory limit")),
        (Some(m), _) => Some((m, "MemAvailable")),
        (None, Some(c)) => Some((c, "the cgroup's memory limit")),
        (None, None) => None,
    }
}

/// `n` bytes as GiB with two decimals.
pub fn gib(n: u64) -> String {
    format!("{:.2} GiB", n as f64 / (1u64 << 30) as f64)
}

/// Refuse `need` bytes (for `what`, with `detail` in parentheses) when more than the memory
/// available; the message has both figures and what to do.
pub fn check(need: u64, what: &str, detail: &str, fix: &str) -> Result<(), String> {
    match available() {
        Some((have, from)) if need > have => Err(format!(
            "{what} needs about {} of memory ({detail}) but {} are available ({from}); {fix}",
            gib(need),
            gib(have)
        )),
        _ => Ok(()),
    }
}

/// Check the engine state of `cfg` with the per-page `layout` of the run and `policy_bytes` of
/// policy state against the memory available: a [`ConfigError::Memory`] naming the device and
/// the figures.
pub fn check_engine(
    cfg: &SsdConfig,
    layout: &PageLayout,
    policy_bytes: u64,
) -> Result<Estimate, ConfigError> {
    let e = pcstream_core::state_size::estimate(cfg, layout, policy_bytes);
    check(
        e.total(),
        &format!(
            "SSD '{}' ({} physical pages, {} logical)",
            cfg.name,
            cfg.physical_pages(),
            cfg.logical_pages()
        ),
        &e.breakdown(),
        "use a smaller geometry (blocks_per_die, pages_per_block) or a machine with more memory",
    )
    .map_err(ConfigError::Memory)?;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_has_some_memory() {
        let (n, from) = available().expect("Linux has /proc/meminfo");
        assert!(n > 0, "{from}");
        assert!(check(1, "x", "y", "z").is_ok());
        let e = check(u64::MAX, "a trace", "bitmap", "use less").unwrap_err();
        assert!(
            e.starts_with("a trace needs about") && e.contains("are available"),
            "{e}"
        );
    }
}
