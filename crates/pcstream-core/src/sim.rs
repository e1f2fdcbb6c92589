//! The simulation loop: feeds host requests through the placement policy into the FTL, applies
//! prefill and warm-up, drives the closed-loop timing, and assembles the result.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::config::SsdConfig;
use crate::error::SimError;
use crate::ftl::page_map::{PageLayout, PageMeta, PREFILL_TIME};
use crate::ftl::{write_points, Ftl};
use crate::metrics::{Metrics, SimResult};
use crate::placement::oracle::{DeathPass, DeathTimes};
use crate::placement::{
    registry, Attrs, Cause, GcMode, Invalidation, Placement, PolicyCtx, RequestInfo, WriteInfo,
};
use crate::request::{Op, Request};
use crate::timing::{DieClock, QueueSlots};
use crate::units::{LogicalTime, Lpn, PcSig, StreamId};

/// How to run a simulation (everything but the trace and the SSD).
#[derive(Clone, Debug, Default)]
pub struct SimOptions {
    pub policy: String,
    /// Share of the logical pages written once, sequentially, before the trace (not measured).
    pub prefill: f64,
    /// Host pages at the start of the trace excluded from every figure.
    pub warmup: u64,
    pub seed: u64,
    pub timing: bool,
    /// Points of the exported latency CDF (0: none).
    pub cdf_points: usize,
    /// `--param key=value`: `gc_mode` is the simulator's, the rest the policy's.
    pub params: BTreeMap<String, String>,
    /// Label of the trace in results.
    pub trace_name: String,
}

/// A policy built from the registry, the options left for the simulator, and the `gc_mode`
/// override taken out of the policy's parameters.
type BuiltPolicy = (Box<dyn Placement>, SimOptions, Option<GcMode>);

/// The policy `opts` names, built from the registry.
fn build_policy(cfg: &SsdConfig, mut opts: SimOptions) -> Result<BuiltPolicy, SimError> {
    if !(0.0..=1.0).contains(&opts.prefill) {
        return Err(SimError::BadParam(format!(
            "prefill {} must be between 0 and 1",
            opts.prefill
        )));
    }
    let gc_override = match opts.params.remove("gc_mode") {
        None => None,
        Some(v) => Some(GcMode::parse(&v).ok_or_else(|| {
            SimError::BadParam(format!(
                "gc_mode={v}: use same_stream, substream or single_gc"
            ))
        })?),
    };
    let mut ctx = PolicyCtx {
        host_streams: cfg.ftl.host_streams,
        logical_pages: cfg.logical_pages(),
        unit_pages: cfg.unit_pages(),
        units: cfg.units(),
        write_point_budget: crate::ftl::write_point_budget(cfg),
        seed: opts.seed,
        params: opts.params.clone(),
    };
    let policy = registry::build(&opts.policy, &mut ctx)?;
    Ok((policy, opts, gc_override))
}

/// The GC mode (the policy's, or the override) and the write points it needs.
fn gc_plan(
    cfg: &SsdConfig,
    policy: &dyn Placement,
    gc_override: Option<GcMode>,
) -> Result<(GcMode, u32), SimError> {
    let mut gc_mode = policy.gc_mode();
    if let Some(m) = gc_override {
        if gc_mode == GcMode::Policy || m == GcMode::Policy {
            return Err(SimError::BadParam(format!(
                "gc_mode={}: policy {} places GC copies itself",
                m.name(),
                policy.name()
            )));
        }
        gc_mode = m;
    }
    let n_wps = write_points(
        cfg.ftl.host_streams,
        gc_mode,
        policy.internal_write_points(),
    );
    if n_wps > 255 {
        return Err(SimError::BadParam(format!(
            "{n_wps} write points: at most 255 are supported"
        )));
    }
    Ok((gc_mode, n_wps))
}

/// The per-page layout: host pages go to the host streams, or in `GcMode::Policy` to any of the
/// `n_wps` write points (`Simulator::write_page` holds them to that).
fn layout_of(cfg: &SsdConfig, sees: Attrs, gc_mode: GcMode, n_wps: u32) -> PageLayout {
    let stream_values = if gc_mode == GcMode::Policy {
        n_wps
    } else {
        cfg.ftl.host_streams
    };
    PageLayout::new(cfg.logical_pages(), sees, gc_mode, stream_values)
}

