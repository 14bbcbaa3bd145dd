//! A new run folder: where it goes (`runs/<algo>-<env>-s<seed>[-N]`, never over an existing
//! run) and what describes it (`config.toml`, `command.txt`, `meta.json`). Reading one back
//! is `emberlab_run`'s (`load_config`, `load_weights`, `RunPolicy`).

use anyhow::{Context, Result, bail};
use emberlab_run::{CONFIG, RunConfig};
use std::path::{Path, PathBuf};

/// `runs/<algo>-<env>-s<seed>`, or with `-2`, `-3`, … appended when taken.
pub fn auto_name(root: &Path, config: &RunConfig) -> PathBuf {
    let base = format!("{}-{}-s{}", config.algo, config.env, config.seed());
    let first = root.join(&base);
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| root.join(format!("{base}-{n}")))
        .find(|p| !p.exists())
        .expect("some suffix is free")
}

/// Creates a new run folder at `dir` and writes its description. Refuses a folder that
/// already holds a run (resume it with `--resume` instead) or any non-empty folder.
///
/// # Errors
/// An existing run or non-empty folder, an I/O error.
pub fn create(dir: &Path, config: &RunConfig, command: &str) -> Result<()> {
    if dir.join(CONFIG).exists() {
        bail!(
            "{} already holds a run; continue it with `ember train --resume {}` or choose another --out",
            dir.display(),
            dir.display()
        );
    }
    if dir.is_dir() && std::fs::read_dir(dir)?.next().is_some() {
        bail!(
            "--out {} is a folder that is not empty; choose a new or empty folder",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write(dir, CONFIG, &config.to_toml())?;
    write(dir, "command.txt", &format!("{command}\n"))?;
    write(dir, "meta.json", &meta(config)?)?;
    Ok(())
}

fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Versions, commit, device and CPU of this run, as JSON.
fn meta(config: &RunConfig) -> Result<String> {
    let cpu = emberlab_core::machine::cpu_model();
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let meta = serde_json::json!({
        "ember_version": env!("CARGO_PKG_VERSION"),
        "burn_version": "0.22.1",
        "git_commit": commit,
        "device": config.device,
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "os": std::env::consts::OS,
        "started_unix": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    });
    Ok(serde_json::to_string_pretty(&meta)? + "\n")
}
