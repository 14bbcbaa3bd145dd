//! Which thread samples the soft target's next actions under the parallel schedule.
//!
//! The critic half holds more of an update's multiply-adds than the actor half, but by how
//! much, and whether moving the next actions' sampling to the actor thread balances the
//! two or tips them the other way, depends on the networks' shapes and the machine: on
//! the same 2-vCPU Xeon moving all of it made a Pendulum run 1.4% faster and a
//! HalfCheetah-shaped update 4.5% slower. So the learner times three placements — none,
//! half or all of the rows sampled on the actor thread — alternating over its first
//! updates, and keeps the fastest. Every row is sampled by the same operations whichever
//! thread samples it (the products are row by row the same, tested): the choice never
//! changes a result, only where the work runs.

use std::time::Duration;

/// Updates not timed at first (the worker thread's start, cold caches and allocator).
const WARM_UP: u32 = 4;

/// Timed updates per placement before one is kept (the difference can be a few percent,
/// and single updates vary by more: 16 each picked the slower one in one run of two).
const TRIALS: usize = 48;

/// Placements: the share of the rows (in halves) the actor thread samples.
const CHOICES: usize = 3;

/// The timing of the placements and, once decided, the one kept.
#[derive(Debug, Default)]
pub(super) struct NextActionsPlacement {
    seen: u32,
    /// The updates timed with each placement.
    timed: [Vec<Duration>; CHOICES],
    kept: Option<usize>,
}

impl NextActionsPlacement {
    /// The placement of the next update: the kept one, or each in turn while they are
    /// timed.
    pub(super) fn choice(&self) -> usize {
        self.kept.unwrap_or(self.seen as usize % CHOICES)
    }

    /// How many of `rows` (the first ones) the actor thread samples under `choice`.
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
    fn decide(us: [u64; CHOICES]) -> (NextActionsPlacement, u32) {
        let mut p = NextActionsPlacement::default();
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
        let (p, updates) = decide([2000, 1900, 1950]);
        assert_eq!(p.choice(), 1);
        assert_eq!(updates as usize, WARM_UP as usize + CHOICES * TRIALS);
        assert_eq!(decide([2000, 2100, 2050]).0.choice(), 0);
        let (mut p, _) = decide([2000, 2100, 1990]);
        assert_eq!(p.choice(), 2);
        // Once kept, later timings change nothing.
        for _ in 0..100 {
            p.record(2, Duration::from_secs(1));
        }
        assert_eq!(p.choice(), 2);
    }

    #[test]
    fn takes_turns_while_timing_and_ignores_the_warm_up() {
        let mut p = NextActionsPlacement::default();
        let mut seen = Vec::new();
        for i in 0..WARM_UP as usize + 6 {
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
        assert_eq!(seen[..6], [0, 1, 2, 0, 1, 2]);
        assert!(p.timed.iter().all(|t| t.len() == 2));
        assert!(p.timed[1].iter().all(|t| t.as_micros() == 1999));
    }

    #[test]
    fn an_outlier_does_not_decide() {
        let mut p = NextActionsPlacement::default();
        let mut preempted = false;
        while p.kept().is_none() {
            let c = p.choice();
            // Placement 2 is the fastest, but one of its timed updates was preempted.
            let slow = !preempted && c == 2 && p.seen >= WARM_UP;
            preempted |= slow;
            let us = if slow {
                1_000_000
            } else {
                2000 - 50 * c as u64
            };
            p.record(c, Duration::from_micros(us));
        }
        assert!(preempted);
        assert_eq!(p.choice(), 2);
    }

    #[test]
    fn placements_split_the_rows_in_halves() {
        let rows: Vec<usize> = (0..CHOICES)
            .map(|c| NextActionsPlacement::rows(c, 256))
            .collect();
        assert_eq!(rows, [0, 128, 256]);
        assert_eq!(NextActionsPlacement::rows(1, 5), 2);
    }
}
