//! [`ParameterServer`]: a batch-updating parameter server (problem 4, after PyTorch's
//! batch-RPC tutorial).
//!
//! K trainers each compute a gradient against the weights of version `v` and submit it
//! tagged `(trainer, v)`. When all K have arrived — or, once `deadline` has passed since
//! the first arrival, at least `quorum` of them (a dead trainer must not hang the others) —
//! the server averages them, takes one optimizer step and answers every waiting trainer
//! with the new weights and version `v + 1`. A second gradient from the same trainer in one
//! round is dropped; a gradient computed against an older version is dropped and answered
//! at once with the current weights (the trainer fell behind: a partial round went on
//! without it).

use emberlab_algo::{HostAdam, HostAdamState};
use emberlab_core::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a [`ParameterServer`] rounds up gradients.
#[derive(Clone, Debug, PartialEq)]
pub struct ParameterServerConfig {
    /// Trainers taking part (ids `0..trainers`).
    pub trainers: usize,
    /// Gradients enough for a step once `deadline` has passed (`1..=trainers`).
    pub quorum: usize,
    /// How long a round waits for all trainers after its first gradient.
    pub deadline: Duration,
}

impl ParameterServerConfig {
    /// All of `trainers` every round, or a majority after one second.
    pub fn new(trainers: usize) -> Self {
        ParameterServerConfig {
            trainers,
            quorum: trainers / 2 + 1,
            deadline: Duration::from_secs(1),
        }
    }

    /// Checks the values.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        if self.trainers == 0 {
            return Err(Error::invalid("trainers", 0, ">= 1"));
        }
        if !(1..=self.trainers).contains(&self.quorum) {
            return Err(Error::invalid(
                "quorum",
                self.quorum,
                format!("in 1..={}", self.trainers),
            ));
        }
        Ok(())
    }
}

/// An optimizer over one flat vector of parameters.
pub trait FlatOptimizer: Send {
    /// One step of `params` from the (averaged) gradient `grad` of the same length.
    fn step(&mut self, params: &mut [f32], grad: &[f32]);
}

/// Plain gradient descent: `p ← p − lr·g`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sgd {
    /// The learning rate.
    pub lr: f32,
}

impl FlatOptimizer for Sgd {
    fn step(&mut self, params: &mut [f32], grad: &[f32]) {
        for (p, g) in params.iter_mut().zip(grad) {
            *p -= self.lr * g;
        }
    }
}

/// Adam with burn's arithmetic ([`HostAdam`]).
#[derive(Clone, Debug)]
pub struct Adam {
    adam: HostAdam,
    state: HostAdamState,
    lr: f32,
}

impl Adam {
    /// Adam (β = (0.9, 0.999), ε = 1e-8) for `len` parameters with learning rate `lr`.
    pub fn new(len: usize, lr: f32) -> Self {
        Adam {
            adam: HostAdam::default(),
            state: HostAdamState::new(len),
            lr,
        }
    }
}

impl FlatOptimizer for Adam {
    fn step(&mut self, params: &mut [f32], grad: &[f32]) {
        self.adam.step_flat(self.lr, params, grad, &mut self.state);
    }
}

/// A version of the weights (shared, never copied by the server).
#[derive(Clone, Debug, PartialEq)]
pub struct Weights {
    /// How many steps the server has taken to reach them.
    pub version: u64,
    /// The parameters.
    pub params: Arc<Vec<f32>>,
}

/// Counters of a running server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParameterServerStats {
    /// Optimizer steps taken.
    pub steps: u64,
    /// Steps taken with a quorum after the deadline rather than every trainer.
    pub partial_steps: u64,
    /// Second gradients of a trainer within one round, dropped.
    pub duplicates: u64,
    /// Gradients computed against an older version, dropped.
    pub stale: u64,
}

#[derive(Default)]
struct Counters {
    steps: AtomicU64,
    partial_steps: AtomicU64,
    duplicates: AtomicU64,
    stale: AtomicU64,
}

