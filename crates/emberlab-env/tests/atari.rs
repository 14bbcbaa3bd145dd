//! Atari games through `AtariEnv` (the worker's layers, written after SB3's `AtariWrapper`) and
//! `FrameStack`, against traces recorded from Stable-Baselines3's own stack
//! (`VecFrameStack(DummyVecEnv([AtariWrapper(gym.make(id))]), 4)`) by
//! `crates/emberlab-env/tools/gen_atari_traces.py`, the same seeds and actions: every
//! stacked observation byte for byte, every reward, termination (lost lives included),
//! truncation, game over and life count, over episodes that end. Needs `EMBER_PY_PYTHON`:
//! the torch venv of `scripts/setup-python.sh`, with gymnasium, ale-py, stable-baselines3
//! and opencv-python-headless. Without it the tests fail, saying so.

#![cfg(feature = "gym")]

use emberlab_env::{AtariConfig, AtariEnv, FrameStack};
use std::path::{Path, PathBuf};

const FRAME: usize = 84 * 84;

fn python() -> String {
    std::env::var("EMBER_PY_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "EMBER_PY_PYTHON is not set: the Atari tests need Python with gymnasium, \
                 ale-py, stable-baselines3 and opencv-python-headless (scripts/setup-python.sh \
                 > /tmp/py.env && . /tmp/py.env)"
            )
        })
}

/// Records a trace of `id` with SB3's stack into a fresh folder (`max_frames`: ALE's
/// budget per game).
fn record(id: &str, seed: u64, steps: usize, max_frames: Option<u32>) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ember-atari-{}-{seed}-{}",
        id.replace('/', "_"),
        std::process::id()
    ));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/gen_atari_traces.py");
    let out = std::process::Command::new(python())
        .arg(&script)
        .args(["--env-id", id, "--noop-max", "30", "--full-obs"])
        .args(["--seed", &seed.to_string(), "--steps", &steps.to_string()])
        .args(max_frames.map(|m| format!("--max-frames={m}")))
        .arg("--raw")
        .arg(&dir)
        .output()
        .expect("running the trace generator");
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn bytes(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn words<const N: usize>(dir: &Path, name: &str) -> Vec<[u8; N]> {
    bytes(dir, name)
        .chunks_exact(N)
        .map(|c| c.try_into().unwrap())
        .collect()
}

/// Ember's stack (channels first) against SB3's (channels last), both oldest frame first.
fn same_stack(ours: &[u8], theirs: &[u8]) -> bool {
    (0..4).all(|k| (0..FRAME).all(|i| ours[k * FRAME + i] == theirs[i * 4 + k]))
}

/// What a replay met.
#[derive(Debug, Default)]
struct Met {
    life_losses: usize,
    game_overs: usize,
    truncations: usize,
    nonzero_rewards: usize,
}

/// A trace recorded by SB3's stack: its actions and what each step returned.
struct Trace {
    id: String,
    seed: u64,
    actions: Vec<i64>,
    rewards: Vec<f32>,
    lives: Vec<i32>,
    terminated: Vec<u8>,
    truncated: Vec<u8>,
    game_over: Vec<u8>,
    obs: Vec<u8>,
    terminal_frames: Vec<u8>,
}

/// What a step of ours returned, to check against a trace.
struct Got {
    reward: f32,
    score: f32,
    terminated: bool,
    truncated: bool,
    game_over: bool,
    lives: u32,
}

impl Trace {
    fn record(id: &str, seed: u64, steps: usize, max_frames: Option<u32>) -> Self {
        let dir = record(id, seed, steps, max_frames);
        let trace = Trace {
            id: id.to_string(),
            seed,
            actions: (words::<8>(&dir, "actions.i64").into_iter())
                .map(i64::from_le_bytes)
                .collect(),
            rewards: (words::<4>(&dir, "rewards.f32").into_iter())
                .map(f32::from_le_bytes)
                .collect(),
            lives: (words::<4>(&dir, "lives.i32").into_iter())
                .map(i32::from_le_bytes)
                .collect(),
            terminated: bytes(&dir, "terminated.u8"),
            truncated: bytes(&dir, "truncated.u8"),
            game_over: bytes(&dir, "game_over.u8"),
            obs: bytes(&dir, "obs.u8"),
            terminal_frames: bytes(&dir, "terminal_frames.u8"),
        };
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(trace.actions.len(), steps);
        assert_eq!(trace.obs.len(), (steps + 1) * 4 * FRAME);
        trace
    }

    fn theirs(&self, t: usize) -> &[u8] {
        &self.obs[t * 4 * FRAME..(t + 1) * 4 * FRAME]
    }

    /// The stack after the first reset, whose frame is `first`.
    fn start(&self, first: &[u8]) -> FrameStack {
        let mut stack = FrameStack::new(4, FRAME).unwrap();
        stack.reset(first).unwrap();
        assert!(
            same_stack(stack.obs(), self.theirs(0)),
            "{}: the first observation",
            self.id
        );
        stack
    }

    /// Checks step `t`, which returned `s` and the frame `frame`; `reset` resets the game
    /// when the episode ended. Pushes into `stack` what SB3's stack shows next.
    fn check<'a>(
        &self,
        t: usize,
        s: Got,
        frame: &[u8],
        reset: impl FnOnce() -> &'a [u8],
        stack: &mut FrameStack,
        met: &mut Met,
    ) {
        let what = format!("{} seed {}, step {t}", self.id, self.seed);
        assert_eq!(s.reward, self.rewards[t], "{what}: reward");
        // The unclipped score clips to the reward (SB3's ClipRewardEnv: np.sign).
        assert_eq!(
            s.reward,
            s.score.signum() * f32::from(u8::from(s.score != 0.0)),
            "{what}: score {}",
            s.score
        );
        assert_eq!(s.terminated, self.terminated[t] != 0, "{what}: terminated");
        // SB3 reports a step that both ended the game and ran out of frames as terminated.
        assert_eq!(
            s.truncated && !s.terminated,
            self.truncated[t] != 0,
            "{what}: truncated"
        );
        assert_eq!(s.game_over, self.game_over[t] != 0, "{what}: game over");
        assert_eq!(s.lives as i32, self.lives[t], "{what}: lives");
        met.nonzero_rewards += usize::from(s.reward != 0.0);
        if s.terminated || s.truncated {
            // The episode's last frame (what frame replay stores as its final observation).
            let last = &self.terminal_frames[t * FRAME..(t + 1) * FRAME];
            assert!(frame == last, "{what}: the episode's last frame");
            met.truncations += usize::from(s.truncated && !s.terminated);
            met.game_overs += usize::from(s.game_over);
            met.life_losses += usize::from(s.terminated && !s.game_over);
            stack.reset(reset()).unwrap();
        } else {
            stack.push(frame).unwrap();
        }
        assert!(
            same_stack(stack.obs(), self.theirs(t + 1)),
            "{what}: observation"
        );
    }
}

