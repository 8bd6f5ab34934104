//! Privacy models beyond k-anonymity, checked class by class: l-diversity (distinct,
//! entropy, recursive (c,l)), t-closeness (earth mover's distance with equal, ordered or
//! hierarchical ground distance) and δ-presence against a population.
//!
//! A class is described by its rows, the histogram of its sensitive values and the rows
//! of the population that share its generalized quasi-identifiers.
//!
//! Monotonicity (what the lattice search may rely on): merging two classes that both
//! satisfy a model gives a class that satisfies it (distinct values add up, entropy is
//! concave, recursive (c,l) holds for a merge, EMD is convex in the class distribution,
//! a ratio of sums lies between the ratios), except δ-presence's lower bound: a coarser
//! node also matches population rows that match no row of the table, which lowers the
//! ratio. Merging a satisfying class with a failing one keeps distinct l-diversity (the
//! union has at least l values) but may break the others, so only k-anonymity and
//! distinct l-diversity keep the rows of failing classes monotone when suppression is
//! allowed.
//!
//! A model that is one measure of a class held to one threshold is a row of
//! [`THRESHOLD_MODELS`]: the search keeps every class on the measure's side of the
//! threshold ([`ModelCheck::class_ok`]), the check reports the worst value over the classes
//! ([`crate::stats::class_stats`]), and the binding takes its threshold by name.

use crate::emd::{Emd, GroundDistance};
use crate::error::{KernelError, Result};

// What each model measures of one class: the one definition that the search enforces
// (`ModelCheck::class_ok`) and the check reports (`stats::class_stats`). A class's
// sensitive histogram is (code, rows) sorted by code with positive counts.

/// Distinct l-diversity's measure: the class's distinct sensitive values.
#[must_use]
pub fn distinct(histogram: &[(u32, u64)]) -> u64 {
    histogram.len() as u64
}

/// Entropy l-diversity's measure: the entropy (natural log) of the class's sensitive
/// values, `rows` its rows; the model holds when it is at least `ln l`.
#[must_use]
pub fn entropy(histogram: &[(u32, u64)], rows: u64) -> f64 {
    let n = rows as f64;
    histogram
        .iter()
        .map(|&(_, c)| {
            let p = c as f64 / n;
            -p * p.ln()
        })
        .sum()
}

/// Recursive (c,l)-diversity's terms: the largest count `r_1` and the tail `r_l + … +
/// r_m` of the class's counts sorted from largest (`sorted`, not empty).
#[must_use]
pub fn recursive_terms(sorted: &[u64], l: u64) -> (u64, u64) {
    let skip = usize::try_from(l.saturating_sub(1)).unwrap_or(usize::MAX);
    (sorted[0], sorted.iter().skip(skip).sum())
}

/// Whether recursive (c,l) holds for the terms of [`recursive_terms`]: `r_1 < c · tail`.
#[must_use]
pub fn recursive_holds((r1, tail): (u64, u64), c: f64) -> bool {
    tail > 0 && (r1 as f64) < c * tail as f64
}

/// The smallest whole c for which recursive (c,l) holds (`inf` without a tail).
#[must_use]
pub fn recursive_c_needed((r1, tail): (u64, u64)) -> f64 {
    r1.checked_div(tail)
        .map_or(f64::INFINITY, |q| (q + 1) as f64)
}

/// δ-presence's measure: the class's rows over its population rows (None without any).
#[must_use]
pub fn presence(rows: u64, population: u64) -> Option<f64> {
    (population > 0).then(|| rows as f64 / population as f64)
}

/// One class as a model sees it.
#[derive(Debug, Clone, Copy)]
pub struct ClassView<'a> {
    /// (sensitive code, rows) sorted by code with positive counts (empty when no model
    /// reads the sensitive values).
    pub histogram: &'a [(u32, u64)],
    /// The class's rows.
    pub rows: u64,
    /// Its population rows (0 when no model reads the population).
    pub population: u64,
}

/// What a threshold model reads of a class besides its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// The class's sensitive histogram.
    Sensitive,
    /// Its population rows.
    Population,
}

