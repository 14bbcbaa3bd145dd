//! A run's config: which algorithm on which environment and device, the trainer's settings
//! and the algorithm's own, as one TOML file (`config.toml` in every run folder). Presets
//! come from rl-baselines3-zoo where it tunes the pair; `--set key=value` overrides any
//! field by its dotted path, and unknown keys are refused as in a file.

use crate::error::{Context, Result, RunError};
use emberlab_algo::{
    A2cConfig, DqnConfig, OffPolicyConfig, OnPolicyConfig, PpoConfig, ReinforceConfig, SacConfig,
    Td3Config, Validate,
};
use serde::{Deserialize, Serialize};

/// The algorithms `ember train` knows.
pub const ALGOS: [&str; 6] = ["sac", "td3", "dqn", "ppo", "a2c", "reinforce"];

/// Everything a run is, as `config.toml` holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// `sac`, `td3`, `dqn`, `ppo`, `a2c` or `reinforce`.
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_policy: Option<OffPolicyConfig>,
    /// The on-policy trainer (PPO, A2C, REINFORCE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_policy: Option<OnPolicyConfig>,
    /// SAC's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sac: Option<SacConfig>,
    /// TD3's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub td3: Option<Td3Config>,
    /// DQN's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dqn: Option<DqnConfig>,
    /// PPO's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppo: Option<PpoConfig>,
    /// A2C's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2c: Option<A2cConfig>,
    /// REINFORCE's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinforce: Option<ReinforceConfig>,
}

/// Where a preset came from.
pub enum PresetSource {
    /// rl-baselines3-zoo's hyper-parameters for the pair.
    Zoo,
    /// The algorithm's defaults (zoo has no preset for this environment).
    Defaults,
}

impl RunConfig {
    /// The preset of `algo` on `env`: zoo's where it has one, the defaults otherwise.
    ///
    /// # Errors
    /// An unknown algorithm (the error lists the known ones).
    pub fn preset(algo: &str, env: &str) -> Result<(RunConfig, PresetSource)> {
        let mut run = RunConfig {
            algo: algo.to_string(),
            env: env.to_string(),
            device: "flex".into(),
            num_envs: 1,
            save_every: 0,
            log_every: 1000,
            off_policy: None,
            on_policy: None,
            sac: None,
            td3: None,
            dqn: None,
            ppo: None,
            a2c: None,
            reinforce: None,
        };
        let source = match algo {
            "sac" => {
                let (a, t, s) = match SacConfig::zoo(env) {
                    Ok((a, t)) => (a, t, PresetSource::Zoo),
                    Err(_) => (
                        SacConfig::default(),
                        OffPolicyConfig::default(),
                        PresetSource::Defaults,
                    ),
                };
                run.sac = Some(a);
                run.off_policy = Some(t);
                s
            }
            "td3" => {
                let (a, t, s) = match Td3Config::zoo(env) {
                    Ok((a, t)) => (a, t, PresetSource::Zoo),
                    Err(_) => (
                        Td3Config::default(),
                        OffPolicyConfig::default(),
                        PresetSource::Defaults,
                    ),
                };
                run.td3 = Some(a);
                run.off_policy = Some(t);
                s
            }
            "dqn" => {
                let (a, t, s) = match DqnConfig::zoo(env) {
                    Ok((a, t)) => (a, t, PresetSource::Zoo),
                    Err(_) => (
                        DqnConfig::default(),
                        OffPolicyConfig::default(),
                        PresetSource::Defaults,
                    ),
                };
                run.dqn = Some(a);
                run.off_policy = Some(t);
                s
            }
            "ppo" => {
                let (a, t, n, s) = match PpoConfig::zoo(env) {
                    Ok((a, t, n)) => (a, t, n, PresetSource::Zoo),
                    Err(_) => (
                        PpoConfig::default(),
                        OnPolicyConfig {
                            n_steps: 2048,
                            ..OnPolicyConfig::default()
                        },
                        1,
                        PresetSource::Defaults,
                    ),
                };
                run.ppo = Some(a);
                run.on_policy = Some(t);
                run.num_envs = n;
                s
            }
            "a2c" => {
                let (a, t, n, s) = match A2cConfig::zoo(env) {
                    Ok((a, t, n)) => (a, t, n, PresetSource::Zoo),
                    Err(_) => (
                        A2cConfig::default(),
                        OnPolicyConfig::default(),
                        8,
                        PresetSource::Defaults,
                    ),
                };
                run.a2c = Some(a);
                run.on_policy = Some(t);
                run.num_envs = n;
                s
            }
            "reinforce" => {
                run.reinforce = Some(ReinforceConfig::default());
                run.on_policy = Some(OnPolicyConfig {
                    total_steps: 400_000,
                    n_steps: 1000,
                    ..OnPolicyConfig::default()
                });
                run.num_envs = 8;
                PresetSource::Defaults
            }
            other => {
                return Err(RunError::Config(format!(
                    "unknown algorithm `{other}`: known are {} (see `ember zoo ALGO`)",
                    ALGOS.join(", ")
                )));
            }
        };
        let steps = run.total_steps();
        // Evaluate twenty times over the run, checkpoint ten times.
        run.set_eval_every((steps / 20).max(1));
        run.save_every = (steps / 10).max(1);
        if run.eval_episodes() == 0 {
            run.set_eval_episodes(10);
        }
        Ok((run, source))
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
            sets.push((format!("{}.seed", self.algo), s.to_string()));
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
        let run: RunConfig = toml::from_str(text).map_err(|e| RunError::Config(one_line(&e)))?;
        run.validate()?;
        Ok(run)
    }

    /// Checks the sections against the algorithm and every value against its range.
    ///
    /// # Errors
    /// The first problem found, naming the field.
    pub fn validate(&self) -> Result<()> {
        if !ALGOS.contains(&self.algo.as_str()) {
            return Err(RunError::Config(format!(
                "unknown algorithm `{}`: known are {}",
                self.algo,
                ALGOS.join(", ")
            )));
        }
        let off = matches!(self.algo.as_str(), "sac" | "td3" | "dqn");
        let present = [
            ("sac", self.sac.is_some()),
            ("td3", self.td3.is_some()),
            ("dqn", self.dqn.is_some()),
            ("ppo", self.ppo.is_some()),
            ("a2c", self.a2c.is_some()),
            ("reinforce", self.reinforce.is_some()),
        ];
        for (name, is) in present {
            if is != (name == self.algo) {
                return Err(RunError::Config(format!(
                    "config for algo = \"{}\" {} a [{name}] section",
                    self.algo,
                    if is { "must not have" } else { "needs" }
                )));
            }
        }
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
        if let Some(c) = &self.sac {
            c.validate()?;
        }
        if let Some(c) = &self.td3 {
            c.validate()?;
        }
        if let Some(c) = &self.dqn {
            c.validate()?;
        }
        if let Some(c) = &self.ppo {
            c.validate()?;
        }
        if let Some(c) = &self.a2c {
            c.validate()?;
        }
        if let Some(c) = &self.reinforce {
            c.validate()?;
        }
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
    match toml::from_str::<RunConfig>(&text) {
        Ok(run) => {
            run.validate()
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
