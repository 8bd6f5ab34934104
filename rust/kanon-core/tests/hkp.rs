//! (h,k,p)-coherence against the course report's worked example and against brute force:
//! every set of at most p public items of the release is checked, the minimal moles are
//! recomputed by enumerating all sets, and the greedy phase is replayed by recounting MM
//! from scratch at every step (which the MOLE-tree's incremental updates must match).

use std::collections::BTreeSet;

use kanon_core::hkp::{hkp, HkpOptions, HkpRelease, Removal, Roles, DEFAULT_MAX_ITEMSETS};
use kanon_core::KernelError;
use proptest::prelude::*;

const METHODS: [Removal; 4] = [Removal::MmIl, Removal::OneIl, Removal::Mm, Removal::RmAll];

/// The course report's transactions: private items 3 and 4.
fn report_example() -> (Vec<u64>, Vec<u32>) {
    let transactions: [&[u32]; 6] = [
        &[0, 2, 6],
        &[0, 2, 5],
        &[1, 2],
        &[0, 1, 5],
        &[0, 1, 2],
        &[0, 1, 2, 3, 4, 5],
    ];
    flatten(&transactions.iter().map(|t| t.to_vec()).collect::<Vec<_>>())
}

fn flatten(transactions: &[Vec<u32>]) -> (Vec<u64>, Vec<u32>) {
    let mut offsets = vec![0u64];
    let mut items = Vec::new();
    for t in transactions {
        items.extend_from_slice(t);
        offsets.push(items.len() as u64);
    }
    (offsets, items)
}

fn options(h: f64, k: u64, p: usize, removal: Removal) -> HkpOptions {
    HkpOptions {
        h,
        k,
        p,
        removal,
        min_support: 0.0,
        max_itemsets: DEFAULT_MAX_ITEMSETS,
    }
}

#[test]
fn the_reports_worked_example() {
    let (offsets, items) = report_example();
    let release = hkp(
        &offsets,
        &items,
        7,
        Roles::Private(&[3, 4]),
        &options(0.5, 3, 3, Removal::MmIl),
    )
    .unwrap();
    assert_eq!(release.size1_moles, vec![6]);
    let moles: Vec<Vec<u32>> = release.moles().map(<[u32]>::to_vec).collect();
    assert_eq!(moles, vec![vec![1, 5], vec![2, 5], vec![0, 1, 2]]);
    // MM/IL: 5 (2/3) first, then 1 (1/4) for the mole (0, 1, 2).
    assert_eq!(release.suppressed, vec![6, 5, 1]);
    assert_eq!(release.private, vec![3, 4]);
    assert!(release.dropped.is_empty());
    let s = release.stats;
    assert_eq!(s.transactions, 6);
    assert_eq!(s.items, 7);
    assert_eq!(s.public_items, 5);
    assert_eq!(s.occurrences, 20);
    // Supports: 6 once, 5 three times, 1 four times.
    assert_eq!(s.suppressed_occurrences, 8);
    assert!((release.information_loss() - 0.4).abs() < 1e-12);
    // The tree of the report: 5 → {1, 2} and 2 → 1 → 0.
    assert_eq!(s.tree_nodes, 6);
}

#[test]
fn the_reports_example_with_the_other_methods() {
    let (offsets, items) = report_example();
    let run = |removal| {
        hkp(
            &offsets,
            &items,
            7,
            Roles::Private(&[3, 4]),
            &options(0.5, 3, 3, removal),
        )
        .unwrap()
        .suppressed
    };
    // 1/IL: 5 (support 3) first, then 1 (support 4).
    assert_eq!(run(Removal::OneIl), vec![6, 5, 1]);
    // MM: 1, 2 and 5 tie at 2; 5 has the lowest IL. Then 0, 1, 2 tie at 1: 1 (IL 4).
    assert_eq!(run(Removal::Mm), vec![6, 5, 1]);
    // Every item of a minimal mole.
    assert_eq!(run(Removal::RmAll), vec![6, 0, 1, 2, 5]);
}

