//! The entry point: validate the input, find the minimal moles, suppress greedily.

use super::data::Data;
use super::mole_tree::greedy;
use super::types::{invalid, HkpOptions, HkpRelease, HkpStats, Roles, KERNEL};
use crate::cancel;
use crate::error::{KernelError, Result};

/// Make a table of transactions (h,k,p)-coherent by suppressing public items.
///
/// Runs the algorithm of Xu et al. (KDD 2008) described in the [module
/// documentation](crate::hkp): preprocessing, size-1 moles, minimal moles of size 2 to `p` found
/// level by level over tid-lists (in parallel), then greedy suppression over the MOLE-tree
/// with the chosen [`Removal`](crate::hkp::Removal) method. Removing [`HkpRelease::suppressed`] and
/// [`HkpRelease::dropped`] from every transaction gives an (h,k,p)-coherent table.
///
/// P(e | β) = sup(β ∪ {e}) / sup(β) is compared with `h` as an IEEE double division.
///
/// # Arguments
/// * `offsets` – transaction `t` holds `items[offsets[t]..offsets[t + 1]]`
///   (`transactions + 1` non-decreasing entries, the first 0, the last `items.len()`).
/// * `items` – item codes, each below `n_items`; an item repeated within a transaction
///   counts once.
/// * `n_items` – size of the code space (at most 2^32); memory is linear in it.
/// * `roles` – which items are private.
/// * `options` – h, k, p, the removal method and the preprocessing threshold.
///
/// # Returns
/// The items to suppress, the moles found, the dropped and private items and counters.
///
/// # Errors
/// [`KernelError::InvalidArgument`] for `h` outside `(0, 1]`, `k = 0`, `p = 0`,
/// `max_itemsets = 0`, `min_support` or a public fraction outside `[0, 1]`, malformed
/// offsets, a code outside the code space, a private item that occurs in no transaction,
/// a search that would decide more than `max_itemsets` candidate sets or keep cohorts of
/// more than 2^28 transaction ids in one level (the message names the largest `p` that
/// fits), a code space too large to allocate, or a cancellation ([`crate::cancel`]).
///
/// # Complexity
/// With n transactions, N item occurrences and C candidate sets with cohorts of total
/// size S: O(N log N + S · (l + q)) time for transactions of at most l public and q
/// private items, plus O(M · P) for the greedy phase over M mole items and P public
/// items; O(N + S) space.
///
/// # Examples
/// ```
/// use kanon_core::hkp::{hkp, HkpOptions, Removal, Roles};
/// // The course report's example: private items 3 and 4, h = 0.5, k = 3, p = 3.
/// let items = [0, 2, 6, 0, 2, 5, 1, 2, 0, 1, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5];
/// let offsets = [0, 3, 6, 8, 11, 14, 20];
/// let options = HkpOptions {
///     h: 0.5, k: 3, p: 3, removal: Removal::MmIl, min_support: 0.0, max_itemsets: 1000,
/// };
/// let release = hkp(&offsets, &items, 7, Roles::Private(&[3, 4]), &options).unwrap();
/// assert_eq!(release.size1_moles, vec![6]);
/// let moles: Vec<&[u32]> = release.moles().collect();
/// assert_eq!(moles, vec![&[1, 5][..], &[2, 5], &[0, 1, 2]]);
/// assert_eq!(release.suppressed, vec![6, 5, 1]);
/// ```
pub fn hkp(
    offsets: &[u64],
    items: &[u32],
    n_items: usize,
    roles: Roles<'_>,
    options: &HkpOptions,
) -> Result<HkpRelease> {
    validate(offsets, items, n_items, roles, options)?;
    let data = Data::new(offsets, items, n_items, roles, options)?;
    cancel::check(KERNEL)?;
    let (size1_moles, f1) = data.size1();
    let (moles, candidates) = data.minimal_moles(&f1, options.max_itemsets)?;
    let mut suppressed: Vec<u32> = size1_moles.clone();
    let (chosen, tree_nodes) = greedy(&data, &moles, options.removal)?;
    suppressed.extend(chosen);
    let suppressed_occurrences = suppressed
        .iter()
        .map(|&i| data.support[data.public[i as usize] as usize])
        .sum();
    let code = |i: &u32| data.public[*i as usize];
    // Public indices follow the codes' order, so each mole stays sorted.
    let mole_items = moles.items.iter().map(code).collect();
    let mole_offsets = moles.offsets;
    Ok(HkpRelease {
        suppressed: suppressed.iter().map(code).collect(),
        size1_moles: size1_moles.iter().map(code).collect(),
        mole_offsets,
        mole_items,
        dropped: data.dropped.clone(),
        private: data.private.clone(),
        stats: HkpStats {
            transactions: data.transactions as u64,
            items: (data.public.len() + data.private.len()) as u64,
            public_items: data.public.len() as u64,
            occurrences: data.occurrences,
            suppressed_occurrences,
            dropped_occurrences: data.dropped_occurrences,
            candidates,
            tree_nodes,
        },
    })
}

