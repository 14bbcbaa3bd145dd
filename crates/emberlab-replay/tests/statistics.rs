//! Statistical checks of every sampler against exact (enumerated) or naive references.

mod common;

use common::*;
use emberlab_core::{Batch, EmberRng, Transition};
use emberlab_replay::naive::{NaiveScratch, naive_return_weighted};
use emberlab_replay::{Prioritized, ReplayBuffer, ReturnWeighted, RingStorage, Sampler, Uniform};

fn rw_with(scores: &[f64]) -> ReturnWeighted {
    let mut s = ReturnWeighted::new(scores.len());
    for (i, &r) in scores.iter().enumerate() {
        s.set_score(i, r).unwrap();
    }
    s
}

/// Ordered k-tuples drawn by the tree sampler follow the exact successive-draw law.
#[test]
fn return_weighted_matches_enumeration() {
    // Shift 2: weights [0, 2.5, 3, 5, 1, 0.25]; slot 0 (the minimum) can never be drawn.
    let scores = [-2.0, 0.5, 1.0, 3.0, -1.0, -1.75];
    let w: Vec<f64> = scores.iter().map(|r| r + 2.0).collect();
    let mut s = rw_with(&scores);
    let mut rng = EmberRng::seed_from(11);
    let mut out = Vec::new();
    for k in [1, 2, 3, 5] {
        let tuples = ordered_tuples(scores.len(), k);
        let probs: Vec<f64> = tuples.iter().map(|t| successive_prob(&w, t)).collect();
        assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let mut counts = vec![0u64; tuples.len()];
        let mut inclusion = vec![0u64; scores.len()];
        let trials = 120_000;
        for _ in 0..trials {
            s.draw(k, &mut rng, &mut out).unwrap();
            counts[tuple_index(&tuples, &out)] += 1;
            for &i in &out {
                inclusion[i] += 1;
            }
        }
        assert_fits(&format!("ordered {k}-tuples"), &counts, &probs);
        // Inclusion probabilities, summed from the enumeration, within 5 standard errors.
        for (i, &c) in inclusion.iter().enumerate() {
            let p: f64 = tuples
                .iter()
                .zip(&probs)
                .filter(|(t, _)| t.contains(&i))
                .map(|(_, p)| p)
                .sum();
            let se = (p * (1.0 - p) / trials as f64).sqrt().max(1e-12);
            let got = c as f64 / trials as f64;
            assert!(
                (got - p).abs() < 5.0 * se + 1e-12,
                "k={k} slot {i}: {got} vs {p}"
            );
        }
    }
}

/// On a larger population the tree sampler and the O(n) NumPy-style reference agree on the
/// law of the first and the last draw of a batch.
#[test]
fn return_weighted_agrees_with_naive_reference() {
    let n = 60;
    let mut rng = EmberRng::seed_from(5);
    // A few heavy slots, many light ones, and negative returns.
    let scores: Vec<f64> = (0..n)
        .map(|i| {
            if i % 17 == 3 {
                40.0
            } else {
                rng.next_f64() * 10.0 - 5.0
            }
        })
        .collect();
    let mut tree = rw_with(&scores);
    let k = 8;
    let (mut first_t, mut last_t) = (vec![0u64; n], vec![0u64; n]);
    let (mut first_n, mut last_n) = (vec![0u64; n], vec![0u64; n]);
    let mut scratch = NaiveScratch::default();
    let mut out = Vec::new();
    for _ in 0..40_000 {
        tree.draw(k, &mut rng, &mut out).unwrap();
        first_t[out[0]] += 1;
        last_t[out[k - 1]] += 1;
        naive_return_weighted(&scores, k, &mut rng, &mut scratch, &mut out).unwrap();
        first_n[out[0]] += 1;
        last_n[out[k - 1]] += 1;
    }
    assert_same_distribution("first draw", &first_t, &first_n);
    assert_same_distribution("last draw", &last_t, &last_n);
    // The first draw is plainly proportional to the weights.
    let shift = -scores.iter().copied().fold(f64::INFINITY, f64::min);
    let total: f64 = scores.iter().map(|r| r + shift).sum();
    let probs: Vec<f64> = scores.iter().map(|r| (r + shift) / total).collect();
    assert_fits("tree first draw", &first_t, &probs);
    assert_fits("naive first draw", &first_n, &probs);
}

