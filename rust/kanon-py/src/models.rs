//! The privacy models of the kernels that enforce them (optimal, Mondrian): their options
//! and the six model arguments (sensitive entries and hierarchy, population paths).

use arrow_array::{Array, ListArray, UInt32Array, UInt64Array};
use kanon_core::emd::GroundDistance;
use kanon_core::models::{
    known_threshold_model, threshold_model, LDiversity, PrivacyModels, Reads,
};
use kanon_core::KernelError;
use pyo3::prelude::*;
use serde::Deserialize;
use std::collections::BTreeMap;

use crate::convert::{self, invalid, whole, U32, U64};

/// The l-diversity variants.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LVariant {
    #[default]
    Distinct,
    Entropy,
    Recursive,
}

/// The ground distances of t-closeness.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TDistance {
    #[default]
    Equal,
    Ordered,
    Hierarchical,
}

/// The options ``models`` of a kernel: absent keys are models not asked for.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModelOptions {
    pub(crate) l: Option<f64>,
    #[serde(default)]
    pub(crate) l_diversity: LVariant,
    pub(crate) c: Option<f64>,
    pub(crate) t: Option<f64>,
    #[serde(default)]
    pub(crate) t_distance: TDistance,
    pub(crate) delta_min: Option<f64>,
    pub(crate) delta_max: Option<f64>,
    /// Threshold models (``kanon_core::models::THRESHOLD_MODELS``) by name.
    #[serde(default)]
    pub(crate) thresholds: BTreeMap<String, f64>,
}

impl ModelOptions {
    /// Whether a model needs the sensitive entries.
    pub(crate) fn needs_sensitive(&self) -> bool {
        self.l.is_some() || self.t.is_some() || self.reads(Reads::Sensitive)
    }

    /// Whether a model needs the population's paths.
    pub(crate) fn needs_population(&self) -> bool {
        self.delta_min.is_some() || self.reads(Reads::Population)
    }

    fn reads(&self, what: Reads) -> bool {
        self.thresholds
            .keys()
            .any(|name| threshold_model(name).is_some_and(|m| m.reads == what))
    }

    /// δ-presence's bounds, when asked for.
    pub(crate) fn delta(&self) -> Option<(f64, f64)> {
        self.delta_min.map(|lo| (lo, self.delta_max.unwrap_or(1.0)))
    }

    /// The l-diversity model, if any.
    pub(crate) fn l_diversity(&self) -> Result<Option<LDiversity>, String> {
        Ok(match (self.l, self.l_diversity, self.c) {
            (None, _, _) => None,
            (Some(l), LVariant::Distinct, None) => Some(LDiversity::Distinct(whole(l, "l")?)),
            (Some(l), LVariant::Entropy, None) => Some(LDiversity::Entropy(l)),
            (Some(l), LVariant::Recursive, Some(c)) => Some(LDiversity::Recursive {
                c,
                l: whole(l, "l")?,
            }),
            (Some(_), variant, c) => {
                return Err(format!(
                    "l_diversity must be 'distinct', 'entropy' or 'recursive' (with c, and c \
                     only with 'recursive'), got {variant:?} with c = {c:?}"
                ))
            }
        })
    }

    /// The models of `kernel`, the ground distance built (from the sensitive hierarchy
    /// for ``'hierarchical'``).
    pub(crate) fn build(
        &self,
        kernel: &'static str,
        data: &ModelData,
    ) -> Result<PrivacyModels, KernelError> {
        let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
        let l_diversity = self.l_diversity().map_err(invalid)?;
        let t_closeness = match self.t {
            None => None,
            Some(t) => Some((t, self.ground_distance(kernel, data)?)),
        };
        Ok(PrivacyModels {
            l_diversity,
            t_closeness,
            delta_presence: self.delta(),
            thresholds: self
                .thresholds
                .iter()
                .map(|(name, &threshold)| (name.clone(), threshold))
                .collect(),
        })
    }

