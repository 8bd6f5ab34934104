//! The MOLE-tree of the minimal moles and the greedy suppression of public items.

use super::data::{Data, Moles};
use super::types::{Removal, KERNEL};
use crate::cancel;
use crate::error::Result;

/// A node of the MOLE-tree.
struct Node {
    /// Public index of the item (unused for the root).
    label: u32,
    parent: u32,
    /// Minimal moles passing through the node.
    count: u64,
    alive: bool,
    /// First child and next sibling (`NONE`: none): children without an allocation each.
    first_child: u32,
    next_sibling: u32,
}

/// No node.
const NONE: u32 = u32::MAX;

/// The MOLE-tree and its score table.
struct MoleTree {
    nodes: Vec<Node>,
    /// MM per public index: remaining minimal moles holding the item.
    mm: Vec<u64>,
    /// Node links per public index.
    links: Vec<Vec<u32>>,
}

impl MoleTree {
    /// Build the tree: each mole a path from the root, its items by decreasing MM (ties:
    /// the higher code first, as in the course report's example).
    fn build(moles: &Moles, public: usize) -> Self {
        let mut mm = vec![0u64; public];
        for &e in &moles.items {
            mm[e as usize] += 1;
        }
        // Items by decreasing MM, then decreasing code: rank 0 comes first on a path.
        let mut order: Vec<u32> = (0..public as u32).collect();
        order.sort_unstable_by(|&a, &b| mm[b as usize].cmp(&mm[a as usize]).then(b.cmp(&a)));
        let mut rank = vec![0u32; public];
        for (r, &e) in order.iter().enumerate() {
            rank[e as usize] = r as u32;
        }
        // Each mole as its items' ranks, ascending; the moles sorted by those paths.
        let mut ranked: Vec<u32> = moles.items.iter().map(|&e| rank[e as usize]).collect();
        for w in moles.offsets.windows(2) {
            ranked[w[0]..w[1]].sort_unstable();
        }
        let path = |m: usize| &ranked[moles.offsets[m]..moles.offsets[m + 1]];
        let mut sorted: Vec<usize> = (0..moles.offsets.len() - 1).collect();
        sorted.sort_unstable_by(|&a, &b| path(a).cmp(path(b)));
        let mut nodes = vec![Node {
            label: NONE,
            parent: NONE,
            count: 0,
            alive: true,
            first_child: NONE,
            next_sibling: NONE,
        }];
        let mut links = vec![Vec::new(); public];
        // The path of the previous mole: equal prefixes share nodes (paths are sorted).
        let mut stack: Vec<u32> = Vec::new();
        let mut previous: &[u32] = &[];
        for &m in &sorted {
            let path = path(m);
            let common = path
                .iter()
                .zip(previous)
                .take_while(|(a, b)| a == b)
                .count();
            stack.truncate(common);
            for &r in &path[common..] {
                let e = order[r as usize];
                let parent = stack.last().copied().unwrap_or(0);
                let id = nodes.len() as u32;
                let next_sibling = nodes[parent as usize].first_child;
                nodes.push(Node {
                    label: e,
                    parent,
                    count: 0,
                    alive: true,
                    first_child: NONE,
                    next_sibling,
                });
                nodes[parent as usize].first_child = id;
                links[e as usize].push(id);
                stack.push(id);
            }
            for &id in &stack {
                nodes[id as usize].count += 1;
            }
            nodes[0].count += 1;
            previous = path;
        }
        Self { nodes, mm, links }
    }

    /// Suppress item `e`: remove the subtrees under its nodes, updating the counts of
    /// their ancestors and the MM of every item on the removed moles.
    fn suppress(&mut self, e: u32) {
        let links = std::mem::take(&mut self.links[e as usize]);
        let mut stack: Vec<u32> = Vec::new();
        for &x in &links {
            if !self.nodes[x as usize].alive {
                continue;
            }
            let c = self.nodes[x as usize].count;
            let mut a = self.nodes[x as usize].parent;
            while a != 0 {
                let node = &mut self.nodes[a as usize];
                node.count -= c;
                self.mm[node.label as usize] -= c;
                a = node.parent;
            }
            self.nodes[0].count -= c;
            stack.push(x);
            while let Some(d) = stack.pop() {
                let node = &mut self.nodes[d as usize];
                if !node.alive {
                    continue;
                }
                node.alive = false;
                self.mm[node.label as usize] -= node.count;
                let mut child = node.first_child;
                while child != NONE {
                    stack.push(child);
                    child = self.nodes[child as usize].next_sibling;
                }
            }
        }
    }
}

/// Greedy suppression of the minimal moles: the items chosen (public indices, in order)
/// and the size of the MOLE-tree.
pub(super) fn greedy(data: &Data, moles: &Moles, removal: Removal) -> Result<(Vec<u32>, u64)> {
    let np = data.public.len();
    let il = |e: u32| data.support[data.public[e as usize] as usize];
    if removal == Removal::RmAll {
        let mut in_mole = vec![false; np];
        for &e in &moles.items {
            in_mole[e as usize] = true;
        }
        let chosen = (0..np as u32).filter(|&e| in_mole[e as usize]).collect();
        return Ok((chosen, 0));
    }
    let mut tree = MoleTree::build(moles, np);
    let tree_nodes = tree.nodes.len() as u64 - 1;
    let mut table: Vec<u32> = (0..np as u32)
        .filter(|&e| tree.mm[e as usize] > 0)
        .collect();
    let mut chosen = Vec::new();
    while !table.is_empty() {
        cancel::check(KERNEL)?;
        let better = |a: u32, b: u32| -> bool {
            let (ma, mb) = (tree.mm[a as usize], tree.mm[b as usize]);
            let (la, lb) = (il(a), il(b));
            let order = match removal {
                Removal::MmIl => (u128::from(ma) * u128::from(lb))
                    .cmp(&(u128::from(mb) * u128::from(la)))
                    .then(ma.cmp(&mb)),
                Removal::OneIl => lb.cmp(&la).then(ma.cmp(&mb)),
                Removal::Mm | Removal::RmAll => ma.cmp(&mb).then(lb.cmp(&la)),
            };
            order.then(b.cmp(&a)) == std::cmp::Ordering::Greater
        };
        let mut best = table[0];
        for &e in &table[1..] {
            if better(e, best) {
                best = e;
            }
        }
        tree.suppress(best);
        // Every mole holding `best` went with its nodes, so its MM is 0 now; setting it
        // makes the loop end after at most one step per item whatever happens.
        tree.mm[best as usize] = 0;
        chosen.push(best);
        table.retain(|&e| tree.mm[e as usize] > 0);
    }
    Ok((chosen, tree_nodes))
}