enum Msg {
    Submit {
        trainer: usize,
        version: u64,
        grad: Vec<f32>,
        reply: SyncSender<Result<Weights>>,
    },
    Stop,
}

/// The server: a thread that owns the weights and the optimizer. Dropping it stops the
/// thread; trainers still waiting get an error.
pub struct ParameterServer {
    tx: SyncSender<Msg>,
    thread: Option<JoinHandle<()>>,
    current: Arc<RwLock<Weights>>,
    counters: Arc<Counters>,
    config: ParameterServerConfig,
}

impl ParameterServer {
    /// Starts a server at version 0 with `params`, stepping them with `optimizer`.
    ///
    /// # Errors
    /// An invalid config, no parameters, a non-finite one; the thread could not start.
    pub fn spawn(
        params: Vec<f32>,
        optimizer: impl FlatOptimizer + 'static,
        config: ParameterServerConfig,
    ) -> Result<Self> {
        config.validate()?;
        if params.is_empty() {
            return Err(Error::invalid("parameters", 0, "at least one value"));
        }
        Error::check_finite_rows("initial parameter", &params, params.len())?;
        let current = Arc::new(RwLock::new(Weights {
            version: 0,
            params: Arc::new(params),
        }));
        let counters = Arc::new(Counters::default());
        let (tx, rx) = mpsc::sync_channel(config.trainers * 4);
        let round = Round {
            rx,
            config: config.clone(),
            optimizer: Box::new(optimizer),
            current: current.clone(),
            counters: counters.clone(),
            grads: vec![None; config.trainers],
            waiting: Vec::new(),
            first: None,
            sum: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("ember-parameter-server".into())
            .spawn(move || round.run())
            .map_err(|e| Error::Unavailable {
                what: "a parameter server thread".into(),
                hint: e.to_string(),
            })?;
        Ok(ParameterServer {
            tx,
            thread: Some(thread),
            current,
            counters,
            config,
        })
    }

    /// The handle of trainer `id`.
    ///
    /// # Errors
    /// An id outside `0..trainers`.
    pub fn trainer(&self, id: usize) -> Result<TrainerHandle> {
        if id >= self.config.trainers {
            return Err(Error::invalid(
                "trainer id",
                id,
                format!("in 0..{}", self.config.trainers),
            ));
        }
        Ok(TrainerHandle {
            id,
            tx: self.tx.clone(),
            current: self.current.clone(),
            len: self
                .current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .params
                .len(),
        })
    }

    /// The weights now.
    pub fn weights(&self) -> Weights {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The number of trainers taking part.
    pub fn trainers(&self) -> usize {
        self.config.trainers
    }

    /// The counters so far.
    pub fn stats(&self) -> ParameterServerStats {
        let c = &self.counters;
        ParameterServerStats {
            steps: c.steps.load(Ordering::Relaxed),
            partial_steps: c.partial_steps.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
            stale: c.stale.load(Ordering::Relaxed),
        }
    }
}

impl Drop for ParameterServer {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One trainer's handle on a [`ParameterServer`] (send it to the trainer's thread).
#[derive(Clone)]
pub struct TrainerHandle {
    id: usize,
    tx: SyncSender<Msg>,
    current: Arc<RwLock<Weights>>,
    len: usize,
}

impl TrainerHandle {
    /// This trainer's id.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The weights now (to start from, or to catch up).
    pub fn weights(&self) -> Weights {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Submits `grad`, computed against the weights of `version`, and waits for the step
    /// of that round: the new weights. A gradient against an older version is dropped and
    /// the current weights come back at once.
    ///
    /// # Errors
    /// A gradient of the wrong length or with a NaN or infinity (named by index; the server
    /// keeps serving), a version from the future, or a stopped server.
    pub fn submit(&self, version: u64, grad: Vec<f32>) -> Result<Weights> {
        Error::check_len("gradient", self.len, grad.len())?;
        Error::check_finite_rows("gradient value", &grad, 1)?;
        let (reply, rx) = mpsc::sync_channel(1);
        self.tx
            .send(Msg::Submit {
                trainer: self.id,
                version,
                grad,
                reply,
            })
            .map_err(|_| stopped())?;
        rx.recv().map_err(|_| stopped())?
    }
}

fn stopped() -> Error {
    Error::Unavailable {
        what: "the parameter server".into(),
        hint: "it has stopped (dropped, or its thread ended)".into(),
    }
}

struct Round {
    rx: Receiver<Msg>,
    config: ParameterServerConfig,
    optimizer: Box<dyn FlatOptimizer>,
    current: Arc<RwLock<Weights>>,
    counters: Arc<Counters>,
    /// This round's gradient of each trainer.
    grads: Vec<Option<Vec<f32>>>,
    /// Trainers waiting for this round's step.
    waiting: Vec<SyncSender<Result<Weights>>>,
    /// When this round's first gradient arrived.
    first: Option<Instant>,
    sum: Vec<f32>,
}

impl Round {
    fn run(mut self) {
        let _flush = emberlab_core::denormals::flush_denormals_here();
        loop {
            let msg = match self.first {
                None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(t) => {
                    let left = (t + self.config.deadline).saturating_duration_since(Instant::now());
                    self.rx.recv_timeout(left)
                }
            };
            match msg {
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(Msg::Submit {
                    trainer,
                    version,
                    grad,
                    reply,
                }) => self.submit(trainer, version, grad, reply),
                Err(RecvTimeoutError::Timeout) => {
                    let arrived = self.grads.iter().filter(|g| g.is_some()).count();
                    if arrived >= self.config.quorum {
                        self.step(true);
                    } else {
                        // Not enough yet: wait for the next gradient, then look again.
                        self.first = Some(Instant::now());
                    }
                }
            }
        }
    }

    fn version(&self) -> u64 {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .version
    }

    fn submit(
        &mut self,
        trainer: usize,
        version: u64,
        grad: Vec<f32>,
        reply: SyncSender<Result<Weights>>,
    ) {
        let now = self.version();
        if version < now {
            self.counters.stale.fetch_add(1, Ordering::Relaxed);
            let w = self
                .current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let _ = reply.send(Ok(w));
            return;
        }
        if version > now {
            let _ = reply.send(Err(Error::invalid(
                format!("gradient version of trainer {trainer}"),
                version,
                format!("<= the server's version {now}"),
            )));
            return;
        }
        if self.grads[trainer].is_some() {
            self.counters.duplicates.fetch_add(1, Ordering::Relaxed);
        } else {
            self.grads[trainer] = Some(grad);
        }
        self.waiting.push(reply);
        self.first.get_or_insert_with(Instant::now);
        if self.grads.iter().all(Option::is_some) {
            self.step(false);
        }
    }

    /// Averages this round's gradients, steps, publishes and answers everyone waiting.
    fn step(&mut self, partial: bool) {
        let arrived: Vec<Vec<f32>> = self.grads.iter_mut().filter_map(Option::take).collect();
        let mut params = {
            let w = self.current.read().unwrap_or_else(|e| e.into_inner());
            w.params.as_ref().clone()
        };
        self.sum.clear();
        self.sum.resize(params.len(), 0.0);
        for g in &arrived {
            for (s, v) in self.sum.iter_mut().zip(g) {
                *s += v;
            }
        }
        let n = arrived.len() as f32;
        self.sum.iter_mut().for_each(|s| *s /= n);
        self.optimizer.step(&mut params, &self.sum);
        let weights = {
            let mut w = self.current.write().unwrap_or_else(|e| e.into_inner());
            *w = Weights {
                version: w.version + 1,
                params: Arc::new(params),
            };
            w.clone()
        };
        self.counters.steps.fetch_add(1, Ordering::Relaxed);
        if partial {
            self.counters.partial_steps.fetch_add(1, Ordering::Relaxed);
        }
        for reply in self.waiting.drain(..) {
            let _ = reply.send(Ok(weights.clone()));
        }
        self.first = None;
    }
}
