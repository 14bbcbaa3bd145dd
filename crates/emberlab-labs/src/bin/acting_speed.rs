//! How fast each built-in off-policy learner acts on one observation at a time, through
//! its [`Agent::act`] as the trainers call it (exploring), on flex: SAC and TD3 with their
//! default networks on HalfCheetah-v5's spaces (17 → 6), DQN with its default network on
//! CartPole-v1's (4 → 2). Learners are timed in interleaved blocks, so a slow spell of the
//! host falls on all of them; medians over the rounds.
//!
//! ```sh
//! cargo run --release -p emberlab-labs --bin acting_speed [rounds]
//! ```
//!
//! Prints one line per learner, e.g. `acting_speed learner=td3 rows=1 median_us=4.10
//! calls_per_s=243900`.

use emberlab::algo::{ActionBuf, Agent, Devices, DqnConfig, SacConfig, Td3Config};
use emberlab::core::{BoxSpace, Discrete, EmberRng, Error, Result, Space};
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Distinct observations the calls cycle through.
const OBSERVATIONS: usize = 61;
/// Calls per timed block.
const BLOCK: usize = 200;

fn main() -> Result<()> {
    let rounds: usize = match std::env::args().nth(1) {
        Some(r) => r
            .parse()
            .map_err(|_| Error::invalid("rounds", r, "a whole number of rounds, e.g. 100"))?,
        None => 100,
    };
    let devices = Devices::same(&emberlab::backend::DeviceSpec::Flex.device()?);
    let cheetah = (
        Space::Box(BoxSpace::uniform(17, f32::NEG_INFINITY, f32::INFINITY)?),
        Space::Box(BoxSpace::uniform(6, -1.0, 1.0)?),
    );
    let cartpole = (
        Space::Box(BoxSpace::uniform(4, -5.0, 5.0)?),
        Space::Discrete(Discrete::new(2)?),
    );
    let mut learners: Vec<(&str, Box<dyn Agent>, &Space)> = vec![
        (
            "sac",
            Box::new(SacConfig::default().build(&cheetah.0, &cheetah.1, &devices)?),
            &cheetah.1,
        ),
        (
            "td3",
            Box::new(Td3Config::default().build(&cheetah.0, &cheetah.1, &devices)?),
            &cheetah.1,
        ),
        (
            "dqn",
            Box::new(DqnConfig::default().build(&cartpole.0, &cartpole.1, &devices)?),
            &cartpole.1,
        ),
    ];
    let mut rng = EmberRng::seed_from(1);
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); learners.len()];
    let mut outs: Vec<ActionBuf> = learners
        .iter()
        .map(|(_, _, act)| ActionBuf::for_space(act))
        .collect();
    let observations: Vec<Vec<Vec<f32>>> = learners
        .iter()
        .map(|(_, agent, _)| {
            (0..OBSERVATIONS)
                .map(|_| {
                    (0..agent.obs_dim())
                        .map(|_| rng.next_f64() as f32 * 2.0 - 1.0)
                        .collect()
                })
                .collect()
        })
        .collect();
    for round in 0..=rounds {
        for (k, (_, agent, _)) in learners.iter_mut().enumerate() {
            let started = Instant::now();
            for i in 0..BLOCK {
                agent.act(&observations[k][i % OBSERVATIONS], true, &mut outs[k])?;
            }
            if round > 0 {
                // Round 0 warms up.
                times[k].push(started.elapsed().as_secs_f64() * 1e6 / BLOCK as f64);
            }
        }
    }
    for ((name, _, _), mut t) in learners.iter().zip(times) {
        t.sort_by(f64::total_cmp);
        let median = t[t.len() / 2];
        println!(
            "acting_speed learner={name} rows=1 median_us={median:.2} calls_per_s={:.0}",
            1e6 / median
        );
    }
    Ok(())
}
