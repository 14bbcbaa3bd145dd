#!/usr/bin/env bash
# The test command (README, "Test"; CI runs it through .ci/run): installs what the tests need,
# then tests what users receive. Every test runs; none passes because a tool is missing.
#
# 1. Tools, from PyPI and Debian only (each setup script is idempotent and prints what to
#    export): TensorBoard (event files read back), torch 2.9.0 with maturin, pytest,
#    Gymnasium, Stable-Baselines3 and onnxruntime (libtorch for the `tch` backend, ONNX
#    checks, the Python suite), MuJoCo 3.17.0 with Gymnasium's task files, and Mesa's EGL for
#    MuJoCo's offscreen renderer.
# 2. The crates as crates.io would receive them (scripts/check-packages.sh test), linted
#    with Clippy as they build (`-D warnings`; EMBER_LINT=0 builds without): every crate
#    packaged, unpacked and tested together against a freshly resolved lock file, with the
#    MuJoCo tasks and the Gymnasium bridge, in one build; then the backend conformance suite
#    (emberlab-nn's) on libtorch too, in a build of the same feature set plus `tch`. It is
#    kept apart because every binary linking libtorch starts 0.3-0.5 s slower (libtorch's
#    and CUDA's libraries load; measured with dlopen), which the tests that kill `ember`
#    within milliseconds cannot absorb. `burn/tch` rebuilds burn-dispatch and the burn crates
#    above it whatever we do; tch's downloader would also switch on default features of
#    libc, half, syn… and so rebuild all of burn (943 s of a 63-minute CI run, 2026-11-28):
#    scripts/unify-features.py gives the first build those features already.
# 3. `ember` installed from its package with its default features (`cargo install --locked`,
#    the unoptimised `install-check` profile: the check is that the package installs and
#    runs from its own files, not its speed) trains, evaluates and plots from an empty folder
#    (scripts/check-install.sh).
# 4. The wheel as PyPI would receive it: the sdist, a manylinux_2_28 abi3 wheel built from it
#    in a fresh venv, installed into another and tested with pytest (scripts/check-python.sh).
#
# Usage: scripts/test.sh [cargo test args after --, e.g. -- --skip learn]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
section() { echo "== [${SECONDS}s] $*"; }
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
ENV_FILE="$(mktemp)"
trap 'rm -f "$ENV_FILE"' EXIT

section "tools: TensorBoard, torch 2.9.0 + the Python test tools, MuJoCo 3.17.0, EGL"
for setup in setup-tensorboard setup-python setup-mujoco setup-libtorch; do
    if ! "scripts/$setup.sh" > "$ENV_FILE"; then
        echo "error: scripts/$setup.sh failed (see above): the tests that need it cannot run" >&2
        exit 1
    fi
    . "$ENV_FILE"
done
# MuJoCo's offscreen renderer (`ember eval --gif`, emberlab-env's tests) draws through EGL:
# Mesa's software EGL from Debian.
LIBS="$(ldconfig -p)"
if ! grep -q "libEGL.so.1" <<<"$LIBS" || ! grep -q "libEGL_mesa.so.0" <<<"$LIBS"; then
    echo "installing EGL (libegl1 libegl-mesa0 libgl1-mesa-dri) for MuJoCo's offscreen renderer"
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        libegl1 libegl-mesa0 libgl1-mesa-dri; }; then
        echo "error: EGL could not be installed (as root: apt-get install libegl1" \
            "libegl-mesa0 libgl1-mesa-dri); the MuJoCo rendering tests cannot run" >&2
        exit 1
    fi
fi

# With the MuJoCo feature on every crate that links emberlab-env, every test binary links
# libmujoco: the build scripts embed its folder only in their own packages' binaries.
export LD_LIBRARY_PATH="$MUJOCO_DYNAMIC_LINK_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# Lints as the crates build: clippy-driver (rustc with Clippy's lints, from the toolchain's
# clippy component) compiles every crate of the workspace, with `-D warnings`, so the build
# the tests run is the linted one (a separate `cargo clippy` would compile every dependency a
# second time, in check mode: ~9 of CI's minutes). Dependencies build with plain rustc. The
# conformance build lints the libtorch code, the wheel's build the Python crate.
if [ "${EMBER_LINT:-1}" = 1 ]; then
    CLIPPY_DRIVER="$(rustc --print sysroot)/bin/clippy-driver"
    [ -x "$CLIPPY_DRIVER" ] ||
        { echo "error: no clippy-driver in the toolchain: rustup component add clippy" >&2; exit 1; }
    export RUSTC_WORKSPACE_WRAPPER="$CLIPPY_DRIVER"
    # clippy-driver's arguments, as `cargo clippy -- -D warnings` passes them.
    export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
    echo "lints: $("$CLIPPY_DRIVER" --version) with -D warnings on every crate as it builds" \
        "(EMBER_LINT=0: without)"
fi

# Every feature a test needs, named per package of the scratch workspace.
# (ndarray is on: emberlab-backend and emberlab-kernels are tested with their defaults.)
FEATURES="emberlab/mujoco,emberlab/gym,emberlab-algo/mujoco,emberlab-cli/mujoco,emberlab-cli/gym"

TCH="emberlab-backend/tch"

section "the packaged crates, tested against a fresh lock file (scripts/check-packages.sh test)"
EMBER_UNIFY_FEATURES="$FEATURES" EMBER_UNIFY_ADDED="$TCH" EMBER_UNIFY_KEEP_OUT=torch-sys \
    scripts/check-packages.sh test --no-fail-fast --features "$FEATURES" "$@"
SCRATCH="$(scripts/check-packages.sh dir)"

section "the backend conformance suite on flex, ndarray and libtorch (tch:cpu), packaged"
# `--workspace` with the features above, so that every crate resolves the features of the
# build above (`-p` alone would unify fewer); `--test conformance` builds only emberlab-nn's
# suite and what it needs. EMBER_TEST_DEVICES names libtorch: a build without it fails.
# (Only the front crate's binaries carry an rpath to libtorch; this one finds it here.)
(cd "$SCRATCH" && EMBER_TEST_DEVICES=tch:cpu CARGO_TARGET_DIR="$TARGET" \
    LD_LIBRARY_PATH="$EMBER_LIBTORCH_LIB:$LD_LIBRARY_PATH" cargo test --locked \
    --workspace --features "$FEATURES,$TCH" --test conformance)

section "ember installed from its package: train, eval and plot from an empty folder"
CLI="$(ls -d "$SCRATCH"/emberlab-cli-*)"
# (plain rustc: users install without Clippy)
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS scripts/check-install.sh "$CLI" dqn CartPole-v1 2000
# The wheel's policy tests train with that build's `ember`; the test executables go (the
# release build of the wheel needs the disk more).
mkdir -p "$TARGET/ci-bin"
cp "$TARGET/debug/ember" "$TARGET/ci-bin/ember"
export EMBER_BIN="$TARGET/ci-bin/ember"
find "$TARGET/debug/deps" -maxdepth 1 -type f -perm -u+x ! -name '*.*' -delete
echo "-- disk: $(df -h "$TARGET" | awk 'NR==2 {print $4 " free"}'), target $(du -sh "$TARGET" | cut -f1)"

section "the wheel: sdist, a manylinux_2_28 abi3 wheel built from it, pytest in a fresh venv"
scripts/check-python.sh
section "done"