#[test]
fn size_zero_sets_are_not_moles_and_p_one_stops_at_single_items() {
    // Items 0 and 1 never occur together: {0, 1} has support 0, which is no mole.
    let data = vec![vec![0, 2], vec![0, 2], vec![1, 2], vec![1, 2]];
    let (offsets, items) = flatten(&data);
    let release = hkp(
        &offsets,
        &items,
        3,
        Roles::Private(&[]),
        &options(1.0, 2, 2, Removal::MmIl),
    )
    .unwrap();
    assert!(release.suppressed.is_empty());
    assert_eq!(release.mole_count(), 0);
    let release = hkp(
        &offsets,
        &items,
        3,
        Roles::Private(&[]),
        &options(1.0, 3, 1, Removal::MmIl),
    )
    .unwrap();
    assert_eq!(release.size1_moles, vec![0, 1]);
    assert_eq!(release.suppressed, vec![0, 1]);
}

#[test]
fn preprocessing_keeps_items_with_support_at_the_threshold() {
    // 10 transactions, min_support 0.2: items need support >= 2.
    let mut data: Vec<Vec<u32>> = (0..10).map(|_| vec![0]).collect();
    data[0].push(1);
    data[1].push(1);
    data[2].push(2);
    data[9].clear();
    let (offsets, items) = flatten(&data);
    let mut o = options(1.0, 1, 2, Removal::MmIl);
    o.min_support = 0.2;
    let release = hkp(&offsets, &items, 3, Roles::Private(&[]), &o).unwrap();
    assert_eq!(release.dropped, vec![2]);
    assert_eq!(release.stats.dropped_occurrences, 1);
    assert_eq!(release.stats.items, 2);
    assert_eq!(release.stats.occurrences, 11);
    assert_eq!(release.stats.transactions, 10);
}

#[test]
fn public_fraction_draws_the_same_split_for_the_same_seed() {
    let data: Vec<Vec<u32>> = (0..20u32)
        .map(|t| (0..10).filter(|i| (t + i) % 3 != 0).collect())
        .collect();
    let (offsets, items) = flatten(&data);
    let run = |seed| {
        hkp(
            &offsets,
            &items,
            10,
            Roles::PublicFraction {
                fraction: 0.4,
                seed,
            },
            &options(0.8, 2, 2, Removal::MmIl),
        )
        .unwrap()
    };
    let a = run(1);
    assert_eq!(a, run(1));
    assert_eq!(a.private.len(), 6);
    assert_eq!(a.stats.public_items, 4);
    assert!((0..50).any(|s| run(s).private != a.private));
}