/// Which side of its threshold every class's measure must lie on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// measure >= threshold; the worst class has the least measure.
    AtLeast,
    /// measure <= threshold; the worst class has the largest measure.
    AtMost,
}

/// A privacy model declared by one measure of a class and a threshold.
#[derive(Debug, Clone, Copy)]
pub struct ThresholdModel {
    /// Its name: the option that gives its threshold and the check's column.
    pub name: &'static str,
    /// What it reads of a class.
    pub reads: Reads,
    /// The side of the threshold a class must lie on.
    pub side: Side,
    /// The thresholds that make sense, inclusive.
    pub range: (f64, f64),
    /// Whether merging two classes that satisfy it gives a class that does (what the
    /// search's pruning relies on).
    pub monotone: bool,
    /// The class's measure (`None`: undefined, and the class fails).
    pub measure: fn(&ClassView<'_>) -> Option<f64>,
}

impl ThresholdModel {
    /// Whether `value` lies on the model's side of `threshold` (with the float slack).
    #[must_use]
    pub fn holds(&self, value: f64, threshold: f64) -> bool {
        match self.side {
            Side::AtLeast => value >= threshold - SLACK,
            Side::AtMost => value <= threshold + SLACK,
        }
    }

    /// The worse of two measures.
    #[must_use]
    pub fn worse(&self, a: f64, b: f64) -> f64 {
        match self.side {
            Side::AtLeast => a.min(b),
            Side::AtMost => a.max(b),
        }
    }
}

/// (α,k)-anonymity's measure (Wong et al. 2006): the share of the class's rows that
/// hold its most frequent sensitive value (`None` for a class without rows).
#[must_use]
pub fn alpha(class: &ClassView<'_>) -> Option<f64> {
    let top = class.histogram.iter().map(|&(_, c)| c).max()?;
    (class.rows > 0).then(|| top as f64 / class.rows as f64)
}

/// The threshold models, in the order the check reports them.
pub const THRESHOLD_MODELS: &[ThresholdModel] = &[
    // Merging two classes where no value holds more than α of the rows keeps that.
    ThresholdModel {
        name: "alpha",
        reads: Reads::Sensitive,
        side: Side::AtMost,
        range: (0.0, 1.0),
        monotone: true,
        measure: alpha,
    },
];

/// The threshold model named `name`.
#[must_use]
pub fn threshold_model(name: &str) -> Option<&'static ThresholdModel> {
    THRESHOLD_MODELS.iter().find(|m| m.name == name)
}

/// The threshold model named `name`, or a message naming the known ones.
///
/// # Errors
/// The message when no threshold model has that name.
pub fn known_threshold_model(name: &str) -> std::result::Result<&'static ThresholdModel, String> {
    threshold_model(name).ok_or_else(|| {
        let known: Vec<&str> = THRESHOLD_MODELS.iter().map(|m| m.name).collect();
        format!("unknown threshold model {name:?}, expected one of {known:?}")
    })
}

/// A variant of l-diversity (Machanavajjhala et al. 2007).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LDiversity {
    /// At least `l` distinct sensitive values per class.
    Distinct(u64),
    /// The entropy of the class's sensitive values (natural log) is at least `ln l`.
    Entropy(f64),
    /// Recursive (c,l): `r_1 < c · (r_l + … + r_m)` with `r_i` the i-th largest count.
    Recursive {
        /// The constant c (positive).
        c: f64,
        /// The l (at least 1).
        l: u64,
    },
}

/// The models a release must satisfy besides k-anonymity.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PrivacyModels {
    /// l-diversity of the sensitive attribute.
    pub l_diversity: Option<LDiversity>,
    /// t-closeness: the largest EMD allowed and its ground distance.
    pub t_closeness: Option<(f64, GroundDistance)>,
    /// δ-presence: every class's rows over its population rows lie in `[min, max]`.
    pub delta_presence: Option<(f64, f64)>,
    /// Threshold models by name ([`THRESHOLD_MODELS`]) with their thresholds.
    pub thresholds: Vec<(String, f64)>,
}