pub struct Simulator {
    ftl: Ftl,
    policy: Box<dyn Placement>,
    sees: Attrs,
    opts: SimOptions,
    ssd_name: String,
    gc_mode: GcMode,
    logical_pages: u64,
    prefill_pages: u64,
    /// The aged state given by [`Simulator::set_aged`]: extents (lpn, pages) written like the
    /// prefill, and their pages.
    aged: Vec<(u64, u64)>,
    aged_pages: u64,
    /// Logical time: host pages written so far.
    t: u64,
    deaths: Option<DeathTimes>,
    queue: Option<QueueSlots>,
    timing_cfg: crate::config::Timing,
    dies: u32,
    metrics: Metrics,
    tick_period: Option<u64>,
    next_tick: u64,
    index: u64,
    started: Instant,
    /// Wall clock when measurement began (after prefill and warm-up).
    measure_started: Option<Instant>,
    host_streams: u32,
}

impl Simulator {
    /// Build a simulator: the policy from the registry, the FTL for its write points.
    pub fn new(cfg: &SsdConfig, opts: SimOptions) -> Result<Simulator, SimError> {
        let (policy, opts, gc_override) = build_policy(cfg, opts)?;
        Simulator::with_policy(cfg, opts, policy, gc_override)
    }

    /// What the engine will keep per page for `opts` on `cfg`, and the bytes of the policy's
    /// state once built (for the memory estimate made before the engine state is allocated: the
    /// policy is built to ask it, then dropped).
    pub fn page_layout(cfg: &SsdConfig, opts: &SimOptions) -> Result<(PageLayout, u64), SimError> {
        let (policy, _, gc_override) = build_policy(cfg, opts.clone())?;
        let (gc_mode, n_wps) = gc_plan(cfg, policy.as_ref(), gc_override)?;
        let layout = layout_of(cfg, policy.sees(), gc_mode, n_wps);
        Ok((layout, policy.state_bytes() as u64))
    }

    /// Build a simulator around a policy object (one outside the registry, e.g. in tests).
    pub fn with_policy(
        cfg: &SsdConfig,
        opts: SimOptions,
        policy: Box<dyn Placement>,
        gc_override: Option<GcMode>,
    ) -> Result<Simulator, SimError> {
        let (gc_mode, n_wps) = gc_plan(cfg, policy.as_ref(), gc_override)?;
        // Validate for the reserve GC needs with these write points and destinations: a device
        // that cannot hold its logical space plus that reserve would stall GC once full.
        let fanout = policy.gc_fanout().unwrap_or(n_wps).clamp(1, n_wps);
        cfg.validate_with(n_wps, crate::ftl::gc_destinations(gc_mode, n_wps, fanout))?;
        let sees = policy.sees();
        let layout = layout_of(cfg, sees, gc_mode, n_wps);
        let ftl = Ftl::new(cfg, gc_mode, n_wps, fanout, false, layout);
        let tick_period = policy.tick_period();
        let logical_pages = cfg.logical_pages();
        Ok(Simulator {
            prefill_pages: (opts.prefill * logical_pages as f64).floor() as u64,
            aged: Vec::new(),
            aged_pages: 0,
            ftl,
            policy,
            sees,
            ssd_name: cfg.name.clone(),
            gc_mode,
            logical_pages,
            t: 0,
            deaths: None,
            queue: None,
            timing_cfg: cfg.timing.clone(),
            dies: cfg.dies(),
            // Policies that place GC copies themselves may send host pages to internal write
            // points too (`per-pc`); count them there.
            metrics: Metrics::new(n_wps),
            tick_period,
            next_tick: tick_period.unwrap_or(u64::MAX),
            index: 0,
            started: Instant::now(),
            measure_started: None,
            host_streams: cfg.ftl.host_streams,
            opts,
        })
    }

    /// Whether the policy needs death times from a pre-pass over the same trace.
    pub fn needs_death_times(&self) -> bool {
        self.sees.has(Attrs::DEATH)
    }

    /// The device's aged state, written before the trace like the prefill (cold, stream 0,
    /// pc 0, not shown to the policy, in no figure): the writes of `reqs` (an aged trace's
    /// leading rows). Call before [`Simulator::death_pass`] and [`Simulator::start`]; refused
    /// together with a prefill, and for rows that are not in-range writes.
    pub fn set_aged(&mut self, reqs: &[Request]) -> Result<(), SimError> {
        if self.prefill_pages > 0 {
            return Err(SimError::BadParam(format!(
                "the trace carries its own aged state ({} pages); drop --prefill (it would age the device a second time)",
                reqs.iter().map(|r| r.pages as u64).sum::<u64>()
            )));
        }
        for (i, r) in reqs.iter().enumerate() {
            let end = r.lpn.checked_add(r.pages as u64);
            if r.op != Op::Write as u8 || end.is_none_or(|e| e > self.logical_pages) {
                return Err(SimError::BadRequest {
                    index: i as u64,
                    what: format!(
                        "aged-state row: expected a write within the {} logical pages, got op {} at lpn {} + {} pages",
                        self.logical_pages, r.op, r.lpn, r.pages
                    ),
                });
            }
            self.aged.push((r.lpn, r.pages as u64));
            self.aged_pages += r.pages as u64;
        }
        Ok(())
    }

