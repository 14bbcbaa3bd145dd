//! Writes scalars with `EventWriter` and reads them back with the real `tensorboard` Python
//! package (tests/read_tensorboard.py, through TensorBoard's `EventAccumulator`).
//!
//! The interpreter is `$EMBER_TB_PYTHON` (scripts/setup-tensorboard.sh makes one). Without
//! it the test fails under CI (`$CI` set) and is skipped with a note otherwise.

use std::path::Path;
use std::process::Command;

use emberlab_cli::EventWriter;

/// The python with the tensorboard package that reads the event files back: the test fails
/// without it (scripts/test.sh sets it; scripts/setup-tensorboard.sh makes one).
fn python() -> String {
    match std::env::var("EMBER_TB_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => panic!(
            "EMBER_TB_PYTHON is unset: set it to a python with the tensorboard package \
             (scripts/setup-tensorboard.sh prints it; scripts/test.sh runs it)"
        ),
    }
}

/// Runs the reader script on `dir` and parses its `tag, step, value, wall_time` lines.
fn read_back(python: &str, dir: &Path) -> Vec<(String, i64, f64, f64)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/read_tensorboard.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} failed:\n{stderr}",
        script.display()
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 4, "unexpected reader line {line:?}");
            (
                f[0].to_owned(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn tensorboard_reads_our_scalars() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let mut expected: Vec<(String, i64, f64)> = Vec::new();
    {
        let mut w = EventWriter::create(dir.path()).unwrap();
        for i in 0..50u64 {
            let step = i * 1000;
            let ret = -200.0 + 3.25 * i as f64;
            let loss = 1.0 / (1.0 + i as f64);
            w.scalars(step, &[("train/return", ret), ("loss/critic", loss)])
                .unwrap();
            expected.push(("train/return".into(), step as i64, ret));
            expected.push(("loss/critic".into(), step as i64, loss));
        }
        let big = 5_000_000_000u64;
        w.scalar("eval/return", big, 499.5).unwrap();
        expected.push(("eval/return".into(), big as i64, 499.5));
        w.flush().unwrap();
    }
    // Same order as the script: by tag, then step.
    expected.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));

    let got = read_back(&python, dir.path());
    assert_eq!(got.len(), expected.len(), "{got:?}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for ((tag, step, value, wall), (etag, estep, evalue)) in got.iter().zip(&expected) {
        assert_eq!((tag, step), (etag, estep));
        // Stored as f32; Python prints the f32 widened to f64 exactly.
        assert_eq!(*value, f64::from(*evalue as f32), "{tag} at {step}");
        assert!((now - wall).abs() < 600.0, "wall_time {wall} vs now {now}");
    }
}

#[test]
fn tensorboard_checks_our_crcs() {
    // TensorBoard drops a record whose data CRC does not match: so the record it does read
    // in the test above passed its CRC check, and a corrupted one must vanish.
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let path = {
        let mut w = EventWriter::create(dir.path()).unwrap();
        w.scalar("x", 1, 1.0).unwrap();
        w.scalar("x", 2, 2.0).unwrap();
        w.flush().unwrap();
        w.path().to_path_buf()
    };
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
    let got = read_back(&python, dir.path());
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0.as_str(), got[0].1, got[0].2), ("x", 1, 1.0));
}
