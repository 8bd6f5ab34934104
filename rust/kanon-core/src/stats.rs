//! Per-class privacy statistics of a partition: k, distinct / entropy / recursive-(c,l)
//! l-diversity, t-closeness (earth mover's distance) and re-identification risks.

use crate::emd::{Emd, GroundDistance};
use crate::error::{KernelError, Result};
use crate::models::{self, merge_sorted, ClassView, Reads};

/// Tunables of [`class_stats`].
#[derive(Debug, Clone, PartialEq)]
pub struct StatsOptions {
    /// Ground distance of the t-closeness EMD; a hierarchy's leaves must be the
    /// sensitive codes.
    pub distance: GroundDistance,
    /// The l of recursive (c,l)-diversity; `None` uses the distinct l of the data.
    pub recursive_l: Option<u64>,
    /// The c of recursive (c,l)-diversity to test; `None` only reports the smallest c.
    pub recursive_c: Option<f64>,
    /// A record is "at risk" when its re-identification probability exceeds this.
    pub risk_threshold: f64,
}

impl Default for StatsOptions {
    fn default() -> Self {
        Self {
            distance: GroundDistance::Equal,
            recursive_l: None,
            recursive_c: None,
            risk_threshold: 0.2,
        }
    }
}

/// Privacy statistics of one partition into equivalence classes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClassStats {
    /// Size of the smallest class (0 for an empty table).
    pub k: u64,
    /// Number of classes.
    pub classes: u64,
    /// Number of rows.
    pub rows: u64,
    /// Smallest number of distinct sensitive values in a class.
    pub l_distinct: Option<u64>,
    /// `exp` of the smallest class entropy (natural log) of the sensitive values.
    pub l_entropy: Option<f64>,
    /// The l used for recursive (c,l)-diversity.
    pub recursive_l: Option<u64>,
    /// Smallest integer c for which recursive (c,l)-diversity holds (`inf` if a class
    /// has fewer than l distinct values); `None` when l = 0 (an empty table).
    pub recursive_c: Option<f64>,
    /// Whether recursive (c,l)-diversity holds for the c that was asked for.
    pub recursive_ok: Option<bool>,
    /// Largest EMD between a class's sensitive distribution and the table's.
    pub t: Option<f64>,
    /// Highest prosecutor risk, 1 / k.
    pub prosecutor_max: f64,
    /// Average prosecutor risk over records, classes / rows.
    pub prosecutor_avg: f64,
    /// Share of records whose prosecutor risk exceeds the threshold.
    pub prosecutor_at_risk: f64,
    /// Marketer risk: expected share of records re-identified, classes / rows.
    pub marketer: f64,
    /// Highest journalist risk, 1 / (smallest population class of a sample class).
    pub journalist_max: Option<f64>,
    /// Average journalist risk over records.
    pub journalist_avg: Option<f64>,
    /// Share of records whose journalist risk exceeds the threshold.
    pub journalist_at_risk: Option<f64>,
    /// δ-presence (Nergiz et al. 2007): the smallest rows / population rows of a class.
    pub delta_min: Option<f64>,
    /// δ-presence: the largest rows / population rows of a class.
    pub delta_max: Option<f64>,
    /// Per threshold model ([`models::THRESHOLD_MODELS`], in order) its worst measure over
    /// the classes (`None` without what it reads, or when a class's measure is undefined).
    pub thresholds: Vec<Option<f64>>,
}

