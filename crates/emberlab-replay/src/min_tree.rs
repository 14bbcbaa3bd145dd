//! A 16-ary min tree: the exact minimum of the occupied leaves after any sequence of
//! writes and evictions (a running minimum would be wrong once the ring evicts it).

use crate::huge_pages::filled_vec;
use crate::layout::{ARITY, Layout, prefetch};

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(128))]
struct MinBlock([f64; ARITY]);

/// Min tree over `f64` leaves; empty leaves hold `+inf`.
#[derive(Clone, Debug, PartialEq)]
pub struct MinTree {
    layout: Layout,
    blocks: Vec<MinBlock>,
}

impl MinTree {
    /// An empty tree (minimum `+inf`) with room for `capacity` leaves.
    pub fn new(capacity: usize) -> Self {
        let layout = Layout::new(capacity);
        let n = layout.blocks();
        MinTree {
            layout,
            blocks: filled_vec(n, MinBlock([f64::INFINITY; ARITY])),
        }
    }

    /// Number of leaves.
    pub fn capacity(&self) -> usize {
        self.layout.capacity()
    }

    /// The minimum over occupied leaves (`+inf` when none).
    pub fn min(&self) -> f64 {
        block_min(&self.blocks[0])
    }

    /// Sets leaf `i` (use `f64::INFINITY` to empty it).
    pub fn set(&mut self, i: usize, v: f64) {
        self.load_leaf(i, v);
        let mut e = i / ARITY;
        for level in (0..self.layout.depth() - 1).rev() {
            let m = block_min(&self.blocks[self.layout.offset(level + 1) + e]);
            self.blocks[self.layout.offset(level) + e / ARITY].0[e % ARITY] = m;
            e /= ARITY;
        }
    }

    /// Sets many leaves, then recomputes their ancestors level by level, so that the
    /// independent recomputations of one level overlap their cache misses. `scratch` is
    /// reused between calls.
    pub fn set_many(
        &mut self,
        items: impl IntoIterator<Item = (usize, f64)>,
        scratch: &mut Vec<usize>,
    ) {
        scratch.clear();
        for (i, v) in items {
            self.load_leaf(i, v);
            scratch.push(i / ARITY);
        }
        // Bring in the leaf blocks' other halves and the parents before the passes.
        if self.layout.depth() > 1 {
            let (leaf_base, parent_base) = (
                self.layout.offset(self.layout.depth() - 1),
                self.layout.offset(self.layout.depth() - 2),
            );
            for &e in scratch.iter() {
                let p = &self.blocks[leaf_base + e] as *const MinBlock;
                prefetch(p);
                prefetch((p as *const u8).wrapping_add(64));
                prefetch(&self.blocks[parent_base + e / ARITY] as *const MinBlock);
            }
        }
        for level in (0..self.layout.depth() - 1).rev() {
            let (child_base, base) = (self.layout.offset(level + 1), self.layout.offset(level));
            for e in scratch.iter_mut() {
                let m = block_min(&self.blocks[child_base + *e]);
                self.blocks[base + *e / ARITY].0[*e % ARITY] = m;
                *e /= ARITY;
            }
        }
    }

    /// Writes leaf `i` without fixing its ancestors; call [`MinTree::rebuild`] afterwards.
    pub fn load_leaf(&mut self, i: usize, v: f64) {
        assert!(i < self.capacity(), "leaf {i} out of range");
        let (b, lane) = self.layout.leaf(i);
        self.blocks[b].0[lane] = v;
    }

    /// Recomputes every inner node from the leaves.
    pub fn rebuild(&mut self) {
        let depth = self.layout.depth();
        for level in (0..depth.saturating_sub(1)).rev() {
            for e in 0..self.layout.width(level + 1) {
                let m = block_min(&self.blocks[self.layout.offset(level + 1) + e]);
                self.blocks[self.layout.offset(level) + e / ARITY].0[e % ARITY] = m;
            }
        }
    }
}

/// Minimum of a block as a pairwise tree (short dependency chain, vectorises).
#[inline]
fn block_min(b: &MinBlock) -> f64 {
    let m = &b.0;
    let a: [f64; 8] = std::array::from_fn(|i| m[i].min(m[i + 8]));
    let c: [f64; 4] = std::array::from_fn(|i| a[i].min(a[i + 4]));
    c[0].min(c[2]).min(c[1].min(c[3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_survives_eviction_of_the_minimum() {
        let mut t = MinTree::new(1000);
        assert_eq!(t.min(), f64::INFINITY);
        for i in 0..1000 {
            t.set(i, 10.0 + i as f64);
        }
        assert_eq!(t.min(), 10.0);
        t.set(0, 500.0); // the minimum is overwritten
        assert_eq!(t.min(), 11.0);
        t.set(999, -3.0);
        assert_eq!(t.min(), -3.0);
        t.set(999, f64::INFINITY);
        assert_eq!(t.min(), 11.0);
        let mut u = MinTree::new(1000);
        for i in 0..1000 {
            u.set(i, 10.0 + i as f64);
        }
        u.set_many(
            [(0, 500.0), (999, -3.0), (999, f64::INFINITY)],
            &mut Vec::new(),
        );
        assert_eq!(u, t);
    }
}
