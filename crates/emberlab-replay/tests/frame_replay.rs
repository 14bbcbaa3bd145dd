//! `FrameReplay` keeps every sampler in step with its frame storage: the sampler draws
//! exactly the drawable slots, return-weighted scores follow the episode rule, priorities
//! of slots gone since the draw are skipped, and a seed gives the same batches.

use emberlab_core::EmberRng;
use emberlab_replay::{
    AnySampler, FrameBatch, FrameReplay, FrameStorage, Prioritized, ReturnWeighted, Sampler,
    Uniform,
};
use std::collections::{BTreeSet, HashMap};

const FRAME: usize = 2;
const STACK: usize = 4;
const N: usize = 3;
const ENVS: usize = 3;

fn samplers(capacity: usize) -> Vec<AnySampler> {
    vec![
        Uniform::new(capacity, false).into(),
        Uniform::new(capacity, true).into(),
        Prioritized::new(capacity, 0.6, 0.4).unwrap().into(),
        ReturnWeighted::new(capacity).into(),
    ]
}

/// The slots the sampler would draw from, read through its own interface.
fn sampler_set(replay: &mut FrameReplay<AnySampler>, rng: &mut EmberRng) -> BTreeSet<usize> {
    let capacity = replay.storage().capacity();
    match replay.sampler() {
        AnySampler::Prioritized(p) => (0..capacity).filter(|&s| p.stored(s).is_some()).collect(),
        AnySampler::ReturnWeighted(r) => (0..capacity).filter(|&s| r.score(s).is_some()).collect(),
        AnySampler::Uniform(u) => {
            // Without replacement, a draw of every drawable slot names each once, and one
            // more is refused.
            let mut u = u.clone();
            let (mut idx, mut w) = (Vec::new(), Vec::new());
            let len = replay.storage().len();
            let all = replay.drawable();
            if u.replacement() {
                let mut seen = BTreeSet::new();
                for _ in 0..50 {
                    u.sample(len, all.max(1), rng, &mut idx, &mut w).ok();
                    seen.extend(idx.iter().copied());
                }
                return seen;
            }
            let mut set = BTreeSet::new();
            if all > 0 {
                u.sample(len, all, rng, &mut idx, &mut w).unwrap();
                set.extend(idx.iter().copied());
                assert_eq!(set.len(), all);
            }
            assert!(u.sample(len, all + 1, rng, &mut idx, &mut w).is_err());
            set
        }
    }
}

/// One step of the driven environments: which env, and how the step ends.
fn step(rng: &mut EmberRng) -> (usize, bool, bool) {
    let env = rng.below(ENVS as u64) as usize;
    let roll = rng.below(100);
    (env, roll < 6, (6..10).contains(&roll))
}