impl PrivacyModels {
    /// Whether no model is asked for.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.l_diversity.is_none()
            && self.t_closeness.is_none()
            && self.delta_presence.is_none()
            && self.thresholds.is_empty()
    }

    /// Whether the models need the sensitive values.
    #[must_use]
    pub fn need_sensitive(&self) -> bool {
        self.l_diversity.is_some() || self.t_closeness.is_some() || self.reads(Reads::Sensitive)
    }

    /// Whether the models need the population's rows per class.
    #[must_use]
    pub fn need_population(&self) -> bool {
        self.delta_presence.is_some() || self.reads(Reads::Population)
    }

    /// Whether a threshold model asked for reads `what` (unknown names read nothing).
    fn reads(&self, what: Reads) -> bool {
        self.thresholds
            .iter()
            .any(|(name, _)| threshold_model(name).is_some_and(|m| m.reads == what))
    }

    /// Whether a node all of whose classes satisfy the models keeps them satisfied when
    /// generalized: true unless δ-presence has a lower bound (generalizing brings in
    /// population rows that match no row of the table, which lowers the ratio).
    #[must_use]
    pub fn monotone_without_suppression(&self) -> bool {
        self.delta_presence.is_none_or(|(lo, _)| lo <= 0.0)
            && self
                .thresholds
                .iter()
                .all(|(name, _)| threshold_model(name).is_some_and(|m| m.monotone))
    }

    /// Whether the rows of failing classes (k-anonymity included) can only shrink when a
    /// node is generalized, with suppression allowed: true for k-anonymity and distinct
    /// l-diversity only.
    #[must_use]
    pub fn failing_rows_monotone(&self) -> bool {
        matches!(self.l_diversity, None | Some(LDiversity::Distinct(_)))
            && self.t_closeness.is_none()
            && self.delta_presence.is_none()
            && self.thresholds.is_empty()
    }

    /// A short description for messages, e.g. `"k = 5, distinct 3-diversity"`.
    #[must_use]
    pub fn describe(&self, k: u64) -> String {
        let mut parts = vec![format!("k = {k}")];
        match self.l_diversity {
            Some(LDiversity::Distinct(l)) => parts.push(format!("distinct {l}-diversity")),
            Some(LDiversity::Entropy(l)) => parts.push(format!("entropy {l}-diversity")),
            Some(LDiversity::Recursive { c, l }) => {
                parts.push(format!("recursive ({c},{l})-diversity"));
            }
            None => {}
        }
        if let Some((t, distance)) = &self.t_closeness {
            let name = match distance {
                GroundDistance::Equal => "equal",
                GroundDistance::Ordered => "ordered",
                GroundDistance::Hierarchical(_) => "hierarchical",
            };
            parts.push(format!("{t}-closeness ({name} distance)"));
        }
        if let Some((lo, hi)) = self.delta_presence {
            parts.push(format!("({lo}, {hi})-presence"));
        }
        for (name, threshold) in &self.thresholds {
            let side = threshold_model(name).map_or("=", |m| match m.side {
                Side::AtLeast => ">=",
                Side::AtMost => "<=",
            });
            parts.push(format!("{name} {side} {threshold}"));
        }
        parts.join(", ")
    }
}

