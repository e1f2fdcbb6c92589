//! The policy registry: one line per policy (name, summary, constructor).

use super::{
    autostream_mq::AutoStreamMq, autostream_sfr::AutoStreamSfr, baseline::Baseline,
    filestream::FileStream, fstream::FStream, hotcold::HotCold, lkstream::LkStream, manual::Manual,
    midas::Midas, oracle::Oracle, pcstream::PcStream, sepbit::SepBit, Placement, PolicyCtx,
};
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
    PolicyEntry {
        name: "manual",
        summary: "application write-life hint (or file class) -> stream from a static table",
        build: |c| Ok(Box::new(Manual::new(c)?)),
    },
    PolicyEntry {
        name: "fstream",
        summary: "file-system metadata classes (journal, inode, dir, misc) and file-name rules",
        build: |c| Ok(Box::new(FStream::new(c)?)),
    },
    PolicyEntry {
        name: "autostream-sfr",
        summary: "AutoStream SFR: decayed write count per 2 MiB LBA chunk, sequential runs inherit",
        build: |c| Ok(Box::new(AutoStreamSfr::new(c)?)),
    },
    PolicyEntry {
        name: "autostream-mq",
        summary: "AutoStream MQ: LBA chunks in multi-queue LRU by log count, expired heads demoted",
        build: |c| Ok(Box::new(AutoStreamMq::new(c)?)),
    },
    PolicyEntry {
        name: "pcstream-star",
        summary: "PCStream*: program context -> mean lifetime -> 1-D k-means into streams 1..N-1",
        build: |c| Ok(Box::new(PcStream::new(c, false)?)),
    },
    PolicyEntry {
        name: "pcstream",
        summary: "PCStream: PCStream* plus internal GC substreams and a persistent PC table",
        build: |c| Ok(Box::new(PcStream::new(c, true)?)),
    },
    PolicyEntry {
        name: "sepbit",
        summary: "SepBIT: 6 classes by inferred invalidation time (user) and age (GC)",
        build: |c| Ok(Box::new(SepBit::new(c)?)),
    },
    PolicyEntry {
        name: "lkstream",
        summary: "LKStream (EWMA stand-in for the LSTM): predicted chunk heat, k-means per window",
        build: |c| Ok(Box::new(LkStream::new(c)?)),
    },
    PolicyEntry {
        name: "midas",
        summary: "MiDAS, reduced fixed chain: hot filter + age groups by GC migration (no model)",
        build: |c| Ok(Box::new(Midas::new(c)?)),
    },
    PolicyEntry {
        name: "filestream",
        summary: "FileStream: new files by lifetime-dissimilarity mapper, long-open files by USM",
        build: |c| Ok(Box::new(FileStream::new(c)?)),
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
