//! What the iterations share: the lattice of full-domain generalizations and what a row
//! costs per attribute and label.

use crate::error::{KernelError, Result};
use crate::hierarchy::{check_recoding_inputs, Hierarchy};

pub(super) const KERNEL: &str = "iterated";

/// Generalization lattices with more nodes are refused: every step orders all nodes, and
/// each node is checked (one grouping of the unreleased tuples) at most once.
pub const MAX_NODES: usize = 1 << 15;

/// What a step minimizes over the rows left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepCost {
    /// ARX's non-uniform entropy (the PrioPrivacy experiments' metric).
    Entropy,
    /// ARX's loss metric: per row and attribute `(leaves under the label − 1) / (leaves −
    /// 1)`, the normalized certainty penalty that GCP averages.
    Loss,
}

/// The nodes of the generalization lattice (the product of the heights + 1), or `None`
/// above [`MAX_NODES`].
#[must_use]
pub fn lattice_nodes(hierarchies: &[Hierarchy]) -> Option<usize> {
    hierarchies.iter().try_fold(1usize, |nodes, h| {
        nodes
            .checked_mul(h.height() + 1)
            .filter(|&n| n <= MAX_NODES)
    })
}

/// The full-domain generalizations: node ids in mixed radix of the levels, the last
/// attribute's the least significant digit.
pub(super) struct Lattice {
    heights: Vec<usize>,
    pub(super) nodes: usize,
}

impl Lattice {
    pub(super) fn new(hierarchies: &[Hierarchy]) -> Option<Self> {
        let nodes = lattice_nodes(hierarchies)?;
        let heights = hierarchies.iter().map(Hierarchy::height).collect();
        Some(Self { heights, nodes })
    }

    pub(super) fn levels(&self, mut node: usize, out: &mut [usize]) {
        for (j, &h) in self.heights.iter().enumerate().rev() {
            out[j] = node % (h + 1);
            node /= h + 1;
        }
    }
}

/// What one row costs per attribute and label: for [`StepCost::Loss`], per attribute the
/// leaves under each label less one (`extra[j][l][g]`) and the leaves less one (`spread[j]`,
/// at least 1), so that sums over labels are exact integers, whatever their order.
pub(super) enum Units {
    Entropy,
    Loss {
        extra: Vec<Vec<Vec<u64>>>,
        spread: Vec<u64>,
    },
}

impl Units {
    pub(super) fn new(hierarchies: &[Hierarchy], step_cost: StepCost) -> Self {
        if step_cost == StepCost::Entropy {
            return Self::Entropy;
        }
        let per_label = |h: &Hierarchy, l: usize| {
            let mut under = vec![0u64; h.width(l) as usize];
            for &g in h.level(l) {
                under[g as usize] += 1;
            }
            under.iter().map(|&u| u.saturating_sub(1)).collect()
        };
        Self::Loss {
            extra: hierarchies
                .iter()
                .map(|h| (0..=h.height()).map(|l| per_label(h, l)).collect())
                .collect(),
            spread: hierarchies
                .iter()
                .map(|h| h.leaves().saturating_sub(1).max(1) as u64)
                .collect(),
        }
    }

    /// The unweighted cost of one row of attribute `j` labelled `label` at `level`: the
    /// loss, or (for the entropy, which has no per-row cost) `level / height`.
    pub(super) fn unit(&self, h: &Hierarchy, j: usize, level: usize, label: u32) -> f64 {
        match self {
            Self::Entropy => level as f64 / h.height().max(1) as f64,
            Self::Loss { extra, spread } => {
                extra[j][level][label as usize] as f64 / spread[j] as f64
            }
        }
    }
}

/// Check an iteration's inputs (see [`super::iterated`]'s errors): the total rows and the
/// lattice.
pub(super) fn check_inputs(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    weights: &[f64],
    k: u64,
) -> Result<(u64, Lattice)> {
    let total = check_recoding_inputs(
        KERNEL,
        tuples,
        m,
        counts,
        hierarchies,
        ("weights", weights),
        k,
    )?;
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
        return Err(invalid(format!(
            "weights must be finite and >= 0, got {weights:?}"
        )));
    }
    let lattice = Lattice::new(hierarchies)
        .ok_or_else(|| invalid(format!("the generalization lattice has more than {MAX_NODES} nodes (the product of the hierarchies' heights + 1): use fewer quasi-identifiers or lower hierarchies, or a method without a lattice ('forest', 'mondrian')")))?;
    Ok((total, lattice))
}
