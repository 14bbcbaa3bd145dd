//! Save/load of whole buffers: round trips resume the exact sampling stream; damaged files
//! are clear errors.

use emberlab_core::{Batch, Error, Transition};
use emberlab_replay::{
    ColumnSpec, Prioritized, ReplayBuffer, ReturnWeighted, RingStorage, Sampler, Uniform,
};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emberlab-replay-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn fill<S: Sampler>(buf: &mut ReplayBuffer<S>, n: usize) {
    for i in 0..n {
        let x = i as f32;
        let t = Transition {
            obs: &[x, -x],
            action: &[x * 0.5],
            reward: x.sin(),
            next_obs: &[x + 1.0, -x - 1.0],
            terminated: i % 7 == 0,
            truncated: i % 11 == 0,
        };
        let extras: Vec<&[f32]> = if buf.storage().columns().count() == 1 {
            vec![&[0.99]]
        } else {
            vec![]
        };
        buf.push_scored(&t, (i as f64 * 0.37).cos() * 10.0, &extras)
            .unwrap();
    }
}

fn round_trip<S: Sampler>(mut buf: ReplayBuffer<S>, name: &str, n: usize) -> u64 {
    fill(&mut buf, n); // 130 wraps the 100-slot ring
    let mut b = Batch::default();
    buf.sample(16, &mut b).unwrap();
    let path = tmp(name);
    buf.save(&path).unwrap();
    let mut loaded = ReplayBuffer::<S>::load(&path).unwrap();
    assert_eq!(loaded.storage(), buf.storage());
    let (mut x, mut y) = (Batch::default(), Batch::default());
    for _ in 0..5 {
        buf.sample(16, &mut x).unwrap();
        loaded.sample(16, &mut y).unwrap();
        assert_eq!(x, y, "the loaded buffer continues the same sampling stream");
    }
    std::fs::metadata(&path).unwrap().len()
}

#[test]
fn round_trips_for_every_sampler() {
    let cols = vec![ColumnSpec {
        name: "discount".into(),
        width: 1,
    }];
    let storage = || RingStorage::with_columns(100, 2, 1, cols.clone()).unwrap();
    let full = round_trip(
        ReplayBuffer::new(storage(), Uniform::new(100, false), 1).unwrap(),
        "u.bin",
        130,
    );
    // A partly filled buffer round-trips too, and its file holds only the filled rows.
    let part = round_trip(
        ReplayBuffer::new(storage(), Uniform::new(100, false), 1).unwrap(),
        "u-part.bin",
        37,
    );
    assert!(
        part < full / 2,
        "{part} bytes for 37 of 100 rows, {full} for 100"
    );
    round_trip(
        ReplayBuffer::new(storage(), ReturnWeighted::new(100), 2).unwrap(),
        "rw.bin",
        130,
    );
    let rw_part = round_trip(
        ReplayBuffer::new(storage(), ReturnWeighted::new(100), 2).unwrap(),
        "rw-part.bin",
        37,
    );
    assert!(rw_part < full, "scores of empty slots are not written");
    let mut per = Prioritized::new(100, 0.6, 0.4).unwrap();
    per.set_eps(1e-3).unwrap();
    let mut buf = ReplayBuffer::new(storage(), per, 3).unwrap();
    fill(&mut buf, 50);
    buf.sampler_mut()
        .update_priorities(&[1, 2, 3], &[5.0, 0.5, 2.0])
        .unwrap();
    round_trip(buf, "per.bin", 130);
}

fn saved_file(name: &str) -> (PathBuf, Vec<u8>) {
    let mut buf = ReplayBuffer::new(
        RingStorage::new(50, 2, 1).unwrap(),
        ReturnWeighted::new(50),
        4,
    )
    .unwrap();
    fill(&mut buf, 30);
    let path = tmp(name);
    buf.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn load_bytes(name: &str, bytes: &[u8]) -> Error {
    let path = tmp(name);
    std::fs::write(&path, bytes).unwrap();
    ReplayBuffer::<ReturnWeighted>::load(&path).unwrap_err()
}

#[test]
fn damaged_files_are_clear_errors() {
    let (_, bytes) = saved_file("damaged-source.bin");
    let e = load_bytes("truncated.bin", &bytes[..bytes.len() - 100]).to_string();
    assert!(
        e.contains("truncated") && e.contains("truncated.bin"),
        "{e}"
    );
    let e = load_bytes("short.bin", &bytes[..20]).to_string();
    assert!(e.contains("truncated header"), "{e}");
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x10;
    let e = load_bytes("flipped.bin", &flipped).to_string();
    assert!(e.contains("checksum"), "{e}");
    let e = load_bytes(
        "foreign.bin",
        b"PK\x03\x04 this is a zip file, not a buffer",
    )
    .to_string();
    assert!(e.contains("signature"), "{e}");
    let e = ReplayBuffer::<Uniform>::load(tmp("damaged-source.bin"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`return_weighted` sampler") && e.contains("`uniform`"),
        "{e}"
    );
    let e = ReplayBuffer::<Uniform>::load(tmp("does-not-exist.bin")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(e.to_string().contains("does-not-exist.bin"));
}

#[test]
fn failed_save_leaves_the_previous_file_intact() {
    let (path, bytes) = saved_file("intact.bin");
    // Saving into a directory that does not exist fails and touches nothing else.
    let buf = ReplayBuffer::<ReturnWeighted>::load(&path).unwrap();
    let bad = tmp("no-such-dir").join("x.bin");
    assert!(matches!(buf.save(&bad).unwrap_err(), Error::Io { .. }));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}
