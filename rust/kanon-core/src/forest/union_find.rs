//! Union-find over vertices `0..n`, by size with path halving; each set knows its weight
//! and the root of its tree (FOREST, DECOMPOSE's forest check and continuous mode).

/// Disjoint sets of vertices `0..n`, each with its total weight and its tree root (the
/// vertex without an out-edge), both valid at representatives.
pub(crate) struct UnionFind {
    up: Vec<u32>,
    size: Vec<u32>,
    /// Total vertex weight of each set (saturating).
    weight: Vec<u64>,
    /// The vertex without an out-edge of each set's tree.
    root: Vec<u32>,
}

impl UnionFind {
    /// Singletons with the given weights (`weights.len() ≤ u32::MAX` is checked by the
    /// callers).
    pub(crate) fn new(weights: &[u64]) -> Self {
        let n = weights.len() as u32;
        Self {
            up: (0..n).collect(),
            size: vec![1; weights.len()],
            weight: weights.to_vec(),
            root: (0..n).collect(),
        }
    }

    /// `n` singletons of weight 1 (`n ≤ u32::MAX` is checked by the callers).
    pub(crate) fn singletons(n: usize) -> Self {
        Self::new(&vec![1; n])
    }

    /// The representative of `x`'s set, halving the path on the way.
    pub(crate) fn find(&mut self, mut x: u32) -> u32 {
        while self.up[x as usize] != x {
            let grand = self.up[self.up[x as usize] as usize];
            self.up[x as usize] = grand;
            x = grand;
        }
        x
    }

    /// [`Self::find`] without path compression, for shared borrows.
    pub(crate) fn find_const(&self, mut x: u32) -> u32 {
        while self.up[x as usize] != x {
            x = self.up[x as usize];
        }
        x
    }

    /// The total weight of the set of representative `rep`.
    pub(crate) fn weight(&self, rep: u32) -> u64 {
        self.weight[rep as usize]
    }

    /// The tree root of the set of representative `rep`.
    pub(crate) fn root(&self, rep: u32) -> u32 {
        self.root[rep as usize]
    }

    /// Merge the set of representative `rep` into the set of `v`: the merged tree's root
    /// is `v`'s tree root (the old root of `rep` just got an out-edge).
    pub(crate) fn union_under(&mut self, rep: u32, v: u32) {
        let other = self.find(v);
        if other == rep {
            return;
        }
        let root = self.root[other as usize];
        let weight = self.weight[rep as usize].saturating_add(self.weight[other as usize]);
        let (big, small) = if self.size[rep as usize] >= self.size[other as usize] {
            (rep, other)
        } else {
            (other, rep)
        };
        self.up[small as usize] = big;
        self.size[big as usize] += self.size[small as usize];
        self.weight[big as usize] = weight;
        self.root[big as usize] = root;
    }

    /// Join the sets of `a` and `b`; false if they were already one set.
    pub(crate) fn union(&mut self, a: u32, b: u32) -> bool {
        let rep = self.find(a);
        if rep == self.find(b) {
            return false;
        }
        self.union_under(rep, b);
        true
    }
}
