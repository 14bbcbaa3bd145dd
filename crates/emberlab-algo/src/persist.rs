//! Learner glue written once. A learner lists the pieces of its state for a [`Visitor`]
//! ([`Persist`]); its weight checkpoints ([`Checkpoint`]), exact-resume state
//! ([`TrainingState`]) and published policy ([`PolicyWeights`]) follow from that list.
//!
//! ```ignore
//! impl Persist for MyLearner {
//!     fn kind(&self) -> &str { "my_learner" }
//!     fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
//!         v.net("actor", &mut self.actor)?;       // checkpoints and training state
//!         v.nets("critic", &mut self.critics)?;  // `critic_0`, `critic_1`, ...
//!         v.optim("actor_optim", &mut self.actor_optim)?; // training state only
//!         v.value(&mut self.rng)?;
//!         v.value(&mut self.progress)?;
//!         v.acting(&mut self.acting, &mut self.actor) // the acting copy and what it copies
//!     }
//! }
//! ```
//!
//! Loading goes in two passes: the first reads every piece into a staging list (nothing
//! changes yet), the second puts them all in place. A missing, damaged or mismatched file
//! therefore leaves the learner as it was.

use crate::acting::{ActingCopy, Frozen};
use crate::agent::PolicyWeights;
use crate::checkpoint::{Checkpoint, load_module, save_module};
use crate::learner::Progress;
use crate::training_state::{
    TrainingState, load_net, load_optim, load_scalars, save_net, save_optim, save_scalars,
};
use burn::module::Module;
use burn::optim::ModuleOptimizer;
use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{EmberRng, Error, Result};
use std::any::Any;
use std::path::Path;

/// A learner that lists its state once; [`Checkpoint`], [`TrainingState`] and
/// [`PolicyWeights`] are then implemented for it.
pub trait Persist {
    /// The kind written into `learner.state`: a state of another kind is refused.
    fn kind(&self) -> &str;

    /// Hands `visitor` every piece of the learner's state, in the same order every time.
    /// The pieces: networks ([`Visitor::net`]: in checkpoints and in the training state),
    /// optimizer states ([`Visitor::optim`]), small values ([`Visitor::value`]: generators,
    /// counters) and the acting copy with the network it copies ([`Visitor::acting`], whose
    /// network is the published policy).
    ///
    /// # Errors
    /// The first error of the visitor (an I/O error, a missing or mismatched file).
    fn persist<V: Visitor>(&mut self, visitor: &mut V) -> Result<()>;

    /// Called after loaded pieces were put in place, to rebuild what derives from them
    /// (a host copy of the policy, a value computed from a network). Default: nothing.
    ///
    /// # Errors
    /// One the learner reports.
    fn loaded(&mut self, _what: Loaded) -> Result<()> {
        Ok(())
    }
}

/// What was just loaded into a [`Persist`] learner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loaded {
    /// A weight checkpoint: the networks, the acting copy refreshed from them.
    Networks,
    /// The whole training state (exact resume).
    State,
    /// Published policy weights: the acting copy's network.
    Policy,
}

/// Sees each piece of a learner's state ([`Persist::persist`]); one visitor saves, another
/// stages a load, another puts the staged pieces in place.
pub trait Visitor {
    /// A network, stored as `<name>.safetensors` in checkpoints and `<name>.bpk` (with its
    /// parameter ids) in the training state.
    ///
    /// # Errors
    /// An I/O error, or a missing or mismatched file.
    fn net<M: Module + 'static>(&mut self, name: &str, net: &mut M) -> Result<()>;