/// Every weight zero (every score equal): both samplers draw uniformly — the exact law of
/// weights `w + ε` as `ε → 0`; with some weights zero, those are never drawn.
#[test]
fn all_weights_zero_follow_the_limit_law_in_both_samplers() {
    // Shift 2: weights [0, 2.5, 0, 5, 0]: two draws, never a slot of zero weight.
    let mixed = [-2.0, 0.5, -2.0, 3.0, -2.0];
    let equal = [-3.0, -3.0, -3.0, -3.0];
    let mut rng = EmberRng::seed_from(21);
    let (mut scratch, mut out) = (NaiveScratch::default(), Vec::new());
    for (scores, k) in [(&mixed[..], 2), (&equal[..], 3), (&[0.0; 3][..], 3)] {
        let min = scores.iter().copied().fold(f64::INFINITY, f64::min);
        let w: Vec<f64> = scores.iter().map(|r| r - min.min(0.0)).collect();
        let tuples = ordered_tuples(scores.len(), k);
        let probs: Vec<f64> = tuples.iter().map(|t| successive_prob(&w, t)).collect();
        assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let mut tree = rw_with(scores);
        let (mut counts_t, mut counts_n) = (vec![0u64; tuples.len()], vec![0u64; tuples.len()]);
        for _ in 0..60_000 {
            tree.draw(k, &mut rng, &mut out).unwrap();
            counts_t[tuple_index(&tuples, &out)] += 1;
            naive_return_weighted(scores, k, &mut rng, &mut scratch, &mut out).unwrap();
            counts_n[tuple_index(&tuples, &out)] += 1;
        }
        assert_fits(&format!("tree, {scores:?}, k={k}"), &counts_t, &probs);
        assert_fits(&format!("naive, {scores:?}, k={k}"), &counts_n, &probs);
    }
}

/// The naive reference itself follows the exact law (it is the oracle of the test above).
#[test]
fn naive_reference_matches_enumeration() {
    let scores = [0.0, 1.0, 2.0, 4.0];
    let tuples = ordered_tuples(4, 2);
    let probs: Vec<f64> = tuples.iter().map(|t| successive_prob(&scores, t)).collect();
    let mut counts = vec![0u64; tuples.len()];
    let mut rng = EmberRng::seed_from(8);
    let (mut scratch, mut out) = (NaiveScratch::default(), Vec::new());
    for _ in 0..60_000 {
        naive_return_weighted(&scores, 2, &mut rng, &mut scratch, &mut out).unwrap();
        counts[tuple_index(&tuples, &out)] += 1;
    }
    assert_fits("naive ordered pairs", &counts, &probs);
}

/// When the ring evicts the transition holding the minimum, the shift follows the new
/// exact minimum and so does the sampling law.
#[test]
fn eviction_of_the_minimum_regression() {
    let storage = RingStorage::new(4, 1, 1).unwrap();
    let mut buf = ReplayBuffer::new(storage, ReturnWeighted::new(4), 3).unwrap();
    let push = |buf: &mut ReplayBuffer<ReturnWeighted>, score: f64| {
        let t = Transition {
            obs: &[score as f32],
            action: &[0.0],
            reward: 0.0,
            next_obs: &[0.0],
            terminated: false,
            truncated: false,
        };
        buf.push_scored(&t, score, &[]).unwrap()
    };
    for s in [-10.0, 1.0, 2.0, 3.0] {
        push(&mut buf, s);
    }
    assert_eq!(buf.sampler().shift(), 10.0);
    assert_eq!(push(&mut buf, 5.0), 0); // evicts -10 from slot 0
    let rw = buf.sampler();
    assert_eq!(rw.shift(), 0.0, "a running minimum would still say 10");
    assert_eq!(rw.total_weight(), 11.0);
    push(&mut buf, -4.0); // slot 1: scores now [5, -4, 2, 3], shift 4
    assert_eq!(buf.sampler().shift(), 4.0);
    let probs = [9.0 / 22.0, 0.0, 6.0 / 22.0, 7.0 / 22.0];
    let mut counts = [0u64; 4];
    let mut batch = Batch::default();
    for _ in 0..50_000 {
        buf.sample(1, &mut batch).unwrap();
        counts[batch.indices[0]] += 1;
        assert_eq!(batch.obs[0], [5.0, -4.0, 2.0, 3.0][batch.indices[0]]);
    }
    assert_fits("after evicting the minimum", &counts, &probs);
}

