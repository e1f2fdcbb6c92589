//! The page-mapped FTL: map, units, write points, GC, and the whole-state check.
//!
//! The FTL owns physical state and the die clock; it knows nothing of traces or metrics. GC asks
//! the placement policy for destinations only in `GcMode::Policy`.

pub mod frontier;
pub mod gc;
pub mod geometry;
pub mod page_layout;
pub mod page_map;
pub mod unit_pool;
pub mod verify;

use crate::config::SsdConfig;
use crate::placement::GcMode;
use crate::timing::DieClock;
use crate::units::{LogicalTime, Lpn, Ppn};
use frontier::WritePoint;
use geometry::Geometry;
use page_map::{PageLayout, PageMap, PageMeta};
use unit_pool::Units;

/// Counters of physical work (all since construction; the simulator takes differences).
#[derive(Clone, Copy, Debug, Default)]
pub struct FtlCounters {
    pub gc_pages: u64,
    pub erases: u64,
    pub gc_runs: u64,
}

pub struct Ftl {
    pub geo: Geometry,
    pub map: PageMap,
    pub units: Units,
    pub wps: Vec<WritePoint>,
    pub host_streams: u32,
    pub gc_mode: GcMode,
    pub gc_low: u32,
    pub gc_high: u32,
    pub timer: Option<DieClock>,
    /// Simulated time (ns) at which the current request was issued; GC starts then.
    pub now_ns: u64,
    pub counters: FtlCounters,
    /// Run the whole-state check after every GC (tests).
    pub verify_each_gc: bool,
}

/// Number of write points for a GC mode: host streams plus internal ones.
pub fn write_points(host_streams: u32, mode: GcMode, policy_internal: u32) -> u32 {
    host_streams
        + match mode {
            GcMode::SameStream => 0,
            GcMode::Substream => host_streams,
            GcMode::SingleGc => 1,
            GcMode::Policy => policy_internal,
        }
}

/// Write points the GC copies of one victim may go to: one in every mode but `Policy`, where
/// the policy says (`Placement::gc_fanout`, at most every write point).
pub fn gc_destinations(gc_mode: GcMode, n_wps: u32, policy_fanout: u32) -> u32 {
    match gc_mode {
        GcMode::SameStream | GcMode::Substream | GcMode::SingleGc => 1,
        GcMode::Policy => policy_fanout.clamp(1, n_wps.max(1)),
    }
}

/// Free-unit watermarks `(low, high)` the FTL uses with `n_wps` write points and `gc_dests`
/// GC destinations per victim (`cfg` validated for them by `SsdConfig::validate_with`).
///
/// GC starts when a write point needs a unit and at most `low` are free. The copies of one
/// victim may open one unit per destination before the victim is erased, so `low` ≥
/// `gc_dests` keeps a free unit for every one of them (counting units opened and erased over
/// a GC run, the free count never falls more than `gc_dests` − 1 below where the run began);
/// the configured low watermark is raised to `gc_dests` + 1 where the device has room, a
/// margin of one unit. GC runs until `high` are free, and can only be sure of reaching what
/// the packed logical space and the other write points' open units leave: `spare units −
/// (n_wps − 1)`. Both configured watermarks (shares of all units, tuning) are fitted in there.
pub fn gc_watermarks(cfg: &SsdConfig, n_wps: u32, gc_dests: u32) -> (u32, u32) {
    let reachable = (cfg.spare_units() + 1)
        .saturating_sub(n_wps)
        .max(gc_dests + 1);
    let gc_low = cfg
        .gc_low_units()
        .max(gc_dests + 1)
        .min(reachable - 1)
        .max(gc_dests);
    let gc_high = cfg.gc_high_units().max(gc_low + 1).min(reachable);
    (gc_low, gc_high)
}

/// Write points the device can hold open, the GC copies of a victim going to one of them, while
/// keeping its configured GC watermarks (`gc_watermarks` then returns them unchanged); at least
/// the host streams (which `SsdConfig::validate` guarantees the device holds), at most what
/// the spare units allow.
pub fn write_point_budget(cfg: &SsdConfig) -> u32 {
    let spare = cfg.spare_units();
    let most = crate::config::max_write_points(spare, 1);
    // `reachable` in `gc_watermarks` is spare + 1 − n: keep it ≥ the high mark the host
    // streams alone leave.
    let (_, high) = gc_watermarks(cfg, cfg.ftl.host_streams, 1);
    (spare + 1)
        .saturating_sub(high)
        .clamp(cfg.ftl.host_streams.min(most), most)
}

impl Ftl {
    /// Requires: `cfg` validated for `n_wps` write points and their GC destinations
    /// (`SsdConfig::validate_with`).
    pub fn new(
        cfg: &SsdConfig,
        gc_mode: GcMode,
        n_wps: u32,
        policy_fanout: u32,
        timing: bool,
        layout: PageLayout,
    ) -> Ftl {
        let gc_dests = gc_destinations(gc_mode, n_wps, policy_fanout);
        if let Err(e) = cfg.validate_with(n_wps, gc_dests) {
            panic!("Ftl::new on a device not validated for its write points: {e}");
        }
        let geo = Geometry::new(cfg);
        let (gc_low, gc_high) = gc_watermarks(cfg, n_wps, gc_dests);
        Ftl {
            map: PageMap::new(geo.logical_pages, geo.physical_pages, layout),
            units: Units::new(geo.units, geo.unit_pages, cfg.ftl.gc_victim),
            wps: (0..n_wps).map(|_| WritePoint::default()).collect(),
            host_streams: cfg.ftl.host_streams,
            gc_mode,
            gc_low,
            gc_high,
            timer: timing.then(|| DieClock::new(cfg.dies(), &cfg.timing)),
            now_ns: 0,
            counters: FtlCounters::default(),
            verify_each_gc: cfg!(feature = "verify"),
            geo,
        }
    }

