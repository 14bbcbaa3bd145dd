//! The schedule a [`super::Parts::auto`] picks for itself, by timing the learner's own
//! updates on the machine they run on.
//!
//! Which schedule is fastest depends on the CPU, on the update's shapes and on what else
//! runs: two threads win where the cores are the learner's own, one wins where two vCPUs
//! are hyperthreads of one core and the update is small, and a spinning wait speeds up one
//! machine while it slows another 2.9× (docs/benchmarks.md, "Speed on every CPU"). Every
//! setting gives the same bits ([`super`]'s guarantees), so a tuner can try them on the
//! real updates:
//!
//! 1. after [`WARMUP_RUNS`] runs (helper threads started, allocator warm), it deals blocks
//!    of [`BLOCK_RUNS`] consecutive runs to the settings in turn, up to [`ROUNDS`] blocks
//!    each; a block's time is the wall time from the end of the run before it to the end
//!    of its last run, so it counts what the setting costs between runs too (a spinning
//!    helper slows the caller's environment steps on a shared core). From the third round
//!    on, a setting whose median is more than [`PRUNE`] times the best one's drops out, so
//!    a slow setting costs little of the trial; in a re-trial (every setting was timed
//!    before) from the first round on, so a setting twice as slow costs one block, not
//!    three, each time the trial is repeated;
//! 2. it keeps the setting with the least median block time (a re-trial keeps the setting
//!    in use unless another is faster by more than [`MARGIN`]);
//! 3. it keeps timing blocks, and tries again when the median of the last [`CHECK_BLOCKS`]
//!    blocks moves more than [`DRIFT`] away from what the trial measured (another process
//!    came or went), and after [`FIRST_PERIOD_BLOCKS`] blocks in any case, a period that
//!    doubles after each such trial up to [`PERIOD_BLOCKS`]: the first trial runs in the
//!    first updates of a run, where a transient can mislead it (on an Intel Xeon the REDQ
//!    example's first trial timed parallel runs at twice their later cost in five runs of
//!    eight and kept sequential for the whole run, since a setting that stays as fast as its
//!    trial said never drifts); the early re-trials correct that. A trial that keeps the
//!    setting it had doubles the blocks that must pass before the next drift counts (an
//!    update whose cost moves on its own, as DQN's bursts of 128 updates every 256 env
//!    steps, stops paying for trials); one that changes it starts over.
//!
//! A trial costs a few hundred milliseconds of updates run on settings that may be slower;
//! the results are the same whichever runs.

use std::fmt;
use std::time::Instant;

/// Runs before the first trial: the helpers start, caches and the allocator warm up.
pub const WARMUP_RUNS: usize = 16;
/// Consecutive runs timed together on one setting.
pub const BLOCK_RUNS: usize = 8;
/// Blocks each setting gets in a trial.
pub const ROUNDS: usize = 5;
/// A setting this many times slower than the best (by median) leaves the trial early.
pub const PRUNE: f64 = 1.5;
/// Blocks whose median is compared with the trial's after it.
pub const CHECK_BLOCKS: usize = 8;
/// A median this many times slower or faster than the trial's starts a new trial.
pub const DRIFT: f64 = 1.3;
/// Blocks after the first trial before it is repeated in any case (a confirmation); the
/// period doubles after each repetition, up to [`PERIOD_BLOCKS`].
pub const FIRST_PERIOD_BLOCKS: u64 = 32;
/// The longest period between two trials.
pub const PERIOD_BLOCKS: u64 = 4096;
/// A re-trial keeps the setting in use unless another's median is faster by more than this
/// fraction: two settings within noise of each other would otherwise take turns, and each
/// change restarts the hold-off (more trials, more blocks on slower settings).
pub const MARGIN: f64 = 0.05;

/// One way to run an update's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Threads the parts are dealt to (1: in order on the calling thread).
    pub threads: usize,
    /// Whether waits spin for [`crate::worker::spin_budget`] before they block (`false`:
    /// they block at once).
    pub spin: bool,
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.threads, self.spin) {
            (1, _) => write!(f, "sequential"),
            (n, true) => write!(f, "parallel on {n} threads"),
            (n, false) => write!(f, "parallel on {n} threads, waits block"),
        }
    }
}

