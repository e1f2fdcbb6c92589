//! The policy registry: one line per policy (name, summary, constructor).

use super::{baseline::Baseline, hotcold::HotCold, oracle::Oracle, Placement, PolicyCtx};
use crate::error::SimError;

pub struct PolicyEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub build: fn(&mut PolicyCtx) -> Result<Box<dyn Placement>, SimError>,
}

pub const POLICIES: &[PolicyEntry] = &[
    PolicyEntry {
        name: "baseline",
        summary: "one stream for everything (a legacy SSD); GC copies share the write point",
        build: |_| Ok(Box::new(Baseline)),
    },
    PolicyEntry {
        name: "hotcold",
        summary:
            "FTL write-count threshold: LPNs written >= threshold (5) times go to a hot stream",
        build: |c| Ok(Box::new(HotCold::new(c)?)),
    },
    PolicyEntry {
        name: "oracle",
        summary: "future knowledge: places every write by its remaining lifetime (lower bound)",
        build: |c| Ok(Box::new(Oracle::new(c)?)),
    },
];

pub fn names() -> Vec<&'static str> {
    POLICIES.iter().map(|p| p.name).collect()
}

/// Build a policy by name; every `--param` must be consumed by it (or by the simulator).
pub fn build(name: &str, ctx: &mut PolicyCtx) -> Result<Box<dyn Placement>, SimError> {
    let entry = POLICIES
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| SimError::UnknownPolicy(name.to_string(), names().join(", ")))?;
    let policy = (entry.build)(ctx)?;
    if let Some(k) = ctx.params.keys().next() {
        return Err(SimError::BadParam(format!(
            "policy {name} has no parameter '{k}'"
        )));
    }
    Ok(policy)
}
