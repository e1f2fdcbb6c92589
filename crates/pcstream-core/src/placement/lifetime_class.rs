//! Lifetime classes on geometric boundaries: the oracle buckets host and GC writes by remaining
//! lifetime on them, and `pcstream`'s `age` / `death` substreams bucket GC copies the same way.

/// Default ratio between the boundaries of adjacent geometric classes (our choice): from the
/// default first boundary of half a unit, boundaries at 0.5, 2, 8, 32 units, so a handful of
/// classes covers lifetimes from well under a unit to many units.
pub const CLASS_RATIO: f64 = 4.0;

/// Class `0..=last` of a span `r` (in pages) on geometric boundaries `base · ratio^i`: class
/// `c` holds `base·ratio^(c−1) ≤ r < base·ratio^c`, the last one everything beyond.
///
/// Requires: `base ≥ 1` and `ratio > 1` (every caller checks its parameters when built).
pub fn geometric_class(r: u64, base: f64, ratio: f64, last: u32) -> u32 {
    debug_assert!(base >= 1.0 && ratio > 1.0);
    let mut c = 0u32;
    let mut b = base;
    while c < last && r as f64 >= b {
        c += 1;
        b *= ratio;
    }
    c
}
