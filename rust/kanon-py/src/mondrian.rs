//! Bindings of the Mondrian kernel (``method := 'mondrian'``).

use kanon_core::emd::GroundDistance;
use kanon_core::models::{LDiversity, ModelCheck, PrivacyModels};
use kanon_core::mondrian::{mondrian_with_sets, MondrianOptions};
use kanon_core::KernelError;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::kernels::{build_hierarchies, le_bytes, read, read_hierarchies, run, whole};
use crate::progress;

/// Sensitive entries: per entry its tuple, its sensitive code and its rows, and the
/// number of sensitive values.
type Entries = (PyBuffer<u32>, PyBuffer<u32>, PyBuffer<u64>, usize);

/// Parse the l-diversity keywords shared by the kernels that enforce models.
pub(crate) fn l_diversity_of(
    l: Option<f64>,
    variant: &str,
    c: Option<f64>,
) -> PyResult<Option<LDiversity>> {
    Ok(match (l, variant, c) {
        (None, _, _) => None,
        (Some(l), "distinct", None) => Some(LDiversity::Distinct(whole(l, "l")?)),
        (Some(l), "entropy", None) => Some(LDiversity::Entropy(l)),
        (Some(l), "recursive", Some(c)) => Some(LDiversity::Recursive {
            c,
            l: whole(l, "l")?,
        }),
        (Some(_), variant, c) => {
            return Err(PyValueError::new_err(format!(
                "l_diversity must be 'distinct', 'entropy' or 'recursive' (with c, and c only \
                 with 'recursive'), got {variant:?} with c = {c:?}"
            )))
        }
    })
}

/// The ground distance of t-closeness named `name` (the sensitive hierarchy's levels for
/// ``'hierarchical'``).
pub(crate) fn ground_distance(
    kernel: &'static str,
    name: &str,
    levels: Option<&Vec<Vec<u32>>>,
) -> Result<GroundDistance, KernelError> {
    Ok(match (name, levels) {
        ("ordered", _) => GroundDistance::Ordered,
        ("hierarchical", Some(levels)) => {
            let mut h = build_hierarchies(std::slice::from_ref(levels))?;
            GroundDistance::Hierarchical(h.remove(0))
        }
        ("hierarchical", None) => {
            return Err(KernelError::InvalidArgument {
                kernel,
                message: "t_distance 'hierarchical' needs the sensitive hierarchy".to_owned(),
            })
        }
        ("equal", _) => GroundDistance::Equal,
        (other, _) => {
            return Err(KernelError::InvalidArgument {
                kernel,
                message: format!(
                    "t_distance must be 'equal', 'ordered' or 'hierarchical', got {other:?}"
                ),
            })
        }
    })
}

