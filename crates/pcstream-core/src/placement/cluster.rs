//! Deterministic 1-D clustering shared by the learned policies (PCStream, LKStream).
//!
//! `kmeans_1d` is the optimal 1-D k-means of Wang & Song (Ckmeans.1d.dp,
//! R Journal 2011): a dynamic programme over the sorted values, `D[k][i] = min_j D[k−1][j−1] + sse(j, i)`,
//! ties → smallest `j`. The row recurrence is solved by divide and conquer over `i` (the optimal
//! `j` is monotone in `i` for this cost, as Ckmeans exploits), so one clustering costs
//! O(K·P·log P) instead of O(K·P²). `agglomerative_1d` is the PCStream HotStorage'18 paper's reading (merge the adjacent
//! pair of groups with the closest means, ties → leftmost). Both return contiguous groups of the
//! sorted input, numbered by ascending centroid; neither depends on anything but its input.

/// A clustering of sorted values: `labels[i]` is the group of `x[i]` (non-decreasing, `0..k`),
/// `centroids[g]` the mean of group `g` (ascending).
#[derive(Clone, Debug, PartialEq)]
pub struct Clustering {
    pub labels: Vec<u32>,
    pub centroids: Vec<f64>,
}

impl Clustering {
    fn from_starts(x: &[f64], starts: &[usize]) -> Clustering {
        let mut labels = vec![0u32; x.len()];
        let mut centroids = Vec::with_capacity(starts.len());
        for (g, &s) in starts.iter().enumerate() {
            let e = starts.get(g + 1).copied().unwrap_or(x.len());
            debug_assert!(s < e, "empty group");
            labels[s..e].fill(g as u32);
            centroids.push(x[s..e].iter().sum::<f64>() / (e - s) as f64);
        }
        Clustering { labels, centroids }
    }

    /// Within-group sum of squared deviations (the k-means objective).
    pub fn sse(&self, x: &[f64]) -> f64 {
        x.iter()
            .zip(&self.labels)
            .map(|(v, &g)| (v - self.centroids[g as usize]).powi(2))
            .sum()
    }
}

/// Index of the centroid nearest to `x` (ties → the smaller index); `None` if there is none.
pub fn nearest(centroids: &[f64], x: f64) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, &c) in centroids.iter().enumerate() {
        let d = (x - c).abs();
        if best.is_none_or(|(_, bd)| d < bd) {
            best = Some((i, d));
        }
    }
    best.map(|(i, _)| i)
}

/// Starts of the runs of equal values in sorted `x`.
fn distinct_starts(x: &[f64]) -> Vec<usize> {
    (0..x.len())
        .filter(|&i| i == 0 || x[i] != x[i - 1])
        .collect()
}

fn check_sorted(x: &[f64]) {
    debug_assert!(
        x.windows(2).all(|w| w[0] <= w[1]) && x.iter().all(|v| v.is_finite()),
        "clustering input must be sorted and finite"
    );
}

