#!/usr/bin/env bash
# Packages every library crate of the workspace (not the labs, nor the Python wheel's crate
# `ember-py`, nor the front crate `ember`,
# whose examples and benches need the whole workspace) as crates.io would receive it, and
# checks that each builds from its package alone: the packages are unpacked into a scratch
# workspace whose only link between them is their version requirements (patched to the
# unpacked packages), then `cargo clippy --all-targets` (a check) runs there. A crate that reads a
# file outside its own folder, or needs a workspace-only setting, fails here.
#
# (`cargo package`'s own verification builds every package in the unoptimised dev profile
# with full debug info, burn included: about as long as the whole CI run. This check reuses
# the workspace's dependency cache instead.)
#
# Usage: scripts/check-packages.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
rm -rf "$TARGET/package"
cargo package --workspace --exclude ember-labs --exclude ember --exclude ember-py --no-verify --locked --allow-dirty -q
SCRATCH="$TARGET/package-check"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
members=()
patches=()
for crate in "$TARGET"/package/*.crate; do
    tar -xzf "$crate" -C "$SCRATCH"
    dir="$(basename "$crate" .crate)"
    name="${dir%-*}"
    members+=("\"$dir\"")
    patches+=("$name = { path = \"$dir\" }")
done
{
    echo "[workspace]"
    echo "members = [$(IFS=,; echo "${members[*]}")]"
    echo "resolver = \"3\""
    echo
    echo "[patch.crates-io]"
    printf '%s\n' "${patches[@]}"
    echo
    # The workspace's profiles (dependencies optimised in test builds) are not part of
    # any package; repeat the one that keeps this check's dependency builds shared.
    echo "[profile.dev.package.\"*\"]"
    echo "opt-level = 3"
    echo "debug = false"
} > "$SCRATCH/Cargo.toml"
cp Cargo.lock "$SCRATCH/Cargo.lock"
echo "checking ${#members[@]} packages on their own: ${members[*]}"
# Clippy, sharing the workspace's target folder: the dependencies' artifacts of the lint
# step before are reused (the same crates, features and profile).
(cd "$SCRATCH" && CARGO_TARGET_DIR="$TARGET" cargo clippy --workspace --all-targets --offline -q)
echo "every package builds from its own files"
