//! pcstream's substream rules that place GC copies by age or by remaining lifetime: the class
//! of one copy, and what sorting GC copies does to the WAF of a skewed workload.

mod common;
use common::*;
use pcstream_core::placement::{registry, Attrs, PageInfo, PolicyCtx};
use pcstream_core::units::{LogicalTime, Lpn, PcSig, StreamId, UnitId, NEVER};

fn ctx(params: &[(&str, &str)]) -> PolicyCtx {
    PolicyCtx {
        host_streams: 4,
        logical_pages: 1 << 16,
        unit_pages: 64,
        units: 1024,
        write_point_budget: 8,
        seed: 1,
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn copy(t_write: Option<u64>, death: u64) -> PageInfo {
    PageInfo {
        lpn: Lpn(1),
        t_write: t_write.map(LogicalTime),
        pc: PcSig(7),
        stream: StreamId(1),
        victim_wp: 1,
        victim: UnitId(0),
        victim_created: LogicalTime(0),
        death,
    }
}

#[test]
fn age_and_death_classes_follow_the_geometric_boundaries() {
    // Units of 64 pages: boundaries at 32 and 128 pages; 3 classes = write points 4, 5, 6.
    let now = LogicalTime(10_000);
    let mut age = registry::build(
        "pcstream",
        &mut ctx(&[("substream_policy", "age"), ("substreams", "3")]),
    )
    .unwrap();
    assert!(!age.sees().has(Attrs::DEATH));
    assert_eq!(age.internal_write_points(), 3);
    assert_eq!(age.gc_fanout(), Some(3));
    let by_age = |p: &mut dyn pcstream_core::placement::Placement, t: Option<u64>| {
        p.gc_destination(&copy(t, 0), now).0
    };
    assert_eq!(by_age(age.as_mut(), Some(10_000 - 31)), 4);
    assert_eq!(by_age(age.as_mut(), Some(10_000 - 32)), 5);
    assert_eq!(by_age(age.as_mut(), Some(10_000 - 127)), 5);
    assert_eq!(by_age(age.as_mut(), Some(10_000 - 128)), 6);
    assert_eq!(by_age(age.as_mut(), Some(0)), 6);
    // Aged-state data (no host write time) is the oldest.
    assert_eq!(by_age(age.as_mut(), None), 6);

    let mut death = registry::build(
        "pcstream",
        &mut ctx(&[("substream_policy", "death"), ("substreams", "3")]),
    )
    .unwrap();
    assert!(death.sees().has(Attrs::DEATH));
    let by_death = |p: &mut dyn pcstream_core::placement::Placement, d: u64| {
        p.gc_destination(&copy(Some(0), d), now).0
    };
    assert_eq!(by_death(death.as_mut(), 10_000 + 5), 4);
    assert_eq!(by_death(death.as_mut(), 10_000 + 100), 5);
    assert_eq!(by_death(death.as_mut(), 10_000 + 500), 6);
    assert_eq!(by_death(death.as_mut(), NEVER), 6);

    // Boundaries of one's own: 1000 and 1000·2 = 2000 pages.
    let mut own = registry::build(
        "pcstream",
        &mut ctx(&[
            ("substream_policy", "death"),
            ("substreams", "3"),
            ("class_base", "1000"),
            ("class_ratio", "2"),
        ]),
    )
    .unwrap();
    assert_eq!(by_death(own.as_mut(), 10_000 + 999), 4);
    assert_eq!(by_death(own.as_mut(), 10_000 + 1000), 5);
    assert_eq!(by_death(own.as_mut(), 10_000 + 1999), 5);
    assert_eq!(by_death(own.as_mut(), 10_000 + 2000), 6);

    for bad in ["0", "4"] {
        let e = registry::build(
            "pcstream",
            &mut ctx(&[("substream_policy", "age"), ("substreams", bad)]),
        )
        .err()
        .expect("substreams outside 1 ..= host streams − 1 is refused");
        assert!(e.to_string().contains("substreams="), "{e}");
    }
    for (key, bad) in [
        ("hv_test", "median"),
        ("hv_ratio", "-1"),
        ("hv_ratio", "NaN"),
        ("class_base", "0.5"),
        ("class_base", "inf"),
        ("class_ratio", "1"),
        ("class_ratio", "NaN"),
        ("merge_weight", "samples"),
        ("hv_min_units", "-1"),
        ("hv_generations", "0"),
        ("hv_generations", "3"),
        ("join_drift", "-1"),
        ("join_drift", "inf"),
    ] {
        let e = registry::build("pcstream", &mut ctx(&[(key, bad)]))
            .err()
            .expect("a bad substream test is refused");
        assert!(e.to_string().contains(&format!("{key}={bad}")), "{e}");
    }
    // pcstream-star has no substreams to split into generations.
    let e = registry::build("pcstream-star", &mut ctx(&[("hv_generations", "2")]))
        .err()
        .expect("pcstream-star refuses hv_generations");
    assert!(e.to_string().contains("hv_generations"), "{e}");
}

#[test]
fn sorting_gc_copies_by_remaining_lifetime_cuts_the_waf_of_a_skewed_workload() {
    // One PC (unknown context: everything in stream 0), 90 % of the writes to 10 % of the LPNs.
    // Host placement is the same for every variant; only where GC copies go differs.
    let cfg = device(256, 64, 0.1, "greedy", "block", 4);
    let logical = cfg.logical_pages();
    let warm = 2 * logical;
    let reqs = hotcold(warm + 4 * logical, logical, 0.1, 0.9, 5);
    let waf = |params: &[(&str, &str)], policy: &str| {
        let mut o = opts(policy, 0.0, warm);
        o.params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        run(&cfg, o, &reqs, false).waf
    };
    let star = waf(&[], "pcstream-star");
    let death = waf(
        &[("substream_policy", "death"), ("substreams", "3")],
        "pcstream",
    );
    let age = waf(
        &[("substream_policy", "age"), ("substreams", "3")],
        "pcstream",
    );
    // Survivors of a unit are mostly cold pages; kept apart from the hot host writes they stop
    // being copied again and again.
    // Measured: star 1.280, death 1.123, age 1.123 (hot/cold data: age predicts lifetime well).
    assert!(death < 0.92 * star, "death {death:.3} vs star {star:.3}");
    assert!(age < 0.92 * star, "age {age:.3} vs star {star:.3}");
}

#[test]
fn a_victim_wide_destination_agrees_with_the_per_page_one() {
    // The FTL asks `gc_victim_destination` once per victim and then skips `gc_destination`:
    // both must give the same write point, and rules that look at each page must not answer.
    for (name, params) in [
        ("pcstream", vec![]),
        ("pcstream", vec![("substreams", "3")]),
        (
            "pcstream",
            vec![("substreams", "2"), ("hv_generations", "2")],
        ),
        ("per-pc", vec![]),
    ] {
        let mut p = registry::build(name, &mut ctx(&params)).unwrap();
        let wps = 4 + p.internal_write_points() as u8;
        for wp in 0..wps {
            let page = PageInfo {
                victim_wp: wp,
                ..copy(Some(5), 0)
            };
            let one = p.gc_destination(&page, LogicalTime(100));
            assert_eq!(p.gc_victim_destination(wp), Some(one), "{name} wp {wp}");
        }
    }
    for policy in ["age", "death"] {
        let mut p = registry::build("pcstream", &mut ctx(&[("substream_policy", policy)])).unwrap();
        assert_eq!(p.gc_victim_destination(1), None, "{policy}");
    }
}
