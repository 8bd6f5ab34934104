//! A guess, before a node is checked, of whether its rows below k exceed the suppression
//! limit: the rows below k it would have if its attributes were independent, estimated
//! on a sample of the histogram. Phase 1 probes a path first around the node where the
//! guess puts it within the limit; only the order of the checks depends on the guess,
//! never a status or the result.

use super::search::Search;

/// Tuples of the histogram the guess reads (every n-th).
const SAMPLE: usize = 2048;

pub(super) struct Guess {
    /// Per sampled tuple, its count and, per attribute and level, `ln(rows / N)` of its
    /// label: `shares[s · width + offset[j] + l]` (levels outside the lattice unused).
    counts: Vec<u64>,
    shares: Vec<f64>,
    offset: Vec<usize>,
    width: usize,
    /// The histogram's rows over the sample's.
    scale: f64,
    /// `ln N`.
    log_rows: f64,
}

impl Guess {
    /// The guess over `search`'s histogram, or None below `min_tuples` tuples.
    pub(super) fn new(search: &Search<'_>, min_tuples: usize) -> Option<Self> {
        let (m, options) = (search.m, search.options);
        let tuples = search.counts.len();
        if tuples < min_tuples.max(1) {
            return None;
        }
        let rows: u64 = search.counts.iter().sum();
        let sample: Vec<usize> = (0..tuples).step_by(tuples.div_ceil(SAMPLE)).collect();
        let counts: Vec<u64> = sample.iter().map(|&t| search.counts[t]).collect();
        let sampled: u64 = counts.iter().sum();
        if rows == 0 || sampled == 0 {
            return None;
        }
        let log_rows = (rows as f64).ln();
        let mut offset = Vec::with_capacity(m);
        let mut width = 0;
        for h in search.hierarchies {
            offset.push(width);
            width += h.height() + 1;
        }
        let mut shares = vec![0.0; sample.len() * width];
        for j in 0..m {
            let per_leaf = search.rows_per_leaf(j);
            for l in options.min_level[j]..=options.max_level[j] {
                let per_label = search.rows_per_label(j, &per_leaf, l as usize);
                let level = search.hierarchies[j].level(l as usize);
                for (s, &t) in sample.iter().enumerate() {
                    let rows = per_label[level[search.leaf(t, j) as usize] as usize];
                    shares[s * width + offset[j] + l as usize] = (rows as f64).ln() - log_rows;
                }
            }
        }
        Some(Self {
            counts,
            shares,
            offset,
            width,
            scale: rows as f64 / sampled as f64,
            log_rows,
        })
    }

    /// Whether the node at `levels` is guessed over the limit: a row whose labels have
    /// shares `p_j` of the rows shares its class with Poisson(N · Π p_j) others.
    pub(super) fn over(&self, search: &Search<'_>, levels: &[u32]) -> bool {
        let k = search.options.k;
        let at: Vec<usize> = self
            .offset
            .iter()
            .zip(levels)
            .map(|(&o, &l)| o + l as usize)
            .collect();
        let below: f64 = self
            .shares
            .chunks_exact(self.width)
            .zip(&self.counts)
            .map(|(shares, &count)| {
                let log_mean = self.log_rows + at.iter().map(|&i| shares[i]).sum::<f64>();
                count as f64 * at_most(log_mean.exp(), k.saturating_sub(2))
            })
            .sum();
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
