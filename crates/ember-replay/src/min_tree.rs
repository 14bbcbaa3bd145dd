//! A 16-ary min tree: the exact minimum of the occupied leaves after any sequence of
//! writes and evictions (a running minimum would be wrong once the ring evicts it).

use crate::layout::{ARITY, Layout};

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
            blocks: vec![MinBlock([f64::INFINITY; ARITY]); n],
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

#[inline]
fn block_min(b: &MinBlock) -> f64 {
    b.0.iter().copied().fold(f64::INFINITY, f64::min)
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
    }
}
