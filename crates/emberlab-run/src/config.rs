//! A run's config: which algorithm on which environment and device, the trainer's settings
//! and the algorithm's own, as one TOML file (`config.toml` in every run folder). Presets
//! come from rl-baselines3-zoo where it tunes the pair; `--set key=value` overrides any
//! field by its dotted path, and unknown keys are refused as in a file.

use crate::error::{Context, Result, RunError};
pub use crate::kinds::PresetSource;
use crate::kinds::{TrainerConfig, TrainerKind};
use crate::learners::RunLearner;
use crate::registry;
use emberlab_algo::{OffPolicyConfig, OnPolicyConfig, Validate};
use serde::{Deserialize, Serialize};

/// Everything a run is, as `config.toml` holds it: the keys below, the trainer's section
/// (`[off_policy]` or `[on_policy]`) and the algorithm's own section, named as `algo` (the
/// registered learner's: see [`crate::kinds`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// A registered learner: `sac`, `td3`, `dqn`, `ppo`, `a2c`, `reinforce` or yours.
    pub algo: String,
    /// A registered environment id.
    pub env: String,
    /// `flex`, `ndarray`, `tch:cpu`, `tch:cuda:N`, `cuda:N` (as compiled in).
    pub device: String,
    /// Sub-environments stepped together.
    pub num_envs: usize,
    /// Write a checkpoint every this many env steps (0: only at the end).
    pub save_every: u64,
    /// Write a metrics row every this many env steps.
    pub log_every: u64,
    /// The off-policy trainer (SAC, TD3, DQN).
    pub off_policy: Option<OffPolicyConfig>,
    /// The on-policy trainer (PPO, A2C, REINFORCE).
    pub on_policy: Option<OnPolicyConfig>,
    /// The algorithm's own settings: the section `[<algo>]`, read by its registry entry.
    pub settings: toml::Table,
}

/// The keys every config has, as TOML holds them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    algo: String,
    env: String,
    device: String,
    num_envs: usize,
    save_every: u64,
    log_every: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    off_policy: Option<OffPolicyConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    on_policy: Option<OnPolicyConfig>,
}

/// A config as TOML writes it: the common keys in order, the trainer's section, then the
/// algorithm's.
#[derive(Serialize)]
struct Written<'a> {
    algo: &'a str,
    env: &'a str,
    device: &'a str,
    num_envs: usize,
    save_every: u64,
    log_every: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    off_policy: Option<&'a OffPolicyConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    on_policy: Option<&'a OnPolicyConfig>,
    #[serde(flatten)]
    section: std::collections::BTreeMap<&'a str, &'a toml::Table>,
}

impl Serialize for RunConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Written {
            algo: &self.algo,
            env: &self.env,
            device: &self.device,
            num_envs: self.num_envs,
            save_every: self.save_every,
            log_every: self.log_every,
            off_policy: self.off_policy.as_ref(),
            on_policy: self.on_policy.as_ref(),
            section: [(self.algo.as_str(), &self.settings)].into(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for RunConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error;
        let table = toml::Table::deserialize(d)?;
        RunConfig::from_table(table).map_err(D::Error::custom)
    }
}

impl RunConfig {
    /// The preset of `algo` on `env`: zoo's where it has one, the defaults otherwise.
    ///
    /// # Errors
    /// An unknown algorithm (the error lists the known ones).
    pub fn preset(algo: &str, env: &str) -> Result<(RunConfig, PresetSource)> {
        let preset = registry::find(algo)?.preset(env)?;
        let (off_policy, on_policy) = match preset.trainer {
            TrainerConfig::OffPolicy(t) => (Some(t), None),
            TrainerConfig::OnPolicy(t) => (None, Some(t)),
        };
        let mut run = RunConfig {
            algo: algo.to_string(),
            env: env.to_string(),
            device: "flex".into(),
            num_envs: preset.num_envs,
            save_every: 0,
            log_every: 1000,
            off_policy,
            on_policy,
            settings: preset.learner,
        };
        let steps = run.total_steps();
        // Evaluate twenty times over the run, checkpoint ten times.
        run.set_eval_every((steps / 20).max(1));
        run.save_every = (steps / 10).max(1);
        if run.eval_episodes() == 0 {
            run.set_eval_episodes(10);
        }
        Ok((run, preset.source))
    }