/// Compute the privacy statistics of a partition given as a histogram.
///
/// The input is a list of entries, each a count of rows; entries of class `c` are
/// `class_offsets[c]..class_offsets[c + 1]` (or one entry per class when
/// `class_offsets` is `None`). With `sensitive`, each entry also carries the code
/// (`0..m`, in value order) of the sensitive value its rows share, enabling l-diversity
/// and t-closeness; `population` gives, per class, the size of the matching class in a
/// population table, enabling journalist risk and δ-presence. With a hierarchical ground
/// distance the codes are the hierarchy's leaf codes.
///
/// Definitions follow Machanavajjhala et al. (l-diversity, 2007), Li et al.
/// (t-closeness, 2007; EMD with equal, ordered or hierarchical distance, see
/// [`crate::emd`]) and ARX's risk model.
///
/// # Errors
/// [`KernelError::LengthMismatch`] / [`KernelError::InvalidArgument`] for inconsistent
/// lengths, offsets that do not increase, an empty class, a non-positive `recursive_c`,
/// a population class smaller than its sample class, or a sensitive code that is not a
/// leaf of the hierarchy.
///
/// # Complexity
/// O(e log m) time and O(m) auxiliary space for e entries and m sensitive values
/// (O(e · (log m + H)) and O(m · H) with a hierarchy of height H).
///
/// # Examples
/// ```
/// use kanon_core::{class_stats, StatsOptions};
/// // Two classes: {a, a, b} and {b, c}.
/// let s = class_stats(Some(&[0, 2, 4]), &[2, 1, 1, 1], Some(&[0, 1, 1, 2]), None,
///                     &StatsOptions::default()).unwrap();
/// assert_eq!((s.k, s.classes, s.rows, s.l_distinct), (2, 2, 5, Some(2)));
/// ```
pub fn class_stats(
    class_offsets: Option<&[u64]>,
    counts: &[u64],
    sensitive: Option<&[u32]>,
    population: Option<&[u64]>,
    options: &StatsOptions,
) -> Result<ClassStats> {
    let ranges = class_ranges(class_offsets, counts.len())?;
    if let Some(s) = sensitive {
        check_len("sensitive", s.len(), counts.len())?;
    }
    if let Some(p) = population {
        check_len("population", p.len(), ranges.len())?;
    }
    if let Some(c) = options.recursive_c {
        if c.is_nan() || c <= 0.0 {
            return Err(invalid(format!("recursive c must be positive, got {c}")));
        }
    }
    if !(0.0..=1.0).contains(&options.risk_threshold) {
        return Err(invalid(format!(
            "risk threshold must lie in [0, 1], got {}",
            options.risk_threshold
        )));
    }
    let sizes: Vec<u64> = ranges
        .iter()
        .map(|&(lo, hi)| counts[lo..hi].iter().sum())
        .collect();
    if let Some(c) = sizes.iter().position(|&s| s == 0) {
        return Err(invalid(format!("class {c} has no rows")));
    }
    let rows: u64 = sizes.iter().sum();
    let mut out = ClassStats {
        k: sizes.iter().copied().min().unwrap_or(0),
        classes: sizes.len() as u64,
        rows,
        thresholds: vec![None; models::THRESHOLD_MODELS.len()],
        ..ClassStats::default()
    };
    if rows == 0 {
        return Ok(out);
    }
    let n = rows as f64;
    out.prosecutor_max = 1.0 / out.k as f64;
    out.prosecutor_avg = out.classes as f64 / n;
    out.marketer = out.prosecutor_avg;
    out.prosecutor_at_risk = at_risk(&sizes, &sizes, options.risk_threshold) / n;
    if let Some(pop) = population {
        if let Some(c) = (0..sizes.len()).find(|&c| pop[c] < sizes[c]) {
            return Err(invalid(format!(
                "class {c} has {} rows in the sample but only {} in the population; \
                 the population must contain the sample",
                sizes[c], pop[c]
            )));
        }
        let smallest = pop.iter().copied().min().unwrap_or(1);
        out.journalist_max = Some(1.0 / smallest as f64);
        let expected: f64 = sizes
            .iter()
            .zip(pop)
            .map(|(&f, &big_f)| f as f64 / big_f as f64)
            .sum();
        out.journalist_avg = Some(expected / n);
        out.journalist_at_risk = Some(at_risk(&sizes, pop, options.risk_threshold) / n);
        // Every population class holds its sample class's rows (checked above): > 0.
        let (lo, hi) = sizes
            .iter()
            .zip(pop)
            .filter_map(|(&f, &big_f)| models::presence(f, big_f))
            .fold((f64::INFINITY, 0.0_f64), |(lo, hi), d| {
                (lo.min(d), hi.max(d))
            });
        out.delta_min = Some(lo);
        out.delta_max = Some(hi);
        let mut worst = Worst::new(Reads::Population);
        for (&rows, &population) in sizes.iter().zip(pop) {
            worst.fold(&ClassView {
                histogram: &[],
                rows,
                population,
            });
        }
        worst.finish(&mut out.thresholds);
    }
    if let Some(codes) = sensitive {
        sensitive_stats(&mut out, &ranges, counts, codes, options)?;
    }
    Ok(out)
}

/// Rows (weighted by `sizes`) of classes whose risk `1 / denominators[c]` exceeds `t`.
fn at_risk(sizes: &[u64], denominators: &[u64], threshold: f64) -> f64 {
    sizes
        .iter()
        .zip(denominators)
        .filter(|(_, &d)| 1.0 / d as f64 > threshold)
        .map(|(&s, _)| s as f64)
        .fold(0.0, |acc, s| acc + s)
}

