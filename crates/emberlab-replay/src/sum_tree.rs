//! A 16-ary sum tree over `f64` leaf values that also counts occupied leaves, so that a
//! global shift `c` can be added to every occupied leaf at sampling time without touching
//! the tree: a subtree's mass is `sum + count · c`.
//!
//! Parents are recomputed from their children (never updated by deltas), so the tree holds
//! no accumulated rounding drift: the same leaves always give bit-identical inner nodes.
//! Many draws descend together, level by level, with the next level's block prefetched as
//! soon as it is known; the 256 descents of a batch then overlap their cache misses instead
//! of paying them one after another.

use crate::huge_pages::filled_vec;
use crate::layout::{ARITY, Layout, prefetch};

/// Sixteen child sums: two cache lines, aligned.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(128))]
struct SumBlock([f64; ARITY]);

/// Sixteen child counts: one cache line, aligned (`i32`: converts to `f64` in one packed
/// instruction; capacities are limited to `i32::MAX`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(64))]
struct CountBlock([i32; ARITY]);

/// Sum tree with occupancy counts; see the module docs.
#[derive(Clone, Debug)]
pub struct SumTree {
    layout: Layout,
    sums: Vec<SumBlock>,
    counts: Vec<CountBlock>,
    /// Reused by [`SumTree::set_many`].
    scratch: Vec<usize>,
}

impl PartialEq for SumTree {
    fn eq(&self, other: &Self) -> bool {
        self.layout == other.layout && self.sums == other.sums && self.counts == other.counts
    }
}

/// Marks a descent that met a block without positive mass (only possible through rounding
/// when all remaining mass is ~0); the caller redraws it.
pub const FAILED: usize = usize::MAX;

impl SumTree {
    /// An empty tree with room for `capacity` leaves.
    pub fn new(capacity: usize) -> Self {
        let layout = Layout::new(capacity);
        let n = layout.blocks();
        SumTree {
            layout,
            sums: filled_vec(n, SumBlock([0.0; ARITY])),
            counts: filled_vec(n, CountBlock([0; ARITY])),
            scratch: Vec::new(),
        }
    }

    /// Number of leaves.
    pub fn capacity(&self) -> usize {
        self.layout.capacity()
    }

    /// Marks leaf `i` occupied with value `v`.
    pub fn set(&mut self, i: usize, v: f64) {
        self.write_leaf(i, v, 1);
        self.fix_up(i);
    }

    /// Marks leaf `i` empty (it then has no mass whatever the shift).
    pub fn clear(&mut self, i: usize) {
        self.write_leaf(i, 0.0, 0);
        self.fix_up(i);
    }

    /// Sets many leaves, then recomputes their ancestors level by level (the independent
    /// recomputations of one level overlap their cache misses). `None` empties a leaf.
    pub fn set_many(&mut self, items: impl IntoIterator<Item = (usize, Option<f64>)>) -> usize {
        let mut touched = 0;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        for (i, v) in items {
            match v {
                Some(v) => self.write_leaf(i, v, 1),
                None => self.write_leaf(i, 0.0, 0),
            }
            scratch.push(i);
            touched += 1;
        }
        self.fix_up_many(&mut scratch);
        self.scratch = scratch;
        touched
    }

    /// The value of leaf `i` if occupied.
    pub fn get(&self, i: usize) -> Option<f64> {
        let (b, lane) = self.layout.leaf(i);
        (self.counts[b].0[lane] != 0).then_some(self.sums[b].0[lane])
    }

    /// Number of occupied leaves.
    pub fn count(&self) -> u64 {
        self.counts[0].0.iter().map(|&c| c as u64).sum()
    }

    /// Sum of the occupied leaves' values.
    pub fn sum(&self) -> f64 {
        self.sums[0].0.iter().sum()
    }

    /// Total mass with every occupied leaf shifted by `shift`: `sum + count · shift`,
    /// computed as the descent sees it.
    pub fn total(&self, shift: f64) -> f64 {
        block_sum(&masses(&self.sums[0], &self.counts[0], shift))
    }