/// What a trial found.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuning {
    /// The setting in use.
    pub chosen: Setting,
    /// Each setting tried, with its median seconds per run (runs and what lies between
    /// them), in the order tried.
    pub tried: Vec<(Setting, f64)>,
    /// Trials so far (the first, those after the load changed and the periodic ones).
    pub trials: u32,
    /// What started the last trial: the median of the recent blocks over the one the trial
    /// before measured (outside `[1/DRIFT, DRIFT]`); `None` for the first trial, and for one
    /// after the period ([`FIRST_PERIOD_BLOCKS`]) unless a drift held at the same time.
    pub drift: Option<f64>,
}

impl fmt::Display for Tuning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (", self.chosen)?;
        for (i, (s, secs)) in self.tried.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{s}: {:.3} ms", secs * 1e3)?;
        }
        write!(f, "; trial {}", self.trials)?;
        if let Some(d) = self.drift {
            write!(f, ", after blocks ran {d:.2}× the trial's time")?;
        }
        write!(f, ")")
    }
}

enum Phase {
    Warmup {
        left: usize,
    },
    /// `order`: the settings still in the trial; the current block is `order[pos]`'s.
    Trial {
        order: Vec<usize>,
        pos: usize,
        round: usize,
        times: Vec<Vec<f64>>,
    },
    Chosen {
        index: usize,
        baseline: f64,
        recent: Vec<f64>,
        blocks: u64,
    },
}

/// Times runs and picks a [`Setting`] (module docs).
pub(crate) struct Tuner {
    candidates: Vec<Setting>,
    phase: Phase,
    /// Blocks after a trial before a drift starts another (doubles while trials keep
    /// the same setting).
    holdoff: u64,
    /// Blocks after a trial before the next one in any case ([`FIRST_PERIOD_BLOCKS`],
    /// doubling up to [`PERIOD_BLOCKS`]).
    period: u64,
    in_block: usize,
    block_start: Instant,
    tuning: Option<Tuning>,
    /// The drift that started the trial under way ([`Tuning::drift`]).
    cause: Option<f64>,
}

impl fmt::Debug for Tuner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tuner")
            .field("candidates", &self.candidates)
            .field("setting", &self.setting())
            .field("tuning", &self.tuning)
            .finish_non_exhaustive()
    }
}

