//! [`FrameVecEnv`]: several [`FrameEnv`]s stepped together, their observations the last `k`
//! frames of each (Stable-Baselines3's `VecFrameStack`), with SB3's same-step autoreset.

use super::frame_stack::{restart, shift_in};
use super::{FrameEnv, FrameEnvFactory, FrameStep, frame_len};
use emberlab_core::{Error, Result};

/// `n` image environments of one frame shape and action count, each observed as a stack
/// of its last `stack` frames `[stack · c, h, w]` (zeros before an episode's first frame,
/// oldest first). An environment whose episode ends is reset within the same step (SB3's
/// `VecEnv`): its row of [`FrameVecStep::obs`] is then the new episode's first stack, and
/// [`FrameVecStep::final_frames`] holds the frame the step itself produced. Every step is
/// sent before any is received ([`FrameEnv::send_step`]), so that environments stepping in
/// worker processes (Atari) step side by side.
pub struct FrameVecEnv {
    envs: Vec<Box<dyn FrameEnv>>,
    shape: [usize; 3],
    actions: usize,
    stack: usize,
    /// Whether a reset is due (at the start, after an error).
    needs_reset: bool,
    stacks: Vec<u8>,
    finals: Vec<u8>,
    rewards: Vec<f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    game_over: Vec<bool>,
    scores: Vec<f32>,
}

impl std::fmt::Debug for FrameVecEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameVecEnv")
            .field("envs", &self.envs.len())
            .field("shape", &self.shape)
            .field("stack", &self.stack)
            .finish_non_exhaustive()
    }
}

/// One step of every environment of a [`FrameVecEnv`].
#[derive(Debug)]
pub struct FrameVecStep<'a> {
    /// `[n, stack · c, h, w]` the stacks to act on next (a new episode's where one ended).
    pub obs: &'a [u8],
    /// `[n, c, h, w]` the frame each step produced (an ended episode's last).
    pub final_frames: &'a [u8],
    /// `[n]` rewards to learn from.
    pub rewards: &'a [f32],
    /// `[n]` what the games' scores count ([`FrameStep::score`]).
    pub scores: &'a [f32],
    /// `[n]` episodes that ended in a terminal state.
    pub terminated: &'a [bool],
    /// `[n]` episodes cut short.
    pub truncated: &'a [bool],
    /// `[n]` games that are over ([`FrameStep::game_over`]: not a lost life only).
    pub game_over: &'a [bool],
}

impl FrameVecEnv {
    /// `envs`, each observed as a stack of its last `stack` frames.
    ///
    /// # Errors
    /// No environment, a stack of 0, or environments of different frame shapes or action
    /// counts.
    pub fn new(envs: Vec<Box<dyn FrameEnv>>, stack: usize) -> Result<Self> {
        let Some(first) = envs.first() else {
            return Err(Error::invalid("frame envs", 0, ">= 1 environment"));
        };
        if stack == 0 {
            return Err(Error::invalid("frame stack", 0, ">= 1 frame"));
        }
        let (shape, actions) = (first.frame_shape(), first.actions());
        if frame_len(shape) == 0 || actions == 0 {
            return Err(Error::invalid(
                "frame env",
                format!("frames {shape:?}, {actions} actions"),
                "frames of >= 1 byte and >= 1 action",
            ));
        }
        for (i, env) in envs.iter().enumerate() {
            if env.frame_shape() != shape || env.actions() != actions {
                return Err(Error::invalid(
                    format!("frame env {i}"),
                    format!("frames {:?}, {} actions", env.frame_shape(), env.actions()),
                    format!("env 0's frames {shape:?} and {actions} actions"),
                ));
            }
        }
        let n = envs.len();
        let len = frame_len(shape);
        Ok(FrameVecEnv {
            shape,
            actions,
            stack,
            needs_reset: true,
            stacks: vec![0; n * stack * len],
            finals: vec![0; n * len],
            rewards: vec![0.0; n],
            terminated: vec![false; n],
            truncated: vec![false; n],
            game_over: vec![false; n],
            scores: vec![0.0; n],
            envs,
        })
    }

    /// `n` environments from `factory`, stacked by `stack`.
    ///
    /// # Errors
    /// The factory's, or [`FrameVecEnv::new`]'s.
    pub fn from_factory(factory: &dyn FrameEnvFactory, n: usize, stack: usize) -> Result<Self> {
        let envs = (0..n).map(|_| factory.make()).collect::<Result<Vec<_>>>()?;
        Self::new(envs, stack)
    }

