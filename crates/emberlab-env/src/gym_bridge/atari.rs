//! [`AtariEnv`]: an Atari game stepped by the Arcade Learning Environment (PyPI's `ale-py`)
//! through Gymnasium and the semantics of Stable-Baselines3's `AtariWrapper`, in a Python
//! worker process (`atari.py`) of its own or shared with other games
//! ([`AtariEnv::in_workers`]).
//!
//! **Why a process.** ale-py is GPL-2; Ember's crates are MIT/Apache. Running it in another
//! process, spoken to over a pipe, keeps it out of Ember's binaries. A study of ale-py's own
//! threaded vector env (docs/plans/atari.md) found that no setting of it reproduces SB3's
//! wrappers exactly — fire reset, life loss and max-pooling all differ. The worker therefore
//! runs `AtariWrapper`'s layers, written out in `atari.py` (SB3's package imports PyTorch:
//! 1.8 s and 610 MB per worker) and checked against SB3's own stack by `tests/atari.rs`:
//! no-op starts (up to 30), frame skip 4 with the max of
//! the last two frames, a lost life ends the episode (the game goes on after the reset),
//! fire after every reset where the game has FIRE, 84×84 grayscale, rewards clipped to their
//! sign. Each step sends back the *newest* frame only (7 KB); stacks are built by Ember
//! ([`crate::FrameStack`], or frame replay), so no frame crosses the pipe twice.
//!
//! **Games per worker.** A worker steps its games one after another; games in different
//! workers step side by side ([`crate::FrameVecEnv`] sends every game's step before it
//! waits for any). More workers than cores lose to the switching between them (8 Pong games
//! in 8 workers on 2 cores step ~20% slower than in 2), so [`AtariEnv::in_workers`] with
//! [`default_workers`] puts the games into one worker per core.

use super::worker::{Worker, default_python};
use emberlab_core::{Error, Result};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

const SCRIPT: &str = include_str!("atari.py");

/// How the worker wraps the game; the defaults are SB3's `AtariWrapper`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AtariConfig {
    /// Most no-op frames after a reset (a random count from 1; 0: none).
    pub noop_max: u32,
    /// Frames per step (the observation is the max of the last two, or the one frame).
    pub frame_skip: u32,
    /// Whether a lost life ends the episode (the game itself goes on after the reset).
    pub terminal_on_life_loss: bool,
    /// Whether rewards are clipped to their sign.
    pub clip_reward: bool,
    /// ALE's budget of frames per game before the episode is truncated; `None`: the
    /// game's own (108,000 frames, 30 minutes of play).
    pub max_frames: Option<u32>,
}

impl Default for AtariConfig {
    fn default() -> Self {
        AtariConfig {
            noop_max: 30,
            frame_skip: 4,
            terminal_on_life_loss: true,
            clip_reward: true,
            max_frames: None,
        }
    }
}

/// What a step returned (the frame is [`AtariEnv::frame`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AtariStep {
    /// The reward (clipped to its sign unless [`AtariConfig::clip_reward`] is off).
    pub reward: f32,
    /// The game's own rewards of the step, never clipped (what a score counts, as SB3's
    /// `Monitor` under the wrappers counts it; rewards of a reset's no-op and fire steps are
    /// counted with the next step).
    pub score: f32,
    /// The episode ended: the game is over, or a life was lost.
    pub terminated: bool,
    /// The game hit its frame budget ([`AtariConfig::max_frames`]). Both this and
    /// `terminated` may be set; SB3 reports such a step as terminated only.
    pub truncated: bool,
    /// The game itself is over (not only a life).
    pub game_over: bool,
    /// Lives left.
    pub lives: u32,
}

/// One Atari game in a worker process (module docs). Actions are indices into the game's
/// minimal action set. `ALE/…-v5` ids keep their sticky actions (a 25% chance of repeating
/// the previous action); `…NoFrameskip-v4` ids, which SB3's zoo trains on, have none.
pub struct AtariEnv {
    worker: Arc<Mutex<Shared>>,
    /// This game's index in its worker.
    game: u32,
    /// Whether a step was sent ([`crate::FrameEnv::send_step`]) and its reply is due.
    sent: bool,
    id: String,
    actions: usize,
    shape: [usize; 2],
    frame: Vec<u8>,
    lives: u32,
    /// Whether the next call must be a reset (at the start, after an episode's end).
    needs_reset: bool,
}

