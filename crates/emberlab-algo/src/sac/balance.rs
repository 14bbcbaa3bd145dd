//! Which thread computes the soft target's next values under the parallel schedule.
//!
//! The critic half holds more of an update's multiply-adds than the actor half: on the
//! Pendulum shapes about 9 of the update's 16 large products (next actions 1, target
//! critics 2, critics forward 2 and backward 4) against 7 (actor forward 1, frozen critics
//! forward 2 and back to the action 2 — about 1 once the rows the minimum over the two
//! critics sends nothing through are skipped —, actor backward 2). The actor thread can
//! compute the first rows' next values (their actions, log-probabilities and the target
//! critics' minimum) while the critic thread runs the critic's forward pass, and both
//! halves then meet at the gate of `emberlab_kernels::parts` before either steps: whichever arrives
//! first waits for the other.
//!
//! How many rows balance the halves depends on the networks' shapes, the machine, and the
//! moment: on a 2-vCPU AMD EPYC (Zen 3) the wait at the gate of a Pendulum run swung
//! between the critic half waiting ~1.3 ms and the actor half waiting ~1.5 ms for
//! hundreds of updates at a time with the rows fixed (updates of ~5.6 ms; the cores'
//! speeds change with what their neighbours run). So the rows follow the measured gap
//! between the halves' arrivals: after each update they move by a share ([`GAIN`]) of the
//! rows that would have closed it, each row moved shortening one half and lengthening the
//! other by the time a row of next values takes (measured on the actor thread). Every row
//! is computed by the same operations whichever thread computes it (the products are row
//! by row the same, tested): the rows never change a result, only where the work runs.

use std::time::Duration;

/// Updates that change nothing at first (the worker thread's start, cold caches and
/// allocator).
const WARM_UP: u32 = 4;

/// The actor thread's share of the rows before the first measurement.
const INITIAL_SHARE: f64 = 0.25;

/// Rows move in steps of this many (and the handed rows are a multiple of it).
const STEP: usize = 8;

/// Share of a measured gap corrected after one update: single updates vary by several
/// hundred microseconds either way, so the rows follow the gap's average over the last
/// few updates rather than each one.
const GAIN: f64 = 0.15;

/// Largest move after one update, as a share of the rows (a preempted half must not send
/// the rows from one end to the other).
const MAX_MOVE: f64 = 0.125;

/// Weight of a new measurement in the time per row's moving average.
const PER_ROW_WEIGHT: f64 = 0.1;

/// The actor thread's share of the next values' rows and what moves it.
#[derive(Debug)]
pub(super) struct NextValuesBalance {
    seen: u32,
    /// The actor thread's share of the rows, in `[0, 1]`.
    share: f64,
    /// Seconds a row of next values takes on the actor thread (moving average), once
    /// measured.
    per_row: Option<f64>,
}

impl Default for NextValuesBalance {
    fn default() -> Self {
        NextValuesBalance {
            seen: 0,
            share: INITIAL_SHARE,
            per_row: None,
        }
    }
}

impl NextValuesBalance {
    /// How many of `batch` rows (the first ones) the actor thread computes next: a
    /// multiple of [`STEP`] (or all of them).
    pub(super) fn rows(&self, batch: usize) -> usize {
        let steps = (self.share * batch as f64 / STEP as f64).round() as usize;
        (steps * STEP).min(batch)
    }

    /// Puts the actor thread's share at `share` (tests of the placements).
    #[cfg(test)]
    pub(super) fn set_share(&mut self, share: f64) {
        self.share = share.clamp(0.0, 1.0);
    }

