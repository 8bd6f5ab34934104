//! The (h,k,p)-coherence kernel: ``kanon_hkp_run`` (one transaction table per row).

use arrow_array::{Array, ListArray, UInt32Array};
use kanon_core::hkp::DEFAULT_MAX_ITEMSETS;
use kanon_core::hkp::{hkp as coherence, HkpOptions, HkpRelease, Removal, Roles};
use kanon_core::KernelError;
use pyo3::prelude::*;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, ListColumn, NestedColumn, U32};

const KERNEL: &str = "kanon_hkp_run";

/// How the greedy phase picks the next item to suppress.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
enum Method {
    #[serde(rename = "mmil")]
    MmIl,
    #[serde(rename = "1il")]
    OneIl,
    #[serde(rename = "mm")]
    Mm,
    #[serde(rename = "rmall")]
    RmAll,
}

impl From<Method> for Removal {
    fn from(method: Method) -> Self {
        match method {
            Method::MmIl => Self::MmIl,
            Method::OneIl => Self::OneIl,
            Method::Mm => Self::Mm,
            Method::RmAll => Self::RmAll,
        }
    }
}

/// The options of ``kanon_hkp_run`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Largest allowed probability of inferring a private item, in (0, 1].
    h: f64,
    /// Smallest allowed cohort.
    k: u64,
    /// Most public items an attacker knows.
    p: usize,
    method: Method,
    /// Items in fewer than ``min_support × transactions`` transactions are dropped.
    #[serde(default)]
    min_support: Option<f64>,
    /// Share of the items drawn public with ``seed`` when no private codes are given.
    #[serde(default)]
    public_fraction: Option<f64>,
    #[serde(default)]
    seed: Option<u64>,
    /// Most candidate sets of 2..p public items the search may decide.
    #[serde(default)]
    max_itemsets: Option<u64>,
}

/// One transaction table's inputs, borrowed from the Arrow columns.
struct Transactions {
    offsets: Vec<u64>,
    items: UInt32Array,
    n_items: usize,
    private: Option<UInt32Array>,
    public_fraction: Option<f64>,
    seed: u64,
    options: HkpOptions,
}

/// A release with the kernel's seconds.
struct Coherent {
    release: HkpRelease,
    method: &'static str,
    seconds: f64,
}

