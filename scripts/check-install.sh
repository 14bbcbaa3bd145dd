#!/usr/bin/env bash
# Installs `ember` as a user would from crates.io (`cargo install emberlab-cli --locked`), from
# the unpacked package of scripts/check-packages.sh, then trains, evaluates and plots from an
# empty folder outside the repository: presets, fonts and all it reads must be inside the
# package or the binary.
#
# Usage: scripts/check-install.sh PACKAGE_DIR ALGO ENV STEPS [cargo install flags]
#   e.g. scripts/check-install.sh "$(scripts/check-packages.sh dir)"/emberlab-cli-0.1.0 \
#        sac Pendulum-v1 2000
#
# The package is a member of the scratch workspace, whose patches stand in for crates.io (the
# other emberlab crates are not published there yet), so the install resolves the same lock
# file as that workspace's tests. It installs in the `install-check` profile (the workspace's
# Cargo.toml: unoptimised, no debug info) into the target folder of those tests: a cargo
# install builds only the package's own feature set, which differs from the tests' (dev-
# dependencies such as criterion and proptest add features to burn's dependencies), so it
# cannot reuse their build, and unoptimised it builds in about half the time of an optimised
# one. What it checks is that the package installs and runs from its own files; users install
# with the default (release) profile.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 4 ] || { echo "usage: $0 PACKAGE_DIR ALGO ENV STEPS [cargo install flags]" >&2; exit 2; }
package="$1" algo="$2" env="$3" steps="$4"
shift 4
[ -f "$package/Cargo.toml" ] || { echo "no package at $package (scripts/check-packages.sh)" >&2; exit 1; }
target="${CARGO_TARGET_DIR:-$ROOT/target}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
CARGO_TARGET_DIR="$target" cargo install --path "$package" --profile install-check --locked \
    --root "$work/installed" --quiet "$@"
mkdir "$work/empty"
cd "$work/empty"
ember="$work/installed/bin/ember"
"$ember" train "$algo" --env "$env" --steps "$steps" --quiet
run="runs/$algo-$env-s0"
[ -f "$run/meta.json" ] && [ -f "$run/checkpoint/trainer.state" ] ||
    { echo "no run folder $run after ember train" >&2; exit 1; }
"$ember" eval "$run" --episodes 2
"$ember" plot "$run" -o curve.png
[ -s curve.png ] || { echo "ember plot wrote no curve.png" >&2; exit 1; }
echo "ember installed from $(basename "$package") trained, evaluated and plotted $algo on $env from an empty folder"
