//! Checks a learner of your own can pass as the built-in ones do: its run, stopped at
//! random instants — `SIGKILL`, Ctrl-C or `SIGTERM` — and resumed with `train --resume` until it is
//! done, equals a run that never stopped ([`stop_and_resume`], then [`same_learning`]).
//! The command under test is any program that runs `ember` (the binary, or yours calling
//! [`crate::app::main_with_args`] after registering its learner).

use anyhow::{Context, Result, bail, ensure};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The `ember` command with these arguments (the binary, or a program of a user's own).
pub type Ember<'a> = &'a dyn Fn(&[&str]) -> Command;

/// How a run was stopped on its way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stops {
    /// Times it was stopped before it finished.
    pub kills: u32,
    /// Of those, the Ctrl-C's or `SIGTERM`s it handled (checkpoint written, exit code 130).
    pub interrupted: u32,
}

/// How a run is stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// `SIGKILL`: no chance to write anything.
    Kill,
    /// `SIGINT` (Ctrl-C): the run writes a checkpoint and exits with 130.
    Interrupt,
    /// `SIGTERM` (`kill`, a job scheduler's stop): answered as Ctrl-C is.
    Terminate,
}

/// Sends `signal` to `child` through the `kill` command.
///
/// # Errors
/// `kill` cannot run, or fails (the process is gone).
pub fn send(child: &Child, signal: Signal) -> Result<()> {
    let flag = match signal {
        Signal::Kill => "-KILL",
        Signal::Interrupt => "-INT",
        Signal::Terminate => "-TERM",
    };
    let pid = child.id().to_string();
    let sent = Command::new("kill")
        .args([flag, &pid])
        .status()
        .context("cannot run `kill`")?;
    ensure!(sent.success(), "kill {flag} {pid} failed");
    Ok(())
}

/// A tiny generator for kill delays.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// Starts `first` (a `train` command writing to `cwd/run`) with `ember`, stops it at random
/// instants (delays drawn from `seed`) and resumes it (`train --resume run`) until it
/// finishes. Lives in a row that kept no new metrics row each lengthen the next by 20 ms, so
/// that a loaded machine still finishes while every life may be cut at any instant,
/// start-up included.
///
/// # Errors
/// A life that exits with an error of its own, a Ctrl-C or `SIGTERM` answered other than
/// by a checkpoint and exit code 130, or 400 stops without finishing.
pub fn stop_and_resume(
    ember: Ember<'_>,
    cwd: &Path,
    first: &[&str],
    run: &str,
    signal: Signal,
    seed: u64,
) -> Result<Stops> {
    let mut rng = seed;
    let mut stops = Stops {
        kills: 0,
        interrupted: 0,
    };
    let (mut stalled, mut kept, mut start) = (0u64, 0usize, true);
    loop {
        ensure!(
            stops.kills < 400,
            "the run never finished ({} stops)",
            stops.kills
        );
        let mut cmd = if start {
            ember(first)
        } else {
            ember(&["train", "--resume", run, "--quiet"])
        };
        start = false;
        let mut child = cmd
            .current_dir(cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start the command")?;
        // Runs take a fraction of a second: stop early and often.
        let delay = Duration::from_millis(15 + next(&mut rng) % 150 + 20 * stalled);
        std::thread::sleep(delay);
        if child.try_wait()?.is_some() {
            let out = child.wait_with_output()?;
            ensure!(
                out.status.success(),
                "a life failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return Ok(stops);
        }
        stops.kills += 1;
        match signal {
            Signal::Kill => {
                child.kill()?;
                child.wait()?;
            }
            Signal::Interrupt | Signal::Terminate => {
                send(&child, signal)?;
                let out = child.wait_with_output()?;
                let stderr = String::from_utf8_lossy(&out.stderr);
                if out.status.success() {
                    stops.kills -= 1;
                    return Ok(stops); // it finished first
                }
                // Before the handler is installed (the first milliseconds) the signal
                // simply ends the process; after, the run checkpoints and exits with 130.
                if let Some(code) = out.status.code() {
                    if code != 130
                        || !(stderr.contains("interrupted at") && stderr.contains("--resume"))
                    {
                        bail!("{signal:?} answered with exit code {code}: {stderr}");
                    }
                    stops.interrupted += 1;
                }
            }
        }
        let rows = std::fs::read_to_string(cwd.join(run).join("metrics.csv"))
            .map_or(0, |t| t.lines().count());
        (stalled, kept) = if rows > kept {
            (0, rows)
        } else {
            (stalled + 1, kept)
        };
    }
}

/// The columns of a metrics or evaluations file that do not depend on timing.
///
/// # Errors
/// A file that cannot be read or has no header.
pub fn learning_columns(path: &Path) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .with_context(|| format!("{} is empty", path.display()))?
        .split(',')
        .collect();
    let keep: Vec<usize> = (0..header.len())
        .filter(|&i| {
            !matches!(
                header[i],
                "wall_secs" | "env_steps_per_sec" | "updates_per_sec"
            )
        })
        .collect();
    Ok(lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            keep.iter()
                .map(|&i| f.get(i).copied().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect())
}

/// The tensor data of a safetensors file (after its JSON header, whose metadata keys come
/// in no fixed order).
fn tensor_bytes(file: &[u8]) -> Option<&[u8]> {
    let n = usize::try_from(u64::from_le_bytes(file.get(..8)?.try_into().ok()?)).ok()?;
    file.get(8 + n..)
}

/// The run folders `a` and `b` learned the same: their metrics and evaluations (timing
/// aside) and their best weights, tensor for tensor. Returns the number of networks
/// compared.
///
/// # Errors
/// The first difference, or a folder without best weights.
pub fn same_learning(a: &Path, b: &Path) -> Result<usize> {
    for file in ["metrics.csv", "evaluations.csv"] {
        let (x, y) = (
            learning_columns(&a.join(file))?,
            learning_columns(&b.join(file))?,
        );
        if let Some(i) = (0..x.len().max(y.len())).find(|&i| x.get(i) != y.get(i)) {
            bail!(
                "{file} differs at row {}: {:?} vs {:?}",
                i + 1,
                x.get(i),
                y.get(i)
            );
        }
    }
    let mut networks = 0;
    for entry in std::fs::read_dir(a.join("best")).context("no best weights")? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "safetensors") {
            let name = path.file_name().unwrap_or_default();
            let (x, y) = (
                std::fs::read(&path)?,
                std::fs::read(b.join("best").join(name))?,
            );
            ensure!(
                tensor_bytes(&x).is_some() && tensor_bytes(&x) == tensor_bytes(&y),
                "best weights {} differ",
                name.to_string_lossy()
            );
            networks += 1;
        }
    }
    ensure!(networks >= 1, "{} has no best weights", a.display());
    Ok(networks)
}
