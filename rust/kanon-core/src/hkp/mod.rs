//! (h,k,p)-coherence of transaction data (Xu, Wang, Fung and Yu, "Anonymizing transaction
//! databases for publication", KDD 2008): suppress public items from the whole table until
//! no attacker who knows at most `p` public items of a person can narrow them down to fewer
//! than `k` transactions or infer one of their private items with probability above `h`.
//!
//! # Definitions
//! Items are public (an attacker may know them) or private (what must not be inferred).
//! For a set β of public items, its *cohort* is the set of transactions containing β and
//! `sup(β)` its size. β is a **mole** if `1 ≤ |β| ≤ p`, `sup(β) > 0` and either
//! `sup(β) < k` or, for some private item e, `sup(β ∪ {e}) / sup(β) > h` (a set no
//! transaction contains is not a mole: an attacker cannot match it). A table is
//! *(h,k,p)-coherent* when it has no mole. A mole is *minimal* when no proper subset of it
//! is a mole; a table is coherent exactly when it has no minimal mole.
//!
//! Suppressing a public item removes it from every transaction and leaves the support of
//! every set without it unchanged, so the moles of the release are the moles of the input
//! that contain no suppressed item. The release is therefore coherent exactly when every
//! minimal mole contains a suppressed item; private items are never suppressed.
//!
//! # Algorithm ([`hkp`])
//! 1. *Preprocessing* (optional): items whose support is below a fraction of the
//!    transactions are dropped from the data (the paper's 0.1 % rule).
//! 2. Public items that are moles on their own (size-1 moles) are suppressed.
//! 3. Minimal moles of size 2 to `p` are found level by level: only non-moles are extended,
//!    candidates are the sets that occur in some transaction and all of whose subsets one
//!    item smaller are non-moles. Supports are counted over tid-lists, one prefix per task,
//!    in parallel.
//! 4. The minimal moles go into the MOLE-tree (each mole a path, its items ordered by
//!    decreasing MM, the number of minimal moles holding the item) with its score table
//!    (MM, IL = support, the nodes of each item). The item with the best score is
//!    suppressed: the subtrees under its nodes are removed and the counts of their
//!    ancestors and the MM of every item on the removed moles updated; until no minimal
//!    mole is left.
//!
//! Every choice depends on the item codes and the data only (ties go by code), never on the
//! order of the transactions or on the number of threads.
//!
//! Files: `types` (options, roles, release, limits), `coherence` (the entry point),
//! `data` (transactions in dense indices and the search's helpers), `moles` (the minimal
//! moles) and `mole_tree` (the MOLE-tree and the greedy suppression).

mod coherence;
mod data;
mod mole_tree;
mod moles;
mod types;

pub use coherence::hkp;
pub use types::{HkpOptions, HkpRelease, HkpStats, Removal, Roles, DEFAULT_MAX_ITEMSETS};