fn replay(id: &str, seed: u64, steps: usize, max_frames: Option<u32>) -> Met {
    let trace = Trace::record(id, seed, steps, max_frames);
    let config = AtariConfig {
        max_frames,
        ..AtariConfig::default()
    };
    let mut env =
        AtariEnv::with_python(id, &config, &python()).unwrap_or_else(|e| panic!("{id}: {e}"));
    assert_eq!(env.frame_shape(), [84, 84]);
    let mut stack = trace.start(env.reset(Some(seed)).unwrap());
    let mut met = Met::default();
    for t in 0..steps {
        let s = env.step(trace.actions[t] as usize).unwrap();
        let got = Got {
            reward: s.reward,
            score: s.score,
            terminated: s.terminated,
            truncated: s.truncated,
            game_over: s.game_over,
            lives: s.lives,
        };
        let frame = env.frame().to_vec();
        trace.check(
            t,
            got,
            &frame,
            || env.reset(None).unwrap(),
            &mut stack,
            &mut met,
        );
    }
    met
}

#[test]
fn breakout_matches_sb3_through_lost_lives_and_game_overs() {
    let met = replay("BreakoutNoFrameskip-v4", 3, 2000, None);
    assert!(met.life_losses >= 10 && met.game_overs >= 2, "{met:?}");
    assert!(met.nonzero_rewards > 0, "{met:?}");
}

#[test]
fn pong_matches_sb3_to_the_end_of_a_game() {
    let met = replay("PongNoFrameskip-v4", 0, 1200, None);
    assert!(met.game_overs >= 1 && met.nonzero_rewards >= 15, "{met:?}");
}