/// Prioritized draws follow `p^α / Σ p^α`, and the importance weights follow the formula.
#[test]
fn prioritized_matches_exact_probabilities() {
    let n = 7;
    let alpha = 0.6;
    let mut p = Prioritized::new(n, alpha, 0.4).unwrap();
    for i in 0..n {
        p.on_push(i, 0.0).unwrap();
    }
    let prios: Vec<f32> = vec![0.1, 1.0, 2.0, 0.5, 4.0, 0.0, 3.0];
    p.update_priorities(&(0..n).collect::<Vec<_>>(), &prios)
        .unwrap();
    let pa: Vec<f64> = prios
        .iter()
        .map(|&x| (x as f64 + 1e-6).powf(alpha))
        .collect();
    let total: f64 = pa.iter().sum();
    let probs: Vec<f64> = pa.iter().map(|x| x / total).collect();
    let min = pa.iter().copied().fold(f64::INFINITY, f64::min);
    let mut rng = EmberRng::seed_from(21);
    let (mut idx, mut w) = (Vec::new(), Vec::new());
    // Single draws (no stratification) form a plain multinomial sample.
    let mut counts = vec![0u64; n];
    for _ in 0..80_000 {
        p.sample(n, 1, &mut rng, &mut idx, &mut w).unwrap();
        counts[idx[0]] += 1;
        let expect = (pa[idx[0]] / min).powf(-0.4) as f32;
        assert!((w[0] - expect).abs() <= 1e-6 * expect.max(1.0));
    }
    assert_fits("prioritized single draws", &counts, &probs);
    // Stratified batches: the same law (stratification only lowers the variance).
    let mut counts = vec![0u64; n];
    for _ in 0..2_000 {
        p.sample(n, 32, &mut rng, &mut idx, &mut w).unwrap();
        for &i in &idx {
            counts[i] += 1;
        }
    }
    assert_fits("prioritized stratified batches", &counts, &probs);
}

/// Uniform sampling: with replacement, a uniform multinomial; without, uniform ordered
/// pairs.
#[test]
fn uniform_matches_exact_probabilities() {
    let mut rng = EmberRng::seed_from(9);
    let (mut idx, mut w) = (Vec::new(), Vec::new());
    let mut with = Uniform::new(10, true);
    let mut counts = vec![0u64; 6];
    for _ in 0..20_000 {
        with.sample(6, 3, &mut rng, &mut idx, &mut w).unwrap();
        for &i in &idx {
            counts[i] += 1;
        }
    }
    assert_fits("uniform with replacement", &counts, &[1.0 / 6.0; 6]);
    let mut without = Uniform::new(10, false);
    let tuples = ordered_tuples(5, 3);
    let mut counts = vec![0u64; tuples.len()];
    for _ in 0..60_000 {
        without.sample(5, 3, &mut rng, &mut idx, &mut w).unwrap();
        counts[tuple_index(&tuples, &idx)] += 1;
    }
    let probs = vec![1.0 / tuples.len() as f64; tuples.len()];
    assert_fits(
        "uniform ordered triples without replacement",
        &counts,
        &probs,
    );
}

