#!/usr/bin/env bash
# A measurement, not a build: what burn-autodiff's process-wide graph lock costs when two
# threads build graphs at once (docs/benchmarks.md, "What burn's graph bookkeeping costs on
# two cores").
#
# burn-autodiff 0.22.1 registers every node, and cleans up after every backward pass, under
# one process-wide `parking_lot::Mutex` (`STATE` in `src/runtime/graph.rs`); a thread that
# finds it taken parks in the kernel after a few µs of spinning and waits for a wake-up.
# This script copies burn-autodiff from cargo's registry (never into the repository), makes
# those acquisitions spin until the lock is free instead of parking, and builds the
# `custom_redq` and `train_speed` examples against the copy, into LAB_DIR/bin. Compare
# them with the same examples built normally, alternated in one window, e.g.
#   target/release/examples/custom_redq train redq --env Pendulum-v1 --steps 1000 --json
#   target/lab-autodiff-spin/bin/custom_redq train redq --env Pendulum-v1 --steps 1000 --json
#
# Usage: scripts/lab-autodiff-spin.sh   (about 3 minutes after a release build; the normal
# examples in target/release are rebuilt by the next `cargo build --release`)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VERSION="0.22.1"
LAB_DIR="$ROOT/target/lab-autodiff-spin"
SRC="$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -type d \
    -name "burn-autodiff-$VERSION" | head -n 1)"
if [ -z "$SRC" ]; then
    echo "error: burn-autodiff $VERSION is not in cargo's registry: run 'cargo fetch' first" >&2
    exit 1
fi
rm -rf "$LAB_DIR"
mkdir -p "$LAB_DIR/bin"
cp -r "$SRC" "$LAB_DIR/burn-autodiff"
GRAPH="$LAB_DIR/burn-autodiff/src/runtime/graph.rs"
LOCKS="$(grep -c 'STATE.lock()' "$GRAPH" || true)"
if [ "$LOCKS" != "4" ]; then
    echo "error: expected 4 'STATE.lock()' in $GRAPH, found $LOCKS: another burn-autodiff?" >&2
    exit 1
fi
sed -i 's/STATE\.lock()/spin_lock(\&STATE)/' "$GRAPH"
cat >> "$GRAPH" <<'EOF'

/// Lab (scripts/lab-autodiff-spin.sh): takes `lock` spinning, never parking the thread.
fn spin_lock<T>(lock: &'static Mutex<T>) -> MutexGuard<'static, T> {
    loop {
        if let Some(guard) = lock.try_lock() {
            return guard;
        }
        core::hint::spin_loop();
    }
}
EOF
# The patch changes Cargo.lock's entry for burn-autodiff: put the committed one back.
cp Cargo.lock "$LAB_DIR/Cargo.lock.saved"
trap 'cp "$LAB_DIR/Cargo.lock.saved" Cargo.lock' EXIT
cargo build --release --example custom_redq --example train_speed \
    --config "patch.crates-io.burn-autodiff.path=\"$LAB_DIR/burn-autodiff\""
cp target/release/examples/custom_redq target/release/examples/train_speed "$LAB_DIR/bin/"
echo "built: $LAB_DIR/bin/custom_redq, $LAB_DIR/bin/train_speed (burn-autodiff's lock spins)"