/// The models ready to check classes of one table.
#[derive(Debug, Clone)]
pub struct ModelCheck {
    l_diversity: Option<LDiversity>,
    t: Option<(f64, Emd)>,
    delta: Option<(f64, f64)>,
    thresholds: Vec<(&'static ThresholdModel, f64)>,
}

/// Slack of the floating-point comparisons (entropy, EMD, ratios).
const SLACK: f64 = 1e-12;

impl ModelCheck {
    /// Validate the models' parameters and precompute the table-wide distribution.
    ///
    /// `global[code]`: rows of the whole table with sensitive code `code` (empty when no
    /// model needs sensitive values).
    ///
    /// # Errors
    /// [`KernelError::InvalidArgument`] for a parameter out of range (l < 1, c ≤ 0,
    /// t outside [0, 1], δ bounds outside [0, 1] or min > max, a threshold model unknown
    /// or outside its range) or a distribution that does not fit the ground distance.
    pub fn new(kernel: &'static str, models: &PrivacyModels, global: &[u64]) -> Result<Self> {
        let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
        match models.l_diversity {
            Some(LDiversity::Distinct(l)) if l < 1 => {
                return Err(invalid(format!("l must be at least 1, got {l}")));
            }
            Some(LDiversity::Entropy(l)) if !(l.is_finite() && l >= 1.0) => {
                return Err(invalid(format!("entropy l must be at least 1, got {l}")));
            }
            Some(LDiversity::Recursive { c, l }) if l < 1 || !(c.is_finite() && c > 0.0) => {
                return Err(invalid(format!(
                    "recursive (c,l)-diversity needs c > 0 and l >= 1, got c = {c}, l = {l}"
                )));
            }
            _ => {}
        }
        let t = match &models.t_closeness {
            Some((t, distance)) => {
                if !(0.0..=1.0).contains(t) {
                    return Err(invalid(format!("t must lie in [0, 1], got {t}")));
                }
                Some((*t, Emd::new(distance, global)?))
            }
            None => None,
        };
        if let Some((lo, hi)) = models.delta_presence {
            if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo > hi {
                return Err(invalid(format!(
                    "δ-presence needs 0 <= delta_min <= delta_max <= 1, got {lo} and {hi}"
                )));
            }
        }
        let mut thresholds = Vec::with_capacity(models.thresholds.len());
        for (name, threshold) in &models.thresholds {
            let model = known_threshold_model(name).map_err(invalid)?;
            let (lo, hi) = model.range;
            if !(lo..=hi).contains(threshold) {
                return Err(invalid(format!(
                    "{name} must lie in [{lo}, {hi}], got {threshold}"
                )));
            }
            thresholds.push((model, *threshold));
        }
        Ok(Self {
            l_diversity: models.l_diversity,
            t,
            delta: models.delta_presence,
            thresholds,
        })
    }

