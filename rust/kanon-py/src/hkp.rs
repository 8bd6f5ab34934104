//! Binding of the (h,k,p)-coherence kernel (``kanon_hkp``, ``kanon.hkp``).

use kanon_core::hkp::{hkp as coherence, HkpOptions, Removal, Roles, DEFAULT_MAX_ITEMSETS};
use kanon_core::KernelError;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::to_py;
use crate::kernels::{le_bytes, read};

/// Make transactions (h,k,p)-coherent by suppressing public items (Xu et al., KDD 2008).
///
/// A set of at most p public items contained in some transaction is a mole when fewer
/// than k transactions contain it, or when more than a fraction h of them hold some
/// private item. Size-1 moles are suppressed, minimal moles of size 2..p are found level
/// by level, and the greedy phase suppresses public items (``method``) until none is
/// left. Removing ``suppressed`` and ``dropped`` from every transaction leaves an
/// (h,k,p)-coherent table.
///
/// Args:
///     offsets: uint64 buffer, ``transactions + 1`` entries: transaction t holds
///         ``items[offsets[t]:offsets[t + 1]]``.
///     items: uint32 buffer of item codes below ``n_items`` (repeats count once).
///     n_items: size of the code space.
///     h: largest allowed probability of inferring a private item, in (0, 1].
///     k: smallest allowed cohort, at least 1.
///     p: most public items an attacker knows, at least 1.
///     private: uint32 buffer of the private item codes (each must occur), or None
///         with ``public_fraction``.
///     public_fraction: share of the items (after preprocessing) drawn public with
///         ``seed``, or None with ``private``.
///     seed: seed of that draw.
///     method: ``'mmil'`` (MM/IL, default), ``'1il'``, ``'mm'`` or ``'rmall'``.
///     min_support: items in fewer than ``min_support × transactions`` transactions
///         are dropped first (0: none).
///     max_itemsets: most candidate sets of 2..p public items the search may decide
///         (default ten million); past it the call fails naming the largest p that fits.
///
/// Returns:
///     dict: ``suppressed``, ``size1_moles``, ``dropped``, ``private`` (uint32 bytes;
///     suppressed in the order chosen), ``mole_offsets`` (uint64 bytes, moles + 1
///     entries) and ``mole_items`` (uint32 bytes) of the minimal moles of size 2..p,
///     ``transactions``, ``items``, ``public_items``, ``occurrences``,
///     ``suppressed_occurrences``, ``dropped_occurrences``, ``candidates``,
///     ``tree_nodes``, ``information_loss`` (suppressed over all occurrences after
///     preprocessing), ``method`` and ``seconds`` (kernel time).
///
/// Raises:
///     InvalidInputError: h, k, p, min_support, public_fraction or method out of range,
///         both or neither of private and public_fraction, malformed offsets or codes,
///         a private item that occurs in no transaction, a search past max_itemsets,
///         a cancellation.
#[pyfunction]
#[pyo3(signature = (offsets, items, n_items, h, k, p, *, private=None, public_fraction=None,
                    seed=0, method="mmil", min_support=0.0,
                    max_itemsets=DEFAULT_MAX_ITEMSETS))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn hkp<'py>(
    py: Python<'py>,
    offsets: PyBuffer<u64>,
    items: PyBuffer<u32>,
    n_items: usize,
    h: f64,
    k: u64,
    p: usize,
    private: Option<PyBuffer<u32>>,
    public_fraction: Option<f64>,
    seed: u64,
    method: &str,
    min_support: f64,
    max_itemsets: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let removal = Removal::from_name(method).map_err(|e| to_py(py, &e))?;
    let offsets = read(py, "offsets", &offsets)?;
    let items = read(py, "items", &items)?;
    let private = private.map(|b| read(py, "private", &b)).transpose()?;
    let options = HkpOptions {
        h,
        k,
        p,
        removal,
        min_support,
        max_itemsets,
    };
    let (release, seconds) = py
        .detach(|| {
            let roles = match (&private, public_fraction) {
                (Some(codes), None) => Roles::Private(codes),
                (None, Some(fraction)) => Roles::PublicFraction { fraction, seed },
                _ => {
                    return Err(KernelError::InvalidArgument {
                        kernel: "hkp",
                        message: "give exactly one of private (the private item codes) and \
                                  public_fraction"
                            .to_owned(),
                    })
                }
            };
            let clock = std::time::Instant::now();
            let release = coherence(&offsets, &items, n_items, roles, &options)?;
            Ok((release, clock.elapsed().as_secs_f64()))
        })
        .map_err(|e| to_py(py, &e))?;
    let s = &release.stats;
    let mole_offsets: Vec<u64> = release.mole_offsets.iter().map(|&o| o as u64).collect();
    let d = PyDict::new(py);
    d.set_item(
        "suppressed",
        le_bytes(py, &release.suppressed, u32::to_le_bytes),
    )?;
    d.set_item(
        "size1_moles",
        le_bytes(py, &release.size1_moles, u32::to_le_bytes),
    )?;
    d.set_item(
        "mole_offsets",
        le_bytes(py, &mole_offsets, u64::to_le_bytes),
    )?;
    d.set_item(
        "mole_items",
        le_bytes(py, &release.mole_items, u32::to_le_bytes),
    )?;
    d.set_item("dropped", le_bytes(py, &release.dropped, u32::to_le_bytes))?;
    d.set_item("private", le_bytes(py, &release.private, u32::to_le_bytes))?;
    d.set_item("transactions", s.transactions)?;
    d.set_item("items", s.items)?;
    d.set_item("public_items", s.public_items)?;
    d.set_item("occurrences", s.occurrences)?;
    d.set_item("suppressed_occurrences", s.suppressed_occurrences)?;
    d.set_item("dropped_occurrences", s.dropped_occurrences)?;
    d.set_item("candidates", s.candidates)?;
    d.set_item("tree_nodes", s.tree_nodes)?;
    d.set_item("information_loss", release.information_loss())?;
    d.set_item("method", removal.name())?;
    d.set_item("seconds", seconds)?;
    Ok(d)
}
