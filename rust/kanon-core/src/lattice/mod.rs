//! Optimal full-domain generalization: the lattice of level vectors (one level per
//! quasi-identifier for the whole table) searched for the node of lowest cost whose
//! equivalence classes satisfy k-anonymity once at most a given number of rows are
//! suppressed (ARX's search, Prasser et al.).
//!
//! The input is a histogram of distinct leaf-code tuples with their counts, so a node is
//! checked by grouping at most one entry per distinct tuple. The search is exact:
//!
//! * every node gets a **lower bound** of its cost that is also a lower bound of every
//!   coarser node (the generalization part of the metric, counting every row as kept;
//!   for the class-size metrics a bound from the number of labels);
//! * nodes are visited in order of their lower bound and the search stops at the first
//!   bound above the best cost found (branch and bound);
//! * a node whose classes need more suppression than allowed tags all finer nodes the
//!   same way without grouping them (**predictive tagging**: the rows in classes of
//!   fewer than k can only grow when a node is made finer);
//! * the search **rolls up** the classes of a cached finer node (merging classes by the
//!   parent maps of the levels that differ), which touches one entry per class instead
//!   of one per distinct tuple; without one, it rolls up from a **base**: the histogram
//!   grouped once at the finest node every node still to be checked lies above (it
//!   rises as nodes get classified); from a large base, nodes that differ high in the
//!   lattice first roll up a **hub**, the finest node below two of them, which later
//!   nodes above it roll up from (`State::hub`);
//! * phase 1 bisects a path of nodes for its first node within the suppression limit,
//!   probing first the last node a **guess** puts over it (the rows below k each node
//!   would have if the attributes were independent, estimated on a sample; `guess`),
//!   then the next one, which rolls up from it;
//! * every feasible node met while classifying gives an **incumbent** cost; unclassified
//!   nodes whose lower bound exceeds it are not classified at all (the bound only grows
//!   going up, so neither they nor their coarser nodes can win);
//! * with suppression, a node's bound is raised by the **suppression penalty** of the
//!   coarsest node checked above it (for the loss and height metrics: the rows below k
//!   at a coarser node are below k at every finer one and cost at least as much there).
//!
//! Grouping uses an open-addressing table sized by the number of possible labels; for
//! large inputs another thread computes the next chunk of keys while one sums the
//! current chunk. Results do not depend on the number of threads.
//!
//! Suppression: the rows of classes with fewer than `k` rows are suppressed (all their
//! quasi-identifiers become `*`) if they are at most `max_suppressed`. When suppressed
//! rows stay in the release they form one more class, which must then hold at least `k`
//! rows itself; this makes the feasible set of nodes non-monotone, so only the bound on
//! suppressed rows (which is monotone) is used for tagging.
//!
//! Files: `types` (options, results, limits), `search` (the search context: grouping and
//! evaluating a node), `models` (the privacy models' checks), `input` (their input and a
//! node's verdict), `group` (sums by packed key), `keys` (levels packed into keys),
//! `tuples` (the histogram's tuples, as codes or packed keys), `guess` (where a path
//! turns within the limit), `walk` (the branch-and-bound walk) and `optimal` (the entry
//! points).

pub(crate) mod group;
mod guess;
mod input;
mod keys;
mod models;
mod optimal;
mod search;
mod tuples;
mod types;
mod walk;

pub use input::{ModelInput, NO_LABEL};
pub use keys::{key_bits, unpack_keys};
pub use optimal::{evaluate_node, optimal, optimal_keys, optimal_with};
pub use types::{LatticeOptions, Metric, NodeEval, Optimum};