/// Uniform sampling with slots left out (frame replay's undrawable slots), on both of its
/// paths: rejection (few left out) and the list of drawable slots (most left out). With
/// replacement a uniform multinomial over the drawable slots, without uniform ordered
/// triples of them.
#[test]
fn uniform_with_removed_slots_matches_exact_probabilities() {
    let mut rng = EmberRng::seed_from(10);
    let (mut idx, mut w) = (Vec::new(), Vec::new());
    let len = 17;
    // 2 of 17 left out (rejection: 4 · (15 − 3) >= 17), then 13 (the list: 4 · 4 < 17).
    for removed in [
        vec![4usize, 9],
        vec![0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 14, 16],
    ] {
        let drawable: Vec<usize> = (0..len).filter(|s| !removed.contains(s)).collect();
        let position = |s: usize| drawable.iter().position(|&d| d == s).expect("drawable");
        let mut with = Uniform::new(20, true);
        let mut without = Uniform::new(20, false);
        for s in &removed {
            with.remove(*s).unwrap();
            without.remove(*s).unwrap();
        }
        let mut counts = vec![0u64; drawable.len()];
        for _ in 0..20_000 {
            with.sample(len, 3, &mut rng, &mut idx, &mut w).unwrap();
            for &i in &idx {
                counts[position(i)] += 1;
            }
        }
        let n = drawable.len() as f64;
        assert_fits(
            &format!("uniform with replacement, {} left out", removed.len()),
            &counts,
            &vec![1.0 / n; drawable.len()],
        );
        let tuples = ordered_tuples(drawable.len(), 3);
        let mut counts = vec![0u64; tuples.len()];
        for _ in 0..30 * tuples.len() {
            without.sample(len, 3, &mut rng, &mut idx, &mut w).unwrap();
            let seq: Vec<usize> = idx.iter().map(|&i| position(i)).collect();
            counts[tuple_index(&tuples, &seq)] += 1;
        }
        assert_fits(
            &format!("uniform ordered triples, {} left out", removed.len()),
            &counts,
            &vec![1.0 / tuples.len() as f64; tuples.len()],
        );
    }
}

/// Prioritized sampling with slots left out: the others drawn in proportion to `p^α`, and
/// the importance weights normalised by the smallest of theirs (the removed slot held the
/// smallest priority).
#[test]
fn prioritized_with_removed_slots_matches_exact_probabilities() {
    let (n, alpha, beta) = (6, 0.7, 0.5);
    let mut p = Prioritized::new(n, alpha, beta).unwrap();
    for i in 0..n {
        p.on_push(i, 0.0).unwrap();
    }
    let prios: Vec<f32> = vec![0.05, 1.0, 2.0, 0.5, 4.0, 3.0];
    p.update_priorities(&(0..n).collect::<Vec<_>>(), &prios)
        .unwrap();
    for s in [0, 4] {
        p.remove(s).unwrap();
    }
    let pa: Vec<f64> = prios
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            if i == 0 || i == 4 {
                0.0
            } else {
                (x as f64 + 1e-6).powf(alpha)
            }
        })
        .collect();
    let total: f64 = pa.iter().sum();
    let probs: Vec<f64> = pa.iter().map(|x| x / total).collect();
    let min = pa
        .iter()
        .copied()
        .filter(|&x| x > 0.0)
        .fold(f64::INFINITY, f64::min);
    let mut rng = EmberRng::seed_from(22);
    let (mut idx, mut w) = (Vec::new(), Vec::new());
    let mut counts = vec![0u64; n];
    for _ in 0..60_000 {
        p.sample(n, 1, &mut rng, &mut idx, &mut w).unwrap();
        counts[idx[0]] += 1;
        let expect = (pa[idx[0]] / min).powf(-beta) as f32;
        assert!((w[0] - expect).abs() <= 1e-6 * expect.max(1.0));
    }
    assert_eq!(counts[0] + counts[4], 0, "a removed slot was drawn");
    let kept: Vec<usize> = (0..n).filter(|&i| i != 0 && i != 4).collect();
    assert_fits(
        "prioritized with removed slots",
        &kept.iter().map(|&i| counts[i]).collect::<Vec<_>>(),
        &kept.iter().map(|&i| probs[i]).collect::<Vec<_>>(),
    );
}