    /// The config a TOML table holds: the common keys, the trainer's section and the
    /// section of the registered learner `algo` names.
    ///
    /// # Errors
    /// An unknown algorithm, a missing algorithm section, another algorithm's section,
    /// unknown keys (not yet checked: values against their ranges, see
    /// [`RunConfig::validate`]).
    pub fn from_table(mut table: toml::Table) -> Result<RunConfig> {
        let algo = match table.get("algo") {
            Some(toml::Value::String(a)) => a.clone(),
            Some(_) => return Err(RunError::Config("config: `algo` must be a string".into())),
            None => return Err(RunError::Config("config: missing field `algo`".into())),
        };
        registry::find(&algo)?;
        let settings = match table.remove(&algo) {
            Some(toml::Value::Table(t)) => t,
            Some(_) => {
                return Err(RunError::Config(format!(
                    "config: `{algo}` must be a section ([{algo}])"
                )));
            }
            None => {
                return Err(RunError::Config(format!(
                    "config for algo = \"{algo}\" needs a [{algo}] section"
                )));
            }
        };
        let known = registry::names();
        if let Some(other) = table.keys().find(|k| known.contains(k)) {
            return Err(RunError::Config(format!(
                "config for algo = \"{algo}\" must not have a [{other}] section"
            )));
        }
        let common = Common::deserialize(toml::Value::Table(table))
            .map_err(|e| RunError::Config(format!("config: {}", e.message().trim())))?;
        Ok(RunConfig {
            algo: common.algo,
            env: common.env,
            device: common.device,
            num_envs: common.num_envs,
            save_every: common.save_every,
            log_every: common.log_every,
            off_policy: common.off_policy,
            on_policy: common.on_policy,
            settings,
        })
    }

    /// The learner this config describes, for these spaces on `devices`.
    ///
    /// # Errors
    /// An unknown algorithm, an invalid section, spaces the learner cannot handle.
    pub fn build_learner(
        &self,
        obs: &emberlab_core::Space,
        act: &emberlab_core::Space,
        devices: &emberlab_algo::Devices,
    ) -> Result<Box<dyn RunLearner>> {
        registry::find(&self.algo)?
            .build(&self.settings, obs, act, devices)
            .context_with(|| format!("cannot build {} for {}", self.algo, self.env))
    }

    /// The learner this config describes for image observations `obs = [c, h, w]` and
    /// `actions` discrete actions on `devices`.
    ///
    /// # Errors
    /// An unknown algorithm, an invalid section, a learner without images.
    pub fn build_pixel_learner(
        &self,
        obs: [usize; 3],
        actions: usize,
        devices: &emberlab_algo::Devices,
    ) -> Result<Box<dyn RunLearner>> {
        registry::find(&self.algo)?
            .build_pixels(&self.settings, obs, actions, devices)
            .context_with(|| format!("cannot build {} for {}", self.algo, self.env))
    }

    /// The trainer's budget of env steps.
    pub fn total_steps(&self) -> u64 {
        match (&self.off_policy, &self.on_policy) {
            (Some(t), _) => t.total_steps,
            (_, Some(t)) => t.total_steps,
            _ => 0,
        }
    }

    /// The trainer's evaluation episodes.
    pub fn eval_episodes(&self) -> usize {
        match (&self.off_policy, &self.on_policy) {
            (Some(t), _) => t.eval_episodes,
            (_, Some(t)) => t.eval_episodes,
            _ => 0,
        }
    }

    fn set_eval_every(&mut self, every: u64) {
        if let Some(t) = &mut self.off_policy {
            t.eval_every = every;
        }
        if let Some(t) = &mut self.on_policy {
            t.eval_every = every;
        }
    }

    fn set_eval_episodes(&mut self, n: usize) {
        if let Some(t) = &mut self.off_policy {
            t.eval_episodes = n;
        }
        if let Some(t) = &mut self.on_policy {
            t.eval_episodes = n;
        }
    }

    /// The seed of the run (the trainer's; the algorithm's is kept equal to it).
    pub fn seed(&self) -> u64 {
        match (&self.off_policy, &self.on_policy) {
            (Some(t), _) => t.seed,
            (_, Some(t)) => t.seed,
            _ => 0,
        }
    }