    /// Number of environments.
    pub fn num_envs(&self) -> usize {
        self.envs.len()
    }

    /// Environment `i`'s [`FrameEnv::screen`].
    ///
    /// # Errors
    /// `i` out of range, or the environment's own.
    pub fn screen(&mut self, i: usize) -> Result<Option<(Vec<u8>, [usize; 2])>> {
        let n = self.envs.len();
        let env = self.envs.get_mut(i).ok_or_else(|| {
            Error::invalid("frame env index", i, format!("below {n} environments"))
        })?;
        env.screen()
    }

    /// Number of actions.
    pub fn actions(&self) -> usize {
        self.actions
    }

    /// `[c, h, w]` of one frame.
    pub fn frame_shape(&self) -> [usize; 3] {
        self.shape
    }

    /// Frames per observation.
    pub fn stack(&self) -> usize {
        self.stack
    }

    /// `[stack · c, h, w]` of one observation.
    pub fn obs_shape(&self) -> [usize; 3] {
        let [c, h, w] = self.shape;
        [self.stack * c, h, w]
    }

    /// The current stacks `[n, stack · c, h, w]`.
    pub fn obs(&self) -> &[u8] {
        &self.stacks
    }

    /// Resets every environment (environment `i` with `seed + i` when a seed is given);
    /// returns the first stacks.
    ///
    /// # Errors
    /// An environment's own.
    pub fn reset(&mut self, seed: Option<u64>) -> Result<&[u8]> {
        self.needs_reset = true;
        let per = self.stack * frame_len(self.shape);
        for (i, (env, row)) in self
            .envs
            .iter_mut()
            .zip(self.stacks.chunks_exact_mut(per))
            .enumerate()
        {
            let frame = env.reset(seed.map(|s| s.wrapping_add(i as u64)))?;
            check_frame(i, row.len() / self.stack, frame)?;
            restart(row, frame);
        }
        self.needs_reset = false;
        Ok(&self.stacks)
    }