    /// Networks of one kind, named `<name>_0`, `<name>_1`, ...
    ///
    /// # Errors
    /// As [`Visitor::net`].
    fn nets<M: Module + 'static>(&mut self, name: &str, nets: &mut [M]) -> Result<()> {
        for (i, net) in nets.iter_mut().enumerate() {
            self.net(&format!("{name}_{i}"), net)?;
        }
        Ok(())
    }

    /// An optimizer's state (`<name>.bpk`, training state only).
    ///
    /// # Errors
    /// As [`Visitor::net`].
    fn optim(&mut self, name: &str, optim: &mut ModuleOptimizer) -> Result<()>;

    /// Optimizer states of one kind, named `<name>_0`, `<name>_1`, ...
    ///
    /// # Errors
    /// As [`Visitor::net`].
    fn optims(&mut self, name: &str, optims: &mut [ModuleOptimizer]) -> Result<()> {
        for (i, optim) in optims.iter_mut().enumerate() {
            self.optim(&format!("{name}_{i}"), optim)?;
        }
        Ok(())
    }

    /// A small value, written in turn into `learner.state` (training state only).
    ///
    /// # Errors
    /// A value the saved state does not hold.
    fn value<T: Value>(&mut self, value: &mut T) -> Result<()>;

    /// The acting copy and the network it copies (`online`, the published policy). The
    /// training state keeps the copy (`acting.bpk`) and its refresh counter; loading a
    /// checkpoint or policy weights refreshes it from `online`.
    ///
    /// # Errors
    /// As [`Visitor::net`].
    fn acting<M: Module + 'static, F: Frozen<M>>(
        &mut self,
        acting: &mut ActingCopy<M, F>,
        online: &mut M,
    ) -> Result<()>;
}

/// A small value of a learner's training state, written into `learner.state`.
pub trait Value: Sized + 'static {
    /// Appends the value.
    fn write(&self, out: &mut StateWriter);

    /// Reads what [`Value::write`] appended; `self` is the learner's current value (which
    /// may say, for instance, how long a vector must be).
    ///
    /// # Errors
    /// A state that ends early or holds another type.
    fn read(&self, src: &mut StateReader<'_>) -> Result<Self>;
}

impl Value for u64 {
    fn write(&self, out: &mut StateWriter) {
        out.u64(*self);
    }
    fn read(&self, src: &mut StateReader<'_>) -> Result<Self> {
        src.u64()
    }
}

impl Value for f64 {
    fn write(&self, out: &mut StateWriter) {
        out.f64(*self);
    }
    fn read(&self, src: &mut StateReader<'_>) -> Result<Self> {
        src.f64()
    }
}

impl Value for EmberRng {
    fn write(&self, out: &mut StateWriter) {
        out.rng(self);
    }
    fn read(&self, src: &mut StateReader<'_>) -> Result<Self> {
        src.rng()
    }
}

impl Value for Progress {
    /// Env steps, then updates.
    fn write(&self, out: &mut StateWriter) {
        out.u64(self.env_steps).u64(self.updates);
    }
    fn read(&self, src: &mut StateReader<'_>) -> Result<Self> {
        Ok(Progress {
            env_steps: src.u64()?,
            updates: src.u64()?,
        })
    }
}

/// Which files a save or a load covers.
#[derive(Clone, Copy, PartialEq)]
enum Scope {
    /// Weight checkpoints: the networks as safetensors.
    Networks,
    /// The training state: everything as burnpack, plus `learner.state`.
    State,
}

/// Writes every piece in its scope into `dir`.
struct Save<'a> {
    dir: &'a Path,
    scope: Scope,
    words: StateWriter,
}

impl Visitor for Save<'_> {
    fn net<M: Module + 'static>(&mut self, name: &str, net: &mut M) -> Result<()> {
        match self.scope {
            Scope::Networks => save_module(net, self.dir, name),
            Scope::State => save_net(net, self.dir, name),
        }
    }

    fn optim(&mut self, name: &str, optim: &mut ModuleOptimizer) -> Result<()> {
        match self.scope {
            Scope::Networks => Ok(()),
            Scope::State => save_optim(optim, self.dir, name),
        }
    }

    fn value<T: Value>(&mut self, value: &mut T) -> Result<()> {
        value.write(&mut self.words);
        Ok(())
    }

    fn acting<M: Module + 'static, F: Frozen<M>>(
        &mut self,
        acting: &mut ActingCopy<M, F>,
        _: &mut M,
    ) -> Result<()> {
        if self.scope == Scope::State {
            acting.save_state(self.dir)?;
            self.words.u64(acting.since());
        }
        Ok(())
    }
}