#[test]
fn errors_name_the_problem() {
    let (offsets, items) = report_example();
    let err = |r: Result<HkpRelease, KernelError>| r.unwrap_err().to_string();
    let private = Roles::Private(&[3, 4]);
    for h in [0.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
        let e = err(hkp(
            &offsets,
            &items,
            7,
            private,
            &options(h, 3, 3, Removal::MmIl),
        ));
        assert!(e.contains("h must lie in (0, 1]"), "{e}");
    }
    let e = err(hkp(
        &offsets,
        &items,
        7,
        private,
        &options(0.5, 0, 3, Removal::MmIl),
    ));
    assert!(e.contains("k must be at least 1"), "{e}");
    let e = err(hkp(
        &offsets,
        &items,
        7,
        private,
        &options(0.5, 3, 0, Removal::MmIl),
    ));
    assert!(e.contains("p must be at least 1"), "{e}");
    let mut o = options(0.5, 3, 3, Removal::MmIl);
    o.min_support = 1.5;
    assert!(err(hkp(&offsets, &items, 7, private, &o)).contains("min_support"));
    let fraction = Roles::PublicFraction {
        fraction: -0.5,
        seed: 0,
    };
    let e = err(hkp(
        &offsets,
        &items,
        7,
        fraction,
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(e.contains("public_fraction must lie in [0, 1]"), "{e}");
    // Item 7 exists in the code space (n_items = 8) but in no transaction.
    let e = err(hkp(
        &offsets,
        &items,
        8,
        Roles::Private(&[3, 7]),
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(
        e.contains("private item code 7 occurs in no transaction"),
        "{e}"
    );
    let e = err(hkp(
        &offsets,
        &items,
        7,
        Roles::Private(&[9]),
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(e.contains("private item code 9 is outside"), "{e}");
    let e = err(hkp(
        &offsets,
        &items,
        5,
        private,
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(
        e.contains("item code 6 is outside the code space 0..5"),
        "{e}"
    );
    let e = err(hkp(
        &[],
        &[],
        0,
        Roles::Private(&[]),
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(e.contains("'offsets' has 0 entries"), "{e}");
    let e = err(hkp(
        &[1, 3],
        &items,
        7,
        private,
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(e.contains("offsets must start at 0"), "{e}");
    let e = err(hkp(
        &[0, 5, 3, 20],
        &items,
        7,
        private,
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(e.contains("must not decrease"), "{e}");
    let e = err(hkp(
        &[0, 3],
        &items,
        7,
        private,
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(
        e.contains("last offset must equal the number of items"),
        "{e}"
    );
    let e = err(hkp(
        &offsets,
        &items,
        usize::MAX,
        private,
        &options(0.5, 3, 3, Removal::MmIl),
    ));
    assert!(e.contains("exceeds the 2^32 codes"), "{e}");
    let e = Removal::from_name("best").unwrap_err().to_string();
    assert!(
        e.contains("method must be 'mmil', '1il', 'mm' or 'rmall'"),
        "{e}"
    );
    for m in METHODS {
        assert_eq!(Removal::from_name(m.name()).unwrap(), m);
    }
}

/// A dense table: `n` transactions holding all of `items` items, so that every set of at
/// most p items is held by every transaction and none is a mole (k = 2, h = 1).
fn dense(n: usize, items: u32) -> (Vec<u64>, Vec<u32>) {
    flatten(&vec![(0..items).collect::<Vec<u32>>(); n])
}

#[test]
fn a_dense_table_stops_at_the_itemset_budget_naming_p() {
    // 40 items at p = 10: about 1.2e9 candidate sets, the input that aborted the process
    // ("memory allocation failed"); now an error naming p and the p that fits. (The
    // default budget is exercised from Python on the release build: here a small one.)
    let (offsets, items) = dense(50, 40);
    let mut o = options(1.0, 2, 10, Removal::MmIl);
    o.max_itemsets = 20_000;
    let err = hkp(&offsets, &items, 40, Roles::Private(&[]), &o).unwrap_err();
    let KernelError::InvalidArgument { message, .. } = &err else {
        panic!("{err:?}");
    };
    // C(40, 2) + C(40, 3) = 10,660 candidates fit; C(40, 4) = 91,390 more do not.
    assert!(message.contains("p = 10 is too large"), "{message}");
    assert!(message.contains("sets of 4 public items"), "{message}");
    assert!(message.contains("max_itemsets = 20000"), "{message}");
    assert!(message.contains("fit: p = 3"), "{message}");
    // The p it names works.
    o.p = 3;
    let release = hkp(&offsets, &items, 40, Roles::Private(&[]), &o).unwrap();
    assert_eq!(release.mole_count(), 0);
    assert_eq!(release.stats.candidates, 10_660);
    // Exactly C(40, 2) = 780 candidates fit in a budget of 780, not of 779.
    o.p = 2;
    o.max_itemsets = 780;
    let release = hkp(&offsets, &items, 40, Roles::Private(&[]), &o).unwrap();
    assert_eq!(release.stats.candidates, 780);
    o.max_itemsets = 779;
    let err = hkp(&offsets, &items, 40, Roles::Private(&[]), &o).unwrap_err();
    assert!(err.to_string().contains("fits: p = 1"), "{err}");
    o.max_itemsets = 0;
    let err = hkp(&offsets, &items, 40, Roles::Private(&[]), &o).unwrap_err();
    assert!(
        err.to_string().contains("max_itemsets must be at least 1"),
        "{err}"
    );
}

#[test]
fn a_few_very_frequent_items_among_many_stop_at_the_budget() {
    // 24 items in every transaction, plus a rare item per transaction: the frequent ones
    // make C(24, p) non-moles; at p = 12 that is 2.7 million sets of 12 alone.
    let transactions: Vec<Vec<u32>> = (0..200u32)
        .map(|t| (0..24).chain([24 + t]).collect())
        .collect();
    let (offsets, items) = flatten(&transactions);
    let mut o = options(1.0, 2, 12, Removal::Mm);
    o.max_itemsets = 100_000;
    let err = hkp(&offsets, &items, 224, Roles::Private(&[]), &o).unwrap_err();
    assert!(err.to_string().contains("p = 12 is too large"), "{err}");
}

#[test]
fn an_unallocatable_code_space_is_an_error() {
    let (offsets, items) = report_example();
    let err = hkp(
        &offsets,
        &items,
        1 << 32,
        Roles::Private(&[3, 4]),
        &options(0.5, 3, 3, Removal::MmIl),
    );
    // On a machine that can hold 4 G entries the call succeeds; it never aborts.
    if let Err(e) = err {
        assert!(e.to_string().contains("n_items"), "{e}");
    }
}

#[test]
fn empty_tables_and_repeated_items() {
    let release = hkp(
        &[0],
        &[],
        0,
        Roles::Private(&[]),
        &options(0.5, 3, 3, Removal::MmIl),
    )
    .unwrap();
    assert!(release.suppressed.is_empty());
    assert_eq!(release.stats.transactions, 0);
    assert_eq!(release.information_loss(), 0.0);
    // An item repeated within a transaction counts once.
    let (offsets, items) = flatten(&[vec![0, 0, 1], vec![1, 0], vec![], vec![0, 1, 1]]);
    let release = hkp(
        &offsets,
        &items,
        2,
        Roles::Private(&[]),
        &options(1.0, 3, 2, Removal::MmIl),
    )
    .unwrap();
    assert_eq!(release.stats.occurrences, 6);
    assert!(release.suppressed.is_empty());
}

// --- Brute force -------------------------------------------------------------------------

/// A random instance: transactions over a few items, a role split, h, k, p, preprocessing.
#[derive(Debug, Clone)]
struct Instance {
    transactions: Vec<Vec<u32>>,
    n_items: usize,
    private: Vec<u32>,
    fraction: Option<(f64, u64)>,
    h: f64,
    k: u64,
    p: usize,
    min_support: f64,
}

impl Instance {
    fn roles(&self) -> Roles<'_> {
        match self.fraction {
            Some((fraction, seed)) => Roles::PublicFraction { fraction, seed },
            None => Roles::Private(&self.private),
        }
    }

    fn run(&self, removal: Removal) -> HkpRelease {
        let (offsets, items) = flatten(&self.transactions);
        let o = HkpOptions {
            h: self.h,
            k: self.k,
            p: self.p,
            removal,
            min_support: self.min_support,
            max_itemsets: DEFAULT_MAX_ITEMSETS,
        };
        hkp(&offsets, &items, self.n_items, self.roles(), &o).unwrap()
    }
}

fn instance() -> impl Strategy<Value = Instance> {
    (2usize..9, 0usize..28).prop_flat_map(|(n_items, n)| {
        let width = n_items as u32;
        (
            proptest::collection::vec(proptest::collection::vec(0..width, 0..7), n),
            proptest::collection::vec(0..width, 0..3),
            prop_oneof![Just(None), (0.0f64..=1.0, any::<u64>()).prop_map(Some)],
            prop_oneof![Just(0.5), Just(0.4), Just(1.0), 0.05f64..=1.0],
            1u64..6,
            1usize..5,
            prop_oneof![3 => Just(0.0), 1 => 0.0f64..0.3],
        )
            .prop_map(
                move |(transactions, private, fraction, h, k, p, min_support)| {
                    let occurs: BTreeSet<u32> = transactions.iter().flatten().copied().collect();
                    Instance {
                        private: private.into_iter().filter(|c| occurs.contains(c)).collect(),
                        transactions,
                        n_items,
                        fraction,
                        h,
                        k,
                        p,
                        min_support,
                    }
                },
            )
    })
}

/// Support of `beta` and the largest count of a private item in its cohort.
fn cohort(transactions: &[BTreeSet<u32>], beta: &[u32], private: &[u32]) -> (u64, u64) {
    let members: Vec<&BTreeSet<u32>> = transactions
        .iter()
        .filter(|t| beta.iter().all(|e| t.contains(e)))
        .collect();
    let worst = private
        .iter()
        .map(|q| members.iter().filter(|t| t.contains(q)).count() as u64)
        .max()
        .unwrap_or(0);
    (members.len() as u64, worst)
}

fn is_mole(transactions: &[BTreeSet<u32>], beta: &[u32], private: &[u32], h: f64, k: u64) -> bool {
    let (sup, worst) = cohort(transactions, beta, private);
    sup > 0 && (sup < k || worst as f64 / sup as f64 > h)
}

/// All subsets of `items` of size 1..=p, each in ascending order.
fn subsets(items: &[u32], p: usize) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = vec![Vec::new()];
    let mut all = Vec::new();
    for size in 1..=p.min(items.len()) {
        let mut next = Vec::new();
        for s in &out {
            let from = s
                .last()
                .map_or(0, |&l| items.iter().position(|&e| e == l).unwrap() + 1);
            for &e in &items[from..] {
                let mut t = s.clone();
                t.push(e);
                next.push(t);
            }
        }
        let _ = size;
        all.extend(next.iter().cloned());
        out = next;
    }
    all
}

/// The data after preprocessing, as sets, with the release's public items.
fn kept_data(case: &Instance, release: &HkpRelease) -> (Vec<BTreeSet<u32>>, Vec<u32>) {
    let dropped: BTreeSet<u32> = release.dropped.iter().copied().collect();
    let data: Vec<BTreeSet<u32>> = case
        .transactions
        .iter()
        .map(|t| t.iter().copied().filter(|e| !dropped.contains(e)).collect())
        .collect();
    let occurring: BTreeSet<u32> = data.iter().flatten().copied().collect();
    let public: Vec<u32> = occurring
        .iter()
        .copied()
        .filter(|e| !release.private.contains(e))
        .collect();
    (data, public)
}

/// The minimal moles of `data` over `public`, as the kernel lists them: size-1 moles, then
/// larger ones by size and lexicographically.
fn brute_minimal_moles(
    data: &[BTreeSet<u32>],
    public: &[u32],
    private: &[u32],
    h: f64,
    k: u64,
    p: usize,
) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut minimal: Vec<Vec<u32>> = Vec::new();
    for beta in subsets(public, p) {
        if !is_mole(data, &beta, private, h, k) {
            continue;
        }
        let has_mole_subset = subsets(&beta, beta.len() - 1)
            .iter()
            .any(|s| is_mole(data, s, private, h, k));
        if !has_mole_subset {
            minimal.push(beta);
        }
    }
    minimal.sort_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
    let size1 = minimal
        .iter()
        .filter(|m| m.len() == 1)
        .map(|m| m[0])
        .collect();
    let larger = minimal.into_iter().filter(|m| m.len() > 1).collect();
    (size1, larger)
}

/// The greedy phase recounting MM from scratch at every step, with the kernel's ties.
fn naive_greedy(moles: &[Vec<u32>], support: impl Fn(u32) -> u64, removal: Removal) -> Vec<u32> {
    let mut left: Vec<&Vec<u32>> = moles.iter().collect();
    if removal == Removal::RmAll {
        let all: BTreeSet<u32> = moles.iter().flatten().copied().collect();
        return all.into_iter().collect();
    }
    let mut chosen = Vec::new();
    while !left.is_empty() {
        let items: BTreeSet<u32> = left.iter().copied().flatten().copied().collect();
        let mm = |e: u32| left.iter().filter(|m| m.contains(&e)).count() as u64;
        let key = |e: u32| -> (f64, u64, u64) {
            let (m, il) = (mm(e), support(e));
            match removal {
                Removal::MmIl => (m as f64 / il as f64, m, 0),
                Removal::OneIl => (1.0 / il as f64, m, 0),
                _ => (m as f64, u64::MAX - il, 0),
            }
        };
        // Highest key, ties to the lower code.
        let mut best = None::<u32>;
        for &e in &items {
            if best.is_none_or(|b| key(e).partial_cmp(&key(b)) == Some(std::cmp::Ordering::Greater))
            {
                best = Some(e);
            }
        }
        let best = best.unwrap();
        chosen.push(best);
        left.retain(|m| !m.contains(&best));
    }
    chosen
}

fn check(case: &Instance, removal: Removal) -> Result<(), TestCaseError> {
    let release = case.run(removal);
    let (data, public) = kept_data(case, &release);
    // Roles: explicit private items are kept unless dropped; no item is both.
    if case.fraction.is_none() {
        let dropped: BTreeSet<u32> = release.dropped.iter().copied().collect();
        let expected: BTreeSet<u32> = case
            .private
            .iter()
            .copied()
            .filter(|c| !dropped.contains(c))
            .collect();
        prop_assert_eq!(
            release.private.iter().copied().collect::<BTreeSet<u32>>(),
            expected
        );
    }
    // Minimal moles equal brute force.
    let (size1, moles) =
        brute_minimal_moles(&data, &public, &release.private, case.h, case.k, case.p);
    prop_assert_eq!(&release.size1_moles, &size1);
    let found: Vec<Vec<u32>> = release.moles().map(<[u32]>::to_vec).collect();
    prop_assert_eq!(&found, &moles);
    // The greedy phase equals the naive replay.
    let support = |e: u32| data.iter().filter(|t| t.contains(&e)).count() as u64;
    let mut expected = size1.clone();
    expected.extend(naive_greedy(&moles, support, removal));
    prop_assert_eq!(&release.suppressed, &expected);
    // Only public items are suppressed, each once.
    let suppressed: BTreeSet<u32> = release.suppressed.iter().copied().collect();
    prop_assert_eq!(suppressed.len(), release.suppressed.len());
    prop_assert!(suppressed.iter().all(|e| public.contains(e)));
    // The release is (h,k,p)-coherent: no set of at most p remaining public items is a mole.
    let released: Vec<BTreeSet<u32>> = data
        .iter()
        .map(|t| {
            t.iter()
                .copied()
                .filter(|e| !suppressed.contains(e))
                .collect()
        })
        .collect();
    let left: Vec<u32> = public
        .iter()
        .copied()
        .filter(|e| !suppressed.contains(e))
        .collect();
    for beta in subsets(&left, case.p) {
        prop_assert!(
            !is_mole(&released, &beta, &release.private, case.h, case.k),
            "mole {:?} left in the release",
            beta
        );
    }
    // Accounting.
    let occurrences: u64 = data.iter().map(|t| t.len() as u64).sum();
    prop_assert_eq!(release.stats.occurrences, occurrences);
    let lost: u64 = release.suppressed.iter().map(|&e| support(e)).sum();
    prop_assert_eq!(release.stats.suppressed_occurrences, lost);
    prop_assert_eq!(release.stats.transactions, case.transactions.len() as u64);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn releases_are_coherent_and_match_brute_force(case in instance()) {
        for removal in METHODS {
            check(&case, removal)?;
        }
    }

    #[test]
    fn the_order_of_transactions_does_not_matter(case in instance(), seed in any::<u64>()) {
        let mut shuffled = case.clone();
        let n = shuffled.transactions.len();
        let mut state = seed;
        for i in (1..n).rev() {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let j = (state >> 33) as usize % (i + 1);
            shuffled.transactions.swap(i, j);
        }
        for removal in METHODS {
            prop_assert_eq!(case.run(removal), shuffled.run(removal));
        }
    }
}