    /// A pre-pass to feed the same requests to, for policies that see death times (the
    /// trace's rows after the aged state).
    pub fn death_pass(&self) -> DeathPass {
        let mut p = DeathPass::new(self.logical_pages, self.prefill_pages);
        for &(lpn, pages) in &self.aged {
            p.mark_prefilled(lpn, pages);
        }
        p
    }

    pub fn set_death_times(&mut self, d: DeathTimes) {
        self.deaths = Some(d);
    }

    pub fn logical_pages(&self) -> u64 {
        self.logical_pages
    }

    pub fn policy(&self) -> &dyn Placement {
        self.policy.as_ref()
    }

    pub fn policy_mut(&mut self) -> &mut dyn Placement {
        self.policy.as_mut()
    }

    /// Simulate `reqs`, all in memory, from the start: the death-time pre-pass over them first
    /// when the policy needs it, then `start` and `feed`. `finish` gives the result. Traces too
    /// large for memory go through `death_pass`, `start` and `feed` in batches instead.
    pub fn run_requests(&mut self, reqs: &[Request]) -> Result<(), SimError> {
        if self.needs_death_times() {
            let mut pass = self.death_pass();
            pass.feed_batch(reqs);
            self.set_death_times(pass.finish());
        }
        self.start()?;
        self.feed(reqs)
    }

    /// Write the prefill (cold, stream 0, pc 0) and start the clock. Call once, before `feed`.
    pub fn start(&mut self) -> Result<(), SimError> {
        if self.needs_death_times() && self.deaths.is_none() {
            return Err(SimError::State(format!(
                "policy {} needs death times: run the pre-pass first",
                self.policy.name()
            )));
        }
        let meta = PageMeta::new(PREFILL_TIME, 0, 0);
        let deaths = self.deaths.as_ref().map(|d| &d.prefill[..]);
        for &(lpn, n) in std::iter::once(&(0, self.prefill_pages)).chain(&self.aged) {
            self.ftl
                .program_run(Lpn(lpn), n, meta, deaths, self.policy.as_mut());
        }
        if self.opts.timing {
            self.ftl.timer = Some(DieClock::new(self.dies, &self.timing_cfg));
            self.queue = Some(QueueSlots::new(self.timing_cfg.queue_depth));
        }
        self.started = Instant::now();
        if self.opts.warmup == 0 {
            self.begin_measure();
        }
        Ok(())
    }

    fn begin_measure(&mut self) {
        self.metrics.start(self.ftl.counters);
        self.measure_started = Some(Instant::now());
    }

    /// Validate one request against the device.
    fn check(&self, r: &Request) -> Result<Op, SimError> {
        let bad = |what: String| {
            Err(SimError::BadRequest {
                index: self.index,
                what,
            })
        };
        let Some(op) = Op::from_u8(r.op) else {
            return bad(format!(
                "op {} is not 0 (write), 1 (trim), 2 (read) or 3 (flush)",
                r.op
            ));
        };
        if op != Op::Flush {
            if r.pages == 0 {
                return bad("a request of 0 pages".into());
            }
            match r.lpn.checked_add(r.pages as u64) {
                Some(end) if end <= self.logical_pages => {}
                _ => {
                    return bad(format!(
                        "lpn {} + {} pages is beyond the SSD's {} logical pages; use a larger --ssd or a \
                         trace generated for this capacity",
                        r.lpn, r.pages, self.logical_pages
                    ))
                }
            }
        }
        Ok(op)
    }

    fn masked(&self, r: &Request) -> RequestInfo {
        let s = self.sees;
        let pick = |a: Attrs, v: u64| if s.has(a) { v } else { 0 };
        RequestInfo {
            op: r.op,
            lpn: Lpn(pick(Attrs::LPN, r.lpn)),
            pages: pick(Attrs::LEN, r.pages as u64) as u32,
            pc: PcSig(pick(Attrs::PC, r.pc)),
            file: pick(Attrs::FILE, r.file as u64) as u32,
            file_class: pick(Attrs::FILE_CLASS, r.file_class as u64) as u16,
            meta: pick(Attrs::META, r.meta as u64) as u8,
            pid: pick(Attrs::PID, r.pid as u64) as u32,
            hint: pick(Attrs::HINT, r.hint as u64) as u8,
        }
    }

