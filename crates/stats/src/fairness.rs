//! Jain's fairness index.

/// Jain's fairness index `(Σx)² / (n · Σx²)` of per-flow shares.
///
/// Ranges from `1/n` (one flow takes everything) to `1` (equal shares).
/// Returns `None` if `xs` is empty, contains a non-finite or negative value,
/// or is all zeros (no traffic at all, index undefined).
pub fn jain_fairness(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return None;
    }
    let sum: f64 = xs.iter().sum();
    let sum_sq: f64 = xs.iter().map(|x| x * x).sum();
    if sum_sq.is_nan() || sum_sq <= 0.0 || sum_sq.is_infinite() {
        return None;
    }
    let j = sum * sum / (xs.len() as f64 * sum_sq);
    // Guard against rounding pushing it a hair above 1.
    Some(j.min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_shares_are_perfectly_fair() {
        for n in 1..10 {
            let j = jain_fairness(&vec![12.5; n]).unwrap();
            assert!((j - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn one_hog_gives_one_over_n() {
        for n in 1..10 {
            let mut xs = vec![0.0; n];
            xs[n / 2] = 100.0;
            let j = jain_fairness(&xs).unwrap();
            assert!((j - 1.0 / n as f64).abs() < 1e-12, "n={n}: {j}");
        }
    }

    #[test]
    fn hand_computed() {
        // (1+2+3)^2 / (3 · 14) = 36/42
        let j = jain_fairness(&[1.0, 2.0, 3.0]).unwrap();
        assert!((j - 36.0 / 42.0).abs() < 1e-12);
        // Scale invariant.
        let k = jain_fairness(&[1000.0, 2000.0, 3000.0]).unwrap();
        assert!((j - k).abs() < 1e-12);
    }

    #[test]
    fn bad_input() {
        assert_eq!(jain_fairness(&[]), None);
        assert_eq!(jain_fairness(&[0.0, 0.0]), None);
        assert_eq!(jain_fairness(&[1.0, -1.0]), None);
        assert_eq!(jain_fairness(&[1.0, f64::NAN]), None);
        assert_eq!(jain_fairness(&[1.0, f64::INFINITY]), None);
    }
}
