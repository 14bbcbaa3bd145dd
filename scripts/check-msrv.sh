#!/usr/bin/env bash
# Checks the workspace with the toolchain its `rust-version` names (Cargo.toml), so that the
# version the crates declare is one they build with.
# - If the active toolchain is that version (major.minor), the rest of CI already builds,
#   lints and tests with it: this says so and stops.
# - Otherwise it installs that toolchain (rustup, minimal profile) and runs `cargo check` of
#   every target with it, in a target folder of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
want="$(sed -n 's/^rust-version = "\([0-9.]*\)"/\1/p' Cargo.toml | head -1)"
[ -n "$want" ] || { echo "no rust-version in Cargo.toml" >&2; exit 1; }
have="$(rustc --version | awk '{print $2}')"
if [ "${have%.*}" = "$want" ] || [ "$have" = "$want" ]; then
    echo "rust-version $want: the active toolchain is rustc $have, which every other CI step uses"
    exit 0
fi
echo "rust-version $want, active rustc $have: checking with $want"
rustup toolchain install "$want" --profile minimal
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/msrv" cargo "+$want" check --workspace --all-targets --locked