    #[inline]
    fn invalidate(&mut self, lpn: Lpn, cause: Cause) {
        if let Some((m, _)) = self.ftl.invalidate(lpn) {
            let t_write = (m.t_write != PREFILL_TIME).then_some(LogicalTime(m.t_write));
            let inv = Invalidation {
                lpn,
                t_write,
                pc: PcSig(m.pc),
                stream: StreamId(m.stream),
                cause,
                now: LogicalTime(self.t),
            };
            if self.metrics.measuring {
                if let Some(l) = inv.lifetime() {
                    self.metrics.lifetime(m.stream, l);
                }
            }
            self.policy.on_invalidate(&inv);
        }
    }

    /// Simulate a batch of requests.
    pub fn feed(&mut self, batch: &[Request]) -> Result<(), SimError> {
        // The host path is bound by two dependent cache misses per page (L2P, then the old
        // version's metadata): prefetch the L2P entry a few requests ahead and the metadata
        // of the version it points to a little later, so the misses overlap.
        const L2P_AHEAD: usize = 16;
        const META_AHEAD: usize = 8;
        for (i, r) in batch.iter().enumerate() {
            if let Some(f) = batch.get(i + L2P_AHEAD) {
                self.ftl.map.prefetch_l2p(f.lpn);
                self.policy.prefetch(f.lpn);
            }
            if let Some(f) = batch.get(i + META_AHEAD) {
                self.ftl.map.prefetch_meta_of(f.lpn);
            }
            self.step(r)?;
            self.index += 1;
        }
        Ok(())
    }

    #[inline]
    fn step(&mut self, r: &Request) -> Result<(), SimError> {
        let op = self.check(r)?;
        if !self.metrics.measuring && self.t >= self.opts.warmup {
            self.begin_measure();
        }
        let issue = self.queue.as_mut().map_or(0, |q| q.issue());
        self.ftl.now_ns = issue;
        let measuring = self.metrics.measuring;
        if measuring && self.metrics.first_issue_ns.is_none() {
            self.metrics.first_issue_ns = Some(issue);
        }
        let mut done = issue;
        match op {
            Op::Write => {
                let info = self.masked(r);
                self.policy.on_request(&info, LogicalTime(self.t));
                for i in 0..r.pages {
                    done = done.max(self.write_page(r, &info, i));
                }
            }
            Op::Trim => {
                for i in 0..r.pages as u64 {
                    self.invalidate(Lpn(r.lpn + i), Cause::Trim);
                }
                if measuring {
                    self.metrics.trim_pages += r.pages as u64;
                }
            }
            Op::Read => {
                for i in 0..r.pages as u64 {
                    done = done.max(self.ftl.read(Lpn(r.lpn + i)));
                }
                if measuring {
                    self.metrics.read_pages += r.pages as u64;
                }
            }
            Op::Flush => {}
        }
        if let Some(q) = self.queue.as_mut() {
            q.complete(done);
            if measuring && matches!(op, Op::Write | Op::Read) {
                self.metrics.latency(done - issue);
            }
        }
        if measuring && matches!(op, Op::Write | Op::Read) {
            self.metrics.requests += 1;
        }
        Ok(())
    }

    /// Page `i` of host write request `r` (`info`: the request as the policy sees it): the old
    /// version invalidated, the policy's stream, the page programmed, the policy's tick when due.
    /// Returns when the page is programmed (ns).
    #[inline]
    fn write_page(&mut self, r: &Request, info: &RequestInfo, i: u32) -> u64 {
        let lpn = Lpn(r.lpn + i as u64);
        if !self.metrics.measuring && self.t >= self.opts.warmup {
            self.begin_measure();
        }
        self.invalidate(lpn, Cause::Overwrite);
        let now = LogicalTime(self.t);
        let death = self
            .deaths
            .as_ref()
            .map_or(0, |d| d.per_write[self.t as usize]);
        let w = WriteInfo {
            lpn: if self.sees.has(Attrs::LPN) {
                lpn
            } else {
                Lpn(0)
            },
            page_in_request: i,
            req: *info,
            death,
        };
        let s = self.policy.on_write(&w, now);
        let host_limit = if self.gc_mode == GcMode::Policy {
            self.ftl.wps.len()
        } else {
            self.host_streams as usize
        };
        assert!(
            (s.0 as usize) < host_limit,
            "policy {} chose stream {} of {host_limit}",
            self.policy.name(),
            s.0
        );
        let meta = PageMeta::new(self.t, r.pc, s.0);
        let done = self
            .ftl
            .program_host(lpn, s.0, meta, death, now, self.policy.as_mut());
        if self.metrics.measuring {
            self.metrics.host_pages += 1;
            if let Some(p) = self.metrics.stream_pages.get_mut(s.0 as usize) {
                *p += 1;
            }
        }
        self.t += 1;
        if self.t >= self.next_tick {
            self.policy.tick(LogicalTime(self.t));
            self.next_tick += self.tick_period.unwrap_or(u64::MAX);
        }
        done
    }

