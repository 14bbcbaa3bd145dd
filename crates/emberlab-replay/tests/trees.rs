//! Property tests: the sum and min trees agree with a naive model under random sequences of
//! ring pushes (which evict), score updates and removals.

use emberlab_replay::{FAILED, MinTree, SumTree};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// Push a new score at the ring head (evicting the oldest once full).
    Push(f64),
    /// Overwrite the score of an occupied slot (index taken modulo the occupied count).
    Update(usize, f64),
    /// Empty an occupied slot.
    Remove(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let score = prop_oneof![-1e3f64..1e3, Just(0.0), -1.0f64..1.0];
    prop_oneof![
        6 => score.clone().prop_map(Op::Push),
        3 => (any::<usize>(), score).prop_map(|(i, v)| Op::Update(i, v)),
        1 => any::<usize>().prop_map(Op::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn trees_match_naive_model(cap in 1usize..600, ops in prop::collection::vec(op(), 1..400)) {
        let mut sum = SumTree::new(cap);
        let mut min = MinTree::new(cap);
        let mut model: Vec<Option<f64>> = vec![None; cap];
        let mut head = 0;
        for op in ops {
            match op {
                Op::Push(v) => {
                    sum.set(head, v);
                    min.set(head, v);
                    model[head] = Some(v);
                    head = (head + 1) % cap;
                }
                Op::Update(i, v) => {
                    let occ: Vec<usize> = (0..cap).filter(|&j| model[j].is_some()).collect();
                    if occ.is_empty() {
                        continue;
                    }
                    let j = occ[i % occ.len()];
                    sum.set(j, v);
                    min.set(j, v);
                    model[j] = Some(v);
                }
                Op::Remove(i) => {
                    let occ: Vec<usize> = (0..cap).filter(|&j| model[j].is_some()).collect();
                    if occ.is_empty() {
                        continue;
                    }
                    let j = occ[i % occ.len()];
                    sum.clear(j);
                    min.set(j, f64::INFINITY);
                    model[j] = None;
                }
            }
        }
        let vals: Vec<f64> = model.iter().flatten().copied().collect();
        prop_assert_eq!(sum.count(), vals.len() as u64);
        let naive_sum: f64 = vals.iter().sum();
        let scale: f64 = vals.iter().map(|v| v.abs()).sum::<f64>() + 1.0;
        prop_assert!((sum.sum() - naive_sum).abs() <= 1e-12 * scale);
        let naive_min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        prop_assert_eq!(min.min(), naive_min);
        for (i, m) in model.iter().enumerate() {
            prop_assert_eq!(sum.get(i), *m);
        }
        // Rebuilding from the leaves gives the identical tree: no drift from updates.
        let mut rebuilt = SumTree::new(cap);
        for (i, m) in model.iter().enumerate() {
            rebuilt.load_leaf(i, *m);
        }
        rebuilt.rebuild();
        prop_assert_eq!(&rebuilt, &sum);
        // Descents land where the naive cumulative search lands (away from boundaries).
        let shift = if naive_min < 0.0 { -naive_min } else { 0.0 };
        let w: Vec<f64> = model.iter().map(|m| m.map_or(0.0, |v| (v + shift).max(0.0))).collect();
        let total: f64 = w.iter().sum();
        if total > 0.0 {
            let mut acc = 0.0;
            for (i, &wi) in w.iter().enumerate() {
                if wi > 1e-9 * total {
                    let u = acc + wi * 0.5;
                    let found = sum.find(u, shift);
                    prop_assert!(found != FAILED);
                    prop_assert_eq!(found, i, "u = {} of total {}", u, total);
                }
                acc += wi;
            }
        }
    }
}
