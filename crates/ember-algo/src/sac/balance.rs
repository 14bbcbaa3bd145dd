//! Which thread computes the soft target's next values under the parallel schedule.
//!
//! The critic half holds more of an update's multiply-adds than the actor half: on the
//! Pendulum shapes about 9 of the update's 16 large products (next actions 1, target
//! critics 2, critics forward 2 and backward 4) against 7 (actor forward 1, frozen critics
//! forward 2 and back to the action 2 — about 1 once the rows the minimum over the two
//! critics sends nothing through are skipped —, actor backward 2). The actor thread can
//! compute the first rows' next values (their actions, log-probabilities and the target
//! critics' minimum) while the critic thread runs the critic's forward pass. How many rows
//! balance the halves depends on the networks' shapes and the machine (on a 2-vCPU Xeon
//! moving all next actions made a Pendulum run 1.4% faster and a HalfCheetah-shaped update
//! 4.5% slower), so the learner times five placements — none, a quarter, half, three
//! quarters or all of the rows on the actor thread — alternating over its first updates,
//! and keeps the fastest. Every row is computed by the same operations whichever thread
//! computes it (the products are row by row the same, tested): the choice never changes a
//! result, only where the work runs.

use std::time::Duration;

/// Updates not timed at first (the worker thread's start, cold caches and allocator).
const WARM_UP: u32 = 4;

/// Timed updates per placement before one is kept (the difference can be a few percent,
/// and single updates vary by more: 16 each picked the slower one in one run of two).
const TRIALS: usize = 48;

/// Placements: the share of the rows (in quarters) the actor thread computes.
const CHOICES: usize = 5;

/// The timing of the placements and, once decided, the one kept.
#[derive(Debug, Default)]
pub(super) struct NextValuesPlacement {
    seen: u32,
    /// The updates timed with each placement.
    timed: [Vec<Duration>; CHOICES],
    kept: Option<usize>,
}

impl NextValuesPlacement {
    /// The placement of the next update: the kept one, or each in turn while they are
    /// timed.
    pub(super) fn choice(&self) -> usize {
        self.kept.unwrap_or(self.seen as usize % CHOICES)
    }

    /// How many of `rows` (the first ones) the actor thread computes under `choice`.
    pub(super) fn rows(choice: usize, rows: usize) -> usize {
        rows * choice / (CHOICES - 1)
    }

    /// Records that an update with placement `choice` took `took`.
    pub(super) fn record(&mut self, choice: usize, took: Duration) {
        if self.kept.is_some() {
            return;
        }
        self.seen += 1;
        if self.seen <= WARM_UP {
            return;
        }
        self.timed[choice].push(took);
        if self.timed.iter().all(|t| t.len() >= TRIALS) {
            // Medians: a preempted update does not decide.
            let medians = self.timed.iter_mut().map(|t| {
                t.sort_unstable();
                t[t.len() / 2]
            });
            self.kept = medians.enumerate().min_by_key(|&(_, m)| m).map(|(c, _)| c);
            self.timed = Default::default();
        }
    }

    /// The kept placement, once decided.
    #[cfg(test)]
    fn kept(&self) -> Option<usize> {
        self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `p` with updates taking `us[choice]` µs until it decides.
    fn decide(us: [u64; CHOICES]) -> (NextValuesPlacement, u32) {
        let mut p = NextValuesPlacement::default();
        let mut updates = 0;
        while p.kept().is_none() {
            let c = p.choice();
            p.record(c, Duration::from_micros(us[c]));
            updates += 1;
            assert!(updates < 1000, "never decided");
        }
        (p, updates)
    }

    #[test]
    fn keeps_the_fastest_placement_after_timing_all() {
        let (p, updates) = decide([2000, 1900, 1950, 1960, 1970]);
        assert_eq!(p.choice(), 1);
        assert_eq!(updates as usize, WARM_UP as usize + CHOICES * TRIALS);
        assert_eq!(decide([2000, 2100, 2050, 2010, 2020]).0.choice(), 0);
        let (mut p, _) = decide([2000, 2100, 2050, 2010, 1990]);
        assert_eq!(p.choice(), 4);
        // Once kept, later timings change nothing.
        for _ in 0..100 {
            p.record(4, Duration::from_secs(1));
        }
        assert_eq!(p.choice(), 4);
    }

    #[test]
    fn takes_turns_while_timing_and_ignores_the_warm_up() {
        let mut p = NextValuesPlacement::default();
        let mut seen = Vec::new();
        for i in 0..WARM_UP as usize + 2 * CHOICES {
            let c = p.choice();
            seen.push(c);
            // Slow warm-up updates must not count against their placement.
            let us = if i < WARM_UP as usize && c == 1 {
                50_000
            } else {
                2000 - c as u64
            };
            p.record(c, Duration::from_micros(us));
        }
        assert_eq!(seen[..7], [0, 1, 2, 3, 4, 0, 1]);
        assert!(p.timed.iter().all(|t| t.len() == 2));
        assert!(p.timed[1].iter().all(|t| t.as_micros() == 1999));
    }

    #[test]
    fn an_outlier_does_not_decide() {
        let mut p = NextValuesPlacement::default();
        let mut preempted = false;
        while p.kept().is_none() {
            let c = p.choice();
            // Placement 2 is the fastest, but one of its timed updates was preempted.
            let slow = !preempted && c == 2 && p.seen >= WARM_UP;
            preempted |= slow;
            let us = if slow {
                1_000_000
            } else {
                [2000, 1950, 1900, 1950, 2000][c]
            };
            p.record(c, Duration::from_micros(us));
        }
        assert!(preempted);
        assert_eq!(p.choice(), 2);
    }

    #[test]
    fn placements_split_the_rows_in_quarters() {
        let rows: Vec<usize> = (0..CHOICES)
            .map(|c| NextValuesPlacement::rows(c, 256))
            .collect();
        assert_eq!(rows, [0, 64, 128, 192, 256]);
        assert_eq!(NextValuesPlacement::rows(1, 5), 1);
        assert_eq!(NextValuesPlacement::rows(3, 5), 3);
    }
}
