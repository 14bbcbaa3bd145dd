//! Round-trip latencies of a long-running actor in constant memory: a log-spaced
//! histogram (exact below 64 µs, 32 buckets per octave above: within 3.2%).

/// Buckets: 64 exact ones, then 32 per octave from 2^6 to 2^32 µs.
const BUCKETS: usize = 64 + 26 * 32;

/// A histogram of latencies in microseconds.
#[derive(Clone, Debug)]
pub(crate) struct Latencies {
    counts: Vec<u64>,
    total: u64,
}

impl Latencies {
    pub(crate) fn new() -> Self {
        Latencies {
            counts: vec![0; BUCKETS],
            total: 0,
        }
    }

    /// Records one latency.
    pub(crate) fn record(&mut self, us: u32) {
        self.counts[bucket(us)] += 1;
        self.total += 1;
    }

    /// The `q` quantile (nearest rank), as its bucket's lower bound; 0 with none.
    pub(crate) fn quantile(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((self.total as f64 * q).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return lower_bound(b) as f64;
            }
        }
        lower_bound(BUCKETS - 1) as f64
    }
}

fn bucket(us: u32) -> usize {
    if us < 64 {
        return us as usize;
    }
    let octave = 31 - us.leading_zeros() as usize; // >= 6
    let sub = ((us >> (octave - 5)) & 31) as usize;
    64 + (octave - 6) * 32 + sub
}

fn lower_bound(b: usize) -> u64 {
    if b < 64 {
        return b as u64;
    }
    let (octave, sub) = ((b - 64) / 32 + 6, (b - 64) % 32);
    (32 + sub as u64) << (octave - 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_sorted_values_within_the_bucket_width() {
        let mut h = Latencies::new();
        assert_eq!(h.quantile(0.5), 0.0);
        let values: Vec<u32> = (1..=10_000).map(|i| (i * 7919) % 100_003).collect();
        for &v in &values {
            h.record(v);
        }
        h.record(u32::MAX);
        let mut sorted = values.clone();
        sorted.push(u32::MAX);
        sorted.sort_unstable();
        for q in [0.01, 0.5, 0.9, 0.99] {
            let exact = f64::from(sorted[(sorted.len() as f64 * q).ceil() as usize - 1]);
            let got = h.quantile(q);
            assert!(
                got <= exact && got >= exact * 0.968,
                "q {q}: {got} vs {exact}"
            );
        }
        assert_eq!(h.quantile(1.0), lower_bound(bucket(u32::MAX)) as f64);
        for v in [0, 1, 63, 64, 65, 1000, 1 << 20, u32::MAX] {
            let b = bucket(v);
            assert!(b < BUCKETS && lower_bound(b) <= u64::from(v), "{v}");
            assert!(b + 1 == BUCKETS || lower_bound(b + 1) > u64::from(v), "{v}");
        }
    }
}