    /// Invalidate the current version of `lpn`; returns its metadata (and death time).
    #[inline]
    pub fn invalidate(&mut self, lpn: Lpn) -> Option<(PageMeta, u64)> {
        let old = self.map.unmap(lpn)?;
        let unit = self.geo.unit_of(old);
        self.units.remove_valid(unit);
        let death = self.map.death.as_ref().map_or(0, |d| d[old.0 as usize]);
        Some((self.page_meta(old), death))
    }

    /// Write time, PC and host stream of the version at `ppn` (valid or just invalidated).
    #[inline]
    pub fn page_meta(&self, ppn: Ppn) -> PageMeta {
        PageMeta {
            t_write: self.map.t_write(ppn),
            pc: self.map.pc(ppn),
            stream: match self.map.stored_stream(ppn) {
                Some(s) => s,
                None => self.unit_stream(ppn),
            },
        }
    }

    /// Host stream of the pages of the unit holding `ppn`, in the GC modes that keep a unit to
    /// one host stream: its write point, or for a substream the stream it serves.
    #[inline]
    fn unit_stream(&self, ppn: Ppn) -> u8 {
        use unit_pool::UnitState;
        let wp = match self.units.state[self.geo.unit_of(ppn).0 as usize] {
            UnitState::Open(w) | UnitState::Sealed(w) | UnitState::Collecting(w) => w,
            UnitState::Free => 0,
        };
        let hs = self.host_streams as u8;
        if self.gc_mode == GcMode::Substream && wp >= hs {
            wp - hs
        } else {
            wp
        }
    }

    /// Program a host page of `lpn` (already invalidated) at write point `wp`.
    /// Runs GC first when the write point needs a new unit and free units are low.
    /// Returns the completion time of the program (ns; 0 without timing).
    #[inline]
    pub fn program_host(
        &mut self,
        lpn: Lpn,
        wp: u8,
        meta: PageMeta,
        death: u64,
        now: LogicalTime,
        policy: &mut dyn crate::placement::Placement,
    ) -> u64 {
        if self.wps[wp as usize].needs_unit(self.geo.unit_pages)
            && self.units.free_count() <= self.gc_low
        {
            self.collect(now, policy);
        }
        let ppn = self.alloc(wp, now);
        self.map.map(lpn, ppn, meta);
        if let Some(d) = self.map.death.as_mut() {
            d[ppn.0 as usize] = death;
        }
        let done = self.program_done(ppn, self.now_ns);
        self.seal_if_full(wp, now);
        done
    }

    /// Program the logical pages `first .. first + n` in order to write point 0, before the
    /// clock runs (the prefill and an aged state: no timing, each page unmapped, `deaths[lpn]`
    /// its death time when given): where `program_host` would place them one at a time, placed
    /// a unit's worth at a time (page by page, a fill of 2.9 M pages took about 14 ns a page).
    pub fn program_run(
        &mut self,
        first: Lpn,
        n: u64,
        meta: PageMeta,
        deaths: Option<&[u64]>,
        policy: &mut dyn crate::placement::Placement,
    ) {
        assert!(
            self.timer.is_none(),
            "program_run before the clock runs only"
        );
        // Cold data: stream 0's write point, at logical time 0.
        let (wp, now) = (0u8, LogicalTime(0));
        let unit_pages = self.geo.unit_pages;
        let end = first.0 + n;
        let mut lpn = first.0;
        while lpn < end {
            if self.wps[wp as usize].needs_unit(unit_pages)
                && self.units.free_count() <= self.gc_low
            {
                self.collect(now, policy);
            }
            // The chunk's first page opens a unit when needed; the rest of the chunk follows it.
            let start = self.alloc(wp, now);
            let room = u64::from(unit_pages - self.wps[wp as usize].next) + 1;
            let k = room.min(end - lpn);
            for i in 0..k {
                let ppn = Ppn(start.0 + i as u32);
                self.map.map(Lpn(lpn + i), ppn, meta);
                if let Some(d) = self.map.death.as_mut() {
                    d[ppn.0 as usize] = deaths.map_or(0, |all| all[(lpn + i) as usize]);
                }
            }
            self.units.add_valid_n(self.geo.unit_of(start), k as u32);
            self.wps[wp as usize].next += k as u32 - 1;
            self.seal_if_full(wp, now);
            lpn += k;
        }
    }

    /// Timing and unit accounting of a programmed page; returns its completion time.
    #[inline]
    pub(crate) fn program_done(&mut self, ppn: Ppn, at: u64) -> u64 {
        let unit = self.geo.unit_of(ppn);
        self.units.add_valid(unit);
        match self.timer.as_mut() {
            Some(t) => {
                let die = self.geo.die_of(unit, ppn.0 - unit.0 * self.geo.unit_pages);
                t.program(die, at)
            }
            None => 0,
        }
    }

    /// Read `lpn`; returns the completion time (ns), the issue time if unmapped.
    #[inline]
    pub fn read(&mut self, lpn: Lpn) -> u64 {
        match (self.map.lookup(lpn), self.timer.as_mut()) {
            (Some(ppn), Some(t)) => t.read(self.geo.die_of_ppn(ppn), self.now_ns),
            _ => self.now_ns,
        }
    }

    /// Open write points (units currently being filled).
    pub fn open_write_points(&self) -> usize {
        self.wps.iter().filter(|w| w.is_open()).count()
    }

    /// Bytes of engine state (maps, page metadata, unit tables).
    pub fn state_bytes(&self) -> usize {
        self.map.bytes() + self.units.bytes() + self.timer.as_ref().map_or(0, |t| t.bytes())
    }
}