/// The first pass of a load: reads every piece in its scope, changing nothing.
struct Stage<'a, 'r, 'w> {
    dir: &'a Path,
    scope: Scope,
    words: Option<&'r mut StateReader<'w>>,
    staged: Vec<Box<dyn Any>>,
}

impl<'w> Stage<'_, '_, 'w> {
    fn words(&mut self) -> Result<&mut StateReader<'w>> {
        self.words.as_deref_mut().ok_or_else(|| {
            Error::panicked(
                "staging a learner's state",
                &"a value visited outside the training state",
            )
        })
    }
}

impl Visitor for Stage<'_, '_, '_> {
    fn net<M: Module + 'static>(&mut self, name: &str, net: &mut M) -> Result<()> {
        let loaded = match self.scope {
            Scope::Networks => load_module(net.clone(), self.dir, name)?,
            Scope::State => load_net(net.clone(), self.dir, name)?,
        };
        self.staged.push(Box::new(loaded));
        Ok(())
    }

    fn optim(&mut self, name: &str, optim: &mut ModuleOptimizer) -> Result<()> {
        if self.scope == Scope::State {
            self.staged
                .push(Box::new(load_optim(optim, self.dir, name)?));
        }
        Ok(())
    }

    fn value<T: Value>(&mut self, value: &mut T) -> Result<()> {
        if self.scope == Scope::State {
            let read = value.read(self.words()?)?;
            self.staged.push(Box::new(read));
        }
        Ok(())
    }

    fn acting<M: Module + 'static, F: Frozen<M>>(
        &mut self,
        acting: &mut ActingCopy<M, F>,
        _: &mut M,
    ) -> Result<()> {
        if self.scope == Scope::State {
            let module = acting.load_module(self.dir)?;
            let since = self.words()?.u64()?;
            self.staged.push(Box::new((module, since)));
        }
        Ok(())
    }
}

/// The second pass of a load: puts the staged pieces in place, in the order they were
/// staged.
struct Commit {
    scope: Scope,
    staged: std::vec::IntoIter<Box<dyn Any>>,
}

impl Commit {
    fn next<T: 'static>(&mut self, what: &str) -> Result<T> {
        let piece = self.staged.next().ok_or_else(|| {
            Error::panicked(
                "loading a learner's state",
                &format!("{what}: the learner listed more pieces than it did when staging"),
            )
        })?;
        piece.downcast::<T>().map(|b| *b).map_err(|_| {
            Error::panicked(
                "loading a learner's state",
                &format!("{what}: the learner listed its pieces in another order"),
            )
        })
    }
}

impl Visitor for Commit {
    fn net<M: Module + 'static>(&mut self, name: &str, net: &mut M) -> Result<()> {
        *net = self.next(name)?;
        Ok(())
    }

    fn optim(&mut self, name: &str, optim: &mut ModuleOptimizer) -> Result<()> {
        if self.scope == Scope::State {
            *optim = self.next(name)?;
        }
        Ok(())
    }

    fn value<T: Value>(&mut self, value: &mut T) -> Result<()> {
        if self.scope == Scope::State {
            *value = self.next(std::any::type_name::<T>())?;
        }
        Ok(())
    }

    fn acting<M: Module + 'static, F: Frozen<M>>(
        &mut self,
        acting: &mut ActingCopy<M, F>,
        _: &mut M,
    ) -> Result<()> {
        if self.scope == Scope::State {
            let (module, since) = self.next::<(M, u64)>("acting")?;
            acting.restore(module, since);
        }
        Ok(())
    }
}

/// What is done to the acting copy alone: refreshed from its network after a checkpoint
/// is in place; or the published policy, the first acting copy's network, read as flat
/// weights or loaded from them.
enum Acting<'a> {
    Refresh,
    Read(Option<Vec<f32>>),
    Load { weights: &'a [f32], done: bool },
}

