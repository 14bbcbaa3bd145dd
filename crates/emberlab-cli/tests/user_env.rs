//! A program of a user's own registers its environments and runs the `ember` command
//! (`emberlab_cli::app::main_with_args`): one environment with exact snapshots (its runs
//! resume), one without (its runs train, keep weights only, and say they cannot resume).

use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Action, BoxSpace, EmberRng, Env, Result, Space, StepInfo};
use std::process::ExitCode;

/// Move a point on a line to 0.5 in 50 steps; starts uniformly in [-1, 1].
#[derive(Clone)]
struct Reach {
    x: f64,
    t: u32,
    rng: EmberRng,
    obs_space: Space,
    act_space: Space,
    snapshots: bool,
}

impl Reach {
    fn new(snapshots: bool) -> Self {
        Reach {
            x: 0.0,
            t: 0,
            rng: EmberRng::seed_from(0),
            obs_space: Space::Box(BoxSpace::uniform(1, -2.0, 2.0).unwrap()),
            act_space: Space::Box(BoxSpace::uniform(1, -1.0, 1.0).unwrap()),
            snapshots,
        }
    }
}

impl Env for Reach {
    fn observation_space(&self) -> &Space {
        &self.obs_space
    }
    fn action_space(&self) -> &Space {
        &self.act_space
    }
    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        if let Some(s) = seed {
            self.rng = EmberRng::seed_from(s);
        }
        self.x = self.rng.next_f64() * 2.0 - 1.0;
        self.t = 0;
        obs[0] = self.x as f32;
        Ok(())
    }
    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let Action::Continuous(a) = action else {
            return Err(emberlab_core::Error::invalid(
                "action",
                "discrete",
                "continuous",
            ));
        };
        self.x = (self.x + 0.1 * f64::from(a[0].clamp(-1.0, 1.0))).clamp(-2.0, 2.0);
        self.t += 1;
        obs[0] = self.x as f32;
        Ok(StepInfo {
            reward: -(self.x - 0.5).abs(),
            terminated: false,
            truncated: self.t >= 50,
        })
    }
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        if !self.snapshots {
            return Err(emberlab_core::env::no_snapshot());
        }
        out.f64(self.x).u64(u64::from(self.t)).rng(&self.rng);
        Ok(())
    }
    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        if !self.snapshots {
            return Err(emberlab_core::env::no_snapshot());
        }
        let (x, t, rng) = (src.f64()?, src.u64()?, src.rng()?);
        (self.x, self.t, self.rng) = (x, t as u32, rng);
        Ok(())
    }
}

fn ember(args: &[&str]) -> ExitCode {
    let mut all = vec!["ember"];
    all.extend_from_slice(args);
    emberlab_cli::app::main_with_args(all)
}

#[test]
fn a_users_environments_train_through_the_registry() {
    emberlab_env::register(
        "Reach-v0",
        || Ok(Box::new(Reach::new(true)) as Box<dyn Env>),
    )
    .unwrap();
    emberlab_env::register("ReachPlain-v0", || {
        Ok(Box::new(Reach::new(false)) as Box<dyn Env>)
    })
    .unwrap();
    let root = std::env::temp_dir().join(format!("ember-user-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let run = |name: &str| root.join(name).display().to_string();
    let small = |env: &'static str, out: String| -> Vec<String> {
        [
            "train",
            "sac",
            "--env",
            env,
            "--set",
            "sac.hidden=[16]",
            "--steps",
            "300",
            "--set",
            "off_policy.learning_starts=100",
            "--set",
            "off_policy.batch_size=16",
            "--set",
            "off_policy.eval_episodes=1",
            "--eval-every",
            "150",
            "--save-every",
            "100",
            "--quiet",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([out])
        .collect()
    };
    let call = |args: &[String]| ember(&args.iter().map(String::as_str).collect::<Vec<_>>());

    // With snapshots: trains, and a finished run resumes (to the same end) without error.
    assert_eq!(call(&small("Reach-v0", run("snap"))), ExitCode::SUCCESS);
    assert!(root.join("snap/checkpoint/env.state").is_file());
    assert_eq!(
        ember(&["train", "--resume", &run("snap"), "--quiet"]),
        ExitCode::SUCCESS
    );
    let evals = std::fs::read_to_string(root.join("snap/evaluations.csv")).unwrap();
    assert_eq!(
        evals.lines().count(),
        3,
        "header + evaluations at 150 and 300: {evals}"
    );

    // Without: trains, keeps weights only, refuses to resume, evaluates.
    assert_eq!(
        call(&small("ReachPlain-v0", run("plain"))),
        ExitCode::SUCCESS
    );
    assert!(root.join("plain/checkpoint/checkpoint.toml").is_file());
    assert!(!root.join("plain/checkpoint/trainer.state").exists());
    assert_eq!(
        ember(&["train", "--resume", &run("plain"), "--quiet"]),
        ExitCode::from(2)
    );
    assert_eq!(
        ember(&["eval", &run("plain"), "--episodes", "2"]),
        ExitCode::SUCCESS
    );
    // An id nobody registered is refused, naming the registered ones.
    assert_eq!(call(&small("Reach-v9", run("typo"))), ExitCode::from(2));
    assert!(!root.join("typo").exists(), "no folder for a refused run");
    std::fs::remove_dir_all(&root).unwrap();
}
