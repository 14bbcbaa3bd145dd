//! The shape shared by the sum and min trees: a 16-ary implicit tree stored level by level.
//!
//! Each node holds the aggregates of its 16 children in one contiguous, aligned block, so a
//! descent touches one block (two cache lines of `f64`) per level: 5 levels for 1M leaves,
//! instead of 20 dependent cache misses in a binary tree. Level `l` is a run of blocks; entry
//! `e` of level `l` (block `e / 16`, lane `e % 16`) aggregates block `e` of level `l + 1`.
//! The last level's entries are the leaves. Block counts are computed bottom-up, so a
//! capacity just above a power of 16 costs no padding beyond one block per level.

/// Children per node.
pub const ARITY: usize = 16;

/// Block offsets of each level, root level first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    capacity: usize,
    /// `offsets[l]` is the index of level `l`'s first block; `offsets[depth]` is the total.
    offsets: Vec<usize>,
}

impl Layout {
    /// The layout for `capacity` leaves (at least one block even for zero).
    pub fn new(capacity: usize) -> Self {
        let mut widths = vec![capacity.div_ceil(ARITY).max(1)];
        while *widths.last().unwrap() > 1 {
            let w = widths.last().unwrap().div_ceil(ARITY);
            widths.push(w);
        }
        widths.reverse();
        let mut offsets = Vec::with_capacity(widths.len() + 1);
        let mut acc = 0;
        for w in &widths {
            offsets.push(acc);
            acc += w;
        }
        offsets.push(acc);
        Layout { capacity, offsets }
    }

    /// Number of leaves.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of levels (the root block is level 0, the leaves' blocks the last).
    pub fn depth(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Index of level `l`'s first block.
    #[inline]
    pub fn offset(&self, level: usize) -> usize {
        self.offsets[level]
    }

    /// Total number of blocks.
    pub fn blocks(&self) -> usize {
        self.offsets[self.depth()]
    }

    /// Number of blocks on level `l`.
    pub fn width(&self, level: usize) -> usize {
        self.offsets[level + 1] - self.offsets[level]
    }

    /// Global block index holding leaf `i`, and its lane.
    #[inline]
    pub fn leaf(&self, i: usize) -> (usize, usize) {
        (self.offsets[self.depth() - 1] + i / ARITY, i % ARITY)
    }
}

/// Hints the CPU to bring the cache line holding `p` into L1. Never faults, has no effect
/// on results; a no-op on targets without a prefetch instruction.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never dereferences in a way that can fault.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let l = Layout::new(1 << 20);
        assert_eq!(l.depth(), 5);
        assert_eq!(l.width(4), 65536);
        assert_eq!(l.width(0), 1);
        let l = Layout::new(10);
        assert_eq!(l.depth(), 1);
        assert_eq!(l.blocks(), 1);
        let l = Layout::new(17);
        assert_eq!(l.depth(), 2);
        assert_eq!(l.width(1), 2);
        assert_eq!(l.leaf(16), (1 + 1, 0));
        let l = Layout::new((1 << 20) + 1);
        assert_eq!(l.depth(), 6);
        assert_eq!(l.width(5), 65537);
        assert_eq!(l.width(0), 1);
        assert_eq!(Layout::new(0).blocks(), 1);
    }
}