    /// The command-line flags, as overrides of fields (`--steps` etc.).
    pub fn apply_flags(&mut self, flags: &Flags) -> Result<()> {
        let mut sets: Vec<(String, String)> = Vec::new();
        let trainer = self.trainer_section();
        if let Some(s) = flags.steps {
            sets.push((format!("{trainer}.total_steps"), s.to_string()));
        }
        if let Some(s) = flags.seed {
            sets.push((format!("{trainer}.seed"), s.to_string()));
            if self.settings.contains_key("seed") {
                sets.push((format!("{}.seed", self.algo), s.to_string()));
            }
        }
        if let Some(e) = flags.eval_every {
            sets.push((format!("{trainer}.eval_every"), e.to_string()));
        }
        if let Some(r) = flags.stop_reward {
            sets.push((format!("{trainer}.target_return"), format!("{r:?}")));
        }
        if let Some(s) = flags.save_every {
            sets.push(("save_every".into(), s.to_string()));
        }
        if let Some(d) = &flags.device {
            sets.push(("device".into(), format!("{d:?}")));
        }
        for (k, v) in &sets {
            *self = self.with_set(k, v)?;
        }
        for set in &flags.sets {
            let (k, v) = set.split_once('=').ok_or_else(|| {
                RunError::Config(format!(
                    "--set `{set}`: expected KEY=VALUE, e.g. --set sac.learning_rate=3e-4"
                ))
            })?;
            *self = self.with_set(k.trim(), v.trim())?;
        }
        Ok(())
    }

    /// `off_policy` or `on_policy`.
    pub fn trainer_section(&self) -> &'static str {
        if self.on_policy.is_some() {
            "on_policy"
        } else {
            "off_policy"
        }
    }

    /// This config with the field at dotted `key` set to `value` (TOML syntax; a bare word
    /// is taken as a string), checked like a file.
    ///
    /// # Errors
    /// An unknown key (listing the known ones at that level) or a value of the wrong type.
    pub fn with_set(&self, key: &str, value: &str) -> Result<RunConfig> {
        let mut table = toml::Table::try_from(self).context_with(|| "config to TOML".into())?;
        let parsed: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
            Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(value.into())),
            Err(_) => toml::Value::String(value.into()),
        };
        let parts: Vec<&str> = key.split('.').collect();
        let (last, path) = parts
            .split_last()
            .ok_or_else(|| RunError::Config("--set: empty key".into()))?;
        let mut node = &mut table;
        for (depth, part) in path.iter().enumerate() {
            let known: Vec<String> = node.keys().cloned().collect();
            let entry = node.get_mut(*part).ok_or_else(|| {
                RunError::Config(format!(
                    "unknown config key `{}` in --set {key}: known at that level are {}",
                    parts[..=depth].join("."),
                    known.join(", ")
                ))
            })?;
            node = entry.as_table_mut().ok_or_else(|| {
                RunError::Config(format!(
                    "--set {key}: `{}` is not a section",
                    parts[..=depth].join(".")
                ))
            })?;
        }
        node.insert((*last).to_string(), parsed);
        let text = toml::to_string(&table).context_with(|| "config to TOML".into())?;
        Self::parse(&text).map_err(|e| RunError::Config(format!("--set {key}={value}: {e}")))
    }

    /// Parses and checks a config file's text.
    ///
    /// # Errors
    /// TOML syntax (with line and column), unknown keys, values out of range, a section
    /// that does not fit the algorithm.
    pub fn parse(text: &str) -> Result<RunConfig> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| RunError::Config(one_line(&e)))?;
        let run = Self::from_table(table)?;
        run.validate()?;
        Ok(run)
    }

    /// Checks the sections against the algorithm and every value against its range.
    ///
    /// # Errors
    /// The first problem found, naming the field.
    pub fn validate(&self) -> Result<()> {
        let kind = registry::find(&self.algo)?;
        let off = kind.trainer() == TrainerKind::OffPolicy;
        if off != self.off_policy.is_some() || off == self.on_policy.is_some() {
            return Err(RunError::Config(format!(
                "config for algo = \"{}\" needs exactly one trainer section: [{}]",
                self.algo,
                if off { "off_policy" } else { "on_policy" }
            )));
        }
        if self.num_envs == 0 {
            return Err(RunError::Config(
                "invalid num_envs: got 0, expected >= 1".into(),
            ));
        }
        if self.log_every == 0 {
            return Err(RunError::Config(
                "invalid log_every: got 0, expected >= 1".into(),
            ));
        }
        self.device.parse::<emberlab_backend::DeviceSpec>()?;
        kind.check(&self.settings)?;
        if let Some(c) = &self.off_policy {
            c.validate()?;
        }
        if let Some(c) = &self.on_policy {
            c.validate()?;
        }
        Ok(())
    }

    /// The config as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a run config serialises")
    }
}