/// SQL ``kanon_hkp_run(tx, n, n_items, private, options)``: make the transactions of
/// one table per row (h,k,p)-coherent by suppressing public items (Xu et al., KDD 2008).
///
/// Args:
///     tx: ``UINTEGER[][]``, the transactions as lists of item codes (empty transactions
///         may be left out; NULL: none).
///     n: ``UBIGINT``, the number of transactions, empty ones included.
///     n_items: ``UBIGINT``, the size of the code space.
///     private: ``UINTEGER[]``, the private codes (NULL: drawn with ``public_fraction``).
///     options: JSON: ``h``, ``k``, ``p``, ``method`` (``'mmil'``, ``'1il'``, ``'mm'``
///         or ``'rmall'``), ``min_support``, ``public_fraction``, ``seed`` and
///         ``max_itemsets``.
///
/// Returns:
///     Per row (NULL when ``n``, ``n_items`` or ``options`` is NULL) a struct: the items
///     to suppress (in the order chosen), the size-1 moles, the minimal moles of 2..p
///     items, the dropped and the private items (codes), the information loss and the
///     counters, the method and the kernel's seconds.
///
/// Raises:
///     InvalidInputError: h, k, p, min_support, public_fraction or method out of range,
///         both or neither of private and public_fraction, malformed codes, a private
///         item that occurs in no transaction, a search past max_itemsets, a
///         cancellation.
#[pyfunction]
pub(crate) fn hkp<'py>(
    py: Python<'py>,
    tx: Column,
    n: Column,
    n_items: Column,
    private: Column,
    options: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let (tx, n, n_items, private, options) = (
        array(&tx),
        array(&n),
        array(&n_items),
        array(&private),
        array(&options),
    );
    let transactions = convert::lists(py, KERNEL, "tx", tx.as_ref())?;
    let private = convert::lists(py, KERNEL, "private", private.as_ref())?;
    let rows = n.len();
    let mut releases: Vec<Option<Coherent>> = Vec::with_capacity(rows);
    let mut valid = Vec::with_capacity(rows);
    for i in 0..rows {
        if !convert::all_valid(&[n, n_items, options], i) {
            releases.push(None);
            valid.push(false);
            continue;
        }
        let options: Options = convert::options(py, KERNEL, options.as_ref(), i)?;
        let count = convert::scalar_u64(py, KERNEL, "n", n.as_ref(), i)?;
        let (offsets, items) = if transactions.is_valid(i) {
            flat(py, transactions, i, count)?
        } else {
            flat_empty(count)
        };
        let input = Transactions {
            offsets,
            items,
            n_items: convert::scalar_u64(py, KERNEL, "n_items", n_items.as_ref(), i)? as usize,
            private: if private.is_valid(i) {
                Some(convert::row::<U32>(py, KERNEL, "private", private, i)?)
            } else {
                None
            },
            public_fraction: options.public_fraction,
            seed: options.seed.unwrap_or(0),
            options: HkpOptions {
                h: options.h,
                k: options.k,
                p: options.p,
                removal: options.method.into(),
                min_support: options.min_support.unwrap_or(0.0),
                max_itemsets: options.max_itemsets.unwrap_or(DEFAULT_MAX_ITEMSETS),
            },
        };
        releases.push(Some(run(py, || make_coherent(&input))?));
        valid.push(true);
    }
    let list = |get: fn(&HkpRelease) -> &[u32]| {
        let mut column = ListColumn::<U32>::new();
        for r in &releases {
            column.push(r.as_ref().map(|r| get(&r.release)));
        }
        column.finish()
    };
    let mut moles = NestedColumn::<U32>::new();
    for r in &releases {
        moles.push(
            r.as_ref()
                .map(|r| (&r.release.mole_items[..], &r.release.mole_offsets[..])),
        );
    }
    let stat =
        |get: fn(&HkpRelease) -> u64| convert::u64_field(&releases, move |r| Some(get(&r.release)));
    let out = convert::struct_of(
        vec![
            ("suppressed", list(|r| &r.suppressed)),
            ("size1_moles", list(|r| &r.size1_moles)),
            ("moles", moles.finish()),
            ("dropped", list(|r| &r.dropped)),
            ("private", list(|r| &r.private)),
            (
                "information_loss",
                convert::f64_field(&releases, |r| Some(r.release.information_loss())),
            ),
            (
                "suppressed_occurrences",
                stat(|r| r.stats.suppressed_occurrences),
            ),
            ("occurrences", stat(|r| r.stats.occurrences)),
            ("dropped_occurrences", stat(|r| r.stats.dropped_occurrences)),
            ("transactions", stat(|r| r.stats.transactions)),
            ("items", stat(|r| r.stats.items)),
            ("public_items", stat(|r| r.stats.public_items)),
            ("candidates", stat(|r| r.stats.candidates)),
            ("method", convert::str_field(&releases, |r| r.method)),
            (
                "seconds",
                convert::f64_field(&releases, |r| Some(r.seconds)),
            ),
        ],
        &valid,
    );
    convert::to_python(py, out)
}

/// The offsets (``n + 1``, the transactions left out at the end empty) and the items of
/// row `i` of ``tx``.
fn flat(
    py: Python<'_>,
    transactions: &ListArray,
    i: usize,
    n: u64,
) -> PyResult<(Vec<u64>, UInt32Array)> {
    let inner = transactions.value(i);
    let inner = convert::lists(py, KERNEL, "tx", &inner)?;
    let bounds = inner.value_offsets();
    let given = inner.len() as u64;
    if n < given {
        return Err(convert::invalid(
            py,
            KERNEL,
            format!("{given} transactions given but n = {n}"),
        ));
    }
    let first = bounds[0];
    let last = bounds[bounds.len() - 1];
    let mut offsets: Vec<u64> = bounds.iter().map(|&o| (o - first) as u64).collect();
    offsets.resize(n as usize + 1, (last - first) as u64);
    let items = inner
        .values()
        .slice(first as usize, (last - first) as usize);
    let items = convert::values::<U32>(py, KERNEL, "items", &items)?;
    Ok((offsets, items))
}

/// A table of `n` empty transactions.
fn flat_empty(n: u64) -> (Vec<u64>, UInt32Array) {
    (
        vec![0; n as usize + 1],
        UInt32Array::from(Vec::<u32>::new()),
    )
}

/// Run the kernel on one table (GIL released).
fn make_coherent(t: &Transactions) -> Result<Coherent, KernelError> {
    let roles = match (&t.private, t.public_fraction) {
        (Some(codes), None) => Roles::Private(codes.values()),
        (None, Some(fraction)) => Roles::PublicFraction {
            fraction,
            seed: t.seed,
        },
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
    let release = coherence(&t.offsets, t.items.values(), t.n_items, roles, &t.options)?;
    Ok(Coherent {
        release,
        method: t.options.removal.name(),
        seconds: clock.elapsed().as_secs_f64(),
    })
}