    /// Finds the leaf where the cumulative shifted mass first exceeds `u`
    /// (`0 <= u < total(shift)`), or [`FAILED`].
    pub fn find(&self, u: f64, shift: f64) -> usize {
        let mut us = [u];
        let mut out = [0usize];
        self.find_many(shift, &mut us, &mut out);
        out[0]
    }

    /// Descends for every `us[q]` at once, writing leaf indices (or [`FAILED`]) into `out`.
    /// On return `us[q]` holds the chosen leaf's shifted mass `value + shift` (unspecified
    /// for failed descents). With `shift == 0.0` counts are not read.
    pub fn find_many(&self, shift: f64, us: &mut [f64], out: &mut [usize]) {
        debug_assert_eq!(us.len(), out.len());
        if shift == 0.0 {
            self.descend::<false>(0.0, us, out);
        } else {
            self.descend::<true>(shift, us, out);
        }
    }

    fn descend<const SHIFT: bool>(&self, shift: f64, us: &mut [f64], out: &mut [usize]) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { self.descend_avx2::<SHIFT>(shift, us, out) };
            return;
        }
        self.descend_chunks::<SHIFT>(shift, us, out);
    }

    /// The same code compiled for AVX2, where the masses of a block vectorise.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn descend_avx2<const SHIFT: bool>(
        &self,
        shift: f64,
        us: &mut [f64],
        out: &mut [usize],
    ) {
        self.descend_chunks::<SHIFT>(shift, us, out);
    }

    /// Descends in chunks small enough that the blocks prefetched for one level are still
    /// in L1 when the chunk's next level reads them.
    #[inline(always)]
    fn descend_chunks<const SHIFT: bool>(&self, shift: f64, us: &mut [f64], out: &mut [usize]) {
        const CHUNK: usize = 32;
        for (u, node) in us.chunks_mut(CHUNK).zip(out.chunks_mut(CHUNK)) {
            self.descend_chunk::<SHIFT>(shift, u, node);
        }
    }

    #[inline(always)]
    fn descend_chunk<const SHIFT: bool>(&self, shift: f64, us: &mut [f64], out: &mut [usize]) {
        let depth = self.layout.depth();
        out.fill(0);
        for level in 0..depth {
            let base = self.layout.offset(level);
            let next = (level + 1 < depth).then(|| self.layout.offset(level + 1));
            for (u, node) in us.iter_mut().zip(out.iter_mut()) {
                if *node == FAILED {
                    continue;
                }
                let b = base + *node;
                let (child, rest) = if SHIFT {
                    pick(&masses(&self.sums[b], &self.counts[b], shift), *u)
                } else {
                    pick(&self.sums[b].0, *u)
                };
                if child == ARITY {
                    *node = FAILED;
                    continue;
                }
                let e = *node * ARITY + child;
                *node = e;
                let Some(nb) = next else {
                    // At the leaves, hand back the chosen leaf's mass.
                    *u = if SHIFT {
                        self.sums[b].0[child] + shift
                    } else {
                        self.sums[b].0[child]
                    };
                    continue;
                };
                *u = rest;
                {
                    let p = &self.sums[nb + e] as *const SumBlock;
                    prefetch(p);
                    prefetch((p as *const u8).wrapping_add(64));
                    if SHIFT {
                        prefetch(&self.counts[nb + e] as *const CountBlock);
                    }
                }
            }
        }
    }

    /// Rebuilds every inner node from the leaves (after bulk loading).
    pub fn rebuild(&mut self) {
        let depth = self.layout.depth();
        for level in (0..depth.saturating_sub(1)).rev() {
            let base = self.layout.offset(level);
            let child_base = self.layout.offset(level + 1);
            for e in 0..self.layout.width(level + 1) {
                let (s, c) = block_totals(&self.sums[child_base + e], &self.counts[child_base + e]);
                self.sums[base + e / ARITY].0[e % ARITY] = s;
                self.counts[base + e / ARITY].0[e % ARITY] = c;
            }
        }
    }

    /// Writes leaf `i` without fixing its ancestors; call [`SumTree::rebuild`] afterwards.
    pub fn load_leaf(&mut self, i: usize, v: Option<f64>) {
        match v {
            Some(v) => self.write_leaf(i, v, 1),
            None => self.write_leaf(i, 0.0, 0),
        }
    }

    #[inline]
    fn write_leaf(&mut self, i: usize, v: f64, c: i32) {
        assert!(i < self.capacity(), "leaf {i} out of range");
        let (b, lane) = self.layout.leaf(i);
        self.sums[b].0[lane] = v;
        self.counts[b].0[lane] = c;
    }

    fn fix_up(&mut self, i: usize) {
        let mut e = i / ARITY; // block index within the level below
        for level in (0..self.layout.depth() - 1).rev() {
            let child = self.layout.offset(level + 1) + e;
            let (s, c) = block_totals(&self.sums[child], &self.counts[child]);
            let b = self.layout.offset(level) + e / ARITY;
            self.sums[b].0[e % ARITY] = s;
            self.counts[b].0[e % ARITY] = c;
            e /= ARITY;
        }
    }

    fn fix_up_many(&mut self, leaves: &mut [usize]) {
        let depth = self.layout.depth();
        for e in leaves.iter_mut() {
            *e /= ARITY;
            if depth > 1 {
                // The leaf block's other half, its counts and the parent entry's block.
                let p = &self.sums[self.layout.offset(depth - 1) + *e] as *const SumBlock;
                prefetch(p);
                prefetch((p as *const u8).wrapping_add(64));
                prefetch(&self.counts[self.layout.offset(depth - 1) + *e] as *const CountBlock);
                prefetch(&self.sums[self.layout.offset(depth - 2) + *e / ARITY] as *const SumBlock);
                prefetch(
                    &self.counts[self.layout.offset(depth - 2) + *e / ARITY] as *const CountBlock,
                );
            }
        }
        for level in (0..self.layout.depth() - 1).rev() {
            let child_base = self.layout.offset(level + 1);
            let base = self.layout.offset(level);
            for e in leaves.iter_mut() {
                let child = child_base + *e;
                let (s, c) = block_totals(&self.sums[child], &self.counts[child]);
                let b = base + *e / ARITY;
                self.sums[b].0[*e % ARITY] = s;
                self.counts[b].0[*e % ARITY] = c;
                *e /= ARITY;
            }
        }
    }
}

