//! Whether one more open write point pays: the GC copies that keeping two groups of writes
//! apart saves, against the copies one more open unit costs by the spare space it takes.
//! Any policy that opens streams can ask; `pcstream` does with `merge=cost`.
//!
//! The model, per host page written (docs/POLICIES.md, "When a stream pays", with what it
//! measured: not the default of `pcstream`):
//! * **Saving.** A group `g` writes a share `w` of the host pages; a share `p` of its pages die
//!   (the rest outlive the run so far: right-censoring), after a lifetime whose log2 is normal
//!   (mean `mu`, spread `sigma`). A unit GC collects at age `t` (host pages since it was opened)
//!   holds the fraction `S(t) = 1 − p·Φ((log2 t − mu)/sigma)` of its pages still valid: GC copies
//!   `w·S(t)` pages per host page for the group; a group of several such parts (a cluster of
//!   PCs) copies the sum of theirs. Sharing a stream, two groups are collected at
//!   the same age `A` (the device's, measured). Apart, the same space (`w_a·A + w_b·A` host pages'
//!   worth) may be split into ages `x` and `y`, `w_a·x + w_b·y = (w_a + w_b)·A`, chosen to copy
//!   least: `saving = w_a·S_a(A) + w_b·S_b(A) − min (w_a·S_a(x) + w_b·S_b(y))` (≥ 0).
//! * **Cost.** GC copies per host page `c` grow as the slack shrinks, about as 1 / slack (greedy
//!   GC, the mean-field model of docs/FTL.md). The slack is what spare space is left beyond the
//!   GC watermarks and the open units, in units; one more open unit takes a unit of it:
//!   `cost = c·(slack / (slack − 1) − 1) = c / (slack − 1)`, infinite without slack.
//!
//! Keeping two groups apart pays when `saving > cost`.

use super::cluster::Moments;

/// Smallest log2 spread a group is modelled with: one lifetime sample, or many alike, would
/// otherwise make its survival a step (our choice: half an octave either side).
const MIN_SIGMA_LOG2: f64 = 0.5;

/// Ages tried for the first group when the space of two groups is split, evenly over the budget
/// and as many again spaced by powers down to 2^-`SPLIT_OCTAVES` of it (a short-lived group's
/// best age is a small share of the budget); more only refine a minimum flat near its bottom.
const SPLIT_STEPS: usize = 128;
const SPLIT_OCTAVES: f64 = 24.0;

/// One group of writes as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Group {
    /// Share of the host pages it writes, (0, 1].
    pub w: f64,
    /// Share of its pages that die, [0, 1].
    pub p: f64,
    /// Mean and spread of its pages' log2 lifetimes (host pages).
    pub mu: f64,
    pub sigma: f64,
}

impl Group {
    /// A group from its log2-lifetime moments, the pages it wrote and the host pages written.
    pub fn from_moments(m: &Moments, writes: f64, host_pages: f64) -> Group {
        let n = m.n.max(0.0);
        let mu = if n > 0.0 { m.s1 / n } else { 0.0 };
        let var = if n > 0.0 {
            (m.s2 / n - mu * mu).max(0.0)
        } else {
            0.0
        };
        let writes = writes.max(n);
        Group {
            w: if host_pages > 0.0 {
                (writes / host_pages).min(1.0)
            } else {
                0.0
            },
            p: if writes > 0.0 { n / writes } else { 0.0 },
            mu,
            sigma: var.sqrt().max(MIN_SIGMA_LOG2),
        }
    }

    /// Share of its pages still valid at age `t` host pages.
    pub fn survival(&self, t: f64) -> f64 {
        if t <= 0.0 {
            return 1.0;
        }
        let z = (t.log2() - self.mu) / self.sigma;
        1.0 - self.p * normal_cdf(z)
    }

    /// The two groups as one (pages pooled: their moments add).
    pub fn pooled(&self, o: &Group) -> Group {
        let w = self.w + o.w;
        if w <= 0.0 {
            return *self;
        }
        let (a, b) = (self.w / w, o.w / w);
        let mu = a * self.mu + b * o.mu;
        let m2 = a * (self.sigma.powi(2) + self.mu.powi(2)) + b * (o.sigma.powi(2) + o.mu.powi(2));
        Group {
            w,
            p: a * self.p + b * o.p,
            mu,
            sigma: (m2 - mu * mu).max(0.0).sqrt().max(MIN_SIGMA_LOG2),
        }
    }
}

