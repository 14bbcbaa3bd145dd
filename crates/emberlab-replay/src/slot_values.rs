//! Saving and loading the per-slot values held by a sampler's sum and min trees (`NaN`
//! marks an empty slot); shared by the prioritized and return-weighted samplers.

use crate::codec::{Decoder, Encoder};
use crate::min_tree::MinTree;
use crate::sum_tree::SumTree;
use emberlab_core::Result;

/// Writes every slot's value (`NaN` where empty).
pub fn encode(sum: &SumTree, enc: &mut Encoder) {
    // Slots fill from 0: the values stop at the last occupied slot (the rest are empty).
    let used = (0..sum.capacity())
        .rev()
        .find(|&i| sum.get(i).is_some())
        .map_or(0, |i| i + 1);
    let values: Vec<f64> = (0..used).map(|i| sum.get(i).unwrap_or(f64::NAN)).collect();
    enc.f64s(&values);
}

/// Reads up to `capacity` slot values named `what` (slots past them are empty) into the two trees (rebuilt afterwards);
/// a value for which `valid` is false is a corrupt file.
pub fn decode(
    dec: &mut Decoder<'_>,
    capacity: usize,
    what: &str,
    valid: impl Fn(f64) -> bool,
    sum: &mut SumTree,
    min: &mut MinTree,
) -> Result<()> {
    let values = dec.f64s(what, capacity)?;
    if values.len() > capacity {
        return Err(dec.corrupt(format!("{} {what} for capacity {capacity}", values.len())));
    }
    for (i, &v) in values.iter().enumerate() {
        if v.is_nan() {
            continue;
        }
        if !valid(v) {
            return Err(dec.corrupt(format!("{what}: slot {i} holds {v}")));
        }
        sum.load_leaf(i, Some(v));
        min.load_leaf(i, v);
    }
    sum.rebuild();
    min.rebuild();
    Ok(())
}