#[test]
fn every_sampler_draws_exactly_the_drawable_slots() {
    for capacity in [ENVS * (STACK + N + 1), 61] {
        for sampler in samplers(capacity) {
            let kind = format!("{} (replacement: {:?})", sampler.kind(), {
                match &sampler {
                    AnySampler::Uniform(u) => Some(u.replacement()),
                    _ => None,
                }
            });
            let storage = FrameStorage::new(capacity, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
            let mut replay = FrameReplay::new(storage, sampler, 5).unwrap();
            let mut rng = EmberRng::seed_from(11);
            let mut check = EmberRng::seed_from(12);
            let mut batch = FrameBatch::default();
            for env in 0..ENVS {
                replay.begin(env, &[1; FRAME]).unwrap();
            }
            let mut frame = 1u8;
            for round in 0..600 {
                let (env, term, trunc) = step(&mut rng);
                frame = frame.wrapping_add(1);
                replay
                    .push(env, &[0.0], 1.0, term, trunc, &[frame; FRAME])
                    .unwrap();
                if term || trunc {
                    replay.begin(env, &[frame; FRAME]).unwrap();
                }
                let storage = replay.storage();
                let drawable: BTreeSet<usize> =
                    (0..capacity).filter(|&s| storage.is_drawable(s)).collect();
                assert_eq!(drawable.len(), replay.drawable());
                assert_eq!(
                    sampler_set(&mut replay, &mut check),
                    drawable,
                    "{kind}, capacity {capacity}, round {round}"
                );
                if drawable.len() >= 4 {
                    replay.sample(4, &mut batch).unwrap();
                    assert_eq!(batch.len, 4);
                    assert_eq!(batch.weights.len(), 4);
                    assert!(batch.indices.iter().all(|s| drawable.contains(s)));
                    if replay.sampler().uses_priorities() {
                        let prios: Vec<f32> = (0..4).map(|i| i as f32).collect();
                        let slots = batch.indices.clone();
                        replay.update_priorities(&slots, &prios).unwrap();
                    }
                }
            }
            assert!(
                replay.storage().len() == capacity,
                "{kind}: the ring never filled"
            );
        }
    }
}

#[test]
fn return_weighted_scores_follow_the_episode_rule() {
    let capacity = 40;
    let storage = FrameStorage::new(capacity, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
    let mut replay = FrameReplay::new(storage, ReturnWeighted::new(capacity), 1).unwrap();
    let mut rng = EmberRng::seed_from(4);
    // Per env: (episode id, return so far); per episode: its final return once ended.
    let mut running = [(0usize, 0.0f64); ENVS];
    let mut finals: HashMap<usize, f64> = HashMap::new();
    // Per (slot, write number): the episode and the return when it became drawable.
    let mut scored: HashMap<(usize, u64), (usize, f64)> = HashMap::new();
    let mut next_episode = ENVS;
    for (env, r) in running.iter_mut().enumerate() {
        r.0 = env;
        replay.begin(env, &[0; FRAME]).unwrap();
    }
    let (mut checked_final, mut checked_running) = (0, 0);
    for _ in 0..800 {
        let (env, term, trunc) = step(&mut rng);
        let reward = rng.below(7) as f32 - 3.0;
        let before: BTreeSet<usize> = (0..capacity)
            .filter(|&s| replay.storage().is_drawable(s))
            .collect();
        replay
            .push(env, &[0.0], reward, term, trunc, &[1; FRAME])
            .unwrap();
        running[env].1 += reward as f64;
        for s in 0..capacity {
            if replay.storage().is_drawable(s) && !before.contains(&s) {
                let number = replay.storage().write_number(s).unwrap();
                scored.insert((s, number), running[env]);
            }
        }
        if term || trunc {
            finals.insert(running[env].0, running[env].1);
            running[env] = (next_episode, 0.0);
            next_episode += 1;
            replay.begin(env, &[0; FRAME]).unwrap();
        }
        for s in 0..capacity {
            let storage = replay.storage();
            let score = replay.sampler().score(s);
            if !storage.is_drawable(s) {
                assert_eq!(score, None, "slot {s} is not drawable");
                continue;
            }
            let (episode, at_ready) = scored[&(s, storage.write_number(s).unwrap())];
            match finals.get(&episode) {
                Some(&ret) => {
                    assert_eq!(score, Some(ret), "slot {s}: its episode's final return");
                    checked_final += 1;
                }
                None => {
                    assert_eq!(score, Some(at_ready), "slot {s}: the return when drawable");
                    checked_running += 1;
                }
            }
        }
    }
    assert!(checked_final > 1000 && checked_running > 1000);
}

/// An episode far longer than the ring: return-weighted bookkeeping stays bounded (the
/// file it saves loads, its list no longer than the capacity allows) and resumes exactly.
#[test]
fn an_endless_episode_saves_and_loads() {
    let dir = temp_dir("endless");
    let storage = FrameStorage::new(8, FRAME, 1, 1, 1, 1, 0.9).unwrap();
    let mut replay = FrameReplay::new(storage, ReturnWeighted::new(8), 3).unwrap();
    replay.begin(0, &[0; FRAME]).unwrap();
    for t in 0..600u32 {
        replay
            .push(0, &[0.0], (t % 3) as f32, false, false, &[t as u8; FRAME])
            .unwrap();
    }
    let path = dir.join("endless.frames");
    replay.save(&path).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 2_000, "the file holds {size} bytes for 8 slots");
    let mut back = FrameReplay::<ReturnWeighted>::load(&path).unwrap();
    for t in 0..20u32 {
        let end = t == 19;
        for r in [&mut replay, &mut back] {
            r.push(0, &[0.0], 1.0, end, false, &[t as u8; FRAME])
                .unwrap();
        }
    }
    for s in 0..8 {
        assert_eq!(
            replay.sampler().score(s),
            back.sampler().score(s),
            "slot {s}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn priorities_of_slots_gone_since_the_draw_are_skipped() {
    let capacity = ENVS * (STACK + N + 1);
    let storage = FrameStorage::new(capacity, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
    let sampler = Prioritized::new(capacity, 1.0, 1.0).unwrap();
    let mut replay = FrameReplay::new(storage, sampler, 2).unwrap();
    for env in 0..ENVS {
        replay.begin(env, &[0; FRAME]).unwrap();
    }
    for _ in 0..30 {
        for env in 0..ENVS {
            replay
                .push(env, &[0.0], 1.0, false, false, &[1; FRAME])
                .unwrap();
        }
    }
    let mut batch = FrameBatch::default();
    replay.sample(8, &mut batch).unwrap();
    let slots = batch.indices.clone();
    // Step until some drawn slots were overwritten (and are not drawable again yet).
    let gone = loop {
        replay
            .push(0, &[0.0], 1.0, false, false, &[1; FRAME])
            .unwrap();
        let gone: Vec<usize> = slots
            .iter()
            .copied()
            .filter(|&s| !replay.storage().is_drawable(s))
            .collect();
        if !gone.is_empty() {
            break gone;
        }
    };
    replay
        .update_priorities(&slots, &vec![5.0; slots.len()])
        .unwrap();
    for s in gone {
        assert_eq!(replay.sampler().stored(s), None, "slot {s} got a priority");
    }
    assert!(replay.update_priorities(&slots, &[1.0]).is_err());
    assert!(
        replay.update_priorities(&[capacity], &[1.0]).is_err(),
        "a slot past the ring"
    );
    assert!(
        replay.update_priorities(&slots[..1], &[f32::NAN]).is_err() || {
            // The one slot may have gone too, then nothing is updated.
            !replay.storage().is_drawable(slots[0])
        }
    );
}

#[test]
fn a_seed_gives_the_same_batches_and_misuse_is_an_error() {
    let capacity = 50;
    let run = |seed: u64| {
        let storage = FrameStorage::new(capacity, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
        let mut replay = FrameReplay::new(storage, Uniform::new(capacity, false), seed).unwrap();
        let mut rng = EmberRng::seed_from(3);
        let mut batch = FrameBatch::default();
        assert!(
            replay.sample(1, &mut batch).is_err(),
            "nothing drawable yet"
        );
        assert_eq!(batch.len, 0);
        for env in 0..ENVS {
            replay.begin(env, &[0; FRAME]).unwrap();
        }
        let mut out = Vec::new();
        for t in 0..200u32 {
            let (env, term, trunc) = step(&mut rng);
            replay
                .push(env, &[t as f32], 1.0, term, trunc, &[t as u8; FRAME])
                .unwrap();
            if term || trunc {
                replay.begin(env, &[0; FRAME]).unwrap();
            }
            if replay.drawable() >= 8 {
                replay.sample(8, &mut batch).unwrap();
                out.push(batch.clone());
            }
        }
        out
    };
    let a = run(9);
    assert!(a.len() > 150);
    assert_eq!(a, run(9));
    assert_ne!(a, run(10));
    let storage = FrameStorage::new(capacity, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
    assert!(FrameReplay::new(storage, Uniform::new(capacity + 1, true), 0).is_err());
    // A storage already holding frames: the sampler would not know its drawable slots.
    let mut used = FrameStorage::new(capacity, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
    used.begin(0, &[0; FRAME], &mut Default::default()).unwrap();
    assert!(FrameReplay::new(used, Uniform::new(capacity, true), 0).is_err());
    // A sampler that cannot leave slots out is refused up front.
    #[derive(Debug)]
    struct Plain(usize);
    impl Sampler for Plain {
        const KIND: &'static str = "plain";
        fn capacity(&self) -> usize {
            self.0
        }
        fn on_push(&mut self, _: usize, _: f64) -> emberlab_core::Result<()> {
            Ok(())
        }
        fn sample(
            &mut self,
            _: usize,
            _: usize,
            _: &mut EmberRng,
            _: &mut Vec<usize>,
            _: &mut Vec<f32>,
        ) -> emberlab_core::Result<()> {
            Ok(())
        }
        fn encode(&self, _: &mut emberlab_replay::codec::Encoder) {}
        fn decode(
            _: &mut emberlab_replay::codec::Decoder<'_>,
            capacity: usize,
        ) -> emberlab_core::Result<Self> {
            Ok(Plain(capacity))
        }
    }
    let storage = FrameStorage::new(capacity, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
    let e = FrameReplay::new(storage, Plain(capacity), 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("plain"), "{e}");
    // A capacity the allocator cannot grant is an error, not an abort.
    assert!(FrameStorage::new(u32::MAX as usize, 1 << 31, 1, 1, 1, 1, 0.9).is_err());
}

/// Steps a replay `rounds` times from `rng` (random env, episode ends, frames), drawing a
/// batch after each step once enough rows are drawable; returns the batches.
fn drive<S: Sampler>(
    replay: &mut FrameReplay<S>,
    rng: &mut EmberRng,
    rounds: usize,
) -> Vec<FrameBatch> {
    let mut batches = Vec::new();
    for _ in 0..rounds {
        let (env, term, trunc) = step(rng);
        let frame = [rng.below(256) as u8; FRAME];
        let reward = rng.below(5) as f32 - 2.0;
        match replay.push(env, &[reward], reward, term, trunc, &frame) {
            Ok(_) if term || trunc => {
                replay.begin(env, &frame).unwrap();
            }
            Ok(_) => {}
            // Not begun yet.
            Err(_) => {
                replay.begin(env, &frame).unwrap();
            }
        }
        if replay.drawable() >= 6 {
            let mut batch = FrameBatch::default();
            match replay.sample(6, &mut batch) {
                Ok(()) => {}
                // Return-weighted: the lowest-scored slots weigh nothing.
                Err(emberlab_core::Error::NotEnough { .. }) => continue,
                Err(e) => panic!("{e}"),
            }
            if replay.sampler().uses_priorities() {
                let prios: Vec<f32> = batch.reward.iter().map(|r| r.abs()).collect();
                replay.update_priorities(&batch.indices, &prios).unwrap();
            }
            batches.push(batch);
        }
    }
    batches
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ember-frames-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_saved_replay_resumes_exactly() {
    let dir = temp_dir("resume");
    for sampler in samplers(61) {
        let kind = sampler.kind();
        let storage = FrameStorage::new(61, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
        let mut a = FrameReplay::new(storage, sampler, 8).unwrap();
        let mut rng = EmberRng::seed_from(13);
        drive(&mut a, &mut rng, 250);
        assert!(a.storage().len() == 61, "the ring has wrapped");
        let path = dir.join(format!("{kind}.frames"));
        a.save(&path).unwrap();
        let mut b = FrameReplay::<AnySampler>::load(&path).unwrap();
        assert_eq!(b.sampler().kind(), kind);
        let mut rng_b = rng.clone();
        let (after_a, after_b) = (drive(&mut a, &mut rng, 200), drive(&mut b, &mut rng_b, 200));
        assert!(after_a.len() > 150);
        assert_eq!(after_a, after_b, "{kind}: batches after resuming differ");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_or_foreign_files_are_errors_naming_the_problem() {
    let dir = temp_dir("damaged");
    let storage = FrameStorage::new(40, FRAME, STACK, 1, ENVS, N, 0.9).unwrap();
    let mut replay = FrameReplay::new(storage, ReturnWeighted::new(40), 8).unwrap();
    drive(&mut replay, &mut EmberRng::seed_from(1), 100);
    let path = dir.join("good.frames");
    replay.save(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let load = |bytes: &[u8]| {
        let p = dir.join("bad.frames");
        std::fs::write(&p, bytes).unwrap();
        FrameReplay::<ReturnWeighted>::load(&p)
            .expect_err("a damaged file loaded")
            .to_string()
    };
    assert!(matches!(
        FrameReplay::<ReturnWeighted>::load(dir.join("missing.frames")),
        Err(emberlab_core::Error::Io { .. })
    ));
    assert!(load(b"not a replay").contains("signature"));
    for cut in [20, 60, good.len() / 2, good.len() - 1] {
        let e = load(&good[..cut]);
        assert!(e.contains("not a valid frame replay"), "cut at {cut}: {e}");
    }
    // A flipped byte anywhere after the header: the shape block, its checksum, the
    // frames, the columns, the sampler, the trailer.
    for at in (16..good.len()).step_by(37).chain([good.len() - 1]) {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        let e = load(&bad);
        assert!(e.contains("not a valid frame replay"), "byte {at}: {e}");
    }
    // A forged file whose checksums hold: its shape names frames larger than the file
    // carries (refused before allocating for them), or a waiting frame twice.
    let forge = |patch: &dyn Fn(&mut Vec<u8>)| {
        let mut f = good.clone();
        let kind_len = u64::from_le_bytes(f[16..24].try_into().unwrap()) as usize;
        let at = 24 + kind_len;
        let shape_len = u64::from_le_bytes(f[at..at + 8].try_into().unwrap()) as usize;
        let mut shape = f[at + 8..at + 8 + shape_len].to_vec();
        patch(&mut shape);
        f[at + 8..at + 8 + shape_len].copy_from_slice(&shape);
        let crc = crc32fast::hash(&shape) as u64;
        f[at + 8 + shape_len..at + 16 + shape_len].copy_from_slice(&crc.to_le_bytes());
        let end = f.len() - 16;
        let body = crc32fast::hash(&f[16..end]) as u64;
        f[end + 8..].copy_from_slice(&body.to_le_bytes());
        load(&f)
    };
    // Shape: 6 sizes (capacity, frame, ...), gamma, frames written, drawable, then one
    // waiting frame per env.
    let e = forge(&|shape| shape[8..16].copy_from_slice(&(1u64 << 30).to_le_bytes()));
    assert!(e.contains("truncated"), "{e}");
    let e = forge(&|shape| {
        let first: [u8; 8] = shape[72..80].try_into().unwrap();
        shape[80..88].copy_from_slice(&first);
    });
    assert!(e.contains("same frame"), "{e}");
    let mut newer = good.clone();
    newer[8] = 9;
    assert!(load(&newer).contains("version 9"));
    let e = FrameReplay::<Uniform>::load(&path)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("return_weighted"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `cut` ends a running episode as a truncation at its waiting frame: the last steps
/// windows complete (3-step returns cut short, discounts `γ^m`, the truncated flag set),
/// their next stacks end with the waiting frame, every sampler follows, and the environment
/// may begin again. An environment between episodes, or one that only began, has nothing to
/// make drawable.
#[test]
fn a_cut_episode_ends_as_a_truncation_at_its_waiting_frame() {
    for sampler in samplers(64) {
        let storage = FrameStorage::new(64, FRAME, STACK, 1, 2, N, 0.5).unwrap();
        let mut replay = FrameReplay::new(storage, sampler, 1).unwrap();
        let mut rng = EmberRng::seed_from(9);
        replay.begin(0, &[1, 1]).unwrap();
        replay.begin(1, &[50, 50]).unwrap();
        assert!(replay.cut(1).unwrap(), "env 1 began an episode");
        assert_eq!(replay.drawable(), 0);
        assert!(!replay.cut(1).unwrap(), "nothing runs in env 1 now");
        for t in 2..=4u8 {
            replay.push(0, &[0.0], 1.0, false, false, &[t, t]).unwrap();
        }
        // 3 steps: the first's 3-step window is complete; the other two wait.
        assert_eq!(replay.drawable(), 1);
        assert!(replay.cut(0).unwrap());
        assert_eq!(replay.drawable(), 3);
        assert_eq!(sampler_set(&mut replay, &mut rng).len(), 3);
        let slots: Vec<usize> = sampler_set(&mut replay, &mut rng).into_iter().collect();
        let mut batch = FrameBatch::default();
        replay.storage().gather(&slots, &mut batch).unwrap();
        let mut rows: Vec<(u8, f32, f32, f32, u8)> = (0..3)
            .map(|r| {
                let obs = &batch.obs[r * FRAME * STACK..(r + 1) * FRAME * STACK];
                let next = &batch.next_obs[r * FRAME * STACK..(r + 1) * FRAME * STACK];
                (
                    obs[obs.len() - 1],
                    batch.reward[r],
                    batch.discount[r],
                    batch.truncated[r],
                    next[next.len() - 1],
                )
            })
            .collect();
        rows.sort_by_key(|r| r.0);
        assert_eq!(
            rows,
            vec![
                (1, 1.75, 0.125, 1.0, 4),
                (2, 1.5, 0.25, 1.0, 4),
                (3, 1.0, 0.5, 1.0, 4)
            ],
            "{:?}",
            replay.sampler()
        );
        replay.begin(0, &[9, 9]).unwrap();
        replay.begin(1, &[60, 60]).unwrap();
        replay.push(1, &[0.0], 1.0, true, false, &[61, 61]).unwrap();
        assert_eq!(replay.drawable(), 4);
        assert!(replay.cut(7).is_err());
    }
}