/// Optimal k-means of sorted, finite `x` into at most `k` groups (one per distinct value when
/// there are at most `k` of them). Empty input → empty clustering.
pub fn kmeans_1d(x: &[f64], k: usize) -> Clustering {
    check_sorted(x);
    let distinct = distinct_starts(x);
    if x.is_empty() || k == 0 {
        return Clustering {
            labels: Vec::new(),
            centroids: Vec::new(),
        };
    }
    if distinct.len() <= k {
        return Clustering::from_starts(x, &distinct);
    }
    let p = x.len();
    // Prefix sums over x shifted by its median: keeps the SSE differences well conditioned.
    let shift = x[p / 2];
    let mut s1 = vec![0.0f64; p + 1];
    let mut s2 = vec![0.0f64; p + 1];
    for i in 0..p {
        let v = x[i] - shift;
        s1[i + 1] = s1[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    // sse of x[a..=b] (0-based, inclusive)
    let sse = |a: usize, b: usize| -> f64 {
        let n = (b - a + 1) as f64;
        let s = s1[b + 1] - s1[a];
        ((s2[b + 1] - s2[a]) - s * s / n).max(0.0)
    };
    // d[i] = best cost of x[0..=i] in the current number of groups; arg[g][i] = start of the last
    // group in that solution.
    let mut prev: Vec<f64> = (0..p).map(|i| sse(0, i)).collect();
    let mut arg: Vec<Vec<u32>> = vec![vec![0; p]];
    for g in 1..k {
        let mut cur = vec![f64::INFINITY; p];
        let mut a = vec![0u32; p];
        // Rows i < g cannot hold g+1 non-empty groups; solve i in g..p with j in g..=i.
        solve_row(g, p - 1, g, p - 1, &prev, &sse, &mut cur, &mut a);
        prev = cur;
        arg.push(a);
    }
    // Backtrack the starts of the k groups.
    let mut starts = vec![0usize; k];
    let mut end = p - 1;
    for g in (0..k).rev() {
        let s = arg[g][end] as usize;
        starts[g] = s;
        if g > 0 {
            end = s - 1;
        }
    }
    debug_assert_eq!(starts[0], 0);
    Clustering::from_starts(x, &starts)
}

/// Divide and conquer over rows `lo..=hi`, knowing the optimal split lies in `jlo..=jhi`.
#[allow(clippy::too_many_arguments)]
fn solve_row(
    lo: usize,
    hi: usize,
    jlo: usize,
    jhi: usize,
    prev: &[f64],
    sse: &dyn Fn(usize, usize) -> f64,
    cur: &mut [f64],
    arg: &mut [u32],
) {
    if lo > hi {
        return;
    }
    let i = (lo + hi) / 2;
    let mut best = f64::INFINITY;
    let mut bj = jlo;
    for j in jlo..=jhi.min(i) {
        let c = prev[j - 1] + sse(j, i);
        if c < best {
            best = c;
            bj = j;
        }
    }
    cur[i] = best;
    arg[i] = bj as u32;
    if i > lo {
        solve_row(lo, i - 1, jlo, bj, prev, sse, cur, arg);
    }
    solve_row(i + 1, hi, bj, jhi, prev, sse, cur, arg);
}

/// Seed 000's agglomerative clustering of sorted `x` into at most `k` groups: start from one
/// group per distinct value, repeatedly merge the adjacent pair whose (unweighted) means differ
/// least, ties → leftmost pair. O(P²).
pub fn agglomerative_1d(x: &[f64], k: usize) -> Clustering {
    check_sorted(x);
    if x.is_empty() || k == 0 {
        return Clustering {
            labels: Vec::new(),
            centroids: Vec::new(),
        };
    }
    let mut starts = distinct_starts(x);
    let mean = |s: usize, e: usize| x[s..e].iter().sum::<f64>() / (e - s) as f64;
    let mut means: Vec<f64> = (0..starts.len())
        .map(|g| mean(starts[g], starts.get(g + 1).copied().unwrap_or(x.len())))
        .collect();
    while starts.len() > k {
        let mut best = 0usize;
        for g in 1..starts.len() - 1 {
            if means[g + 1] - means[g] < means[best + 1] - means[best] {
                best = g;
            }
        }
        starts.remove(best + 1);
        means.remove(best + 1);
        let e = starts.get(best + 1).copied().unwrap_or(x.len());
        means[best] = mean(starts[best], e);
    }
    Clustering::from_starts(x, &starts)
}

/// Moments of one group's samples (count, Σv, Σv²), e.g. the log2 lifetimes of the pages
/// its PCs wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    pub n: f64,
    pub s1: f64,
    pub s2: f64,
}

impl std::ops::Add for Moments {
    type Output = Moments;
    fn add(self, o: Moments) -> Moments {
        Moments {
            n: self.n + o.n,
            s1: self.s1 + o.s1,
            s2: self.s2 + o.s2,
        }
    }
}

impl Moments {
    /// One sample `v`.
    pub fn one(v: f64) -> Moments {
        Moments {
            n: 1.0,
            s1: v,
            s2: v * v,
        }
    }
    /// The same mean and spread with `k` times the weight.
    pub fn scaled(self, k: f64) -> Moments {
        debug_assert!(k.is_finite() && k >= 0.0);
        Moments {
            n: self.n * k,
            s1: self.s1 * k,
            s2: self.s2 * k,
        }
    }
    fn mean(&self) -> f64 {
        self.s1 / self.n
    }
    fn var(&self) -> f64 {
        let m = self.mean();
        (self.s2 / self.n - m * m).max(0.0)
    }
}

/// Resolution of the samples, in their unit, added in quadrature to every group's standard
/// deviation: a group of identical values would otherwise be infinitely informative, and a
/// few dozen samples that happen to agree would outweigh a large group. For log2 lifetimes
/// 1/8 is ±9 %.
pub const RESOLUTION: f64 = 0.125;

/// What keeping groups `a` and `b` apart tells about a sample, in nats, summed over their
/// samples: the Gaussian log-likelihood gain of two groups over one,
/// `n_a·ln(σ_ab/σ_a) + n_b·ln(σ_ab/σ_b)` (each σ widened by [`RESOLUTION`]). It is large when the
/// groups' means differ by more than their spread, and also when one group is much narrower
/// than the other (its data die together even where their means agree); it is near 0 when the
/// two look alike.
pub fn split_gain(a: &Moments, b: &Moments) -> f64 {
    if a.n <= 0.0 || b.n <= 0.0 {
        return f64::INFINITY;
    }
    let sd = |m: &Moments| (m.var() + RESOLUTION * RESOLUTION).sqrt();
    let m = sd(&(*a + *b));
    (a.n * (m / sd(a)).ln() + b.n * (m / sd(b)).ln()).max(0.0)
}

/// What keeping groups `a` and `b` apart tells about a sample through their means alone, in
/// nats summed over their samples: the Gaussian log-likelihood gain of two means with one shared
/// spread over one group, `N·ln(σ_ab/σ_pooled)` (σ widened by [`RESOLUTION`]). Unlike
/// [`split_gain`] it is 0 for two groups with one mean however different their spreads: data
/// whose lifetimes sit inside another's die as early as they do on average.
pub fn mean_gain(a: &Moments, b: &Moments) -> f64 {
    if a.n <= 0.0 || b.n <= 0.0 {
        return f64::INFINITY;
    }
    let n = a.n + b.n;
    let pooled = (a.n * a.var() + b.n * b.var()) / n + RESOLUTION * RESOLUTION;
    let all = (*a + *b).var() + RESOLUTION * RESOLUTION;
    (n * 0.5 * (all / pooled).ln()).max(0.0)
}

/// Merge adjacent groups (given in centroid order) that are not worth keeping apart: while the
/// adjacent pair whose split gains least gains less than `min_gain` nats per sample of all
/// groups (see [`split_gain`]), merge it and recompute its moments (ties → leftmost). Returns
/// each input group's merged group, non-decreasing from 0; `min_gain` ≤ 0 merges nothing.
pub fn merge_uninformative(groups: &[Moments], min_gain: f64) -> Vec<u32> {
    let total: f64 = groups.iter().map(|g| g.n.max(0.0)).sum();
    // Merged groups as (moments, first input group).
    let mut merged: Vec<(Moments, usize)> = groups.iter().copied().zip(0..).collect();
    while merged.len() > 1 && total > 0.0 {
        let (i, gain) = (0..merged.len() - 1)
            .map(|i| (i, split_gain(&merged[i].0, &merged[i + 1].0)))
            .fold(
                (0, f64::INFINITY),
                |best, c| if c.1 < best.1 { c } else { best },
            );
        if gain / total >= min_gain {
            break;
        }
        let right = merged.remove(i + 1).0;
        merged[i].0 = merged[i].0 + right;
    }
    let mut of = vec![0u32; groups.len()];
    for (m, w) in merged.iter().enumerate() {
        let end = merged.get(m + 1).map_or(groups.len(), |n| n.1);
        of[w.1..end].fill(m as u32);
    }
    of
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exhaustive optimum over all contiguous splits (small inputs only).
    fn brute(x: &[f64], k: usize) -> f64 {
        fn go(x: &[f64], from: usize, k: usize) -> f64 {
            let cost = |a: usize, b: usize| {
                let m = x[a..b].iter().sum::<f64>() / (b - a) as f64;
                x[a..b].iter().map(|v| (v - m).powi(2)).sum::<f64>()
            };
            if k == 1 {
                return cost(from, x.len());
            }
            (from + 1..=x.len() - (k - 1))
                .map(|s| cost(from, s) + go(x, s, k - 1))
                .fold(f64::INFINITY, f64::min)
        }
        go(x, 0, k)
    }

    #[test]
    fn dp_matches_exhaustive_search() {
        let mut seed = 12345u64;
        for case in 0..200 {
            let p = 3 + case % 9;
            let mut x: Vec<f64> = (0..p)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((seed >> 33) % 40) as f64 / 4.0
                })
                .collect();
            x.sort_by(f64::total_cmp);
            let distinct = distinct_starts(&x).len();
            for k in 1..=4 {
                let c = kmeans_1d(&x, k);
                assert_eq!(c.centroids.len(), k.min(distinct));
                assert!(c.centroids.windows(2).all(|w| w[0] < w[1]));
                if distinct > k {
                    let b = brute(&x, k);
                    assert!(
                        (c.sse(&x) - b).abs() < 1e-9,
                        "{x:?} k={k}: {} vs {b}",
                        c.sse(&x)
                    );
                }
            }
        }
    }

    #[test]
    fn obvious_groups_are_found_by_both() {
        let x = [1.0, 1.1, 1.2, 5.0, 5.1, 9.0, 9.3, 9.4];
        for c in [kmeans_1d(&x, 3), agglomerative_1d(&x, 3)] {
            assert_eq!(c.labels, vec![0, 0, 0, 1, 1, 2, 2, 2]);
        }
        // Fewer distinct values than groups: one group per value.
        let c = kmeans_1d(&[2.0, 2.0, 3.0], 5);
        assert_eq!(c.labels, vec![0, 0, 1]);
        assert_eq!(nearest(&c.centroids, 2.6), Some(1));
        assert_eq!(
            nearest(&[1.0, 3.0], 2.0),
            Some(0),
            "ties go to the smaller index"
        );
    }

    /// Moments of `n` samples of mean `m` and standard deviation `sd`.
    fn mom(n: f64, m: f64, sd: f64) -> Moments {
        Moments {
            n,
            s1: n * m,
            s2: n * (sd * sd + m * m),
        }
    }

    #[test]
    fn mean_gain_counts_only_a_difference_of_means() {
        // The journal beside fio's data (bundled fio-pareto0.5, log2 lifetimes): one narrow group
        // inside a wide one at nearly the same mean (moments from its quartiles). Their spreads
        // differ enough for split_gain to keep them apart at pcstream's default of 0.02 nats per
        // sample many times over, their means not enough for mean_gain.
        let (journal, data) = (mom(27.0, 15.8, 0.45), mom(73.0, 16.3, 1.6));
        assert!(split_gain(&journal, &data) / 100.0 > 0.1);
        assert!(mean_gain(&journal, &data) / 100.0 < 0.02);
        // One spread, means 3 sd apart: both see it, and mean_gain is the Gaussian gain of two
        // means, N/2 · ln(1 + n_a n_b Δ² / (N² σ²)).
        let (a, b) = (mom(50.0, 10.0, 1.0), mom(50.0, 13.0, 1.0));
        let sd2 = 1.0 + RESOLUTION * RESOLUTION;
        let expect = 50.0 * (1.0 + 0.25 * 9.0 / sd2).ln();
        assert!(
            (mean_gain(&a, &b) - expect).abs() < 1e-9,
            "{} vs {expect}",
            mean_gain(&a, &b)
        );
        assert!(split_gain(&a, &b) > 0.0);
        // A group without samples is unlike anything, as for split_gain.
        assert_eq!(mean_gain(&a, &Moments::default()), f64::INFINITY);
    }

    #[test]
    fn uninformative_groups_merge_and_informative_ones_stay() {
        // Means 1 apart with sd 2 look alike; 10 apart they do not.
        let g = [
            mom(100.0, 0.0, 2.0),
            mom(100.0, 1.0, 2.0),
            mom(100.0, 11.0, 2.0),
        ];
        assert_eq!(merge_uninformative(&g, 0.05), vec![0, 0, 1]);
        assert_eq!(
            merge_uninformative(&g, 0.0),
            vec![0, 1, 2],
            "0 merges nothing"
        );
        assert_eq!(merge_uninformative(&g, 10.0), vec![0, 0, 0]);
        // Equal means, very different spreads: a narrow group is worth its own stream.
        let g = [mom(100.0, 14.6, 0.2), mom(300.0, 14.8, 2.3)];
        assert_eq!(merge_uninformative(&g, 0.05), vec![0, 1]);
        // The same narrow group as a sliver of the samples is not.
        let g = [mom(1.0, 14.6, 0.2), mom(3000.0, 14.8, 2.3)];
        assert_eq!(merge_uninformative(&g, 0.05), vec![0, 0]);
        // The least informative pair goes first: (4, 4.5) before (0, 4.25).
        let g = [
            mom(10.0, 0.0, 2.0),
            mom(10.0, 4.0, 2.0),
            mom(10.0, 4.5, 2.0),
        ];
        assert_eq!(merge_uninformative(&g, 0.05), vec![0, 1, 1]);
        // Identical point masses merge; a group without samples is never merged.
        let g = [mom(5.0, 3.0, 0.0), mom(5.0, 3.0, 0.0), mom(5.0, 4.0, 0.0)];
        assert_eq!(merge_uninformative(&g, 0.05), vec![0, 0, 1]);
        let g = [mom(5.0, 3.0, 1.0), Moments::default(), mom(5.0, 3.1, 1.0)];
        assert_eq!(merge_uninformative(&g, 0.05), vec![0, 1, 2]);
        assert!(merge_uninformative(&[], 0.05).is_empty());
    }
}