/// Sum and count of one block; the sum is grouped as [`pick`] groups it.
#[inline]
fn block_totals(s: &SumBlock, c: &CountBlock) -> (f64, i32) {
    (block_sum(&s.0), c.0.iter().sum())
}

/// Sums 16 values as four pairwise groups of four, added left to right: the association
/// [`pick`] uses, so that for unshifted trees a parent entry equals the descent's total.
#[inline(always)]
fn group_sums(m: &[f64; ARITY]) -> [f64; 4] {
    [
        (m[0] + m[1]) + (m[2] + m[3]),
        (m[4] + m[5]) + (m[6] + m[7]),
        (m[8] + m[9]) + (m[10] + m[11]),
        (m[12] + m[13]) + (m[14] + m[15]),
    ]
}

#[inline(always)]
fn block_sum(m: &[f64; ARITY]) -> f64 {
    let g = group_sums(m);
    ((g[0] + g[1]) + g[2]) + g[3]
}

/// Shifted masses of a block (negative rounding residue clamped to zero).
#[inline(always)]
fn masses(s: &SumBlock, c: &CountBlock, shift: f64) -> [f64; ARITY] {
    std::array::from_fn(|i| (s.0[i] + shift * c.0[i] as f64).max(0.0))
}

/// The child whose cumulative mass interval holds `u`, and `u`'s offset into it.
///
/// Branch-free two-stage search (a group of four, then a lane within it) keeps the chain
/// of dependent additions short, so many descents overlap. Prefix sums are non-decreasing,
/// so counting those `<= u` gives the index. Rounding corner cases (a `u` at or past the
/// block's total) fall back to [`pick_slow`].
#[inline(always)]
fn pick(m: &[f64; ARITY], u: f64) -> (usize, f64) {
    let g = group_sums(m);
    let p1 = g[0];
    let p2 = p1 + g[1];
    let p3 = p2 + g[2];
    let gi = (p1 <= u) as usize + (p2 <= u) as usize + (p3 <= u) as usize;
    let u1 = u - [0.0, p1, p2, p3][gi];
    let b = gi * 4;
    let q1 = m[b];
    let q2 = q1 + m[b + 1];
    let q3 = q2 + m[b + 2];
    let li = (q1 <= u1) as usize + (q2 <= u1) as usize + (q3 <= u1) as usize;
    let child = b + li;
    if m[child] > 0.0 {
        (child, u1 - [0.0, q1, q2, q3][li])
    } else {
        pick_slow(m, u)
    }
}