/// A mixture of groups: its share of the host pages and its pages valid at age `t` (per host
/// page), each component weighing by its share.
fn share(m: &[Group]) -> f64 {
    m.iter().map(|g| g.w).sum()
}

fn valid(m: &[Group], t: f64) -> f64 {
    m.iter().map(|g| g.w * g.survival(t)).sum()
}

/// GC copies per host page two mixtures of groups cost when they share a stream collected at
/// age `age`.
pub fn shared_copies(a: &[Group], b: &[Group], age: f64) -> f64 {
    valid(a, age) + valid(b, age)
}

/// GC copies per host page the two mixtures cost apart, their space (`(w_a + w_b)·age`) split
/// into the two ages that copy least; the split tried includes `age` for both, so never more
/// than `shared_copies`.
pub fn apart_copies(a: &[Group], b: &[Group], age: f64) -> f64 {
    let shared = shared_copies(a, b, age);
    let (wa, wb) = (share(a), share(b));
    if wa <= 0.0 || wb <= 0.0 || age <= 0.0 {
        return shared;
    }
    let budget = (wa + wb) * age;
    let most_x = budget / wa;
    let even = (1..SPLIT_STEPS).map(|i| i as f64 / SPLIT_STEPS as f64);
    let octaves =
        (0..SPLIT_STEPS).map(|i| (-SPLIT_OCTAVES * (i + 1) as f64 / SPLIT_STEPS as f64).exp2());
    even.chain(octaves)
        .map(|s| {
            let x = most_x * s;
            let y = (budget - wa * x) / wb;
            valid(a, x) + valid(b, y)
        })
        .fold(shared, f64::min)
}

/// The GC copies per host page that keeping `a` and `b` in streams of their own saves.
pub fn saving(a: &[Group], b: &[Group], age: f64) -> f64 {
    (shared_copies(a, b, age) - apart_copies(a, b, age)).max(0.0)
}

/// The GC copies per host page one more open unit costs: `copy_rate / (slack − 1)`, `slack` the
/// units of spare space left beyond the GC watermarks and the units open now; infinite when
/// one more unit would leave none.
pub fn open_unit_cost(copy_rate: f64, slack_units: f64) -> f64 {
    if slack_units <= 1.0 {
        f64::INFINITY
    } else {
        copy_rate.max(0.0) / (slack_units - 1.0)
    }
}

/// The device as the model sees it at a decision: GC's copies per host page and the age at
/// which it collects units, both measured; the slack before a stream is opened.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Device {
    pub copy_rate: f64,
    pub gc_age: f64,
    pub slack_units: f64,
}

impl Device {
    /// Saving minus cost of keeping `a` and `b` apart (> 0: a stream of their own pays).
    pub fn net(&self, a: &[Group], b: &[Group]) -> f64 {
        if self.copy_rate <= 0.0 {
            // No GC yet: a stream costs nothing measurable, and separation is the papers' rule.
            return f64::INFINITY;
        }
        saving(a, b, self.gc_age) - open_unit_cost(self.copy_rate, self.slack_units)
    }
}