impl std::fmt::Debug for AtariEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtariEnv")
            .field("id", &self.id)
            .field("game", &self.game)
            .field("actions", &self.actions)
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl AtariEnv {
    /// The game `id` (`PongNoFrameskip-v4`, `ALE/Breakout-v5`, ...) run by the interpreter in
    /// `EMBER_PYTHON` (else `python3`), which needs gymnasium, ale-py and
    /// opencv-python-headless.
    ///
    /// # Errors
    /// See [`AtariEnv::with_python`].
    pub fn new(id: &str, config: &AtariConfig) -> Result<Self> {
        Self::with_python(id, config, &default_python())
    }

    /// `games` games of `id` (see [`AtariEnv::new`]) in [`default_workers`] worker
    /// processes ([`AtariEnv::in_workers`]).
    ///
    /// # Errors
    /// See [`AtariEnv::in_workers`].
    pub fn games(id: &str, config: &AtariConfig, games: usize) -> Result<Vec<Self>> {
        Self::in_workers(id, config, &default_python(), games, default_workers(games))
    }

    /// The game `id` run by the interpreter `python`.
    ///
    /// # Errors
    /// As [`AtariEnv::in_workers`].
    pub fn with_python(id: &str, config: &AtariConfig, python: &str) -> Result<Self> {
        let mut games = Self::in_workers(id, config, python, 1, 1)?;
        Ok(games.remove(0))
    }

    /// `games` games of `id` run by the interpreter `python` in at most `workers` worker
    /// processes, consecutive games sharing a worker: games `0..k` in the first, and so on,
    /// `k` being `games / workers` rounded up (5 games in 4 workers: 2, 2 and 1 games in
    /// three). Each game is seeded by its own first reset, as alone.
    ///
    /// # Errors
    /// No game or no worker, no interpreter there, a package missing from it, an unknown id
    /// (the worker's own message), or a frame skip or frame budget of 0.
    pub fn in_workers(
        id: &str,
        config: &AtariConfig,
        python: &str,
        games: usize,
        workers: usize,
    ) -> Result<Vec<Self>> {
        if games == 0 || workers == 0 {
            let got = format!("{games} games in {workers} workers");
            return Err(Error::invalid(
                "atari games",
                got,
                ">= 1 game and >= 1 worker",
            ));
        }
        if config.frame_skip == 0 {
            return Err(Error::invalid("atari frame_skip", 0, ">= 1"));
        }
        if config.max_frames == Some(0) {
            return Err(Error::invalid(
                "atari max_frames",
                0,
                ">= 1, or None for the game's own",
            ));
        }
        let per = games.div_ceil(workers.min(games));
        let counts: Vec<usize> = (0..games)
            .step_by(per)
            .map(|first| per.min(games - first))
            .collect();
        // Every worker starts before the first is waited for: each spends a second or two
        // importing its packages and making its games, side by side on the cores (one after
        // the other, 2 workers took ~5 s of a PPO run's start).
        let started = counts
            .iter()
            .map(|&n| Self::start_worker(id, config, python, n))
            .collect::<Result<Vec<_>>>()?;
        let mut all = Vec::with_capacity(games);
        for (worker, n) in started.into_iter().zip(counts) {
            all.extend(Self::games_of(worker, id, n)?);
        }
        Ok(all)
    }

    /// A new worker for `n` games, started (not yet answered).
    fn start_worker(id: &str, config: &AtariConfig, python: &str, n: usize) -> Result<Worker> {
        let flag = |b: bool| if b { "1" } else { "0" };
        let args = [
            id.to_string(),
            config.noop_max.to_string(),
            config.frame_skip.to_string(),
            flag(config.terminal_on_life_loss).into(),
            flag(config.clip_reward).into(),
            config.max_frames.unwrap_or(0).to_string(),
            n.to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Worker::spawn(python, SCRIPT, &args, format!("atari:{id}"))
    }

    /// The `n` games of a started worker, once it answers with their sizes.
    fn games_of(mut worker: Worker, id: &str, n: usize) -> Result<Vec<Self>> {
        let tag = worker.tag()?;
        if tag != b'H' {
            return Err(worker.unexpected(tag, "the game's sizes"));
        }
        let actions = worker.u32()? as usize;
        let shape = [worker.u32()? as usize, worker.u32()? as usize];
        let shared = Arc::new(Mutex::new(Shared {
            worker,
            due: VecDeque::new(),
        }));
        Ok((0..n as u32)
            .map(|game| AtariEnv {
                worker: shared.clone(),
                game,
                sent: false,
                id: id.to_string(),
                actions,
                shape,
                frame: vec![0; shape[0] * shape[1]],
                lives: 0,
                needs_reset: true,
            })
            .collect())
    }

    /// The game's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Number of actions (the game's minimal action set).
    pub fn actions(&self) -> usize {
        self.actions
    }

    /// Height and width of a frame (84 × 84).
    pub fn frame_shape(&self) -> [usize; 2] {
        self.shape
    }

    /// The newest frame, row-major grayscale bytes.
    pub fn frame(&self) -> &[u8] {
        &self.frame
    }

    /// Lives left, as of the last reset or step.
    pub fn lives(&self) -> u32 {
        self.lives
    }

    /// Resets the game (seeding it when `seed` is given); returns the first frame. After a
    /// lost life (with [`AtariConfig::terminal_on_life_loss`]) the game goes on from where
    /// it was, as SB3's does, and a `seed` is then not used: seed the first reset.
    ///
    /// # Errors
    /// A reply to a game of the same worker still due, the worker died or the game raised.
    pub fn reset(&mut self, seed: Option<u64>) -> Result<&[u8]> {
        let has_seed = [u8::from(seed.is_some())];
        self.request(b'R', &[&has_seed, &seed.unwrap_or(0).to_le_bytes()], true)?;
        self.reply(|env, worker| match worker.tag()? {
            b'O' => {
                worker.read_exact(&mut env.frame, "reading a frame")?;
                env.lives = worker.u32()?;
                env.needs_reset = false;
                Ok(())
            }
            other => Err(worker.unexpected(other, "a frame")),
        })?;
        Ok(&self.frame)
    }

    /// Steps the game with action `action`; the new frame is [`AtariEnv::frame`].
    ///
    /// # Errors
    /// An action outside the game's set, a step before the first reset or after an episode
    /// ended, a reply to a game of the same worker still due, the worker died or the game
    /// raised.
    pub fn step(&mut self, action: usize) -> Result<AtariStep> {
        self.check_step(action)?;
        self.request(b'S', &[&(action as u32).to_le_bytes()], true)?;
        self.read_step()
    }

    /// Whether `action` may be sent now.
    fn check_step(&self, action: usize) -> Result<()> {
        if action >= self.actions {
            return Err(Error::InvalidAction {
                action: action.to_string(),
                space: format!("Discrete({}) of {}", self.actions, self.id),
            });
        }
        if self.needs_reset {
            return Err(Error::invalid(
                "atari step",
                format!("{} before a reset", self.id),
                "a reset at the start and after every episode end",
            ));
        }
        Ok(())
    }

    /// Reads this game's step reply (an error without reading when another game's reply
    /// comes first).
    fn read_step(&mut self) -> Result<AtariStep> {
        self.reply(|env, worker| {
            env.sent = false;
            env.step_reply(worker)
        })
    }

    /// A step reply read from `worker` into the game's frame and state.
    fn step_reply(&mut self, worker: &mut Shared) -> Result<AtariStep> {
        match worker.tag()? {
            b'T' => {
                worker.read_exact(&mut self.frame, "reading a frame")?;
                let mut rest = [0u8; 15];
                worker.read_exact(&mut rest, "reading a step")?;
                let f32_at = |i: usize| f32::from_le_bytes(rest[i..i + 4].try_into().expect("4"));
                let step = AtariStep {
                    reward: f32_at(0),
                    score: f32_at(4),
                    terminated: rest[8] != 0,
                    truncated: rest[9] != 0,
                    game_over: rest[10] != 0,
                    lives: u32::from_le_bytes(rest[11..15].try_into().expect("4 bytes")),
                };
                self.lives = step.lives;
                self.needs_reset = step.terminated || step.truncated;
                Ok(step)
            }
            other => Err(worker.unexpected(other, "a step")),
        }
    }

    /// Sends request `op` for this game (its index, then `rest`). `alone`: refused while a
    /// reply to a game of the worker is due (the caller waits for its own reply at once).
    fn request(&self, op: u8, rest: &[&[u8]], alone: bool) -> Result<()> {
        let mut shared = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(due) = shared.due.front().filter(|_| alone) {
            return Err(Error::invalid(
                format!("atari request for game {} of {}", self.game, self.id),
                format!("game {due}'s step reply still due from their worker"),
                "every sent step received first (replies come in the order asked)",
            ));
        }
        let (op, game) = ([op], self.game.to_le_bytes());
        let mut parts: Vec<&[u8]> = vec![&op, &game];
        parts.extend_from_slice(rest);
        shared.worker.send(&parts)?;
        shared.due.push_back(self.game);
        Ok(())
    }

    /// `read(self, worker)` with the worker locked and its next reply this game's (taken
    /// off the due list); an error without reading when another game's reply comes first.
    fn reply<R>(&mut self, read: impl FnOnce(&mut Self, &mut Shared) -> Result<R>) -> Result<R> {
        let shared = Arc::clone(&self.worker);
        let mut guard = shared.lock().unwrap_or_else(|e| e.into_inner());
        match guard.due.front() {
            Some(&next) if next == self.game => {
                guard.due.pop_front();
                read(self, &mut guard)
            }
            next => Err(Error::invalid(
                format!("atari reply for game {} of {}", self.game, self.id),
                match next {
                    Some(n) => format!("game {n}'s reply next"),
                    None => "nothing asked".into(),
                },
                "replies received in the order asked",
            )),
        }
    }
}

impl AtariEnv {
    /// What the game shows now, as the emulator draws it: RGB bytes, row-major, and
    /// `[height, width]` (210 × 160 for the Atari 2600).
    ///
    /// # Errors
    /// A reply to a game of the same worker still due, the worker died or the game raised.
    pub fn screen(&mut self) -> Result<(Vec<u8>, [usize; 2])> {
        self.request(b'P', &[], true)?;
        self.reply(|_, worker| match worker.tag()? {
            b'P' => {
                let (h, w) = (worker.u32()? as usize, worker.u32()? as usize);
                if h * w > 4096 * 4096 {
                    // Read what was sent, so that the next reply starts where it should.
                    let mut chunk = vec![0u8; 1 << 16];
                    let mut left = h * w * 3;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        worker.read_exact(&mut chunk[..n], "reading a screen")?;
                        left -= n;
                    }
                    let size = format!("{h}×{w}");
                    return Err(Error::invalid("atari screen", size, "at most 4096×4096"));
                }
                let mut rgb = vec![0u8; h * w * 3];
                worker.read_exact(&mut rgb, "reading a screen")?;
                Ok((rgb, [h, w]))
            }
            other => Err(worker.unexpected(other, "a screen")),
        })
    }
}

