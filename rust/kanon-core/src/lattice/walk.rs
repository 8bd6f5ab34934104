//! The branch-and-bound walk over the lattice: nodes in order of their lower bound,
//! predictive tagging, cached classes, hubs, and the incumbent.

use std::rc::Rc;

use super::group::{KeyMap, PackedKey};
use super::guess::Guess;
use super::search::{better, Search};
use super::types::{Class, Metric, NodeEval, Optimum, KERNEL, TIE};
use crate::cancel;
use crate::error::{KernelError, Result};

/// [`super::optimal_with`] over a validated search, with class keys of type `K`.
pub(super) fn search_lattice<K: PackedKey>(search: &Search<'_>) -> Result<Optimum> {
    let options = search.options;
    let nodes = search.nodes;
    let mut state = State::<K>::new(search);
    // Phase 1: which nodes keep their classes below k within the suppression limit.
    state.classify();
    cancel::check("optimal")?;
    state.candidates = Vec::new();
    // Phase 2: branch and bound over those nodes in order of their lower bounds.
    // The cost bound of every node, raised by the suppression penalty of the coarsest
    // node checked above it in phase 1 (the penalty only shrinks going up).
    let penalties = state.penalties_above();
    let bounds: Vec<f64> = (0..nodes)
        .map(|v| {
            let levels = search.levels_of(v);
            if penalties[v] > 0.0 {
                search.additive_cost(&levels, penalties[v])
            } else {
                state.bounds[v]
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..nodes)
        .filter(|&v| state.status[v] == Status::Within)
        .collect();
    order.sort_unstable_by(|&a, &b| bounds[a].total_cmp(&bounds[b]).then(a.cmp(&b)));
    // With no suppression allowed, a node within the limit suppresses nothing, and the
    // additive metrics equal their bound.
    let exact_bound = options.max_suppressed == 0
        && search.tag_full
        && matches!(
            options.metric,
            Metric::Loss | Metric::Height | Metric::Nue | Metric::NueNonMonotonic
        );
    let mut best: Option<(Vec<u32>, NodeEval)> = None;
    for &v in &order {
        // Each node groups every row: poll once per node.
        cancel::check("optimal")?;
        if let Some((_, eval)) = &best {
            let tolerance = TIE * eval.cost.abs().max(1.0);
            if bounds[v] > eval.cost + tolerance {
                break;
            }
        }
        let levels = search.levels_of(v);
        let eval = if exact_bound {
            NodeEval {
                feasible: true,
                suppressed: 0,
                classes: 0,
                cost: bounds[v],
            }
        } else {
            let classes = state.classes(&levels);
            search.evaluate(&levels, &classes)
        };
        if eval.feasible
            && best
                .as_ref()
                .is_none_or(|(bl, be)| better(eval.cost, &levels, be.cost, bl))
        {
            best = Some((levels, eval));
        }
    }
    let Some((levels, _)) = best else {
        return Err(state.infeasible());
    };
    let classes = state.classes(&levels);
    let verdict = search.verdict(&levels, &classes);
    let mut eval = search.evaluate_verdict(&levels, &classes, &verdict);
    // Report the classes the release shows: the suppressed rows, when kept, are one class.
    let failed = verdict.fails.iter().filter(|&&f| f).count();
    eval.classes =
        classes.len() - failed + usize::from(failed > 0 && search.options.keep_suppressed);
    let small: KeyMap<()> = classes
        .iter()
        .zip(&verdict.fails)
        .filter(|(_, &f)| f)
        .map(|(&(key, _), _)| (key.wide(), ()))
        .collect();
    let suppressed = (0..search.counts.len())
        .map(|t| small.contains_key(&search.key(t, &levels)))
        .collect();
    Ok(Optimum {
        levels,
        eval,
        suppressed,
        nodes,
        checked: state.checked,
        rolled_up: state.rolled_up,
        tagged: state.tagged,
    })
}

/// What phase 1 knows of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Unknown,
    /// Its classes below k hold at most `max_suppressed` rows (so do those of every
    /// coarser node).
    Within,
    /// They hold more (so do those of every finer node).
    Over,
}

/// A grouped node: its levels and classes.
type Grouped<K> = (Vec<u32>, Rc<Vec<Class<K>>>);

/// Whether the node at `finer` lies at or below the node at `levels` (every level at
/// most the other's): a source it can roll up from.
fn at_or_below(finer: &[u32], levels: &[u32]) -> bool {
    finer.iter().zip(levels).all(|(f, l)| f <= l)
}

/// The search's mutable state: statuses, the class cache and counters.
struct State<'s, 'a, K: PackedKey> {
    search: &'s Search<'a>,
    status: Vec<Status>,
    /// Grouped nodes kept for roll-up: levels and classes, most recent last.
    cache: Vec<Grouped<K>>,
    cached: usize,
    /// Class lists evicted from the cache, reused.
    spare: Vec<Vec<Class<K>>>,
    /// The source of a node with no cached finer node: the histogram packed at the
    /// lowest levels, rolled up as the finest node every node still to be checked lies
    /// above rises (see [`State::rebase`]).
    base: Option<Grouped<K>>,
    /// The last node rolled up from the base, or the last hub (see [`State::hub`]).
    from_base: Option<Vec<u32>>,
    /// Whether hubs have stopped (one held more than half the base's classes).
    hubs_off: bool,
    /// Nodes phase 1 may still check or start a path from (a superset: pruned lazily);
    /// empty once phase 1 is over.
    candidates: Vec<usize>,
    fewest_suppressed: u64,
    checked: usize,
    rolled_up: usize,
    tagged: usize,
    /// Suppression penalty (see `Search::penalty`) of every node checked in phase 1.
    penalty: Vec<f64>,
    /// Lower bound of the cost of every node (`Search::lower_bound`).
    bounds: Vec<f64>,
    /// The lowest cost of a feasible node checked so far.
    incumbent: f64,
    /// Checked nodes with a positive suppression penalty, largest first.
    penalized: Vec<(f64, Vec<u32>)>,
}

/// Bytes of classes kept in the roll-up cache at most (all nodes' capacities together):
/// 2^24 classes of 128-bit keys (24 bytes each), 1.5 · 2^24 of 64-bit keys (16 bytes).
const CACHE_BYTES: usize = 3 << 27;

/// Lists evicted from the cache kept for reuse at most.
const SPARES: usize = 2;

/// A cached list holding more than twice its classes and this many more is shrunk.
const SLACK_CLASSES: usize = 1 << 12;

/// Bases of fewer classes get no hubs (see [`State::hub`]): rolling up from them is
/// cheap.
const HUB_BASE: usize = 1 << 16;

impl<'s, 'a, K: PackedKey> State<'s, 'a, K> {
    fn new(search: &'s Search<'a>) -> Self {
        Self {
            search,
            status: vec![Status::Unknown; search.nodes],
            cache: Vec::new(),
            cached: 0,
            spare: Vec::new(),
            base: None,
            from_base: None,
            hubs_off: false,
            candidates: (0..search.nodes).collect(),
            fewest_suppressed: u64::MAX,
            checked: 0,
            rolled_up: 0,
            tagged: 0,
            penalty: vec![0.0; search.nodes],
            bounds: (0..search.nodes)
                .map(|v| search.lower_bound(&search.levels_of(v)))
                .collect(),
            incumbent: f64::INFINITY,
            penalized: Vec::new(),
        }
    }

    /// Per node, the largest penalty recorded at it or at any coarser node: a lower
    /// bound of its own penalty.
    fn penalties_above(&self) -> Vec<f64> {
        let search = self.search;
        let mut out = self.penalty.clone();
        // A coarser neighbour has a larger index: sweep downwards.
        for v in (0..search.nodes).rev() {
            for j in 0..search.m {
                if search.digit(v, j) + 1 < search.span[j] as usize {
                    out[v] = out[v].max(out[v + search.stride[j]]);
                }
            }
        }
        out
    }

    /// The classes of a node: rolled up from the cached finer node with the fewest
    /// classes, else from the base (see [`State::rebase`]); cached.
    fn classes(&mut self, levels: &[u32]) -> Rc<Vec<Class<K>>> {
        self.classes_within(levels, usize::MAX)
            .expect("no cap: the classes are complete")
    }

    /// [`State::classes`], or None (nothing cached) once the node has more than `cap`
    /// classes.
    fn classes_within(&mut self, levels: &[u32], cap: usize) -> Option<Rc<Vec<Class<K>>>> {
        let search = self.search;
        self.checked += 1;
        let below = |other: &[u32]| at_or_below(other, levels);
        let source = self
            .cache
            .iter()
            .enumerate()
            .filter(|(_, (other, _))| below(other))
            .min_by_key(|(i, (_, classes))| (classes.len(), usize::MAX - i))
            .map(|(i, _)| i);
        if let Some(i) = source.filter(|&i| self.cache[i].0 == levels) {
            return Some(Rc::clone(&self.cache[i].1));
        }
        let mut source = source;
        if source.is_none() {
            self.rebase(levels);
            source = self.hub(levels);
        }
        let spare = self.spare.pop().unwrap_or_default();
        let finer = match (source, &self.base) {
            (Some(i), _) => Some(&self.cache[i]),
            (None, Some(base)) if below(&base.0) => Some(base),
            (None, _) => None,
        };
        let (classes, complete) = match finer {
            Some((below, classes)) => {
                self.rolled_up += 1;
                search.roll_up_to(classes, below, levels, cap, spare)
            }
            None => search.group(levels, cap, spare),
        };
        if !complete {
            self.spare.push(classes);
            return None;
        }
        Some(self.keep(levels.to_vec(), classes))
    }

    /// Cache the classes of the node at `levels`, evicting the oldest nodes beyond
    /// [`CACHE_BYTES`] of capacity (the newest stays); the cached list is returned.
    fn keep(&mut self, levels: Vec<u32>, mut classes: Vec<Class<K>>) -> Rc<Vec<Class<K>>> {
        // A list reused from a larger node keeps that node's capacity: give the slack
        // back, so that the limit bounds the cache's memory.
        if classes.capacity() > 2 * classes.len() + SLACK_CLASSES {
            classes.shrink_to_fit();
        }
        let classes = Rc::new(classes);
        self.cached += classes.capacity();
        self.cache.push((levels, Rc::clone(&classes)));
        let limit = CACHE_BYTES / std::mem::size_of::<Class<K>>();
        while self.cached > limit && self.cache.len() > 1 {
            let (_, old) = self.cache.remove(0);
            self.cached -= old.capacity();
            // Its memory is reused for the next node's classes (fresh memory costs a
            // page fault per page).
            if let Ok(old) = Rc::try_unwrap(old) {
                if self.spare.len() < SPARES {
                    self.spare.push(old);
                }
            }
        }
        classes
    }

    /// Before `levels` rolls up from a large base (no cached node lies below it): roll
    /// up and cache a hub, the finest node below both `levels` and the last node that
    /// rolled up from the base (or the last hub), when at least [`HUB_CANDIDATES`] nodes
    /// phase 1 may still check lie above it. Later nodes above the hub then roll up from
    /// it, not from the base: on 1.2M nearly distinct tuples, the nodes phase 1 checks
    /// differ in a few levels high in the lattice, and a roll-up from the base costs as
    /// much whatever its output. Hubs stop once one holds more than half the base's
    /// classes (they then save too little to pay for themselves). Returns the hub's
    /// index in the cache.
    fn hub(&mut self, levels: &[u32]) -> Option<usize> {
        let search = self.search;
        let previous = self.from_base.replace(levels.to_vec())?;
        let (base, classes) = self.base.as_ref()?;
        if self.hubs_off || classes.len() < HUB_BASE {
            return None;
        }
        let meet: Vec<u32> = previous
            .iter()
            .zip(levels)
            .map(|(a, b)| *a.min(b))
            .collect();
        if !at_or_below(base, &meet) || meet == *base || meet == levels {
            return None;
        }
        let above = |v: usize| (0..search.m).all(|j| search.level(v, j) >= meet[j]);
        if self.candidates.iter().filter(|&&v| above(v)).count() < search.hub_candidates {
            return None;
        }
        let spare = self.spare.pop().unwrap_or_default();
        self.rolled_up += 1;
        let (hub, _) = search.roll_up_to(classes, base, &meet, usize::MAX, spare);
        self.hubs_off = 2 * hub.len() > classes.len();
        self.from_base = Some(meet.clone());
        self.keep(meet, hub);
        Some(self.cache.len() - 1)
    }

    /// When no cached node lies below `levels`: make sure there is a base (first the
    /// histogram grouped at the lowest levels: packed keys, so a roll-up looks up only
    /// the attributes that change), and move it up to the finest node below `levels`
    /// and below every node phase 1 may still check (the levels' minimum over unknown
    /// nodes whose bound does not exceed the incumbent, and `levels`) if that lies above
    /// it. Later nodes then roll up from a base with fewer classes than the histogram
    /// has tuples.
    fn rebase(&mut self, levels: &[u32]) {
        let search = self.search;
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.retain(|&v| self.status[v] == Status::Unknown && !self.beyond_incumbent(v));
        self.candidates = candidates;
        let mut floor = levels.to_vec();
        for &v in &self.candidates {
            for (j, f) in floor.iter_mut().enumerate() {
                *f = (*f).min(search.level(v, j));
            }
        }
        let lowest = &search.options.min_level;
        let (base, classes) = self
            .base
            .get_or_insert_with(|| (lowest.clone(), Rc::new(search.packed(lowest))));
        if floor == levels || floor == *base {
            return;
        }
        // The floor only rises (candidates only leave), so the base lies below it.
        let (above, _) = if at_or_below(base, &floor) {
            search.roll_up_to(classes, base, &floor, usize::MAX, Vec::new())
        } else {
            search.group(&floor, usize::MAX, Vec::new())
        };
        self.base = Some((floor, Rc::new(above)));
    }

    /// Check one node's suppression and tag it and its coarser (within) or finer (over)
    /// nodes.
    fn check(&mut self, v: usize) -> Status {
        let search = self.search;
        let levels = search.levels_of(v);
        // A node with too many classes is over the limit: its grouping stops there.
        let cap = search.over_classes();
        let Some(classes) = self.classes_within(&levels, cap) else {
            self.fewest_suppressed = self.fewest_suppressed.min(search.small_rows_above(cap));
            self.tag(v, Status::Over);
            return Status::Over;
        };
        // The verdict is needed for tagging by failing rows under models, and for a node
        // within the limit (its cost); it is computed once. Without models the failing
        // rows are the rows below k.
        let mut verdict = None;
        let suppressed = if search.tag_full && search.check.is_some() {
            verdict.insert(search.verdict(&levels, &classes)).suppressed
        } else {
            search.small_rows(&classes)
        };
        self.fewest_suppressed = self.fewest_suppressed.min(suppressed);
        if suppressed > search.options.max_suppressed {
            // Every finer node is over the limit too, so this node's penalty, a bound
            // for finer nodes, would never be read.
            self.tag(v, Status::Over);
            return Status::Over;
        }
        self.penalty[v] = search.penalty(&levels, &classes);
        if self.penalty[v] > 0.0 {
            // Kept by decreasing penalty: the first one above a node bounds its penalty.
            let at = self
                .penalized
                .partition_point(|(p, _)| *p >= self.penalty[v]);
            self.penalized.insert(at, (self.penalty[v], levels.clone()));
        }
        // A feasible node's cost bounds the optimum: nodes whose lower bound exceeds it
        // need no classification.
        let eval = if search.check.is_none()
            && matches!(search.options.metric, Metric::Loss | Metric::Height)
        {
            // What `evaluate_verdict` computes, from the penalty (the failing classes
            // are those below k, and their class of '*' needs k rows).
            NodeEval {
                feasible: search.feasible(suppressed, suppressed >= search.options.k),
                suppressed,
                classes: classes.len(),
                cost: search.additive_cost(&levels, self.penalty[v]),
            }
        } else {
            let verdict = verdict.unwrap_or_else(|| search.verdict(&levels, &classes));
            search.evaluate_verdict(&levels, &classes, &verdict)
        };
        if eval.feasible {
            self.incumbent = self.incumbent.min(eval.cost);
        }
        self.tag(v, Status::Within);
        Status::Within
    }

    /// Whether node `v` cannot beat the best feasible cost found so far.
    fn beyond_incumbent(&self, v: usize) -> bool {
        let tolerance = TIE * self.incumbent.abs().max(1.0);
        self.bounds[v] > self.incumbent + tolerance
    }

    /// [`State::beyond_incumbent`] with the bound raised by the largest suppression
    /// penalty checked at a coarser node (for the start of a path).
    fn beyond_incumbent_penalized(&self, v: usize) -> bool {
        if self.beyond_incumbent(v) {
            return true;
        }
        if !self.incumbent.is_finite() {
            return false;
        }
        let search = self.search;
        let levels = search.levels_of(v);
        let tolerance = TIE * self.incumbent.abs().max(1.0);
        // Penalties are sorted largest first: stop at the first that could not prune.
        self.penalized
            .iter()
            .take_while(|(penalty, _)| {
                search.additive_cost(&levels, *penalty) > self.incumbent + tolerance
            })
            .any(|(_, above)| at_or_below(&levels, above))
    }

    /// Give `v` and every node above (within) or below (over) it `status`.
    fn tag(&mut self, v: usize, status: Status) {
        let search = self.search;
        let mut stack = vec![v];
        while let Some(u) = stack.pop() {
            if self.status[u] == status {
                continue;
            }
            if u != v {
                self.tagged += 1;
            }
            self.status[u] = status;
            for j in 0..search.m {
                let (stride, digit) = (search.stride[j], search.digit(u, j));
                let w = if status == Status::Within && digit + 1 < search.span[j] as usize {
                    u + stride
                } else if status == Status::Over && digit > 0 {
                    u - stride
                } else {
                    continue;
                };
                if self.status[w] != status {
                    stack.push(w);
                }
            }
        }
    }

    /// Phase 1 (Flash): from every unknown node, bottom-up, walk up through unknown
    /// coarser nodes (one level of one attribute at a time, the attribute with the most
    /// levels left first), then binary-search that path for its lowest node within the
    /// limit; every check tags a whole cone of the lattice. Nodes whose lower bound
    /// exceeds the cost of a feasible node already checked are left unclassified (the
    /// bound only grows going up, so they cannot be the optimum).
    ///
    /// Paths start from nodes by increasing sum of levels without suppression, and by
    /// increasing lower bound with it (a low incumbent early leaves more nodes
    /// unclassified, so fewer nodes are checked; at 0 % the order by levels checks fewer
    /// large nodes).
    fn classify(&mut self) {
        let search = self.search;
        let mut order: Vec<usize> = (0..search.nodes).collect();
        if search.options.max_suppressed == 0 {
            // The key allocates a level vector: compute it once per node.
            order.sort_by_cached_key(|&v| (search.levels_of(v).iter().sum::<u32>(), v));
        } else {
            let bounds = &self.bounds;
            order.sort_by(|&a, &b| bounds[a].total_cmp(&bounds[b]).then(a.cmp(&b)));
        }
        self.pin_levels();
        let guess = Guess::new(search, search.guess_tuples);
        for v in order {
            // Cancelled: stop classifying; the caller returns the error.
            if cancel::requested() {
                return;
            }
            if self.status[v] != Status::Unknown || self.beyond_incumbent_penalized(v) {
                continue;
            }
            let mut path = vec![v];
            let mut levels = search.levels_of(v);
            loop {
                let step = (0..search.m)
                    .filter(|&j| levels[j] < search.options.max_level[j])
                    .filter(|&j| {
                        let mut next = levels.clone();
                        next[j] += 1;
                        self.status[search.index_of(&next)] == Status::Unknown
                    })
                    .max_by_key(|&j| (search.options.max_level[j] - levels[j], usize::MAX - j));
                let Some(j) = step else { break };
                levels[j] += 1;
                path.push(search.index_of(&levels));
            }
            // The statuses along the path are monotone: find the first node within, by
            // bisection, probing first the last node guessed over and then next to it: two
            // checks where the guess is right, the second rolled up from the first's
            // classes (far fewer than the base's on a wide table).
            let mut next = guess.as_ref().map(|g| {
                let first = path.partition_point(|&u| g.over(search, &search.levels_of(u)));
                first.saturating_sub(1)
            });
            // Whether the next probe is the guess's: its neighbour is probed after it.
            let mut guided = next.is_some();
            let (mut lo, mut hi) = (0usize, path.len());
            while lo < hi {
                let mid = next
                    .take()
                    .filter(|p| (lo..hi).contains(p))
                    .unwrap_or((lo + hi) / 2);
                let status = match self.status[path[mid]] {
                    Status::Unknown => self.check(path[mid]),
                    known => known,
                };
                let within = status == Status::Within;
                if within {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
                if std::mem::take(&mut guided) {
                    next = if within {
                        mid.checked_sub(1)
                    } else {
                        Some(mid + 1)
                    };
                }
            }
        }
    }

    /// Per attribute, the highest level over the limit with every other attribute at
    /// its top: every node with that level of it or a lower one lies below that node
    /// (Incognito's single-attribute subsets), so all of them are tagged over at once.
    /// The base then starts above them: on 10^6 distinct timestamps, nodes that keep
    /// them exact would otherwise hold it at 10^6 classes. Where every top is one label
    /// and no model is checked, such a node's classes are the attribute's labels, counted
    /// from its leaves' rows without grouping; otherwise nothing is pinned.
    fn pin_levels(&mut self) {
        let search = self.search;
        let (options, m) = (search.options, search.m);
        let top = &options.max_level;
        let one_label = (0..m).all(|j| search.hierarchies[j].width(top[j] as usize) == 1);
        if search.check.is_some() || !one_label {
            return;
        }
        for j in 0..m {
            let per_leaf = search.rows_per_leaf(j);
            let over = |l: u32| {
                let per_label = search.rows_per_label(j, &per_leaf, l as usize);
                let small: u64 = per_label.iter().filter(|&&c| c < options.k).sum();
                small > options.max_suppressed
            };
            // Rows below k only grow going down: the first level over from the top.
            if let Some(l) = (options.min_level[j]..top[j]).rev().find(|&l| over(l)) {
                let mut levels = top.clone();
                levels[j] = l;
                self.tag(search.index_of(&levels), Status::Over);
            }
        }
    }

    /// The error when no node is feasible.
    fn infeasible(&self) -> KernelError {
        let options = self.search.options;
        let message = if let Some(models) = self
            .search
            .check
            .as_ref()
            .map(|_| self.search.models.describe(options.k))
        {
            format!(
                "no generalization satisfies {models} with at most {} suppressed rows{}; \
                 raise max_suppression, relax the models or allow higher levels",
                options.max_suppressed,
                if options.keep_suppressed {
                    " (suppressed rows kept in the release form one class of '*' that must \
                     satisfy them too, or be dropped)"
                } else {
                    ""
                }
            )
        } else if self.fewest_suppressed <= options.max_suppressed {
            format!(
                "no generalization satisfies k = {k}: the nodes within the suppression limit \
                 of {limit} rows would suppress between 1 and {below} rows, and suppressed \
                 rows kept in the release form one class of '*' that needs at least k rows; \
                 raise max_suppression, lower k, or drop the suppressed rows",
                k = options.k,
                limit = options.max_suppressed,
                below = options.k - 1,
            )
        } else {
            format!(
                "no generalization satisfies k = {} with at most {} suppressed rows (every \
                 node checked leaves at least {} rows in classes below k); raise \
                 max_suppression, lower k or allow higher levels",
                options.k, options.max_suppressed, self.fewest_suppressed,
            )
        };
        KernelError::InvalidArgument {
            kernel: KERNEL,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::Hierarchy;
    use crate::lattice::input::ModelInput;
    use crate::lattice::tuples::Tuples;
    use crate::lattice::types::LatticeOptions;

    /// The class count above which a node must be over the suppression limit, and the
    /// bound of its rows below k, against the fewest rows below k that C classes of N
    /// rows can leave (classes below k of one row, the others of k rows or more).
    #[test]
    fn too_many_classes_force_rows_below_k() {
        let h = Hierarchy::try_from_levels(&[&[0u32, 1], &[0, 0]]).unwrap();
        for n in 1..40u64 {
            for k in 1..6u64 {
                for max_suppressed in 0..=n {
                    let options = LatticeOptions {
                        k,
                        max_suppressed,
                        keep_suppressed: true,
                        min_level: vec![0],
                        max_level: vec![1],
                        weights: vec![1.0],
                        metric: Metric::Loss,
                        node_loss: Vec::new(),
                    };
                    let counts = [n];
                    let input = ModelInput::default();
                    let hierarchies = [h.clone()];
                    let search = Search::new(
                        Tuples::Codes(&[0]),
                        1,
                        &counts,
                        &hierarchies,
                        &options,
                        &input,
                    )
                    .unwrap();
                    let cap = search.over_classes();
                    // The fewest rows below k over every way of cutting n rows into c
                    // classes: s classes of one row, the others of k rows or more.
                    for c in 1..=n {
                        let fewest = (0..=c).find(|&s| s + k * (c - s) <= n).unwrap();
                        if c as usize > cap {
                            assert!(fewest > max_suppressed, "n {n} k {k} c {c}");
                            assert!(fewest >= search.small_rows_above(cap));
                        }
                    }
                }
            }
        }
    }

    /// A seeded stream of draws below `n` (a linear congruential generator).
    fn draws(seed: u64) -> impl FnMut(u32) -> u32 {
        let mut state = seed;
        move |n| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % u64::from(n)) as u32
        }
    }

    /// The loss metric over `m` attributes of 4 levels each, suppressed rows kept.
    fn loss_options(m: usize, k: u64, max_suppressed: u64) -> LatticeOptions {
        LatticeOptions {
            k,
            max_suppressed,
            keep_suppressed: true,
            min_level: vec![0; m],
            max_level: vec![3; m],
            weights: vec![1.0; m],
            metric: Metric::Loss,
            node_loss: Vec::new(),
        }
    }

    /// Hubs change where nodes roll up from, never the result: the same optimum, cost
    /// and suppressed tuples with hubs wherever allowed and with none, on a histogram
    /// large enough for hubs (checked: they add roll-ups).
    #[test]
    fn hubs_leave_the_optimum_unchanged() {
        let (m, leaves) = (6, 16u32);
        let leaf: Vec<u32> = (0..leaves).collect();
        let mid: Vec<u32> = (0..leaves).map(|x| x / 4).collect();
        let high: Vec<u32> = (0..leaves).map(|x| x / 8).collect();
        let top = vec![0; leaves as usize];
        let hierarchy = Hierarchy::try_from_levels(&[&leaf, &mid, &high, &top]).unwrap();
        let hierarchies = vec![hierarchy; m];
        let mut next = draws(12_345);
        let rows = 150_000;
        let tuples: Vec<u32> = (0..rows * m).map(|_| next(leaves)).collect();
        let counts = vec![1u64; rows];
        for max_suppressed in [0, 10_000] {
            let options = loss_options(m, 5, max_suppressed);
            let input = ModelInput::default();
            let mut search = Search::new(
                Tuples::Codes(&tuples),
                m,
                &counts,
                &hierarchies,
                &options,
                &input,
            )
            .unwrap();
            search.hub_candidates = 1;
            let with = search_lattice::<u64>(&search).unwrap();
            search.hub_candidates = usize::MAX;
            let without = search_lattice::<u64>(&search).unwrap();
            assert_eq!(with.levels, without.levels);
            assert_eq!(with.eval.cost.to_bits(), without.eval.cost.to_bits());
            assert_eq!(with.eval.suppressed, without.eval.suppressed);
            assert_eq!(with.suppressed, without.suppressed);
            assert_eq!(with.checked, without.checked);
            assert!(
                with.rolled_up > without.rolled_up,
                "no hub at {max_suppressed}: {} roll-ups",
                with.rolled_up
            );
        }
    }

    /// Guesses change which nodes phase 1 checks, never the result: on skewed and
    /// correlated histograms (where the independence guess is wrong), at several k and
    /// suppression limits, the same optimum as plain bisection.
    #[test]
    fn guesses_leave_the_optimum_unchanged() {
        let leaves = 12u32;
        let leaf: Vec<u32> = (0..leaves).collect();
        let mid: Vec<u32> = (0..leaves).map(|x| x / 3).collect();
        let high: Vec<u32> = (0..leaves).map(|x| x / 6).collect();
        let top = vec![0; leaves as usize];
        let hierarchy = Hierarchy::try_from_levels(&[&leaf, &mid, &high, &top]).unwrap();
        let mut next = draws(99);
        for (shape, m) in [(0, 4), (1, 5), (2, 3)] {
            let hierarchies = vec![hierarchy.clone(); m];
            let mut tuples = Vec::new();
            let mut counts = Vec::new();
            for _ in 0..3_000 {
                let first = next(leaves);
                for _ in 0..m {
                    tuples.push(match shape {
                        // Skewed: small leaves far more often.
                        0 => next(leaves).min(next(leaves)),
                        // Correlated: every attribute near the first.
                        1 => (first + next(3)) % leaves,
                        _ => next(leaves),
                    });
                }
                counts.push(u64::from(next(4)) + 1);
            }
            for (k, max_suppressed) in [(2, 0), (5, 100), (20, 1_000)] {
                let options = loss_options(m, k, max_suppressed);
                let input = ModelInput::default();
                let mut search = Search::new(
                    Tuples::Codes(&tuples),
                    m,
                    &counts,
                    &hierarchies,
                    &options,
                    &input,
                )
                .unwrap();
                search.guess_tuples = usize::MAX;
                let plain = search_lattice::<u64>(&search).unwrap();
                search.guess_tuples = 0;
                let guessed = search_lattice::<u64>(&search).unwrap();
                assert_eq!(guessed.levels, plain.levels, "shape {shape} k {k}");
                assert_eq!(guessed.eval.cost.to_bits(), plain.eval.cost.to_bits());
                assert_eq!(guessed.eval.suppressed, plain.eval.suppressed);
                assert_eq!(guessed.suppressed, plain.suppressed);
            }
        }
    }
}