/// The flags of `ember train` that override config fields.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// `--steps`.
    pub steps: Option<u64>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--eval-every`.
    pub eval_every: Option<u64>,
    /// `--save-every`.
    pub save_every: Option<u64>,
    /// `--stop-reward`.
    pub stop_reward: Option<f64>,
    /// `--device`.
    pub device: Option<String>,
    /// `--set KEY=VALUE`, in order.
    pub sets: Vec<String>,
}

/// A TOML error on one line: message, line and column.
fn one_line(e: &toml::de::Error) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => format!("config: {msg} (at byte {}..{})", span.start, span.end),
        None => format!("config: {msg}"),
    }
}

/// Line and column (1-based) of byte `at` in `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Reads and checks a config file; a syntax error names its line and column.
///
/// # Errors
/// A missing file, TOML syntax, unknown keys, values out of range.
pub fn load_file(path: &std::path::Path) -> Result<RunConfig> {
    let text = std::fs::read_to_string(path)
        .context_with(|| format!("cannot read config {}", path.display()))?;
    match toml::from_str::<toml::Table>(&text) {
        Ok(table) => {
            let run = RunConfig::from_table(table)
                .and_then(|run| run.validate().map(|()| run))
                .context_with(|| format!("config {}", path.display()))?;
            Ok(run)
        }
        Err(e) => {
            let place = e
                .span()
                .map(|s| {
                    let (l, c) = line_col(&text, s.start);
                    format!(" at line {l}, column {c}")
                })
                .unwrap_or_default();
            Err(RunError::Config(format!(
                "config {}{place}: {}",
                path.display(),
                e.message().trim().replace('\n', " ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sac() -> RunConfig {
        RunConfig::preset("sac", "Pendulum-v1").unwrap().0
    }

    fn err(text: &str) -> String {
        RunConfig::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn every_builtin_preset_round_trips_through_its_toml() {
        for algo in ["sac", "td3", "dqn", "ppo", "a2c", "reinforce"] {
            let env = if matches!(algo, "sac" | "td3") {
                "Pendulum-v1"
            } else {
                "CartPole-v1"
            };
            let (config, _) = RunConfig::preset(algo, env).unwrap();
            let text = config.to_toml();
            assert!(text.contains(&format!("[{algo}]")), "{text}");
            assert_eq!(RunConfig::parse(&text).unwrap(), config, "{algo}");
        }
    }

    #[test]
    fn sections_that_do_not_fit_the_algorithm_are_refused_by_name() {
        let text = sac().to_toml();
        let missing = text.replace("[sac]", "[other]");
        assert!(err(&missing).contains("needs a [sac] section"));
        let two = format!("{text}\n[td3]\nseed = 1\n");
        assert!(
            err(&two).contains("must not have a [td3] section"),
            "{}",
            err(&two)
        );
        let unknown_algo = text.replace("algo = \"sac\"", "algo = \"sax\"");
        let e = err(&unknown_algo);
        assert!(
            e.contains("unknown algorithm `sax`") && e.contains("reinforce"),
            "{e}"
        );
        let top_typo = format!("num_env = 2\n{text}");
        assert!(err(&top_typo).contains("num_env"), "{}", err(&top_typo));
        let inner_typo = text.replace("[sac]\n", "[sac]\nlearning_rat = 1.0\n");
        assert!(
            err(&inner_typo).contains("learning_rat"),
            "{}",
            err(&inner_typo)
        );
        let on_for_off = RunConfig {
            off_policy: None,
            on_policy: Some(OnPolicyConfig::default()),
            ..sac()
        };
        let e = on_for_off.validate().unwrap_err().to_string();
        assert!(e.contains("one trainer section: [off_policy]"), "{e}");
        let out_of_range = sac().with_set("sac.gamma", "2.0").unwrap_err().to_string();
        assert!(out_of_range.contains("gamma"), "{out_of_range}");
    }

    #[test]
    fn seed_flag_sets_the_trainer_and_the_learner_when_it_has_a_seed() {
        let mut config = sac();
        config
            .apply_flags(&Flags {
                seed: Some(42),
                ..Flags::default()
            })
            .unwrap();
        assert_eq!(config.seed(), 42);
        assert_eq!(config.settings.get("seed"), Some(&toml::Value::Integer(42)));
    }
}