/// A worker and the games whose replies it owes, oldest first (it answers in order).
struct Shared {
    worker: Worker,
    due: VecDeque<u32>,
}

impl std::ops::Deref for Shared {
    type Target = Worker;
    fn deref(&self) -> &Worker {
        &self.worker
    }
}

impl std::ops::DerefMut for Shared {
    fn deref_mut(&mut self) -> &mut Worker {
        &mut self.worker
    }
}

/// Workers for `games` games on this machine: one per core (its available parallelism),
/// at most one per game.
pub fn default_workers(games: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(games).max(1)
}

impl crate::FrameEnv for AtariEnv {
    fn screen(&mut self) -> Result<Option<(Vec<u8>, [usize; 2])>> {
        AtariEnv::screen(self).map(Some)
    }

    fn frame_shape(&self) -> [usize; 3] {
        [1, self.shape[0], self.shape[1]]
    }

    fn actions(&self) -> usize {
        self.actions
    }

    fn reset(&mut self, seed: Option<u64>) -> Result<&[u8]> {
        AtariEnv::reset(self, seed)
    }

    fn step(&mut self, action: usize) -> Result<crate::FrameStep> {
        let s = AtariEnv::step(self, action)?;
        Ok(frame_step(s))
    }

    fn send_step(&mut self, action: usize) -> Result<bool> {
        if self.sent {
            return Err(Error::invalid(
                format!("atari send_step of {}", self.id),
                "a second step before the first was received",
                "receive_step between sends",
            ));
        }
        self.check_step(action)?;
        self.request(b'S', &[&(action as u32).to_le_bytes()], false)?;
        self.sent = true;
        Ok(true)
    }

    fn receive_step(&mut self) -> Result<crate::FrameStep> {
        if !self.sent {
            return Err(Error::invalid(
                format!("atari receive_step of {}", self.id),
                "no step sent",
                "a send_step first",
            ));
        }
        self.read_step().map(frame_step)
    }

    fn frame(&self) -> &[u8] {
        &self.frame
    }
}

/// An Atari step as a frame environment's.
fn frame_step(s: AtariStep) -> crate::FrameStep {
    crate::FrameStep {
        reward: s.reward,
        score: s.score,
        terminated: s.terminated,
        truncated: s.truncated,
        life_lost: s.terminated && !s.game_over && !s.truncated,
    }
}