    /// Steps environment `i` with `actions[i]`, resetting those whose episode ended.
    ///
    /// # Errors
    /// A wrong number of actions, an action out of range, a step before the first reset
    /// (or after an error, which leaves the environments to be reset), or an
    /// environment's own error.
    pub fn step(&mut self, actions: &[usize]) -> Result<FrameVecStep<'_>> {
        Error::check_len("frame env actions", self.envs.len(), actions.len())?;
        if let Some(&a) = actions.iter().find(|&&a| a >= self.actions) {
            return Err(Error::InvalidAction {
                action: a.to_string(),
                space: format!("Discrete({})", self.actions),
            });
        }
        if self.needs_reset {
            return Err(Error::invalid(
                "frame env step",
                "a step before a reset",
                "a reset at the start and after an error",
            ));
        }
        self.needs_reset = true;
        let len = frame_len(self.shape);
        // Every step is sent, then every result received, in order (a worker hosting
        // several environments answers in the order it was asked), even after an error.
        let sent: Vec<Result<bool>> = (self.envs.iter_mut().zip(actions).enumerate())
            .map(|(i, (env, &a))| {
                Error::catch(|| format!("frame env {i}'s step"), || env.send_step(a))
            })
            .collect();
        let mut failed = None;
        let jobs = self.envs.iter_mut().zip(actions).zip(sent);
        for (i, ((env, &a), sent)) in jobs.enumerate() {
            let step =
                sent.and_then(|sent| receive(i, env, sent, a, &mut self.finals[i * len..][..len]));
            match step {
                Ok(step) => {
                    self.rewards[i] = step.reward;
                    self.terminated[i] = step.terminated;
                    self.truncated[i] = step.truncated;
                    self.game_over[i] = step.game_over();
                    self.scores[i] = step.score;
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        // Then the stacks: an ended episode's environment is reset (once no step's result
        // is outstanding), the others shift their new frame in.
        let rows = self.stacks.chunks_exact_mut(self.stack * len);
        for (i, ((env, row), last)) in self
            .envs
            .iter_mut()
            .zip(rows)
            .zip(self.finals.chunks_exact(len))
            .enumerate()
        {
            if self.terminated[i] || self.truncated[i] {
                let first = Error::catch(|| format!("frame env {i}'s reset"), || env.reset(None))?;
                check_frame(i, last.len(), first)?;
                restart(row, first);
            } else {
                shift_in(row, last);
            }
        }
        self.needs_reset = false;
        Ok(FrameVecStep {
            obs: &self.stacks,
            final_frames: &self.finals,
            rewards: &self.rewards,
            scores: &self.scores,
            terminated: &self.terminated,
            truncated: &self.truncated,
            game_over: &self.game_over,
        })
    }
}

/// Environment `i`'s step with `action`: received if it was `sent`, else stepped now; its
/// frame goes into `last`. A panic inside the environment is returned as an error.
fn receive(
    i: usize,
    env: &mut Box<dyn FrameEnv>,
    sent: bool,
    action: usize,
    last: &mut [u8],
) -> Result<FrameStep> {
    Error::catch(
        || format!("frame env {i}'s step"),
        || {
            let step = match sent {
                true => env.receive_step()?,
                false => env.step(action)?,
            };
            check_frame(i, last.len(), env.frame())?;
            last.copy_from_slice(env.frame());
            Ok(step)
        },
    )
}

/// Environment `i`'s frame must be of its declared length.
fn check_frame(i: usize, len: usize, frame: &[u8]) -> Result<()> {
    Error::check_len(
        &format!("frame of env {i} (its frame_shape's bytes)"),
        len,
        frame.len(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Catch;

    fn catches(n: usize) -> FrameVecEnv {
        let envs = (0..n)
            .map(|_| Box::new(Catch::new(3, 2, [1, 1]).unwrap()) as Box<dyn FrameEnv>)
            .collect();
        FrameVecEnv::new(envs, 2).unwrap()
    }

    #[test]
    fn stacks_shift_and_restart_at_episode_ends() {
        let mut v = catches(2);
        assert!(v.step(&[1, 1]).is_err(), "a step before the reset");
        assert_eq!(v.obs_shape(), [2, 3, 2]);
        let first = v.reset(Some(4)).unwrap().to_vec();
        // Zeros, then the first frame, per env.
        for row in first.chunks_exact(12) {
            assert_eq!(&row[..6], &[0; 6]);
            assert_eq!(row[6..].iter().filter(|&&b| b == 255).count(), 2);
        }
        let s = v.step(&[1, 1]).unwrap();
        assert!(!s.terminated[0]);
        for i in 0..2 {
            assert_eq!(&s.obs[i * 12..i * 12 + 6], &first[i * 12 + 6..i * 12 + 12]);
            assert_eq!(
                &s.obs[i * 12 + 6..i * 12 + 12],
                &s.final_frames[i * 6..i * 6 + 6]
            );
        }
        // 3 rows: the episode ends on the second step, and the stack restarts.
        let s = v.step(&[1, 1]).unwrap();
        assert!(s.terminated.iter().all(|&t| t) && s.game_over.iter().all(|&g| g));
        for i in 0..2 {
            // The final frame has the ball on the bottom row.
            let last = &s.final_frames[i * 6..i * 6 + 6];
            assert!(last[..4].iter().all(|&b| b == 0), "{last:?}");
            assert_eq!(&s.obs[i * 12..i * 12 + 6], &[0; 6]);
        }
        assert!(v.step(&[3, 0]).is_err());
        assert!(v.step(&[0]).is_err());
    }

    #[test]
    fn mismatched_envs_are_refused() {
        let envs: Vec<Box<dyn FrameEnv>> = vec![
            Box::new(Catch::default()),
            Box::new(Catch::new(3, 2, [1, 1]).unwrap()),
        ];
        assert!(FrameVecEnv::new(envs, 4).is_err());
        assert!(FrameVecEnv::new(Vec::new(), 4).is_err());
        assert!(FrameVecEnv::new(vec![Box::new(Catch::default())], 0).is_err());
    }

    /// Catch with 3 balls a game (a miss or catch of the first two is a lost life), its
    /// steps sent and received later (as a worker's), and a step that errs or panics on
    /// request.
    struct Games {
        inner: Catch,
        balls: u32,
        fail: Option<(u32, bool)>,
        steps: u32,
        sent: Option<usize>,
    }

    impl FrameEnv for Games {
        fn frame_shape(&self) -> [usize; 3] {
            self.inner.frame_shape()
        }
        fn actions(&self) -> usize {
            3
        }
        fn reset(&mut self, seed: Option<u64>) -> Result<&[u8]> {
            if seed.is_some() || self.balls == 3 {
                self.balls = 0;
            }
            self.inner.reset(seed)
        }
        fn step(&mut self, action: usize) -> Result<FrameStep> {
            self.steps += 1;
            match self.fail {
                Some((at, true)) if at == self.steps => panic!("bad step {at}"),
                Some((at, false)) if at == self.steps => {
                    return Err(Error::invalid("games step", at, "no failure"));
                }
                _ => {}
            }
            let mut step = self.inner.step(action)?;
            step.score *= 10.0;
            if step.terminated {
                self.balls += 1;
                step.life_lost = self.balls < 3;
            }
            Ok(step)
        }
        fn frame(&self) -> &[u8] {
            self.inner.frame()
        }
        fn send_step(&mut self, action: usize) -> Result<bool> {
            assert!(self.sent.replace(action).is_none(), "a step sent twice");
            Ok(true)
        }
        fn receive_step(&mut self) -> Result<FrameStep> {
            let action = self
                .sent
                .take()
                .expect("a step received before it was sent");
            self.step(action)
        }
    }

    fn games(fail: Option<(u32, bool)>) -> FrameVecEnv {
        let envs = (0..2)
            .map(|i| {
                Box::new(Games {
                    inner: Catch::new(3, 2, [1, 1]).unwrap(),
                    balls: 0,
                    fail: fail.filter(|_| i == 0),
                    steps: 0,
                    sent: None,
                }) as Box<dyn FrameEnv>
            })
            .collect();
        FrameVecEnv::new(envs, 2).unwrap()
    }

    #[test]
    fn lost_lives_end_episodes_and_games_end_after_the_last() {
        let mut v = games(None);
        v.reset(Some(1)).unwrap();
        let mut ends = Vec::new();
        for t in 1..=6 {
            let s = v.step(&[1, 1]).unwrap();
            assert_eq!(s.scores[0], s.rewards[0] * 10.0);
            if t % 2 == 0 {
                assert!(s.terminated[0] && s.terminated[1]);
                ends.push(s.game_over[0]);
                // Every lost life restarts the stack: zeros, then the reset frame.
                assert_eq!(&s.obs[..6], &[0; 6]);
                assert_eq!(s.obs[6..12].iter().filter(|&&b| b == 255).count(), 2);
            }
        }
        assert_eq!(ends, [false, false, true], "a game of 3 balls");
    }

    #[test]
    fn errors_and_panics_of_received_steps_come_back_as_errors() {
        for panics in [false, true] {
            let mut v = games(Some((2, panics)));
            v.reset(Some(0)).unwrap();
            v.step(&[1, 1]).unwrap();
            let err = v.step(&[1, 1]).unwrap_err().to_string();
            let want = if panics { "bad step 2" } else { "games step" };
            assert!(err.contains(want), "{err}");
            assert!(
                v.step(&[1, 1]).is_err(),
                "an error leaves the envs to be reset"
            );
            // Env 1's step, sent beside env 0's failed one, was still received: a step
            // sent twice would panic.
            v.reset(Some(0)).unwrap();
            v.step(&[1, 1]).unwrap();
        }
    }

    /// An environment whose frames are not of its declared shape is an error, not a panic.
    #[test]
    fn frames_of_the_wrong_length_are_errors() {
        struct Short(Catch);
        impl FrameEnv for Short {
            fn frame_shape(&self) -> [usize; 3] {
                [1, 4, 4]
            }
            fn actions(&self) -> usize {
                3
            }
            fn reset(&mut self, seed: Option<u64>) -> Result<&[u8]> {
                self.0.reset(seed)
            }
            fn step(&mut self, action: usize) -> Result<FrameStep> {
                self.0.step(action)
            }
            fn frame(&self) -> &[u8] {
                self.0.frame()
            }
        }
        let mut v =
            FrameVecEnv::new(vec![Box::new(Short(Catch::new(3, 2, [1, 1]).unwrap()))], 2).unwrap();
        let err = v.reset(Some(0)).unwrap_err().to_string();
        assert!(err.contains("frame of env 0"), "{err}");
    }
}
