//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// Upper critical value of the chi-square distribution with `df` degrees of freedom at
/// tail probability 1e-6 (Wilson–Hilferty approximation, accurate to a few percent for
/// df >= 3, ample for a one-in-a-million false-alarm rate with a fixed seed).
pub fn chi2_critical(df: usize) -> f64 {
    let z = 4.753_424; // standard normal upper 1e-6 quantile
    let k = df as f64;
    let a = 2.0 / (9.0 * k);
    k * (1.0 - a + z * a.sqrt()).powi(3)
}

/// Pearson's statistic of `observed` counts against `expected` probabilities; categories
/// with zero expected probability must have zero counts (else the statistic is infinite).
pub fn chi2(observed: &[u64], probs: &[f64]) -> (f64, usize) {
    let n: u64 = observed.iter().sum();
    let mut stat = 0.0;
    let mut cats = 0;
    for (&o, &p) in observed.iter().zip(probs) {
        if p == 0.0 {
            if o > 0 {
                return (f64::INFINITY, 0);
            }
            continue;
        }
        let e = p * n as f64;
        stat += (o as f64 - e).powi(2) / e;
        cats += 1;
    }
    (stat, cats.max(2) - 1)
}

/// Asserts that `observed` fits `probs` (chi-square goodness of fit at 1e-6).
pub fn assert_fits(what: &str, observed: &[u64], probs: &[f64]) {
    let (stat, df) = chi2(observed, probs);
    let crit = chi2_critical(df);
    assert!(
        stat < crit,
        "{what}: chi2 = {stat:.1} >= {crit:.1} (df {df})\nobserved {observed:?}\nprobs {probs:?}"
    );
}

/// Two-sample chi-square homogeneity test of two count vectors over the same categories.
pub fn assert_same_distribution(what: &str, a: &[u64], b: &[u64]) {
    let (na, nb) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
    let mut stat = 0.0;
    let mut cats = 0;
    for (&x, &y) in a.iter().zip(b) {
        let tot = (x + y) as f64;
        if tot == 0.0 {
            continue;
        }
        let (ea, eb) = (tot * na / (na + nb), tot * nb / (na + nb));
        stat += (x as f64 - ea).powi(2) / ea + (y as f64 - eb).powi(2) / eb;
        cats += 1;
    }
    let crit = chi2_critical(cats - 1);
    assert!(
        stat < crit,
        "{what}: chi2 = {stat:.1} >= {crit:.1} (df {})",
        cats - 1
    );
}

/// Exact probability of drawing the ordered tuple `seq` by successive draws without
/// replacement proportional to `w` (uniformly while every weight left is zero: the limit
/// of `w + ε` as `ε → 0`).
pub fn successive_prob(w: &[f64], seq: &[usize]) -> f64 {
    let mut left = vec![true; w.len()];
    let mut p = 1.0;
    for &i in seq {
        let remaining: f64 = (0..w.len()).filter(|&j| left[j]).map(|j| w[j]).sum();
        p *= if remaining > 0.0 {
            w[i] / remaining
        } else {
            // Only weights of zero are left: uniformly among them (the limit of w + ε).
            1.0 / left.iter().filter(|&&l| l).count() as f64
        };
        left[i] = false;
    }
    p
}

/// Every ordered k-tuple of distinct elements of `0..n`.
pub fn ordered_tuples(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    fn rec(n: usize, k: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for i in 0..n {
            if !cur.contains(&i) {
                cur.push(i);
                rec(n, k, cur, out);
                cur.pop();
            }
        }
    }
    rec(n, k, &mut cur, &mut out);
    out
}

/// Index of `seq` among [`ordered_tuples`]`(n, seq.len())`.
pub fn tuple_index(tuples: &[Vec<usize>], seq: &[usize]) -> usize {
    tuples.iter().position(|t| t == seq).expect("a valid tuple")
}
