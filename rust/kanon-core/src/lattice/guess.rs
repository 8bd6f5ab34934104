//! A guess, before a node is checked, of whether its rows below k exceed the suppression
//! limit: the rows below k it would have if its attributes were independent, estimated
//! on a sample of the histogram. Phase 1 probes a path first where the guess puts its
//! lowest node within the limit; only the order of the checks depends on the guess,
//! never a status or the result.

use super::search::Search;

/// Tuples of the histogram the guess reads (every n-th).
const SAMPLE: usize = 4096;

pub(super) struct Guess {
    /// Sampled tuples (indices into the histogram).
    sample: Vec<usize>,
    /// The histogram's rows over the sample's.
    scale: f64,
    /// `ln(rows / N)` per attribute, level and label (levels outside the lattice empty).
    log_share: Vec<Vec<Vec<f64>>>,
    /// `ln N`.
    log_rows: f64,
}

impl Guess {
    /// The guess over `search`'s histogram, or None below `min_tuples` tuples.
    pub(super) fn new(search: &Search<'_>, min_tuples: usize) -> Option<Self> {
        let tuples = search.counts.len();
        if tuples < min_tuples.max(1) {
            return None;
        }
        let options = search.options;
        let rows: u64 = search.counts.iter().sum();
        let sample: Vec<usize> = (0..tuples).step_by(tuples.div_ceil(SAMPLE)).collect();
        let sampled: u64 = sample.iter().map(|&t| search.counts[t]).sum();
        if rows == 0 || sampled == 0 {
            return None;
        }
        let log_rows = (rows as f64).ln();
        let log_share = (0..search.m)
            .map(|j| {
                let per_leaf = search.rows_per_leaf(j);
                let (lo, hi) = (options.min_level[j], options.max_level[j]);
                (0..=search.hierarchies[j].height() as u32)
                    .map(|l| {
                        if l < lo || l > hi {
                            return Vec::new();
                        }
                        search
                            .rows_per_label(j, &per_leaf, l as usize)
                            .iter()
                            .map(|&c| (c.max(1) as f64).ln() - log_rows)
                            .collect()
                    })
                    .collect()
            })
            .collect();
        Some(Self {
            sample,
            scale: rows as f64 / sampled as f64,
            log_share,
            log_rows,
        })
    }

    /// Whether the node at `levels` is guessed over the limit: a row whose labels have
    /// shares `p_j` of the rows shares its class with Poisson(N · Π p_j) others.
    pub(super) fn over(&self, search: &Search<'_>, levels: &[u32]) -> bool {
        let (m, k) = (search.m, search.options.k);
        let mut below = 0.0;
        for &t in &self.sample {
            let row = &search.tuples[t * m..(t + 1) * m];
            let log_mean = row
                .iter()
                .zip(levels)
                .enumerate()
                .map(|(j, (&leaf, &l))| {
                    let label = search.hierarchies[j].generalize(l as usize, leaf);
                    self.log_share[j][l as usize][label as usize]
                })
                .sum::<f64>()
                + self.log_rows;
            below += search.counts[t] as f64 * at_most(log_mean.exp(), k.saturating_sub(2));
        }
        below * self.scale > search.options.max_suppressed as f64
    }
}

/// P(X ≤ n) for X ~ Poisson(mean).
fn at_most(mean: f64, n: u64) -> f64 {
    // Far above n the sum underflows to 0 anyway: skip it.
    let n_f = n as f64;
    if mean > n_f + 12.0 * n_f.sqrt() + 40.0 {
        return 0.0;
    }
    let mut term = (-mean).exp();
    let mut sum = term;
    for i in 1..=n {
        term *= mean / i as f64;
        sum += term;
    }
    sum.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::at_most;

    #[test]
    fn poisson_tail_matches_its_sum() {
        assert!((at_most(0.0, 0) - 1.0).abs() < 1e-12);
        assert!((at_most(2.0, 0) - (-2.0f64).exp()).abs() < 1e-12);
        // P(X ≤ 1) for mean 1: 2 / e.
        assert!((at_most(1.0, 1) - 2.0 / std::f64::consts::E).abs() < 1e-12);
        assert!(at_most(1e6, 10) == 0.0);
        assert!(at_most(5.0, 3) < at_most(4.0, 3));
    }
}
