//! SAC's update: the parallel schedule computes exactly what the sequential one computes,
//! and a diverged loss is an error that changes nothing; TD3's too, with networks large
//! enough that the optimizer steps and Polyak averages are dealt out in blocks.

mod common;

use burn::tensor::Device;
use emberlab_algo::{Devices, OffPolicyLearner, Sac, SacConfig, Td3, Td3Config, UpdateSchedule};
use emberlab_core::{Batch, BoxSpace, EmberRng, Error, Space};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Weight initialisation draws from the backend's global generator: tests that build
/// learners take this lock so that seeding and building are not interleaved.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const OBS: usize = 5;
const ACT: usize = 2;

fn state(sac: &Sac) -> Vec<u32> {
    let mut all = common::bits(sac.actor());
    all.extend(common::bits(sac.critic()));
    all.extend(common::bits(sac.target_critic()));
    all.push((sac.alpha() as f32).to_bits());
    all
}

fn batch(rng: &mut EmberRng, n: usize) -> Batch {
    let mut b = Batch::with_capacity(OBS, ACT, n);
    let mut u =
        |k: usize| -> Vec<f32> { (0..k).map(|_| rng.next_f64() as f32 * 2.0 - 1.0).collect() };
    b.len = n;
    b.obs = u(n * OBS);
    b.action = u(n * ACT);
    b.reward = u(n);
    b.next_obs = u(n * OBS);
    b.terminated = u(n).iter().map(|&x| (x > 0.8) as u8 as f32).collect();
    b.truncated = vec![0.0; n];
    b.weights = vec![1.0; n];
    b
}

fn sac(schedule: UpdateSchedule, device: &Device) -> Sac {
    sac_sized(schedule, device, 32)
}

fn sac_sized(schedule: UpdateSchedule, device: &Device, width: usize) -> Sac {
    let config = SacConfig {
        hidden: vec![width, width],
        update_schedule: schedule,
        seed: 11,
        ..SacConfig::default()
    };
    let obs = Space::Box(BoxSpace::uniform(OBS, -1.0, 1.0).unwrap());
    let act = Space::Box(BoxSpace::uniform(ACT, -2.0, 2.0).unwrap());
    config.build(&obs, &act, &Devices::same(device)).unwrap()
}

#[test]
fn parallel_and_sequential_schedules_are_bit_identical() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for spec in emberlab_backend::DeviceSpec::compiled_cpu() {
        let device = spec.device().unwrap();
        let mut seq = sac(UpdateSchedule::Sequential, &device);
        let mut par = sac(UpdateSchedule::Parallel, &device);
        let initial = state(&seq);
        assert_eq!(
            initial,
            state(&par),
            "{spec}: same seed, same initial weights"
        );
        let mut rng = EmberRng::seed_from(5);
        // Ten updates, the parallel learner's halves on two threads (helping each other
        // with their large products at the gate).
        for step in 0..10 {
            let b = batch(&mut rng, 64);
            let ms = seq.update(&b, step).unwrap();
            let mp = par.update(&b, step).unwrap();
            assert_eq!(ms, mp, "{spec}: metrics at step {step}");
        }
        let after = state(&seq);
        assert_eq!(after, state(&par), "{spec}: weights after 10 updates");
        assert_ne!(after, initial, "{spec}: the updates changed the weights");
        assert!(
            seq.alpha() < 1.0,
            "{spec}: alpha moved from 1: {}",
            seq.alpha()
        );
    }
}

/// With 256-wide layers (65,536 and, for the twin critics, 131,072 values per weight),
/// every optimizer step and Polyak average runs in blocks that a waiting thread may take:
/// still the sequential schedule's bits, for SAC and for TD3 (whose actor steps every
/// second update).
#[test]
fn large_networks_stepped_in_shared_blocks_keep_the_sequential_bits() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let obs = Space::Box(BoxSpace::uniform(OBS, -1.0, 1.0).unwrap());
    let act = Space::Box(BoxSpace::uniform(ACT, -2.0, 2.0).unwrap());
    for spec in emberlab_backend::DeviceSpec::compiled_cpu() {
        let device = spec.device().unwrap();
        let td3 = |update_schedule| -> Td3 {
            let config = Td3Config {
                hidden: vec![256, 256],
                update_schedule,
                seed: 12,
                ..Td3Config::default()
            };
            config.build(&obs, &act, &Devices::same(&device)).unwrap()
        };
        let td3_state = |t: &Td3| {
            let mut all = common::bits(t.actor());
            all.extend(common::bits(t.actor_target()));
            all.extend(common::bits(t.critic()));
            all.extend(common::bits(t.critic_target()));
            all
        };
        let (mut seq, mut par) = (
            td3(UpdateSchedule::Sequential),
            td3(UpdateSchedule::Parallel),
        );
        let (mut sac_seq, mut sac_par) = (
            sac_sized(UpdateSchedule::Sequential, &device, 256),
            sac_sized(UpdateSchedule::Parallel, &device, 256),
        );
        let (initial, sac_initial) = (td3_state(&seq), state(&sac_seq));
        assert_eq!(initial, td3_state(&par), "{spec}: same seed, same weights");
        let mut rng = EmberRng::seed_from(6);
        for step in 0..6 {
            let b = batch(&mut rng, 64);
            let (ms, mp) = (seq.update(&b, step).unwrap(), par.update(&b, step).unwrap());
            assert_eq!(ms, mp, "{spec}: TD3 metrics at step {step}");
            let (ms, mp) = (
                sac_seq.update(&b, step).unwrap(),
                sac_par.update(&b, step).unwrap(),
            );
            assert_eq!(ms, mp, "{spec}: SAC metrics at step {step}");
        }
        let after = td3_state(&seq);
        assert_eq!(
            after,
            td3_state(&par),
            "{spec}: TD3 weights after 6 updates"
        );
        assert_ne!(after, initial, "{spec}: the updates changed TD3's weights");
        let sac_after = state(&sac_seq);
        assert_eq!(
            sac_after,
            state(&sac_par),
            "{spec}: SAC weights after 6 updates"
        );
        assert_ne!(
            sac_after, sac_initial,
            "{spec}: the updates changed SAC's weights"
        );
    }
}

#[test]
fn a_nan_loss_names_the_loss_and_step_and_changes_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    for schedule in [UpdateSchedule::Sequential, UpdateSchedule::Parallel] {
        let mut s = sac(schedule, &device);
        let mut rng = EmberRng::seed_from(6);
        s.update(&batch(&mut rng, 16), 0).unwrap();
        let before = state(&s);
        let mut bad = batch(&mut rng, 16);
        // Finite (it passes the batch checks), but its square overflows the loss.
        bad.reward[3] = f32::MAX;
        match s.update(&bad, 1) {
            Err(Error::Diverged { name, step, .. }) => {
                assert_eq!(name, "critic loss");
                assert_eq!(step, 1);
            }
            other => panic!("{schedule:?}: expected a diverged critic loss, got {other:?}"),
        }
        assert_eq!(state(&s), before, "{schedule:?}: nothing changed");
        // The learner still works after the error.
        s.update(&batch(&mut rng, 16), 2).unwrap();
        assert_ne!(state(&s), before);
    }
}

#[test]
fn wrong_batch_widths_are_errors() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    let mut s = sac(UpdateSchedule::Parallel, &device);
    let mut b = batch(&mut EmberRng::seed_from(1), 4);
    b.obs_dim = OBS + 1;
    let e = s.update(&b, 0).unwrap_err().to_string();
    assert!(e.contains("batch.obs_dim"), "{e}");
}
