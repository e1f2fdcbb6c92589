//! The prefill and the aged state written a unit's worth at a time (`Ftl::program_run`) leave
//! the engine exactly as writing them page by page (`Ftl::program_host`) does.

use super::*;

/// 2 × 2 dies × 256 blocks × 16 pages: units of 64 pages, 7 % OP.
fn device() -> SsdConfig {
    SsdConfig::from_toml(
        "test",
        "[geometry]\nchannels = 2\nways = 2\nblocks_per_die = 256\npages_per_block = 16\n\
         [ftl]\nop = 0.07\nhost_streams = 4\ngc_unit = \"line\"\ngc_victim = \"greedy\"\n",
    )
    .expect("valid test config")
}

/// Aged extents out of order, most crossing unit boundaries, covering 90 % of the device; then
/// some writes (for the death pre-pass of the oracle).
fn aged_and_trace(logical: u64) -> (Vec<Request>, Vec<Request>) {
    let mut aged = Vec::new();
    let mut lpn = 0;
    let mut k = 0u64;
    while lpn + 150 < logical * 9 / 10 {
        let pages = 1 + (k * 37 % 150) as u32;
        aged.push(Request::write(lpn, pages));
        lpn += pages as u64 + k % 3;
        k += 1;
    }
    aged.reverse();
    aged.swap(0, 5);
    let trace = (0..2000)
        .map(|i| Request::write(i * 7 % logical, 1))
        .collect();
    (aged, trace)
}

fn simulator(
    cfg: &SsdConfig,
    policy: &str,
    prefill: f64,
    aged: &[Request],
    trace: &[Request],
) -> Simulator {
    let opts = SimOptions {
        policy: policy.into(),
        prefill,
        seed: 1,
        trace_name: "test".into(),
        ..Default::default()
    };
    let mut sim = Simulator::new(cfg, opts).expect("simulator");
    if !aged.is_empty() {
        sim.set_aged(aged).expect("aged state");
    }
    if sim.needs_death_times() {
        let mut pass = sim.death_pass();
        pass.feed_batch(trace);
        sim.set_death_times(pass.finish());
    }
    sim
}

/// What `start` did before `program_run`: `program_host` for every page in turn.
fn page_by_page(sim: &mut Simulator) {
    let meta = PageMeta::new(PREFILL_TIME, 0, 0);
    let aged = sim.aged.clone();
    let lpns = (0..sim.prefill_pages).chain(aged.iter().flat_map(|&(l, n)| l..l + n));
    for lpn in lpns {
        let death = sim.deaths.as_ref().map_or(0, |d| d.prefill[lpn as usize]);
        sim.ftl.program_host(
            Lpn(lpn),
            0,
            meta,
            death,
            LogicalTime(0),
            sim.policy.as_mut(),
        );
    }
}

/// The page map, the valid count of each unit, the pages' death times and the open write points.
type State = (Vec<Option<u32>>, Vec<u32>, Option<Vec<u64>>, usize);

fn state(sim: &Simulator) -> State {
    let map = (0..sim.logical_pages)
        .map(|l| sim.ftl.map.lookup(Lpn(l)).map(|p| p.0))
        .collect();
    let deaths = sim.ftl.map.death.clone();
    (
        map,
        sim.ftl.units.valid.clone(),
        deaths,
        sim.ftl.open_write_points(),
    )
}

#[test]
fn a_unit_at_a_time_equals_page_by_page() {
    let cfg = device();
    let logical = cfg.logical_pages();
    let (aged, trace) = aged_and_trace(logical);
    assert!(aged.len() > 40, "many extents");
    for policy in ["baseline", "pcstream", "oracle"] {
        for (prefill, aged) in [(0.0, &aged[..]), (0.9, &[][..])] {
            let mut bulk = simulator(&cfg, policy, prefill, aged, &trace);
            bulk.start().expect("start");
            let mut single = simulator(&cfg, policy, prefill, aged, &trace);
            page_by_page(&mut single);
            let (b, s) = (state(&bulk), state(&single));
            assert!(b.0.iter().filter(|p| p.is_some()).count() as u64 > logical * 8 / 10);
            assert_eq!(b, s, "{policy}, prefill {prefill}");
            bulk.ftl.verify().expect("consistent after the bulk fill");
        }
    }
}