    /// Whether a class satisfies the models (not k-anonymity).
    ///
    /// `histogram`: (sensitive code, rows) sorted by code with positive counts (ignored
    /// when no model needs it); `rows`: the class's rows; `population`: its population
    /// rows (ignored without δ-presence).
    #[must_use]
    pub fn class_ok(&self, histogram: &[(u32, u64)], rows: u64, population: u64) -> bool {
        if let Some(l) = self.l_diversity {
            let ok = match l {
                LDiversity::Distinct(l) => distinct(histogram) >= l,
                LDiversity::Entropy(l) => entropy(histogram, rows) >= l.ln() - SLACK,
                LDiversity::Recursive { c, l } => {
                    let mut counts: Vec<u64> = histogram.iter().map(|&(_, n)| n).collect();
                    counts.sort_unstable_by(|a, b| b.cmp(a));
                    !counts.is_empty() && recursive_holds(recursive_terms(&counts, l), c)
                }
            };
            if !ok {
                return false;
            }
        }
        if let Some((t, emd)) = &self.t {
            if emd.distance(histogram) > t + SLACK {
                return false;
            }
        }
        if let Some((lo, hi)) = self.delta {
            match presence(rows, population) {
                Some(delta) if delta >= lo - SLACK && delta <= hi + SLACK => {}
                _ => return false,
            }
        }
        let class = ClassView {
            histogram,
            rows,
            population,
        };
        self.thresholds.iter().all(|(model, threshold)| {
            (model.measure)(&class).is_some_and(|v| model.holds(v, *threshold))
        })
    }
}

/// Sum `(code, count)` pairs sorted by code into runs of distinct codes, in place.
pub(crate) fn merge_sorted(histogram: &mut Vec<(u32, u64)>) {
    histogram.sort_unstable_by_key(|&(code, _)| code);
    histogram.dedup_by(|next, kept| {
        if next.0 == kept.0 {
            kept.1 += next.1;
            true
        } else {
            false
        }
    });
    histogram.retain(|&(_, c)| c > 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(models: PrivacyModels, global: &[u64]) -> ModelCheck {
        ModelCheck::new("test", &models, global).unwrap()
    }

    #[test]
    fn l_diversity_variants() {
        let class = [(0, 6), (1, 3), (2, 1)];
        let distinct = |l| {
            check(
                PrivacyModels {
                    l_diversity: Some(LDiversity::Distinct(l)),
                    ..PrivacyModels::default()
                },
                &[],
            )
        };
        assert!(distinct(3).class_ok(&class, 10, 0));
        assert!(!distinct(4).class_ok(&class, 10, 0));
        // Entropy: -(0.6 ln 0.6 + 0.3 ln 0.3 + 0.1 ln 0.1) = 0.898 = ln 2.455.
        let entropy = |l| {
            check(
                PrivacyModels {
                    l_diversity: Some(LDiversity::Entropy(l)),
                    ..PrivacyModels::default()
                },
                &[],
            )
        };
        assert!(entropy(2.45).class_ok(&class, 10, 0));
        assert!(!entropy(2.46).class_ok(&class, 10, 0));
        // Recursive (c,2): 6 < c · (3 + 1) holds for c = 2, not c = 1.5.
        let recursive = |c| {
            check(
                PrivacyModels {
                    l_diversity: Some(LDiversity::Recursive { c, l: 2 }),
                    ..PrivacyModels::default()
                },
                &[],
            )
        };
        assert!(recursive(2.0).class_ok(&class, 10, 0));
        assert!(!recursive(1.5).class_ok(&class, 10, 0));
        assert!(!recursive(100.0).class_ok(&[(0, 5)], 5, 0));
    }

    #[test]
    fn alpha_bounds_the_share_of_the_most_frequent_value() {
        let model = |alpha| {
            check(
                PrivacyModels {
                    thresholds: vec![("alpha".to_owned(), alpha)],
                    ..PrivacyModels::default()
                },
                &[],
            )
        };
        // 6 of 10 rows hold value 0.
        let class = [(0, 6), (1, 3), (2, 1)];
        assert!(model(0.6).class_ok(&class, 10, 0));
        assert!(!model(0.59).class_ok(&class, 10, 0));
        assert!(!model(1.0).class_ok(&[], 0, 0));
        let asked = PrivacyModels {
            thresholds: vec![("alpha".to_owned(), 0.5)],
            ..PrivacyModels::default()
        };
        assert!(asked.need_sensitive() && !asked.need_population());
        assert!(asked.monotone_without_suppression() && !asked.failing_rows_monotone());
        assert_eq!(asked.describe(3), "k = 3, alpha <= 0.5");
        for bad in [("alpha", 1.5), ("alpha", -0.1), ("beta", 0.5)] {
            let models = PrivacyModels {
                thresholds: vec![(bad.0.to_owned(), bad.1)],
                ..PrivacyModels::default()
            };
            assert!(ModelCheck::new("test", &models, &[]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn delta_presence_bounds() {
        let model = check(
            PrivacyModels {
                delta_presence: Some((0.2, 0.5)),
                ..PrivacyModels::default()
            },
            &[],
        );
        assert!(model.class_ok(&[], 2, 4));
        assert!(!model.class_ok(&[], 3, 4));
        assert!(!model.class_ok(&[], 1, 10));
        assert!(!model.class_ok(&[], 1, 0));
    }

    #[test]
    fn bad_parameters_are_named() {
        let bad = [
            PrivacyModels {
                l_diversity: Some(LDiversity::Distinct(0)),
                ..PrivacyModels::default()
            },
            PrivacyModels {
                l_diversity: Some(LDiversity::Recursive { c: 0.0, l: 2 }),
                ..PrivacyModels::default()
            },
            PrivacyModels {
                t_closeness: Some((1.5, GroundDistance::Equal)),
                ..PrivacyModels::default()
            },
            PrivacyModels {
                delta_presence: Some((0.6, 0.5)),
                ..PrivacyModels::default()
            },
        ];
        for models in bad {
            assert!(ModelCheck::new("test", &models, &[1, 1]).is_err());
        }
    }
}