/// Φ(z), the standard normal CDF, from erfc (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let e = poly * (-x * x).exp();
    if x >= 0.0 {
        e
    } else {
        2.0 - e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(w: f64, p: f64, mu: f64, sigma: f64) -> Group {
        Group { w, p, mu, sigma }
    }

    #[test]
    fn the_normal_cdf_is_right_to_the_sixth_digit() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.0) - 0.841_344_746).abs() < 2e-7);
        assert!((normal_cdf(-1.96) - 0.024_997_895).abs() < 2e-7);
    }

    #[test]
    fn two_groups_computed_by_hand() {
        // a: half the pages, all die at 2^10 (narrow); b: half the pages, all die at 2^20.
        // Shared at age 2^15: a's pages are all dead (S ≈ 0), b's all valid (S ≈ 1):
        // 0.5·0 + 0.5·1 = 0.5 copies per host page. Apart, the budget 2^15 host pages' worth
        // is split: a at x = 2^11 (all dead, Φ(2) = 0.977) leaves b y = 2^16 − 2^11 = 63488,
        // still well below 2^20 — its pages all valid — so the best split saves only a's
        // residue: the saving is below 0.5·(1 − Φ(...)) ≈ 0.
        let a = g(0.5, 1.0, 10.0, 0.5);
        let b = g(0.5, 1.0, 20.0, 0.5);
        let age = 2f64.powi(15);
        let shared = shared_copies(&[a], &[b], age);
        assert!((shared - 0.5).abs() < 1e-6, "{shared}");
        assert!(saving(&[a], &[b], age) < 1e-6);
        // At age 2^19, shared, b's pages are nearly all valid (Φ(−2) = 0.02275 dead):
        // 0.5·(1 − 0.02275) = 0.4886 copies. Apart, a needs only ~2^12 (Φ(4) of it dead), so
        // b ages to y = (2^19 − 0.5·x)/0.5 ≈ 2^20: half of it dead, 0.5·0.5 = 0.25 copies.
        // Saving ≈ 0.4886 − 0.25 ≈ 0.24.
        let age = 2f64.powi(19);
        let shared = shared_copies(&[a], &[b], age);
        assert!((shared - 0.5 * (1.0 - normal_cdf(-2.0))).abs() < 1e-9);
        let apart = apart_copies(&[a], &[b], age);
        assert!((0.24..0.26).contains(&apart), "{apart}");
        assert!((0.23..0.25).contains(&saving(&[a], &[b], age)));
    }

    #[test]
    fn alike_groups_save_nothing_and_a_unit_costs_by_the_slack() {
        let a = g(0.3, 0.8, 12.0, 1.5);
        assert!(saving(&[a], &[a], 4096.0) < 1e-12);
        // Copy rate 0.4 and 11 units of slack: one more open unit costs 0.4 / 10 = 0.04.
        assert!((open_unit_cost(0.4, 11.0) - 0.04).abs() < 1e-12);
        assert!(open_unit_cost(0.4, 1.0).is_infinite());
        let d = Device {
            copy_rate: 0.4,
            gc_age: 4096.0,
            slack_units: 11.0,
        };
        assert!(d.net(&[a], &[a]) < 0.0, "no stream for a twin");
        let no_gc = Device {
            copy_rate: 0.0,
            ..d
        };
        assert!(
            no_gc.net(&[a], &[a]) > 0.0,
            "before any GC a stream costs nothing"
        );
    }

    #[test]
    fn a_small_group_does_not_pay_for_a_unit() {
        // The same lifetimes as in the hand case, but b writes 1 % of the pages: it saves at
        // most its own copies, 0.01, against 0.04 for the unit.
        let a = g(0.99, 1.0, 10.0, 0.5);
        let b = g(0.01, 1.0, 20.0, 0.5);
        let d = Device {
            copy_rate: 0.4,
            gc_age: 2f64.powi(19),
            slack_units: 11.0,
        };
        assert!(saving(&[a], &[b], d.gc_age) <= 0.01 + 1e-9);
        assert!(d.net(&[a], &[b]) < 0.0);
        let big = g(0.5, 1.0, 20.0, 0.5);
        assert!(d.net(&[g(0.5, 1.0, 10.0, 0.5)], &[big]) > 0.0);
    }

    #[test]
    fn pooled_groups_keep_the_moments_of_their_pages() {
        let a = g(0.25, 1.0, 4.0, 1.0);
        let b = g(0.75, 0.5, 8.0, 1.0);
        let p = a.pooled(&b);
        assert!((p.w - 1.0).abs() < 1e-12);
        assert!((p.mu - 7.0).abs() < 1e-12);
        // E[x²] = 0.25·(1 + 16) + 0.75·(1 + 64) = 53; var = 53 − 49 = 4.
        assert!((p.sigma - 2.0).abs() < 1e-12);
        assert!((p.p - 0.625).abs() < 1e-12);
    }
}