    /// Check the whole FTL state after every GC (slow; on by default with the `verify` feature).
    pub fn set_verify_each_gc(&mut self, on: bool) {
        self.ftl.verify_each_gc = on;
    }

    /// Run the whole-state check (tests; O(physical pages)).
    pub fn verify(&self) -> Result<(), String> {
        self.ftl.verify()
    }

    /// Current value of an LPN's mapping (tests): `Some(stream)` if mapped.
    pub fn mapped_stream(&self, lpn: u64) -> Option<u8> {
        self.ftl
            .map
            .lookup(Lpn(lpn))
            .map(|p| self.ftl.page_meta(p).stream)
    }

    /// Write point (host stream, substream or policy class) of the unit holding an LPN (tests).
    pub fn mapped_write_point(&self, lpn: u64) -> Option<u8> {
        use crate::ftl::unit_pool::UnitState;
        let p = self.ftl.map.lookup(Lpn(lpn))?;
        match self.ftl.units.state[self.ftl.geo.unit_of(p).0 as usize] {
            UnitState::Open(w) | UnitState::Sealed(w) | UnitState::Collecting(w) => Some(w),
            UnitState::Free => None,
        }
    }

    pub fn host_time(&self) -> LogicalTime {
        LogicalTime(self.t)
    }

    /// Finish the run and assemble the result.
    pub fn finish(self) -> SimResult {
        let wall_s = self.started.elapsed().as_secs_f64();
        // Rates over the measured part only (prefill and warm-up excluded).
        let measured_s = self
            .measure_started
            .map_or(wall_s, |t| t.elapsed().as_secs_f64())
            .max(1e-9);
        let m = &self.metrics;
        let (gc_pages, erases) = m.physical(self.ftl.counters);
        let host = m.host_pages;
        let waf = if host == 0 {
            1.0
        } else {
            (host + gc_pages) as f64 / host as f64
        };
        let (iops, sim_time_s) = match (&self.queue, m.first_issue_ns) {
            (Some(q), Some(first)) if q.last_completion_ns > first => {
                let s = (q.last_completion_ns - first) as f64 / 1e9;
                (Some(m.requests as f64 / s), Some(s))
            }
            _ => (None, None),
        };
        let saved_table = self.policy.save_state();
        let engine_bytes = self.ftl.state_bytes();
        SimResult {
            trace: self.opts.trace_name.clone(),
            policy: self.policy.name().to_string(),
            ssd: self.ssd_name.clone(),
            seed: self.opts.seed,
            prefill: self.opts.prefill,
            aged_pages: self.aged_pages,
            warmup: self.opts.warmup,
            params: self.opts.params.clone(),
            gc_mode: self.gc_mode.name().to_string(),
            waf,
            host_pages: host,
            gc_pages,
            erases,
            trims_pages: m.trim_pages,
            reads_pages: m.read_pages,
            requests: m.requests,
            timing: self.opts.timing,
            iops,
            lat_mean_us: m.latency_mean_us(),
            lat_p50_us: m.latency_us(0.5),
            lat_p99_us: m.latency_us(0.99),
            lat_p999_us: m.latency_us(0.999),
            sim_time_s,
            stream0_share: if host == 0 {
                0.0
            } else {
                m.stream_pages[0] as f64 / host as f64
            },
            per_stream: m.per_stream(),
            open_write_points: self.ftl.open_write_points(),
            write_points: self.ftl.wps.len(),
            policy_state_bytes: self.policy.state_bytes(),
            engine_state_bytes: engine_bytes,
            bytes_per_page: engine_bytes as f64 / self.ftl.geo.physical_pages as f64,
            logical_pages: self.logical_pages,
            physical_pages: self.ftl.geo.physical_pages,
            latency_cdf: (self.opts.cdf_points > 0).then(|| m.latency_cdf(self.opts.cdf_points)),
            saved_table,
            wall_s,
            host_pages_per_s: host as f64 / measured_s,
            page_ops_per_s: (host + gc_pages) as f64 / measured_s,
        }
    }
}

#[cfg(test)]
mod prefill_tests;