/// Strict multidimensional Mondrian partitioning of a histogram of tuples.
///
/// Args:
///     tuples: uint32 buffer, ``m`` leaf codes per distinct tuple.
///     m: number of quasi-identifiers.
///     counts: uint64 buffer, rows per tuple.
///     keys: per attribute, a float64 buffer: the key ordering each leaf.
///     spans: per attribute, the table-wide range of the keys (normalizes ranges).
///     hierarchies: per attribute, one uint32 buffer of label codes per level.
///     k: smallest part size.
///     stop: parts of at most this many rows are not cut further (0: cut while allowed).
///     sets: per attribute, whether it is measured by its distinct values (published as
///         a set) rather than its extent; None: by extent.
///     sensitive: (tuple, code, rows) entries of the sensitive values and the number of
///         values, for l-diversity and t-closeness (every part must satisfy them).
///     sensitive_hierarchy, l, l_diversity, c, t, t_distance: the models, as for
///         ``lattice_optimal``.
///
/// Returns:
///     (parts, part_of_tuple, levels): the number of parts; the part of every tuple as
///     little-endian uint32 bytes; per part and attribute the level of the lowest
///     common hierarchy node, as little-endian uint32 bytes.
///
/// Raises:
///     InvalidInputError: inconsistent inputs, or a table that violates the models as a
///         whole.
#[pyfunction]
#[pyo3(signature = (tuples, m, counts, keys, spans, hierarchies, k, stop, *, sets=None,
                    sensitive=None, sensitive_hierarchy=None, l=None, l_diversity="distinct",
                    c=None, t=None, t_distance="equal"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn mondrian_partition<'py>(
    py: Python<'py>,
    tuples: PyBuffer<u32>,
    m: usize,
    counts: PyBuffer<u64>,
    keys: Vec<PyBuffer<f64>>,
    spans: Vec<f64>,
    hierarchies: Vec<Vec<PyBuffer<u32>>>,
    k: u64,
    stop: u64,
    sets: Option<Vec<bool>>,
    sensitive: Option<Entries>,
    sensitive_hierarchy: Option<Vec<PyBuffer<u32>>>,
    l: Option<f64>,
    l_diversity: &str,
    c: Option<f64>,
    t: Option<f64>,
    t_distance: &str,
) -> PyResult<(usize, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let l_diversity = l_diversity_of(l, l_diversity, c)?;
    let tuples = read(py, "tuples", &tuples)?;
    let counts = read(py, "counts", &counts)?;
    let keys: Vec<Vec<f64>> = keys
        .iter()
        .map(|b| read(py, "keys", b))
        .collect::<PyResult<_>>()?;
    let hierarchies = read_hierarchies(py, &hierarchies)?;
    let entries = match &sensitive {
        Some((t, codes, rows, values)) => Some((
            read(py, "sensitive tuples", t)?,
            read(py, "sensitive codes", codes)?,
            read(py, "sensitive counts", rows)?,
            *values,
        )),
        None => None,
    };
    let sensitive_levels = match &sensitive_hierarchy {
        Some(levels) => Some(
            read_hierarchies(py, std::slice::from_ref(levels))?
                .into_iter()
                .next()
                .unwrap_or_default(),
        ),
        None => None,
    };
    let wanted = l_diversity.is_some() || t.is_some();
    let sets = sets.unwrap_or_else(|| vec![false; m]);
    let partition = run(py, || {
        const KERNEL: &str = "mondrian";
        progress::cancelled(KERNEL)?;
        let built = build_hierarchies(&hierarchies)?;
        let options = MondrianOptions { k, stop };
        let rows: u64 = counts.iter().sum();
        if !wanted {
            let partition = mondrian_with_sets(
                &tuples, m, &counts, &keys, &spans, &sets, &built, None, &options,
            )?;
            progress::advance(rows);
            return Ok(partition);
        }
        let Some((owner, codes, rows_of, values)) = &entries else {
            return Err(KernelError::InvalidArgument {
                kernel: KERNEL,
                message: "l-diversity and t-closeness need the sensitive entries".to_owned(),
            });
        };
        let t_closeness = match t {
            Some(t) => Some((
                t,
                ground_distance(KERNEL, t_distance, sensitive_levels.as_ref())?,
            )),
            None => None,
        };
        let models = PrivacyModels {
            l_diversity,
            t_closeness,
            delta_presence: None,
        };
        let partition = expanded_mondrian(
            (&tuples, m, &counts),
            (owner, codes, rows_of, *values),
            (&keys, &spans, &sets, &built),
            &models,
            &options,
        )?;
        progress::advance(rows);
        Ok(partition)
    })?;
    let parts = partition.parts;
    Ok((
        parts,
        le_bytes(py, &partition.part_of_tuple, u32::to_le_bytes),
        le_bytes(py, &partition.levels, u32::to_le_bytes),
    ))
}

/// The keys, spans, set flags and hierarchies of the attributes.
type Axes<'a> = (
    &'a [Vec<f64>],
    &'a [f64],
    &'a [bool],
    &'a [kanon_core::Hierarchy],
);

/// Mondrian with models: every tuple is split into one copy per sensitive value (equal
/// quasi-identifiers always fall on the same side of a cut, so the copies stay
/// together), and a tuple's part is that of its copies.
fn expanded_mondrian(
    (tuples, m, counts): (&[u32], usize, &[u64]),
    (owner, codes, rows, values): (&[u32], &[u32], &[u64], usize),
    (keys, spans, sets, hierarchies): Axes<'_>,
    models: &PrivacyModels,
    options: &MondrianOptions,
) -> Result<kanon_core::mondrian::Partition, KernelError> {
    const KERNEL: &str = "mondrian";
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    let n = counts.len();
    if owner.len() != codes.len() || owner.len() != rows.len() {
        return Err(invalid(
            "sensitive tuples, codes and counts differ in length".to_owned(),
        ));
    }
    let mut global = vec![0u64; values];
    let mut per_tuple = vec![0u64; n];
    for ((&t, &s), &r) in owner.iter().zip(codes).zip(rows) {
        let (t, s) = (t as usize, s as usize);
        if t >= n || s >= values {
            return Err(invalid(format!(
                "sensitive entry of tuple {t} with code {s} is out of range ({n} tuples, \
                 {values} values)"
            )));
        }
        global[s] += r;
        per_tuple[t] += r;
    }
    if let Some(t) = (0..n).find(|&t| per_tuple[t] != counts[t]) {
        return Err(invalid(format!(
            "the sensitive entries of tuple {t} hold {} rows, its count is {}",
            per_tuple[t], counts[t]
        )));
    }
    let check = ModelCheck::new(KERNEL, models, &global)?;
    let mut copies = Vec::with_capacity(owner.len() * m);
    for &t in owner {
        let t = t as usize;
        copies.extend_from_slice(&tuples[t * m..(t + 1) * m]);
    }
    let sensitive: &[u32] = codes;
    let part = mondrian_with_sets(
        &copies,
        m,
        rows,
        keys,
        spans,
        sets,
        hierarchies,
        Some((sensitive, &check)),
        options,
    )?;
    let mut part_of_tuple = vec![0u32; n];
    for (&t, &p) in owner.iter().zip(&part.part_of_tuple) {
        part_of_tuple[t as usize] = p;
    }
    Ok(kanon_core::mondrian::Partition {
        part_of_tuple,
        ..part
    })
}
