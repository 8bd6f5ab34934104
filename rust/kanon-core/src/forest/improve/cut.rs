//! The best binary cut of a group, shared by the split pass ([`super::space`]) and the
//! regroup pools ([`super::regroup`]).

/// The cheapest cut of `rows` into the first `p` and the last `s − p` rows (both at least
/// `k`) of `rows` sorted by one of `attributes`, if it costs strictly less than `whole`
/// (the cost of `rows` as one group).
///
/// `sort(order, a)` sorts rows by attribute `a`; `running(order, reverse, out)` fills
/// `out[p]` with the units of one row of a group made of the first (`reverse`: last) `p`
/// rows of `order`, for `p` in `1..=s`. A cut of `p` rows costs
/// `p · prefix[p] + (s − p) · suffix[s − p]`; ties go to the first attribute and the
/// smallest `p`.
pub(crate) fn best_cut<R: Copy>(
    rows: &[R],
    k: usize,
    whole: u128,
    attributes: impl Iterator<Item = usize>,
    mut sort: impl FnMut(&mut [R], usize),
    mut running: impl FnMut(&[R], bool, &mut Vec<u64>),
) -> Option<(Vec<R>, Vec<R>)> {
    let s = rows.len();
    if s < 2 * k {
        return None;
    }
    let mut order = rows.to_vec();
    let mut prefix = Vec::with_capacity(s + 1);
    let mut suffix = Vec::with_capacity(s + 1);
    let mut best: Option<(u128, usize, usize)> = None;
    for a in attributes {
        sort(&mut order, a);
        running(&order, false, &mut prefix);
        running(&order, true, &mut suffix);
        for p in k..=s - k {
            let cost =
                p as u128 * u128::from(prefix[p]) + (s - p) as u128 * u128::from(suffix[s - p]);
            if best.is_none_or(|(c, _, _)| cost < c) {
                best = Some((cost, a, p));
            }
        }
    }
    let (cost, a, p) = best?;
    if cost >= whole {
        return None;
    }
    sort(&mut order, a);
    let right = order.split_off(p);
    Some((order, right))
}