impl Visitor for Acting<'_> {
    fn net<M: Module + 'static>(&mut self, _: &str, _: &mut M) -> Result<()> {
        Ok(())
    }
    fn optim(&mut self, _: &str, _: &mut ModuleOptimizer) -> Result<()> {
        Ok(())
    }
    fn value<T: Value>(&mut self, _: &mut T) -> Result<()> {
        Ok(())
    }
    fn acting<M: Module + 'static, F: Frozen<M>>(
        &mut self,
        acting: &mut ActingCopy<M, F>,
        online: &mut M,
    ) -> Result<()> {
        match self {
            Acting::Refresh => acting.refresh(online),
            Acting::Read(out @ None) => *out = Some(emberlab_nn::flat_params(online)),
            Acting::Load { weights, done } if !*done => {
                *online = acting.load_flat(online.clone(), weights)?;
                *done = true;
            }
            _ => {}
        }
        Ok(())
    }
}

fn load<L: Persist + ?Sized>(learner: &mut L, dir: &Path, scope: Scope) -> Result<()> {
    let kind = learner.kind().to_string();
    let staged = match scope {
        Scope::Networks => {
            let mut stage = Stage {
                dir,
                scope,
                words: None,
                staged: Vec::new(),
            };
            learner.persist(&mut stage)?;
            stage.staged
        }
        Scope::State => load_scalars(dir, &kind, |words| {
            let mut stage = Stage {
                dir,
                scope,
                words: Some(words),
                staged: Vec::new(),
            };
            learner.persist(&mut stage)?;
            Ok(stage.staged)
        })?,
    };
    let mut commit = Commit {
        scope,
        staged: staged.into_iter(),
    };
    learner.persist(&mut commit)?;
    if scope == Scope::Networks {
        learner.persist(&mut Acting::Refresh)?;
    }
    learner.loaded(match scope {
        Scope::Networks => Loaded::Networks,
        Scope::State => Loaded::State,
    })
}

impl<L: Persist> Checkpoint for L {
    fn save_networks(&mut self, dir: &Path) -> Result<()> {
        self.persist(&mut Save {
            dir,
            scope: Scope::Networks,
            words: StateWriter::new(),
        })
    }

    fn load_networks(&mut self, dir: &Path) -> Result<()> {
        load(self, dir, Scope::Networks)
    }
}

impl<L: Persist> TrainingState for L {
    fn save_state(&mut self, dir: &Path) -> Result<()> {
        let mut save = Save {
            dir,
            scope: Scope::State,
            words: StateWriter::new(),
        };
        self.persist(&mut save)?;
        save_scalars(dir, self.kind(), save.words)
    }

    fn load_state(&mut self, dir: &Path) -> Result<()> {
        load(self, dir, Scope::State)
    }
}

impl<L: Persist> PolicyWeights for L {
    fn policy_weights(&mut self) -> Vec<f32> {
        let mut read = Acting::Read(None);
        // Reading visits no file and cannot fail.
        let _ = self.persist(&mut read);
        match read {
            Acting::Read(Some(weights)) => weights,
            _ => Vec::new(),
        }
    }

