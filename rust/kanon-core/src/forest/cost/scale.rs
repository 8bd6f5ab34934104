//! Fixed-point scaling of attribute weights, so that pair and group costs are exact
//! integers (units).

use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;

/// Bound on the largest total cost in units (see the module docs of `cost`).
pub(crate) const UNIT_LIMIT: u128 = 1 << 50;

/// Units of a key difference of a numeric attribute.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PerKey {
    /// Integer keys: exactly `difference · units` units.
    Exact(u64),
    /// `round(difference · factor)` units, at most the whole weight.
    Fixed(f64),
}

/// Range units of keys `x` and `y`: all of them where either is missing (NaN).
#[inline]
pub(crate) fn numeric_units(x: f64, y: f64, per: PerKey, full: u64) -> u64 {
    match x.is_nan() || y.is_nan() {
        true => full,
        false => key_units((x - y).abs(), per, full),
    }
}

/// Units of a key difference `difference ≥ 0` (at most the span) of a numeric attribute.
#[inline]
pub(crate) fn key_units(difference: f64, per: PerKey, full: u64) -> u64 {
    match per {
        // An exact integer below 2^53 (checked keys), times units ≤ w · lcm / span.
        PerKey::Exact(units) => difference as u64 * units,
        PerKey::Fixed(factor) => round_units(difference * factor).min(full),
    }
}

/// `x.round()` for `x ≥ 0` (saturating), inline: the fraction `x − ⌊x⌋` is exact below
/// 2^52, and `f64::round` is a libm call on the baseline x86-64 target. Below 2^52 the
/// conversions are signed: one instruction each there, not the unsigned ones' sequences
/// (the scans of range costs round every pair).
#[inline]
fn round_units(x: f64) -> u64 {
    const SIGNED: f64 = (1u64 << 52) as f64;
    if (0.0..SIGNED).contains(&x) {
        let whole = x as i64;
        return (whole + i64::from(x - whole as f64 >= 0.5)) as u64;
    }
    let whole = x as u64;
    whole.saturating_add(u64::from(x - whole as f64 >= 0.5))
}

/// Check the hierarchies and weights of a model.
pub(crate) fn check_model(hierarchies: &[Hierarchy], weights: &[f64]) -> Result<()> {
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: "cost model",
        message,
    };
    if weights.len() != hierarchies.len() {
        return Err(KernelError::LengthMismatch {
            kernel: "cost model",
            argument: "weights",
            got: weights.len(),
            expected: hierarchies.len(),
        });
    }
    if hierarchies.is_empty() {
        return Err(invalid(
            "a cost model needs at least one quasi-identifier hierarchy".to_owned(),
        ));
    }
    if let Some((j, w)) = weights
        .iter()
        .enumerate()
        .find(|(_, w)| !(w.is_finite() && **w > 0.0))
    {
        return Err(invalid(format!(
            "weight {w} of attribute {j} is not a positive finite number"
        )));
    }
    Ok(())
}

/// The exact scale (lcm of the denominators) when every weight is an integer and the
/// largest total stays within [`UNIT_LIMIT`].
pub(crate) fn exact_scale(weights: &[f64], denominators: &[u64]) -> Option<u64> {
    if !weights
        .iter()
        .all(|&w| w.fract() == 0.0 && w <= UNIT_LIMIT as f64)
    {
        return None;
    }
    let mut lcm: u128 = 1;
    for &q in denominators.iter().filter(|&&q| q > 0) {
        let q = u128::from(q);
        lcm = lcm / gcd(lcm, q) * q;
        if lcm > UNIT_LIMIT {
            return None;
        }
    }
    let total: u128 = weights
        .iter()
        .zip(denominators)
        .filter(|(_, &q)| q > 0)
        .map(|(&w, _)| w as u128 * lcm)
        .sum();
    (total <= UNIT_LIMIT).then_some(lcm as u64)
}

/// A power-of-two scale putting the largest total just below 2^50 units.
pub(crate) fn fixed_scale(weights: &[f64], denominators: &[u64]) -> Result<f64> {
    let total: f64 = weights
        .iter()
        .zip(denominators)
        .filter(|(_, &q)| q > 0)
        .map(|(&w, _)| w)
        .sum();
    if !total.is_finite() {
        return Err(KernelError::InvalidArgument {
            kernel: "cost model",
            message: format!("the weights add up to {total}; their sum must be finite"),
        });
    }
    // With nothing to price (total 0, log2 = −∞) the exponent is capped; all units are 0.
    let exponent = (50.0 - total.log2()).floor().min(1000.0);
    Ok(exponent.exp2())
}

/// Weighted units of a node whose unweighted cost is `p / q`.
pub(crate) fn term_units(p: u64, q: u64, weight: f64, scale: f64, exact: bool) -> u64 {
    if q == 0 {
        0
    } else if exact {
        // weight · p · (lcm / q) ≤ weight · lcm ≤ UNIT_LIMIT: no overflow.
        let lcm = scale as u128;
        (weight as u128 * u128::from(p) * (lcm / u128::from(q))) as u64
    } else {
        (weight * scale * p as f64 / q as f64).round() as u64
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::round_units;
    use proptest::prelude::*;

    #[test]
    fn round_units_rounds_halves_up_on_both_sides_of_2_52() {
        let big = (1u64 << 52) as f64;
        for (x, want) in [
            (0.0, 0),
            (0.49999999999999994, 0),
            (0.5, 1),
            (2.5, 3),
            (big - 0.5, 1 << 52),
            (big, 1 << 52),
            (big * 2.0, 1 << 53),
            (f64::NAN, 0),
            (f64::INFINITY, u64::MAX),
        ] {
            assert_eq!(round_units(x), want, "{x}");
        }
    }

    proptest! {
        #[test]
        fn round_units_is_round(x in 0.0f64..1e18) {
            prop_assert_eq!(round_units(x), x.round() as u64);
        }
    }
}
