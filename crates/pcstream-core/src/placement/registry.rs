//! The policy registry: one entry per policy (name, what it sees, summary, constructor). Every
//! list of policies elsewhere (the CLI, the tests, the docs tables) is derived from it.

use super::{
    autostream_mq::AutoStreamMq, autostream_sfr::AutoStreamSfr, baseline::Baseline,
    filestream::FileStream, fstream::FStream, hotcold::HotCold, lkstream::LkStream, manual::Manual,
    midas::Midas, oracle::Oracle, pcstream::PcStream, per_pc::PerPc, sepbit::SepBit, Attrs,
    Placement, PolicyCtx,
};
use crate::error::SimError;

pub struct PolicyEntry {
    pub name: &'static str,
    /// The request attributes the policy reads with its default parameters (what `sees()`
    /// answers for them; a test holds the two equal). Parameters may widen it: `manual` with a
    /// `class_map` also reads `file_class`, `pcstream` with `substreams=none` no GC information.
    pub sees: Attrs,
    pub summary: &'static str,
    pub build: fn(&mut PolicyCtx) -> Result<Box<dyn Placement>, SimError>,
}

pub const POLICIES: &[PolicyEntry] = &[
    PolicyEntry {
        name: "baseline",
        sees: Attrs::NONE,
        summary: "one stream for everything (a legacy SSD); GC copies share the write point",
        build: |_| Ok(Box::new(Baseline)),
    },
    PolicyEntry {
        name: "hotcold",
        sees: Attrs::LPN,
        summary:
            "FTL write-count threshold: LPNs written >= threshold (5) times go to a hot stream",
        build: |c| Ok(Box::new(HotCold::new(c)?)),
    },
    PolicyEntry {
        name: "oracle",
        sees: Attrs::DEATH,
        summary: "future knowledge: places every write by its remaining lifetime (lower bound)",
        build: |c| Ok(Box::new(Oracle::new(c)?)),
    },
    PolicyEntry {
        name: "manual",
        sees: Attrs::HINT,
        summary: "application write-life hint (or file class) -> stream from a static table",
        build: |c| Ok(Box::new(Manual::new(c)?)),
    },
    PolicyEntry {
        name: "fstream",
        sees: Attrs::META.union(Attrs::FILE_CLASS),
        summary: "file-system metadata classes (journal, inode, dir, misc) and file-name rules",
        build: |c| Ok(Box::new(FStream::new(c)?)),
    },
    PolicyEntry {
        name: "autostream-sfr",
        sees: Attrs::LPN.union(Attrs::LEN),
        summary: "AutoStream SFR: decayed write count per 2 MiB LBA chunk, sequential runs inherit",
        build: |c| Ok(Box::new(AutoStreamSfr::new(c)?)),
    },
    PolicyEntry {
        name: "autostream-mq",
        sees: Attrs::LPN.union(Attrs::LEN),
        summary: "AutoStream MQ: LBA chunks in multi-queue LRU by log count, expired heads demoted",
        build: |c| Ok(Box::new(AutoStreamMq::new(c)?)),
    },
    PolicyEntry {
        name: "pcstream-star",
        sees: Attrs::PC.union(Attrs::LIFETIME),
        summary: "PCStream*: program context -> mean lifetime -> 1-D k-means into streams 1..N-1",
        build: |c| Ok(Box::new(PcStream::new(c, false)?)),
    },
    PolicyEntry {
        name: "pcstream",
        sees: Attrs::PC.union(Attrs::LIFETIME).union(Attrs::GC_INFO),
        summary: "PCStream: PCStream* plus internal GC substreams and a persistent PC table",
        build: |c| Ok(Box::new(PcStream::new(c, true)?)),
    },
    PolicyEntry {
        name: "per-pc",
        sees: Attrs::PC,
        summary: "ablation: a write point per PC (then shared by hash), one GC write point",
        build: |c| Ok(Box::new(PerPc::new(c)?)),
    },
    PolicyEntry {
        name: "sepbit",
        sees: Attrs::LPN.union(Attrs::GC_INFO).union(Attrs::LIFETIME),
        summary: "SepBIT: 6 classes by inferred invalidation time (user) and age (GC)",
        build: |c| Ok(Box::new(SepBit::new(c)?)),
    },
    PolicyEntry {
        name: "lkstream",
        sees: Attrs::LPN,
        summary: "LKStream (EWMA stand-in for the LSTM): predicted chunk heat, k-means per window",
        build: |c| Ok(Box::new(LkStream::new(c)?)),
    },
    PolicyEntry {
        name: "midas",
        sees: Attrs::LPN.union(Attrs::GC_INFO).union(Attrs::LIFETIME),
        summary: "MiDAS, reduced fixed chain: hot filter + age groups by GC migration (no model)",
        build: |c| Ok(Box::new(Midas::new(c)?)),
    },
    PolicyEntry {
        name: "filestream",
        sees: Attrs::FILE
            .union(Attrs::FILE_CLASS)
            .union(Attrs::LPN)
            .union(Attrs::LIFETIME),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry's `sees` is what each policy answers with its default parameters.
    #[test]
    fn each_entry_says_what_its_policy_sees() {
        for p in POLICIES {
            let mut ctx = PolicyCtx {
                host_streams: 8,
                logical_pages: 4096,
                unit_pages: 64,
                units: 128,
                write_point_budget: 8,
                seed: 0,
                params: Default::default(),
            };
            let built = (p.build)(&mut ctx).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(built.name(), p.name);
            assert_eq!(
                built.sees(),
                p.sees,
                "{}: {:?}",
                p.name,
                built.sees().names()
            );
        }
    }
}