    fn load_policy_weights(&mut self, weights: &[f32]) -> Result<()> {
        let mut load = Acting::Load {
            weights,
            done: false,
        };
        self.persist(&mut load)?;
        if !matches!(load, Acting::Load { done: true, .. }) {
            return Err(Error::Unavailable {
                what: format!("policy weights of a `{}` learner", self.kind()),
                hint: "its `persist` lists no acting copy".into(),
            });
        }
        self.loaded(Loaded::Policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::OptimizerKind;
    use emberlab_nn::{Mlp, MlpConfig};

    /// A learner of two networks, an optimizer, a generator, counters and an acting copy.
    struct Toy {
        policy: Mlp,
        other: Mlp,
        optim: ModuleOptimizer,
        rng: EmberRng,
        progress: Progress,
        acting: ActingCopy<Mlp>,
        loaded: Vec<Loaded>,
    }

    fn toy(seed: u64) -> Toy {
        let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
        let (_, learn, _seeded) = crate::tensors::learner_devices(&device, seed);
        let policy = MlpConfig::new(vec![3, 8, 2]).init(&learn).unwrap();
        // Read while the seed holds (burn draws a parameter's values at its first read).
        let other = MlpConfig::new(vec![3, 8, 2]).init(&learn).unwrap();
        let _ = emberlab_nn::flat_params(&other);
        Toy {
            acting: ActingCopy::new(&policy, &device, 1),
            policy,
            other,
            optim: OptimizerKind::Adam.build(0.0, &learn),
            rng: EmberRng::seed_from(seed),
            progress: Progress {
                env_steps: seed,
                updates: 2 * seed,
            },
            loaded: Vec::new(),
        }
    }

    impl Persist for Toy {
        fn kind(&self) -> &str {
            "toy"
        }

        fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
            v.optim("optim", &mut self.optim)?;
            v.net("other", &mut self.other)?;
            v.net("policy", &mut self.policy)?;
            v.value(&mut self.rng)?;
            v.value(&mut self.progress)?;
            v.acting(&mut self.acting, &mut self.policy)
        }

        fn loaded(&mut self, what: Loaded) -> Result<()> {
            self.loaded.push(what);
            Ok(())
        }
    }

    fn bits(t: &Toy) -> Vec<u32> {
        let mut all = emberlab_nn::flat_params(&t.policy);
        all.extend(emberlab_nn::flat_params(&t.other));
        all.extend(emberlab_nn::flat_params(t.acting.module()));
        let mut b: Vec<u32> = all.iter().map(|v| v.to_bits()).collect();
        b.extend([t.progress.env_steps as u32, t.progress.updates as u32]);
        b.push(t.rng.clone().next_u64() as u32);
        b
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ember-persist-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_list_saves_and_loads_state_checkpoints_and_the_policy() {
        let (mut a, mut b) = (toy(1), toy(2));
        assert_ne!(bits(&a), bits(&b));
        let dir = temp("state");
        a.save_state(&dir).unwrap();
        b.load_state(&dir).unwrap();
        assert_eq!(bits(&a), bits(&b), "the whole state");
        assert_eq!(b.loaded, [Loaded::State]);

        // A checkpoint holds the networks only; the acting copy follows the policy.
        let (mut c, ckpt) = (toy(3), temp("checkpoint"));
        a.save_networks(&ckpt).unwrap();
        c.load_networks(&ckpt).unwrap();
        assert_eq!(
            bits(&a)[..bits(&a).len() - 3],
            bits(&c)[..bits(&c).len() - 3]
        );
        assert_eq!(c.progress.updates, 6, "counters are not in checkpoints");
        assert_eq!(c.loaded, [Loaded::Networks]);

        // The published policy is the acting copy's network.
        let (mut d, weights) = (toy(4), a.policy_weights());
        assert_eq!(weights, emberlab_nn::flat_params(&a.policy));
        d.load_policy_weights(&weights).unwrap();
        assert_eq!(emberlab_nn::flat_params(d.acting.module()), weights);
        assert!(
            d.load_policy_weights(&weights[1..]).is_err(),
            "a wrong length"
        );
        assert_eq!(
            emberlab_nn::flat_params(&d.policy),
            weights,
            "unchanged by the error"
        );
        for dir in [dir, ckpt] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn a_missing_or_damaged_piece_is_an_error_that_changes_nothing() {
        let mut b = toy(2);
        let before = bits(&b);
        for (name, damage) in [
            ("acting.bpk", None),
            ("learner.state", Some(12)),
            ("other.bpk", Some(40)),
        ] {
            let dir = temp(name);
            toy(1).save_state(&dir).unwrap();
            let file = dir.join(name);
            match damage {
                None => std::fs::remove_file(&file).unwrap(),
                Some(keep) => {
                    let bytes = std::fs::read(&file).unwrap();
                    std::fs::write(&file, &bytes[..keep]).unwrap();
                }
            }
            let err = b.load_state(&dir).unwrap_err().to_string();
            assert!(err.contains(name), "{name}: {err}");
            assert_eq!(
                bits(&b),
                before,
                "{name}: a failed load changed the learner"
            );
            assert!(b.loaded.is_empty());
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