/// Sequential search used in rounding corner cases: if `u` lies at or past the block's
/// total, the last child with positive mass is taken, at its far end. Returns `ARITY` if no
/// child has positive mass.
#[cold]
fn pick_slow(m: &[f64; ARITY], u: f64) -> (usize, f64) {
    let mut acc = 0.0;
    for (i, &mi) in m.iter().enumerate() {
        if mi > 0.0 && u < acc + mi {
            return (i, u - acc);
        }
        acc += mi;
    }
    match m.iter().rposition(|&x| x > 0.0) {
        Some(last) => (last, m[last]),
        None => (ARITY, 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_clear_totals() {
        let mut t = SumTree::new(40);
        for i in 0..40 {
            t.set(i, i as f64);
        }
        assert_eq!(t.sum(), (0..40).sum::<usize>() as f64);
        assert_eq!(t.count(), 40);
        assert_eq!(t.total(1.0), t.sum() + 40.0);
        t.clear(39);
        assert_eq!(t.count(), 39);
        assert_eq!(t.get(39), None);
        assert_eq!(t.get(5), Some(5.0));
    }

    #[test]
    fn find_walks_cumulative_mass() {
        let mut t = SumTree::new(300);
        for i in 0..300 {
            t.set(i, 1.0);
        }
        for i in 0..300 {
            assert_eq!(t.find(i as f64 + 0.5, 0.0), i);
        }
        // With shift the negative values still give positive mass.
        let mut t = SumTree::new(3);
        t.set(0, -1.0);
        t.set(1, 0.0);
        t.set(2, 1.0);
        // Shift 1: masses 0, 1, 2.
        assert_eq!(t.total(1.0), 3.0);
        assert_eq!(t.find(0.0, 1.0), 1);
        assert_eq!(t.find(0.99, 1.0), 1);
        assert_eq!(t.find(1.0, 1.0), 2);
        // Past the end (rounding) clamps to the last positive leaf.
        assert_eq!(t.find(3.5, 1.0), 2);
    }

    #[test]
    fn zero_mass_reports_failure() {
        let mut t = SumTree::new(3);
        t.set(0, -1.0);
        assert_eq!(t.find(0.0, 1.0), FAILED);
    }

    #[test]
    fn set_many_equals_single_sets_and_rebuild() {
        let mut a = SumTree::new(5000);
        let mut b = SumTree::new(5000);
        let mut c = SumTree::new(5000);
        let items: Vec<(usize, Option<f64>)> = (0..5000)
            .map(|i| {
                (
                    i * 7919 % 5000,
                    if i % 5 == 0 {
                        None
                    } else {
                        Some(i as f64 * 0.37 - 100.0)
                    },
                )
            })
            .collect();
        for &(i, v) in &items {
            match v {
                Some(v) => a.set(i, v),
                None => a.clear(i),
            }
            c.load_leaf(i, v);
        }
        b.set_many(items.iter().copied());
        c.rebuild();
        assert_eq!(a, b);
        assert_eq!(a, c);
    }
}