/// The worst measure so far of each threshold model reading one kind of input.
struct Worst {
    what: Reads,
    /// Per model: the worst defined measure, and whether some class's was undefined.
    slots: Vec<(Option<f64>, bool)>,
}

impl Worst {
    fn new(what: Reads) -> Self {
        Self {
            what,
            slots: vec![(None, false); models::THRESHOLD_MODELS.len()],
        }
    }

    fn fold(&mut self, class: &ClassView<'_>) {
        for ((worst, undefined), model) in self.slots.iter_mut().zip(models::THRESHOLD_MODELS) {
            if model.reads == self.what {
                match (model.measure)(class) {
                    Some(v) => *worst = Some(worst.map_or(v, |w| model.worse(w, v))),
                    None => *undefined = true,
                }
            }
        }
    }

    /// Set the models' slots of `out` (`None` when a class's measure was undefined).
    fn finish(self, out: &mut [Option<f64>]) {
        for ((slot, (worst, undefined)), model) in
            out.iter_mut().zip(self.slots).zip(models::THRESHOLD_MODELS)
        {
            if model.reads == self.what {
                *slot = if undefined { None } else { worst };
            }
        }
    }
}

fn sensitive_stats(
    out: &mut ClassStats,
    ranges: &[(usize, usize)],
    counts: &[u64],
    codes: &[u32],
    options: &StatsOptions,
) -> Result<()> {
    let m = match &options.distance {
        GroundDistance::Hierarchical(h) => h.leaves(),
        _ => codes.iter().max().map_or(0, |&c| c as usize + 1),
    };
    if let Some(&code) = codes.iter().find(|&&c| c as usize >= m) {
        return Err(invalid(format!(
            "sensitive code {code} is not a leaf of the hierarchy ({m} leaves)"
        )));
    }
    let mut global = vec![0u64; m];
    for (&code, &count) in codes.iter().zip(counts) {
        global[code as usize] += count;
    }
    let emd = Emd::new(&options.distance, &global).map_err(|e| match e {
        KernelError::InvalidArgument { message, .. } => invalid(message),
        other => other,
    })?;

    let mut worst = Worst::new(Reads::Sensitive);
    let mut l_distinct = u64::MAX;
    let mut min_entropy = f64::INFINITY;
    let mut t: f64 = 0.0;
    let mut class: Vec<(u32, u64)> = Vec::new();
    let mut per_class_counts: Vec<Vec<u64>> = Vec::with_capacity(ranges.len());
    for &(lo, hi) in ranges {
        class.clear();
        class.extend(
            codes[lo..hi]
                .iter()
                .copied()
                .zip(counts[lo..hi].iter().copied()),
        );
        merge_sorted(&mut class);
        let size: u64 = class.iter().map(|&(_, c)| c).sum();
        l_distinct = l_distinct.min(models::distinct(&class));
        min_entropy = min_entropy.min(models::entropy(&class, size));
        t = t.max(emd.distance(&class));
        let mut sorted: Vec<u64> = class.iter().map(|&(_, c)| c).collect();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        per_class_counts.push(sorted);
        worst.fold(&ClassView {
            histogram: &class,
            rows: size,
            population: 0,
        });
    }
    worst.finish(&mut out.thresholds);
    out.l_distinct = Some(l_distinct);
    out.l_entropy = Some(min_entropy.exp());
    out.t = Some(t);
    let l = options.recursive_l.unwrap_or(l_distinct);
    out.recursive_l = Some(l);
    if l >= 1 {
        let mut c_needed: f64 = 1.0;
        let mut ok = true;
        for sorted in &per_class_counts {
            let terms = models::recursive_terms(sorted, l);
            c_needed = c_needed.max(models::recursive_c_needed(terms));
            if let Some(c) = options.recursive_c {
                ok &= models::recursive_holds(terms, c);
            }
        }
        out.recursive_c = Some(c_needed);
        out.recursive_ok = options.recursive_c.map(|_| ok);
    }
    Ok(())
}