    /// Records an update of `batch` rows in which the actor thread computed `rows` of them
    /// in `hand_off`, and arrived at the gate `gap` seconds after the critic half
    /// (negative: before it).
    pub(super) fn record(&mut self, batch: usize, rows: usize, hand_off: Duration, gap: f64) {
        self.seen += 1;
        if self.seen <= WARM_UP || batch == 0 {
            return;
        }
        if rows >= STEP {
            let t = hand_off.as_secs_f64() / rows as f64;
            self.per_row = Some(match self.per_row {
                Some(avg) => avg + PER_ROW_WEIGHT * (t - avg),
                None => t,
            });
        }
        let Some(per_row) = self.per_row.filter(|&t| t > 0.0) else {
            return;
        };
        // A row moved to the critic thread shortens the actor half by `per_row` and
        // lengthens the critic half by about as much: the gap closes by twice that.
        let closing = gap / (2.0 * per_row) / batch as f64;
        let step = (GAIN * closing).clamp(-MAX_MOVE, MAX_MOVE);
        if step.is_finite() {
            self.share = (self.share - step).clamp(0.0, 1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated update: the actor half takes `actor + rows · per_row`, the critic half
    /// `critic + (batch − rows) · per_row` (seconds); returns the gap and the hand-off.
    fn simulate(
        rows: usize,
        batch: usize,
        actor: f64,
        critic: f64,
        per_row: f64,
    ) -> (f64, Duration) {
        let hand_off = rows as f64 * per_row;
        let a = actor + hand_off;
        let c = critic + (batch - rows) as f64 * per_row;
        (a - c, Duration::from_secs_f64(hand_off))
    }

    /// Runs `updates` simulated updates and returns the balance.
    fn run(b: &mut NextValuesBalance, updates: usize, actor: f64, critic: f64) {
        let (batch, per_row) = (256, 5e-6);
        for _ in 0..updates {
            let rows = b.rows(batch);
            let (gap, hand_off) = simulate(rows, batch, actor, critic, per_row);
            b.record(batch, rows, hand_off, gap);
        }
    }

    #[test]
    fn the_rows_settle_where_the_halves_meet_and_follow_a_change() {
        let mut b = NextValuesBalance::default();
        assert_eq!(b.rows(256), 64);
        // 5 µs a row: the halves meet when the actor thread computes 100 of the 256 rows
        // (2 ms + 100 rows = 1.72 ms + 156 rows).
        run(&mut b, 100, 2.0e-3, 1.72e-3);
        let settled = b.rows(256);
        assert!((96..=104).contains(&settled), "{settled}");
        // The actor's core slows down: they meet at 40 rows.
        run(&mut b, 100, 2.6e-3, 1.72e-3);
        let later = b.rows(256);
        assert!((32..=48).contains(&later), "{later}");
        // The ends hold: a much longer actor half leaves it no rows, a much longer critic
        // half hands it all of them.
        run(&mut b, 100, 10e-3, 2e-3);
        assert_eq!(b.rows(256), 0);
        run(&mut b, 100, 2e-3, 10e-3);
        assert_eq!(b.rows(256), 256);
    }

    #[test]
    fn warm_up_and_outliers_move_the_rows_little() {
        let mut b = NextValuesBalance::default();
        for _ in 0..WARM_UP {
            b.record(256, 64, Duration::from_micros(320), 5e-3);
        }
        assert_eq!(b.rows(256), 64, "the warm-up changes nothing");
        // One update whose actor half was preempted for 50 ms.
        b.record(256, 64, Duration::from_micros(320), 50e-3);
        assert_eq!(b.rows(256), 32, "one move is at most an eighth of the rows");
        // A measurement of no rows keeps the time per row it had.
        b.record(256, 0, Duration::ZERO, -1e-3);
        assert!(b.rows(256) > 32);
        assert_eq!(b.per_row, Some(5e-6));
    }

    #[test]
    fn rows_are_steps_within_the_batch() {
        let mut b = NextValuesBalance::default();
        for share in [0.0, 0.01, 0.26, 0.5, 0.97, 1.0] {
            b.share = share;
            for batch in [1, 5, 64, 100, 256] {
                let r = b.rows(batch);
                assert!(r <= batch);
                assert!(r % STEP == 0 || r == batch, "{share} {batch} {r}");
            }
        }
        b.share = 1.0;
        assert_eq!(b.rows(100), 100);
        assert_eq!(b.rows(5), 5);
    }
}