/// The median of `v` (not empty).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Tuner {
    /// A tuner choosing among `candidates` (at least one; the first is used until the first
    /// trial ends).
    pub(crate) fn new(candidates: Vec<Setting>) -> Tuner {
        assert!(!candidates.is_empty(), "a tuner needs a setting to choose");
        Tuner {
            candidates,
            phase: Phase::Warmup { left: WARMUP_RUNS },
            holdoff: CHECK_BLOCKS as u64,
            period: FIRST_PERIOD_BLOCKS,
            in_block: 0,
            block_start: Instant::now(),
            tuning: None,
            cause: None,
        }
    }

    /// The setting of the next run.
    pub(crate) fn setting(&self) -> Setting {
        let i = match &self.phase {
            Phase::Warmup { .. } => 0,
            Phase::Trial { order, pos, .. } => order[*pos],
            Phase::Chosen { index, .. } => *index,
        };
        self.candidates[i]
    }

    /// The last trial's result (`None` before the first ends).
    pub(crate) fn tuning(&self) -> Option<&Tuning> {
        self.tuning.as_ref()
    }

    /// Counts a run that ended at `now`; `Some` when a trial just ended.
    pub(crate) fn after_run(&mut self, now: Instant) -> Option<&Tuning> {
        if let Phase::Warmup { left } = &mut self.phase {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.start_trial(now);
            }
            return None;
        }
        self.in_block += 1;
        if self.in_block < BLOCK_RUNS {
            return None;
        }
        let secs = now.duration_since(self.block_start).as_secs_f64();
        self.in_block = 0;
        self.block_start = now;
        let n = self.candidates.len();
        match &mut self.phase {
            Phase::Warmup { .. } => None,
            Phase::Trial {
                order,
                pos,
                round,
                times,
            } => {
                times[order[*pos]].push(secs);
                *pos += 1;
                if *pos < order.len() {
                    return None;
                }
                (*pos, *round) = (0, *round + 1);
                let medians: Vec<f64> = times
                    .iter()
                    .map(|t| {
                        if t.is_empty() {
                            f64::INFINITY
                        } else {
                            median(t)
                        }
                    })
                    .collect();
                let best = order
                    .iter()
                    .map(|&i| medians[i])
                    .fold(f64::INFINITY, f64::min);
                let prune_from = if self.tuning.is_some() { 1 } else { 3 };
                if *round >= prune_from {
                    order.retain(|&i| medians[i] <= PRUNE * best);
                }
                if *round < ROUNDS && order.len() > 1 {
                    return None;
                }
                // The least median; the earlier setting on a tie; the setting in use when
                // it is within the margin of that.
                let best = order
                    .iter()
                    .copied()
                    .fold(order[0], |b, i| if medians[i] < medians[b] { i } else { b });
                let current = self
                    .tuning
                    .as_ref()
                    .and_then(|t| self.candidates.iter().position(|c| *c == t.chosen));
                let index = match current {
                    Some(c)
                        if order.contains(&c) && medians[c] <= medians[best] * (1.0 + MARGIN) =>
                    {
                        c
                    }
                    _ => best,
                };
                let trials = self.tuning.as_ref().map_or(0, |t| t.trials) + 1;
                self.holdoff = match &self.tuning {
                    Some(t) if t.chosen == self.candidates[index] => {
                        (self.holdoff * 2).min(PERIOD_BLOCKS)
                    }
                    _ => CHECK_BLOCKS as u64,
                };
                self.tuning = Some(Tuning {
                    chosen: self.candidates[index],
                    tried: (0..n)
                        .map(|i| (self.candidates[i], medians[i] / BLOCK_RUNS as f64))
                        .collect(),
                    trials,
                    drift: self.cause.take(),
                });
                self.phase = Phase::Chosen {
                    index,
                    baseline: medians[index],
                    recent: Vec::with_capacity(CHECK_BLOCKS),
                    blocks: 0,
                };
                self.tuning.as_ref()
            }
            Phase::Chosen {
                baseline,
                recent,
                blocks,
                ..
            } => {
                *blocks += 1;
                if recent.len() == CHECK_BLOCKS {
                    recent.remove(0);
                }
                recent.push(secs);
                let drift = (recent.len() == CHECK_BLOCKS && *blocks >= self.holdoff)
                    .then(|| median(recent) / *baseline)
                    .filter(|ratio| !(1.0 / DRIFT..=DRIFT).contains(ratio));
                let due = *blocks >= self.period;
                if n > 1 && (drift.is_some() || due) {
                    if due {
                        self.period = (self.period * 2).min(PERIOD_BLOCKS);
                    }
                    self.cause = drift;
                    self.start_trial(now);
                }
                None
            }
        }
    }

    fn start_trial(&mut self, now: Instant) {
        self.phase = Phase::Trial {
            order: (0..self.candidates.len()).collect(),
            pos: 0,
            round: 0,
            times: vec![Vec::with_capacity(ROUNDS); self.candidates.len()],
        };
        self.in_block = 0;
        self.block_start = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const PAR: Setting = Setting {
        threads: 2,
        spin: true,
    };
    const QUIET: Setting = Setting {
        threads: 2,
        spin: false,
    };
    const SEQ: Setting = Setting {
        threads: 1,
        spin: true,
    };

    /// Drives a tuner with a clock: each run of setting `s` takes `cost(s, run)`.
    fn drive(t: &mut Tuner, runs: usize, cost: impl Fn(Setting, usize) -> f64) -> Vec<Setting> {
        let mut now = Instant::now();
        t.block_start = now;
        let mut used = Vec::new();
        for run in 0..runs {
            let s = t.setting();
            used.push(s);
            now += Duration::from_secs_f64(cost(s, run));
            t.after_run(now);
        }
        used
    }

    fn trial_runs(n: usize) -> usize {
        WARMUP_RUNS + n * ROUNDS * BLOCK_RUNS
    }

    /// Drives a tuner of `candidates` (the first winning the first trial) whose runs cost
    /// `cost(setting, busy)`, `busy` from a run well after the first trial on (the load
    /// changed), until a second trial has ended; the tuner and the settings used.
    fn across_a_load_change(
        candidates: Vec<Setting>,
        cost: impl Fn(Setting, bool) -> f64,
    ) -> (Tuner, Vec<Setting>) {
        let first = candidates[0];
        let n = candidates.len();
        let busy = trial_runs(n) + 20 * BLOCK_RUNS;
        let mut t = Tuner::new(candidates);
        let runs = busy + (CHECK_BLOCKS + 2) * BLOCK_RUNS + trial_runs(n);
        let used = drive(&mut t, runs, |s, run| cost(s, run >= busy));
        assert_eq!(
            used[busy - 1],
            first,
            "the first trial chose the first setting"
        );
        (t, used)
    }

    #[test]
    fn it_keeps_the_fastest_setting_and_says_what_it_measured() {
        let cost = |s: Setting, _| match (s.threads, s.spin) {
            (2, true) => 0.026,
            (2, false) => 0.009,
            _ => 0.013,
        };
        let mut t = Tuner::new(vec![PAR, QUIET, SEQ]);
        let used = drive(&mut t, trial_runs(3) + 100, cost);
        // Warm-up on the first, then blocks in turn, then the fastest only.
        assert!(used[..WARMUP_RUNS].iter().all(|s| *s == PAR));
        assert_eq!(
            used[WARMUP_RUNS..WARMUP_RUNS + BLOCK_RUNS],
            [PAR; BLOCK_RUNS]
        );
        let after = &used[WARMUP_RUNS + BLOCK_RUNS..WARMUP_RUNS + 2 * BLOCK_RUNS];
        assert!(after.iter().all(|s| *s == QUIET));
        assert!(used[trial_runs(3)..].iter().all(|s| *s == QUIET));
        let tuning = t.tuning().unwrap();
        assert_eq!(
            (tuning.chosen, tuning.trials, tuning.drift),
            (QUIET, 1, None)
        );
        let ms: Vec<f64> = tuning
            .tried
            .iter()
            .map(|(_, s)| (s * 1e3).round())
            .collect();
        assert_eq!(ms, vec![26.0, 9.0, 13.0]);
        assert!(
            tuning
                .to_string()
                .starts_with("parallel on 2 threads, waits block (")
        );
    }

    #[test]
    fn medians_ignore_a_stalled_block() {
        // One block of the fastest setting stalls (the process was descheduled): the
        // median of its blocks still wins.
        let stall = WARMUP_RUNS + BLOCK_RUNS + 3;
        let cost = move |s: Setting, run: usize| match (s.threads, run == stall) {
            (_, true) => 1.0,
            (2, _) => 0.004,
            _ => 0.005,
        };
        let mut t = Tuner::new(vec![SEQ, PAR]);
        drive(&mut t, trial_runs(2), cost);
        assert_eq!(t.tuning().unwrap().chosen, PAR);
    }

    #[test]
    fn a_change_of_load_starts_a_new_trial_that_can_choose_otherwise() {
        // Parallel wins until another process takes a core; then sequential.
        let (t, used) = across_a_load_change(vec![PAR, SEQ], |s, busy| match (s.threads, busy) {
            (2, false) => 0.004,
            (_, false) => 0.006,
            (2, true) => 0.030,
            (_, true) => 0.012,
        });
        let tuning = t.tuning().unwrap();
        assert_eq!((tuning.chosen, tuning.trials), (SEQ, 2));
        // Parallel's blocks went from 4 to 30 ms per run: the trial says a drift started it.
        let drift = tuning.drift.expect("a drift started the second trial");
        assert!((DRIFT..=7.5).contains(&drift), "{drift}");
        assert!(tuning.to_string().contains("after blocks ran"), "{tuning}");
        assert_eq!(*used.last().unwrap(), SEQ);
    }

    #[test]
    fn a_re_trial_keeps_the_setting_in_use_within_the_margin() {
        // Parallel wins the first trial; after the load doubles every run's cost, blocking
        // waits are 2% faster (within MARGIN): the re-trial keeps parallel. Had they been
        // 20% faster, it would change.
        for (gain, want) in [(0.98, PAR), (0.80, QUIET)] {
            let (t, used) =
                across_a_load_change(vec![PAR, QUIET], |s, busy| match (s.spin, busy) {
                    (true, false) => 0.004,
                    (false, false) => 0.0044,
                    (true, true) => 0.008,
                    (false, true) => 0.008 * gain,
                });
            let tuning = t.tuning().unwrap();
            assert_eq!((tuning.chosen, tuning.trials), (want, 2), "gain {gain}");
            assert_eq!(*used.last().unwrap(), want);
        }
    }

    #[test]
    fn a_re_trial_drops_a_slow_setting_after_its_first_block() {
        // Sequential runs 3x parallel's time: the first trial times it for three blocks
        // before it drops out, the periodic re-trial for one.
        let cost = |s: Setting, _| if s.threads == 2 { 0.004 } else { 0.012 };
        let mut t = Tuner::new(vec![PAR, SEQ]);
        let first_end = WARMUP_RUNS + 6 * BLOCK_RUNS;
        let second_start = first_end + FIRST_PERIOD_BLOCKS as usize * BLOCK_RUNS;
        let used = drive(&mut t, second_start + 4 * BLOCK_RUNS, cost);
        let seq = |r: &[Setting]| r.iter().filter(|s| **s == SEQ).count();
        assert_eq!(seq(&used[..first_end]), 3 * BLOCK_RUNS);
        assert_eq!(seq(&used[first_end..second_start]), 0);
        assert_eq!(seq(&used[second_start..]), BLOCK_RUNS);
        let tuning = t.tuning().unwrap();
        assert_eq!((tuning.chosen, tuning.trials), (PAR, 2));
    }

    #[test]
    fn steady_runs_are_tried_again_only_at_the_doubling_periods() {
        let mut t = Tuner::new(vec![PAR, SEQ]);
        let after = 200;
        let runs = trial_runs(2) + after * BLOCK_RUNS;
        let used = drive(&mut t, runs, |s, run| {
            // ±10% of jitter, within DRIFT
            let jitter = 1.0 + 0.1 * ((run as f64) * 0.7).sin();
            if s.threads == 2 {
                0.004 * jitter
            } else {
                0.006 * jitter
            }
        });
        // The first trial, then periodic ones after 32 and 64 more blocks (each at most
        // 2 · ROUNDS blocks long); the next would come 128 blocks later, past the end.
        let tuning = t.tuning().unwrap();
        let trials = 3;
        assert_eq!(
            (tuning.chosen, tuning.trials, tuning.drift),
            (PAR, trials, None)
        );
        // Sequential ran only in the re-trials' blocks (up to ROUNDS each; fewer when
        // pruned).
        let seq = used[trial_runs(2)..].iter().filter(|s| **s == SEQ).count();
        let most = (trials - 1) as usize * ROUNDS * BLOCK_RUNS;
        assert!((1..=most).contains(&seq), "{seq} sequential runs");
    }

    #[test]
    fn a_first_trial_misled_by_a_transient_is_corrected_by_the_confirmation() {
        // Parallel runs cost twice their later time during the first trial (threads and
        // allocator still warming): sequential wins it and, as steady as its trial said,
        // never drifts. The confirmation after FIRST_PERIOD_BLOCKS chooses parallel.
        let warm = trial_runs(2);
        let mut t = Tuner::new(vec![PAR, SEQ]);
        let runs = warm + (FIRST_PERIOD_BLOCKS as usize + 2 * ROUNDS + 8) * BLOCK_RUNS;
        let used = drive(&mut t, runs, |s, run| match (s.threads, run < warm) {
            (2, true) => 0.009,
            (2, false) => 0.004,
            _ => 0.006,
        });
        assert_eq!(used[warm], SEQ, "the first trial chose sequential");
        let tuning = t.tuning().unwrap();
        assert_eq!((tuning.chosen, tuning.trials, tuning.drift), (PAR, 2, None));
        assert!(used[runs - 8 * BLOCK_RUNS..].iter().all(|s| *s == PAR));
    }
}