fn class_ranges(offsets: Option<&[u64]>, entries: usize) -> Result<Vec<(usize, usize)>> {
    let Some(offsets) = offsets else {
        return Ok((0..entries).map(|e| (e, e + 1)).collect());
    };
    if offsets.first().copied().unwrap_or(0) != 0 {
        return Err(invalid("class offsets must start at 0".to_owned()));
    }
    let last = offsets.last().copied().unwrap_or(0);
    if usize::try_from(last).ok() != Some(entries) {
        return Err(invalid(format!(
            "class offsets end at {last} but there are {entries} entries"
        )));
    }
    offsets
        .windows(2)
        .map(|w| {
            if w[1] < w[0] {
                return Err(invalid(format!(
                    "class offsets decrease from {} to {}",
                    w[0], w[1]
                )));
            }
            // Both bounds are <= `entries`, a usize, as checked above and by monotonicity.
            Ok((
                usize::try_from(w[0]).unwrap_or(entries),
                usize::try_from(w[1]).unwrap_or(entries),
            ))
        })
        .collect()
}

fn check_len(argument: &'static str, got: usize, expected: usize) -> Result<()> {
    if got == expected {
        Ok(())
    } else {
        Err(KernelError::LengthMismatch {
            kernel: "class_stats",
            argument,
            got,
            expected,
        })
    }
}

fn invalid(message: String) -> KernelError {
    KernelError::InvalidArgument {
        kernel: "class_stats",
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn risks_and_k_without_sensitive() {
        let s = class_stats(None, &[5, 2, 3], None, None, &StatsOptions::default()).unwrap();
        assert_eq!((s.k, s.classes, s.rows), (2, 3, 10));
        assert!((s.prosecutor_max - 0.5).abs() < 1e-12);
        assert!((s.prosecutor_avg - 0.3).abs() < 1e-12);
        // classes of size 2 and 3 have risk 0.5 and 0.33 > 0.2: 5 rows of 10.
        assert!((s.prosecutor_at_risk - 0.5).abs() < 1e-12);
        assert!(s.l_distinct.is_none());
    }

    #[test]
    fn journalist_risk_uses_population_sizes() {
        let s = class_stats(
            None,
            &[2, 3],
            None,
            Some(&[4, 30]),
            &StatsOptions::default(),
        )
        .unwrap();
        assert_eq!(s.journalist_max, Some(0.25));
        let avg = (2.0 / 4.0 + 3.0 / 30.0) / 5.0;
        assert!((s.journalist_avg.unwrap() - avg).abs() < 1e-12);
        assert_eq!(s.journalist_at_risk, Some(0.4));
        assert_eq!((s.delta_min, s.delta_max), (Some(0.1), Some(0.5)));
        let err = class_stats(
            None,
            &[2, 3],
            None,
            Some(&[1, 30]),
            &StatsOptions::default(),
        );
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("population must contain"));
    }

    #[test]
    fn hierarchical_t_uses_leaf_codes() {
        // Leaves {0, 1} and {2, 3} under two labels; classes {0, 1} and {2, 3}, one row each.
        let h =
            crate::hierarchy::Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0; 4]])
                .unwrap();
        let opts = StatsOptions {
            distance: GroundDistance::Hierarchical(h),
            ..StatsOptions::default()
        };
        let s = class_stats(Some(&[0, 2, 4]), &[1; 4], Some(&[0, 1, 2, 3]), None, &opts).unwrap();
        // Half of each class's mass crosses the root (distance 1).
        assert!((s.t.unwrap() - 0.5).abs() < 1e-12, "{:?}", s.t);
        let err = class_stats(None, &[1], Some(&[4]), None, &opts).unwrap_err();
        assert!(err.to_string().contains("not a leaf"), "{err}");
    }

    #[test]
    fn recursive_cl_matches_hand_computation() {
        // One class with counts 4, 2, 1 of three values: l = 3 distinct.
        let opts = StatsOptions {
            recursive_l: Some(2),
            recursive_c: Some(1.5),
            ..StatsOptions::default()
        };
        let s = class_stats(Some(&[0, 3]), &[4, 2, 1], Some(&[0, 1, 2]), None, &opts).unwrap();
        // r1 = 4, tail from l = 2: 2 + 1 = 3; c needed = floor(4/3) + 1 = 2; 4 < 1.5 * 3 holds.
        assert_eq!(s.recursive_c, Some(2.0));
        assert_eq!(s.recursive_ok, Some(true));
        assert_eq!(s.l_distinct, Some(3));
    }

    #[test]
    fn bad_offsets_are_rejected() {
        let opts = StatsOptions::default();
        assert!(class_stats(Some(&[0, 3]), &[1, 1], None, None, &opts).is_err());
        assert!(class_stats(Some(&[1, 2]), &[1, 1], None, None, &opts).is_err());
        assert!(class_stats(Some(&[0, 2, 1, 2]), &[1, 1], None, None, &opts).is_err());
        assert!(class_stats(None, &[0, 1], None, None, &opts).is_err());
    }
}
