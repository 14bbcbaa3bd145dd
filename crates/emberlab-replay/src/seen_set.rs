//! A membership bitset over storage slots, cleared item by item so that a draw of `k`
//! indices costs O(k), not O(capacity).

/// Bitset of slots `0..capacity`.
#[derive(Clone, Debug, Default)]
pub struct SeenSet {
    bits: Vec<u64>,
}

impl SeenSet {
    /// A set able to hold `0..capacity`.
    pub fn new(capacity: usize) -> Self {
        SeenSet {
            bits: vec![0; capacity.div_ceil(64)],
        }
    }

    /// Inserts `i`; returns whether it was absent.
    #[inline]
    pub fn insert(&mut self, i: usize) -> bool {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let was = self.bits[w] & b;
        self.bits[w] |= b;
        was == 0
    }

    /// Removes `i`; returns whether it was present.
    #[inline]
    pub fn remove(&mut self, i: usize) -> bool {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let was = self.bits[w] & b;
        self.bits[w] &= !b;
        was != 0
    }

    /// Whether `i` is in the set.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.bits[i / 64] & (1u64 << (i % 64)) != 0
    }

    /// The set's words, 64 items each (item `i` is bit `i % 64` of word `i / 64`).
    pub fn words(&self) -> &[u64] {
        &self.bits
    }

    /// The words, to fill from a saved copy of [`SeenSet::words`].
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.bits
    }

    /// Removes every listed item (leaving the set empty if they were all its items).
    pub fn clear_items(&mut self, items: &[usize]) {
        for &i in items {
            self.bits[i / 64] &= !(1u64 << (i % 64));
        }
    }

    /// Whether no bit is set (O(capacity); for tests).
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }
}