/// Games sharing a worker are games of their own: two Breakout games in one worker, their
/// steps sent side by side as `FrameVecEnv` sends them (both sent, then both received),
/// each match its own trace. Asking out of turn is an error that loses nothing.
#[test]
fn games_sharing_a_worker_each_match_sb3() {
    use emberlab_env::FrameEnv;
    let (id, steps) = ("BreakoutNoFrameskip-v4", 700);
    let traces = [
        Trace::record(id, 5, steps, None),
        Trace::record(id, 6, steps, None),
    ];
    let mut games = AtariEnv::in_workers(id, &AtariConfig::default(), &python(), 2, 1).unwrap();
    assert_eq!(games.len(), 2);
    let mut stacks: Vec<FrameStack> = (games.iter_mut().zip(&traces))
        .map(|(g, tr)| tr.start(g.reset(Some(tr.seed)).unwrap()))
        .collect();
    let mut met = Met::default();
    for t in 0..steps {
        for (g, tr) in games.iter_mut().zip(&traces) {
            assert!(FrameEnv::send_step(g, tr.actions[t] as usize).unwrap());
        }
        if t == 1 {
            let e = FrameEnv::receive_step(&mut games[1])
                .unwrap_err()
                .to_string();
            assert!(e.contains("game 0's reply next"), "{e}");
            let e = games[1].reset(None).unwrap_err().to_string();
            assert!(e.contains("still due"), "{e}");
        }
        let got: Vec<Got> = (games.iter_mut())
            .map(|g| {
                let s = FrameEnv::receive_step(g).unwrap();
                Got {
                    reward: s.reward,
                    score: s.score,
                    terminated: s.terminated,
                    truncated: s.truncated,
                    game_over: s.game_over(),
                    lives: g.lives(),
                }
            })
            .collect();
        for (((g, tr), s), stack) in games.iter_mut().zip(&traces).zip(got).zip(&mut stacks) {
            let frame = g.frame().to_vec();
            tr.check(t, s, &frame, || g.reset(None).unwrap(), stack, &mut met);
        }
    }
    assert!(met.life_losses >= 4 && met.nonzero_rewards > 0, "{met:?}");
    let e = FrameEnv::receive_step(&mut games[0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no step sent"), "{e}");
}

#[test]
fn a_frame_budget_truncates_as_in_sb3() {
    let met = replay("PongNoFrameskip-v4", 5, 400, Some(400));
    assert!(met.truncations >= 3, "{met:?}");
}

#[test]
fn misuse_and_unknown_games_are_errors_naming_them() {
    let python = python();
    let mut env =
        AtariEnv::with_python("PongNoFrameskip-v4", &AtariConfig::default(), &python).unwrap();
    let e = env.step(0).unwrap_err().to_string();
    assert!(e.contains("before a reset"), "{e}");
    env.reset(Some(1)).unwrap();
    let e = env.step(env.actions()).unwrap_err().to_string();
    assert!(e.contains("Discrete(6)"), "{e}");
    env.step(0).unwrap();
    let e = AtariEnv::with_python("NoSuchGameNoFrameskip-v4", &AtariConfig::default(), &python)
        .unwrap_err()
        .to_string();
    assert!(e.contains("NoSuchGame"), "{e}");
    let bad = AtariConfig {
        frame_skip: 0,
        ..AtariConfig::default()
    };
    assert!(AtariEnv::with_python("PongNoFrameskip-v4", &bad, &python).is_err());
    let none = AtariEnv::in_workers("PongNoFrameskip-v4", &AtariConfig::default(), &python, 0, 1);
    assert!(none.unwrap_err().to_string().contains("0 games"));
    // 3 games in 2 workers: games 0 and 1 share the first, game 2 has the second.
    let three =
        AtariEnv::in_workers("PongNoFrameskip-v4", &AtariConfig::default(), &python, 3, 2).unwrap();
    let debug: Vec<String> = three.iter().map(|g| format!("{g:?}")).collect();
    assert!(
        debug[1].contains("game: 1") && debug[2].contains("game: 0"),
        "{debug:?}"
    );
}

/// The screen as the emulator draws it (for `ember eval --gif`): 210×160 RGB in colour,
/// asked between steps without disturbing them, and moving as the game does.
#[test]
fn the_screen_is_the_emulators_rgb_picture() {
    use emberlab_env::FrameEnv;
    let python = python();
    let mut env =
        AtariEnv::with_python("PongNoFrameskip-v4", &AtariConfig::default(), &python).unwrap();
    env.reset(Some(3)).unwrap();
    let (first, size) = env.screen().unwrap();
    assert_eq!(size, [210, 160]);
    assert_eq!(first.len(), 210 * 160 * 3);
    assert!(
        first.chunks(3).any(|p| p[0] != p[1] || p[1] != p[2]),
        "grey"
    );
    let mut moved = false;
    for _ in 0..60 {
        let step = env.step(0).unwrap();
        assert!(!step.terminated, "Pong loses no life in 60 steps");
        let (now, _) = FrameEnv::screen(&mut env).unwrap().unwrap();
        moved |= now != first;
    }
    assert!(moved, "the screen never changed");
}
