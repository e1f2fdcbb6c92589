//! Write-lifetime hints the kernel refused. The shim records the level a program meant when its
//! `fcntl(F_SET_RW_HINT)` fails (a `set_hint` row with flag [`HINT_REFUSED`]) and writes one
//! `W hint refused: <errno> <kind> <program>` line per such call; this module counts those lines
//! per program and errno and says, once per program, what happened.
//!
//! [`HINT_REFUSED`]: crate::filetrace::flags::HINT_REFUSED

use std::collections::BTreeMap;
use std::path::Path;

/// Start of the shim's line for a refused hint: `hint refused: <errno> <kind> <program>`.
pub const HINT_REFUSED_WARNING: &str = "hint refused: ";

/// How the level was read from the refused argument (the shim's `<kind>` word).
const KIND_LEVEL: &str = "level"; // the u64 is a level; the kernel refused it for another reason
const KIND_LOW32: &str = "low32"; // a 4-byte level with other bytes above it (Linux reads 8)
const KIND_INVALID: &str = "invalid"; // no level in it: ignored by map

/// Counts of one (program, errno).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    calls: u64,
    low32: u64,
    invalid: u64,
}

/// Refused hints per (program, errno).
#[derive(Debug, Default)]
pub struct RefusedHints {
    by: BTreeMap<(String, i32), Counts>,
}

impl RefusedHints {
    /// Take the text after [`HINT_REFUSED_WARNING`]; false when it is malformed (kept as a
    /// plain warning then).
    pub fn take(&mut self, rest: &str) -> bool {
        let mut it = rest.splitn(3, ' ');
        let (Some(errno), Some(kind), Some(program)) = (it.next(), it.next(), it.next()) else {
            return false;
        };
        let Ok(errno) = errno.parse::<i32>() else {
            return false;
        };
        let (low32, invalid) = match kind {
            KIND_LEVEL => (0, 0),
            KIND_LOW32 => (1, 0),
            KIND_INVALID => (0, 1),
            _ => return false,
        };
        let c = self.by.entry((program.to_string(), errno)).or_default();
        c.calls += 1;
        c.low32 += low32;
        c.invalid += invalid;
        true
    }

    /// Refused calls in all.
    pub fn calls(&self) -> u64 {
        self.by.values().map(|c| c.calls).sum()
    }

    /// One line per (program, errno).
    pub fn warnings(&self) -> Vec<String> {
        self.by
            .iter()
            .map(|((program, errno), c)| {
                let name = Path::new(program)
                    .file_name()
                    .map_or(program.as_str(), |n| n.to_str().unwrap_or(program));
                let why = if c.low32 > 0 {
                    format!("{}: a 4-byte value where Linux reads 8", errno_name(*errno))
                } else {
                    errno_name(*errno)
                };
                let mut line = format!(
                    "{name} set {} write-lifetime hint(s) the kernel refused ({why}); \
                     the trace keeps the levels it meant (ManualStream uses them)",
                    c.calls
                );
                if c.invalid > 0 {
                    line.push_str(&format!(
                        "; {} carried no valid level and are ignored",
                        c.invalid
                    ));
                }
                line
            })
            .collect()
    }
}

/// The symbolic name of the errno values `fcntl(F_SET_RW_HINT)` returns.
fn errno_name(e: i32) -> String {
    match e {
        1 => "EPERM".into(),
        9 => "EBADF".into(),
        22 => "EINVAL".into(),
        95 => "EOPNOTSUPP".into(),
        _ => format!("errno {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_program_and_errno() {
        let mut r = RefusedHints::default();
        for kind in ["low32", "low32", "level", "invalid"] {
            assert!(r.take(&format!("22 {kind} /usr/bin/db_bench")));
        }
        assert!(r.take("9 level /opt/x y"));
        assert!(!r.take("x level /p"));
        assert!(!r.take("22 odd /p"));
        assert!(!r.take("22"));
        assert_eq!(r.calls(), 5);
        assert_eq!(
            r.warnings(),
            vec![
                "x y set 1 write-lifetime hint(s) the kernel refused (EBADF); the trace keeps the \
                 levels it meant (ManualStream uses them)"
                    .to_string(),
                "db_bench set 4 write-lifetime hint(s) the kernel refused (EINVAL: a 4-byte value \
                 where Linux reads 8); the trace keeps the levels it meant (ManualStream uses \
                 them); 1 carried no valid level and are ignored"
                    .to_string(),
            ]
        );
    }
}
