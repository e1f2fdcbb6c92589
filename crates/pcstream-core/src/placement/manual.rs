//! # manual — application hint → stream
//!
//! What it does: obeys the write-lifetime hint the application attached to the write: hint 0/1
//! (Linux `RWH_WRITE_LIFE_NOT_SET`/`NONE`) → stream 0, otherwise `map[hint]` (default SHORT(2) → 1,
//! MEDIUM(3) → 2, LONG(4) → 3, EXTREME(5) → 4, any other hint h → h − 1), clamped to N−1.
//! Unhinted writes may be mapped by their file class (`class_map`), the simulator's stand-in for
//! per-application recipes (e.g. RocksDB WAL → 1, L0 → 2, … as the RocksDB stream patches of the multi-stream SSD papers do).
//! Source: Kang et al., "The Multi-streamed SSD", HotStorage'14; Yang et al., ScalCom'15;
//! "ManualStream" of the PCStream and FileStream evaluations.
//! What it sees: the hint; the file class only when `class_map` is given.
//! State: two small static tables (O(#rules)); nothing per page.
//! Parameters: `map` (`hint:stream,...`, overrides entries of the default table), `class_map`
//! (`file_class:stream,...`, empty by default).
//! Deviations: the recipe is given as a parameter string rather than a TOML rule file (the core
//! does no I/O; the CLI may translate a file into `class_map`).

use std::collections::BTreeMap;

use super::{Attrs, Placement, PolicyCtx, RequestInfo, WriteInfo};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

/// Parse `key:value,key:value` into a sorted map.
pub(crate) fn parse_pairs(name: &str, v: &str) -> Result<BTreeMap<u32, u32>, SimError> {
    let mut m = BTreeMap::new();
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || SimError::BadParam(format!("{name}={v}: expected key:stream,key:stream,…"));
        let (k, s) = item.split_once(':').ok_or_else(bad)?;
        m.insert(
            k.trim().parse().map_err(|_| bad())?,
            s.trim().parse().map_err(|_| bad())?,
        );
    }
    Ok(m)
}

/// Parse `a,b,c` into a sorted list.
pub(crate) fn parse_list(name: &str, v: &str) -> Result<Vec<u32>, SimError> {
    let mut l = v
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .map_err(|_| SimError::BadParam(format!("{name}={v}: expected a,b,c")))
        })
        .collect::<Result<Vec<u32>, _>>()?;
    l.sort_unstable();
    Ok(l)
}

pub struct Manual {
    /// Stream per hint value 0..=255 (already clamped).
    by_hint: Vec<u8>,
    /// Stream per file class (unhinted writes).
    by_class: BTreeMap<u32, u8>,
    req_stream: StreamId,
}

impl Manual {
    pub fn new(ctx: &mut PolicyCtx) -> Result<Manual, SimError> {
        let map: String = ctx.param("map", String::new())?;
        let class_map: String = ctx.param("class_map", String::new())?;
        let last = ctx.host_streams.saturating_sub(1);
        let mut by_hint: Vec<u8> = (0..256u32)
            .map(|h| h.saturating_sub(1).min(last) as u8)
            .collect();
        by_hint[0] = 0;
        by_hint[1] = 0;
        for (h, s) in parse_pairs("map", &map)? {
            if h > 255 {
                return Err(SimError::BadParam(format!("map: hint {h} is not a u8")));
            }
            by_hint[h as usize] = s.min(last) as u8;
        }
        let by_class = parse_pairs("class_map", &class_map)?
            .into_iter()
            .map(|(c, s)| (c, s.min(last) as u8))
            .collect();
        Ok(Manual {
            by_hint,
            by_class,
            req_stream: StreamId(0),
        })
    }
}

impl Placement for Manual {
    fn name(&self) -> &'static str {
        "manual"
    }
    fn sees(&self) -> Attrs {
        if self.by_class.is_empty() {
            Attrs::HINT
        } else {
            Attrs::HINT.union(Attrs::FILE_CLASS)
        }
    }
    fn on_request(&mut self, req: &RequestInfo, _now: LogicalTime) {
        let s = if req.hint > 1 {
            self.by_hint[req.hint as usize]
        } else {
            self.by_class
                .get(&(req.file_class as u32))
                .copied()
                .unwrap_or(0)
        };
        self.req_stream = StreamId(s);
    }
    fn on_write(&mut self, _w: &WriteInfo, _now: LogicalTime) -> StreamId {
        self.req_stream
    }
    fn state_bytes(&self) -> usize {
        self.by_hint.len() + self.by_class.len() * 8
    }
}
