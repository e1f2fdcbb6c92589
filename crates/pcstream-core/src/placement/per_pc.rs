//! # per-pc — one stream per program context (ablation)
//!
//! What it does: every program context (PC) gets a write point of its own, in the order the PCs
//! first write; GC copies of every victim go to one shared GC write point (the last one). When
//! the PCs outnumber the write points, the later ones share the PC write points by a hash of
//! their signature (deterministic: the same trace gives the same assignment). PC 0 (no context)
//! shares write point 0 with the prefill. No lifetime is learned and nothing is clustered: this
//! is the bound of what separating writes by PC alone can do, with as many streams as the
//! device can hold open, an ablation for PCStream and not a device scheme (a host could not
//! address more streams than `host_streams`; here PCs beyond them use internal write points).
//! Source: none; a plain reference FTL (one stream
//! per PC, one shared GC stream) that PCStream can be held against.
//! What it sees: PC.
//! State: a PC → write point table (16 B per PC with its hash slot).
//! Parameters: `write_points` (W; default the device's budget: as many as it can hold open
//! without cutting its configured GC watermarks, `ftl::write_point_budget`, at least the host
//! streams). W − 1 are for PCs, one for GC copies; W beyond what the device holds is refused.
//! Deviations: none (it follows no paper); a PC's write point is fixed at its first write.

// No adversary picks the PC signatures: a fast non-keyed hasher is enough.
use rustc_hash::FxHashMap;

use super::{Attrs, GcMode, PageInfo, Placement, PolicyCtx, RequestInfo, WriteInfo};
use crate::error::SimError;
use crate::units::{LogicalTime, StreamId};

/// The FTL addresses write points with a `u8`, and the simulator refuses more than this.
const MAX_WRITE_POINTS: u32 = 255;

pub struct PerPc {
    host_streams: u32,
    /// All write points the policy uses: PC write points `0 .. gc`, then the GC one.
    write_points: u32,
    gc: StreamId,
    /// The write point of each PC that has written.
    table: FxHashMap<u64, u8>,
    /// Next PC write point to hand out (1 ..= gc − 1; 0 is PC 0's).
    next: u8,
    /// Write point of the current request's PC (looked up once per request).
    current: StreamId,
}

impl PerPc {
    pub fn new(ctx: &mut PolicyCtx) -> Result<PerPc, SimError> {
        let budget = ctx.write_point_budget.max(ctx.host_streams);
        let w = ctx.range(
            "write_points",
            budget,
            2..=MAX_WRITE_POINTS,
            &format!("2 ..= {MAX_WRITE_POINTS} (one for GC copies, the rest for PCs)"),
        )?;
        Ok(PerPc {
            host_streams: ctx.host_streams,
            write_points: w,
            gc: StreamId((w - 1) as u8),
            table: FxHashMap::default(),
            next: 1,
            current: StreamId(0),
        })
    }

    /// PC write points other than PC 0's: `1 ..= gc − 1` (none when W = 2).
    fn shared_slots(&self) -> u32 {
        self.gc.0 as u32 - 1
    }

    fn assign(&mut self, sig: u64) -> u8 {
        if let Some(&s) = self.table.get(&sig) {
            return s;
        }
        let slots = self.shared_slots();
        let s = if slots == 0 {
            0
        } else if (self.next as u32) <= slots {
            self.next += 1;
            self.next - 1
        } else {
            // Out of write points: share by a hash of the signature (splitmix64 finaliser, so
            // signatures that differ in a few bits spread over all slots).
            let mut z = sig.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (1 + z % slots as u64) as u8
        };
        self.table.insert(sig, s);
        s
    }
}

impl Placement for PerPc {
    fn name(&self) -> &'static str {
        "per-pc"
    }
    fn sees(&self) -> Attrs {
        Attrs::PC
    }
    fn gc_mode(&self) -> GcMode {
        GcMode::Policy
    }
    fn internal_write_points(&self) -> u32 {
        self.write_points.saturating_sub(self.host_streams)
    }
    fn gc_fanout(&self) -> Option<u32> {
        Some(1) // every GC copy goes to the one GC write point
    }
    fn on_request(&mut self, req: &RequestInfo, _now: LogicalTime) {
        self.current = StreamId(if req.pc.0 == 0 {
            0
        } else {
            self.assign(req.pc.0)
        });
    }
    fn on_write(&mut self, _w: &WriteInfo, _now: LogicalTime) -> StreamId {
        self.current
    }
    fn gc_destination(&mut self, _p: &PageInfo, _now: LogicalTime) -> StreamId {
        self.gc
    }
    fn gc_victim_destination(&mut self, _victim_wp: u8) -> Option<StreamId> {
        Some(self.gc)
    }
    fn state_bytes(&self) -> usize {
        self.table.capacity() * (8 + 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::PcSig;

    fn policy(w: u32) -> PerPc {
        let mut ctx = PolicyCtx {
            host_streams: 4,
            logical_pages: 1024,
            unit_pages: 16,
            units: 128,
            write_point_budget: 6,
            seed: 0,
            params: [("write_points".to_string(), w.to_string())].into(),
        };
        PerPc::new(&mut ctx).unwrap()
    }

    fn stream_of(p: &mut PerPc, pc: u64) -> u8 {
        let req = RequestInfo {
            pc: PcSig(pc),
            ..Default::default()
        };
        p.on_request(&req, LogicalTime(0));
        p.current.0
    }

    #[test]
    fn pcs_take_write_points_in_order_then_share_by_hash() {
        let mut p = policy(5); // PC write points 0..=3, GC 4
        assert_eq!(p.internal_write_points(), 1);
        assert_eq!(stream_of(&mut p, 0), 0);
        assert_eq!(stream_of(&mut p, 77), 1);
        assert_eq!(stream_of(&mut p, 5), 2);
        assert_eq!(stream_of(&mut p, 77), 1);
        assert_eq!(stream_of(&mut p, 9), 3);
        // Out of write points: later PCs land on 1..=3, never on PC 0's or the GC one, and the
        // same signature always on the same one, in another instance that saw the same PCs
        // first too.
        let shared: Vec<u8> = (100..200).map(|pc| stream_of(&mut p, pc)).collect();
        assert!(shared.iter().all(|s| (1..=3).contains(s)));
        assert!((1..=3).all(|s| shared.contains(&s)), "the hash spreads");
        let mut q = policy(5);
        for pc in [77, 5, 9] {
            stream_of(&mut q, pc);
        }
        let again: Vec<u8> = (100..200).map(|pc| stream_of(&mut q, pc)).collect();
        assert_eq!(shared, again);
        let gc = p.gc_destination(
            &PageInfo {
                lpn: crate::units::Lpn(0),
                t_write: None,
                pc: PcSig(77),
                stream: StreamId(1),
                victim_wp: 1,
                victim: crate::units::UnitId(0),
                victim_created: LogicalTime(0),
                death: 0,
            },
            LogicalTime(0),
        );
        assert_eq!(gc, StreamId(4));
    }

    #[test]
    fn write_points_outside_the_ftl_range_are_refused() {
        for w in ["1", "256"] {
            let mut ctx = PolicyCtx {
                host_streams: 4,
                logical_pages: 1024,
                unit_pages: 16,
                units: 128,
                write_point_budget: 6,
                seed: 0,
                params: [("write_points".to_string(), w.to_string())].into(),
            };
            let e = PerPc::new(&mut ctx).err().expect("refused").to_string();
            assert!(e.contains("write_points="), "{e}");
        }
    }
}