    fn ground_distance(
        &self,
        kernel: &'static str,
        data: &ModelData,
    ) -> Result<GroundDistance, KernelError> {
        Ok(match (self.t_distance, &data.hierarchy) {
            (TDistance::Equal, _) => GroundDistance::Equal,
            (TDistance::Ordered, _) => GroundDistance::Ordered,
            (TDistance::Hierarchical, Some(levels)) => {
                GroundDistance::Hierarchical(convert::hierarchy(levels)?)
            }
            (TDistance::Hierarchical, None) => {
                return Err(KernelError::InvalidArgument {
                    kernel,
                    message: "t_distance 'hierarchical' needs the sensitive hierarchy".to_owned(),
                })
            }
        })
    }
}

/// The model arguments of one row (empty without the models that read them).
#[derive(Default)]
pub(crate) struct ModelData {
    /// Per sensitive entry: its tuple, its sensitive code, its rows.
    pub(crate) tuples: Option<UInt32Array>,
    pub(crate) codes: Option<UInt32Array>,
    pub(crate) counts: Option<UInt64Array>,
    /// Number of sensitive codes.
    pub(crate) values: usize,
    /// The sensitive hierarchy's level codes (for the hierarchical distance).
    pub(crate) hierarchy: Option<Vec<UInt32Array>>,
    /// δ-presence's population: label paths and rows.
    pub(crate) population: Option<(UInt32Array, UInt64Array)>,
}

impl ModelData {
    /// The sensitive entries as slices (empty without them).
    pub(crate) fn entries(&self) -> (&[u32], &[u32], &[u64]) {
        (
            self.tuples.as_ref().map_or(&[][..], |a| a.values()),
            self.codes.as_ref().map_or(&[][..], |a| a.values()),
            self.counts.as_ref().map_or(&[][..], |a| a.values()),
        )
    }

    /// Read the six model arguments of row `i` that `options` needs: sensitive tuples,
    /// codes, counts, hierarchy, population paths, population counts.
    pub(crate) fn read(
        py: Python<'_>,
        kernel: &'static str,
        columns: [&ListArray; 6],
        i: usize,
        options: &ModelOptions,
    ) -> PyResult<Self> {
        let [tuples, codes, counts, levels, paths, rows] = columns;
        let mut data = Self::default();
        if options.needs_sensitive() {
            let levels = convert::rows::<U32>(py, kernel, "sensitive", levels, i)?;
            let codes = convert::row::<U32>(py, kernel, "sensitive", codes, i)?;
            data.values = match levels.first() {
                Some(leaves) => leaves.len(),
                None => codes.values().iter().max().map_or(0, |&c| c as usize + 1),
            };
            data.tuples = Some(convert::row::<U32>(py, kernel, "sensitive", tuples, i)?);
            data.codes = Some(codes);
            data.counts = Some(convert::row::<U64>(py, kernel, "sensitive", counts, i)?);
            if !levels.is_empty() {
                data.hierarchy = Some(levels);
            }
        }
        if options.needs_population() {
            data.population = Some((
                convert::row::<U32>(py, kernel, "population", paths, i)?,
                convert::row::<U64>(py, kernel, "population", rows, i)?,
            ));
        }
        Ok(data)
    }
}

/// Check the models' options before any input is read (l whole where it must be, c with
/// ``'recursive'`` only, threshold models known).
pub(crate) fn check(py: Python<'_>, kernel: &'static str, options: &ModelOptions) -> PyResult<()> {
    for name in options.thresholds.keys() {
        known_threshold_model(name).map_err(|message| invalid(py, kernel, message))?;
    }
    options
        .l_diversity()
        .map(|_| ())
        .map_err(|message| invalid(py, kernel, message))
}

/// The six model columns as list arrays (empty lists without the models; a NULL row is
/// not required to be valid).
pub(crate) fn lists<'a>(
    py: Python<'_>,
    kernel: &'static str,
    columns: [&'a dyn Array; 6],
) -> PyResult<[&'a ListArray; 6]> {
    let names = [
        "sensitive_tuples",
        "sensitive_codes",
        "sensitive_counts",
        "sensitive_hierarchy",
        "population_paths",
        "population_counts",
    ];
    let mut out = Vec::with_capacity(6);
    for (name, c) in names.iter().zip(columns) {
        out.push(convert::lists(py, kernel, name, c)?);
    }
    Ok([out[0], out[1], out[2], out[3], out[4], out[5]])
}
