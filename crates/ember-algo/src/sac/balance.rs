//! Which thread samples the soft target's next actions under the parallel schedule.
//!
//! The critic half holds more of an update's multiply-adds than the actor half, but by how
//! much, and whether moving the next actions' sampling to the actor thread balances the
//! two or tips them the other way, depends on the networks' shapes and the machine: on
//! the same 2-vCPU Xeon it made a Pendulum run 1.4% faster and a HalfCheetah-shaped update
//! 4.5% slower. So the learner times both placements, alternating, over its first updates
//! and keeps the faster. Both compute the same values in the same order: the choice never
//! changes a result, only where the work runs.

use std::time::Duration;

/// Updates not timed at first (the worker thread's start, cold caches and allocator).
const WARM_UP: u32 = 4;

/// Timed updates per placement before one is kept (the difference can be a few percent,
/// and single updates vary by more: 16 each picked the slower one in one run of two).
const TRIALS: usize = 48;

/// The timing of both placements and, once decided, the one kept.
#[derive(Debug, Default)]
pub(super) struct NextActionsPlacement {
    seen: u32,
    /// The updates timed without and with the hand-off.
    timed: [Vec<Duration>; 2],
    kept: Option<bool>,
}

impl NextActionsPlacement {
    /// Whether the next update hands the next actions' sampling to the actor thread:
    /// the kept placement, or alternating while both are timed.
    pub(super) fn hand_off(&self) -> bool {
        self.kept.unwrap_or(self.seen.is_multiple_of(2))
    }

    /// Records that an update with `hand_off` as given took `took`.
    pub(super) fn record(&mut self, hand_off: bool, took: Duration) {
        if self.kept.is_some() {
            return;
        }
        self.seen += 1;
        if self.seen <= WARM_UP {
            return;
        }
        self.timed[usize::from(hand_off)].push(took);
        if self.timed.iter().all(|t| t.len() >= TRIALS) {
            // Medians: a preempted update does not decide.
            let median = |t: &mut Vec<Duration>| {
                t.sort_unstable();
                t[t.len() / 2]
            };
            let [without, with] = &mut self.timed;
            self.kept = Some(median(with) < median(without));
            self.timed = Default::default();
        }
    }

    /// The kept placement, once decided.
    #[cfg(test)]
    fn kept(&self) -> Option<bool> {
        self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `p` with updates taking `with` or `without` the hand-off until it decides.
    fn decide(with: u64, without: u64) -> (NextActionsPlacement, u32) {
        let mut p = NextActionsPlacement::default();
        let mut updates = 0;
        while p.kept().is_none() {
            let h = p.hand_off();
            p.record(h, Duration::from_micros(if h { with } else { without }));
            updates += 1;
            assert!(updates < 1000, "never decided");
        }
        (p, updates)
    }

    #[test]
    fn an_outlier_does_not_decide() {
        let mut p = NextActionsPlacement::default();
        let mut first = true;
        while p.kept().is_none() {
            let h = p.hand_off();
            // The hand-off is faster, but one of its updates was preempted for a second.
            let us = match (h, first && h && p.seen > WARM_UP) {
                (true, true) => 1_000_000,
                (true, false) => 1900,
                (false, _) => 2000,
            };
            first &= !(h && p.seen > WARM_UP);
            p.record(h, Duration::from_micros(us));
        }
        assert!(p.hand_off());
    }

    #[test]
    fn keeps_the_faster_placement_after_timing_both() {
        let (p, updates) = decide(1900, 2000);
        assert!(p.hand_off());
        assert_eq!(updates as usize, WARM_UP as usize + 2 * TRIALS);
        let (p, _) = decide(2100, 2000);
        assert!(!p.hand_off());
        // Once kept, later timings change nothing.
        let mut p = p;
        for _ in 0..100 {
            p.record(false, Duration::from_secs(1));
        }
        assert!(!p.hand_off());
    }

    #[test]
    fn alternates_while_timing_and_ignores_the_warm_up() {
        let mut p = NextActionsPlacement::default();
        let mut seen = Vec::new();
        for i in 0..WARM_UP + 4 {
            let h = p.hand_off();
            seen.push(h);
            // Slow warm-up updates with the hand-off must not count against it.
            let us = if i < WARM_UP && h {
                50_000
            } else {
                2000 - u64::from(h)
            };
            p.record(h, Duration::from_micros(us));
        }
        assert_eq!(seen[..4], [true, false, true, false]);
        let (with, without) = (&p.timed[1], &p.timed[0]);
        assert_eq!((with.len(), without.len()), (2, 2));
        assert!(with.iter().all(|w| w < &without[0]));
    }
}