fn validate(
    offsets: &[u64],
    items: &[u32],
    n_items: usize,
    roles: Roles<'_>,
    options: &HkpOptions,
) -> Result<()> {
    let h = options.h;
    if !(h > 0.0 && h <= 1.0) {
        return Err(invalid(format!(
            "h must lie in (0, 1] (the largest allowed probability of inferring a private \
             item), got {h}"
        )));
    }
    if options.k == 0 {
        return Err(invalid(
            "k must be at least 1 (the smallest allowed cohort), got 0".to_owned(),
        ));
    }
    if options.p == 0 {
        return Err(invalid(
            "p must be at least 1 (the most public items an attacker knows), got 0".to_owned(),
        ));
    }
    if options.max_itemsets == 0 {
        return Err(invalid(
            "max_itemsets must be at least 1 (the most candidate sets the search may \
             decide), got 0"
                .to_owned(),
        ));
    }
    let s = options.min_support;
    if !(0.0..=1.0).contains(&s) {
        return Err(invalid(format!(
            "min_support must lie in [0, 1] (a fraction of the transactions), got {s}"
        )));
    }
    if let Roles::PublicFraction { fraction, .. } = roles {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(invalid(format!(
                "public_fraction must lie in [0, 1], got {fraction}"
            )));
        }
    }
    let Some((&first, _)) = offsets.split_first() else {
        return Err(KernelError::LengthMismatch {
            kernel: KERNEL,
            argument: "offsets",
            got: 0,
            expected: 1,
        });
    };
    if offsets.len() - 1 > u32::MAX as usize {
        return Err(invalid(format!(
            "at most 2^32 - 1 transactions are supported, got {}",
            offsets.len() - 1
        )));
    }
    if first != 0 {
        return Err(invalid(format!("offsets must start at 0, got {first}")));
    }
    if let Some(w) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(invalid(format!(
            "offsets must not decrease: entry {} is {} after {}",
            w + 1,
            offsets[w + 1],
            offsets[w]
        )));
    }
    let last = offsets[offsets.len() - 1];
    if usize::try_from(last).ok() != Some(items.len()) {
        return Err(invalid(format!(
            "the last offset must equal the number of items ({}), got {last}",
            items.len()
        )));
    }
    if n_items > 1 << 32 {
        return Err(invalid(format!(
            "n_items ({n_items}) exceeds the 2^32 codes of a u32 item code"
        )));
    }
    if let Some(&c) = items.iter().find(|&&c| c as usize >= n_items) {
        return Err(invalid(format!(
            "item code {c} is outside the code space 0..{n_items}"
        )));
    }
    if let Roles::Private(p) = roles {
        if let Some(&c) = p.iter().find(|&&c| c as usize >= n_items) {
            return Err(invalid(format!(
                "private item code {c} is outside the code space 0..{n_items}"
            )));
        }
    }
    Ok(())
}
