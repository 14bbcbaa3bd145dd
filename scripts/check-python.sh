#!/usr/bin/env bash
# The `emberlab` wheel as PyPI would receive it, tested as a user installs it:
# 1. the sdist (`maturin sdist`: crates/emberlab-py and the crates it needs) into
#    target/wheels;
# 2. a fresh venv holding only maturin and ziglang builds the wheel from the sdist alone, as
#    pip does (`pip wheel`, release): abi3 for CPython >= 3.9, linked through zig against
#    glibc 2.28 (`--compatibility manylinux_2_28 --zig`), so that it installs on every
#    manylinux_2_28 system and not only on this machine's glibc; the tag is checked;
# 3. a second fresh venv installs that wheel file (pip resolves its dependencies from PyPI)
#    and runs the pytest suite from a copy of the tests outside the repository. The tools the
#    tests use (pytest, Gymnasium, Stable-Baselines3 with torch, onnxruntime) come from the
#    venv of scripts/setup-python.sh through a `.pth` file read after the venv's own
#    packages, so nothing of emberlab or numpy is found there first.
#
# The plain wheel has no MuJoCo tasks: tests/test_mujoco.py is left out and the script says
# so. `--mujoco` builds a wheel with them from the repository instead (`--features mujoco`,
# after scripts/setup-mujoco.sh; the module then links that machine's MuJoCo library, so it
# is not for PyPI) and runs the whole suite, MuJoCo tests included.
#
# tests/test_policy.py trains runs with the `ember` command: EMBER_BIN (scripts/test.sh sets
# it to the binary its tests built), else the test profile's binary, built here.
#
# Usage: scripts/check-python.sh [--mujoco] [pytest args...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MUJOCO=0
if [ "${1:-}" = --mujoco ]; then
    MUJOCO=1
    shift
fi
ENV_FILE="$(mktemp)"
WORK="$(mktemp -d)"
trap 'rm -rf "$ENV_FILE" "$WORK"' EXIT
"$ROOT/scripts/setup-python.sh" > "$ENV_FILE"
. "$ENV_FILE"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
OUT="$TARGET/wheels"
mkdir -p "$OUT"
rm -f "$OUT"/emberlab-*.whl "$OUT"/emberlab-*.tar.gz
export CARGO_TARGET_DIR="$TARGET"
start=$SECONDS

if [ "$MUJOCO" = 1 ]; then
    [ -n "${MUJOCO_DYNAMIC_LINK_DIR:-}" ] ||
        { echo "--mujoco: run scripts/setup-mujoco.sh and export what it prints first" >&2; exit 1; }
    "$EMBER_PY_PYTHON" -m maturin build --release --locked -m "$ROOT/crates/emberlab-py/Cargo.toml" \
        -i "$EMBER_PY_PYTHON" -o "$OUT" --features mujoco --auditwheel skip
    WHEEL="$(ls "$OUT"/emberlab-*.whl)"
else
    "$EMBER_PY_PYTHON" -m maturin sdist -m "$ROOT/crates/emberlab-py/Cargo.toml" -o "$OUT"
    SDIST="$(ls "$OUT"/emberlab-*.tar.gz)"
    echo "== sdist: $SDIST ($(du -h "$SDIST" | cut -f1))"
    python3 -m venv "$WORK/build"
    "$WORK/build/bin/python" -m pip install --quiet --disable-pip-version-check \
        "maturin>=1.9,<2" ziglang
    # The build reads only the sdist (unpacked by pip into a temporary folder). maturin's
    # build backend runs the `maturin` executable from PATH: the build venv's.
    PATH="$WORK/build/bin:$PATH" MATURIN_PEP517_ARGS="--compatibility manylinux_2_28 --zig" \
        "$WORK/build/bin/python" -m pip wheel --no-build-isolation --no-deps --no-cache-dir \
        --disable-pip-version-check -w "$OUT" "$SDIST"
    WHEEL="$(ls "$OUT"/emberlab-*.whl)"
    case "$(basename "$WHEEL")" in
        *-cp39-abi3-manylinux_2_28_x86_64*.whl) ;;
        *) echo "the wheel is not an abi3 manylinux_2_28 wheel: $WHEEL" >&2; exit 1 ;;
    esac
fi
echo "== wheel: $WHEEL ($(du -h "$WHEEL" | cut -f1)), built in $((SECONDS - start)) s"

if [ -z "${EMBER_BIN:-}" ]; then
    env -u MUJOCO_DYNAMIC_LINK_DIR cargo build --manifest-path "$ROOT/Cargo.toml" \
        --profile test --locked -p emberlab-cli --features gym --bin ember --quiet
    export EMBER_BIN="$TARGET/debug/ember"
fi
[ -x "$EMBER_BIN" ] || { echo "EMBER_BIN=$EMBER_BIN is not an executable" >&2; exit 1; }
export EMBER_BIN

python3 -m venv "$WORK/user"
"$WORK/user/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL"
tools="$("$EMBER_PY_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
here="$("$WORK/user/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$tools" > "$here/zz-test-tools.pth"
"$WORK/user/bin/python" - <<EOF
import emberlab, numpy, os
where = os.path.dirname(emberlab.__file__)
assert where.startswith("$WORK/user"), f"emberlab imported from {where}, not the fresh venv"
assert os.path.dirname(numpy.__file__).startswith("$WORK/user"), "numpy is not the venv's own"
print(f"emberlab {emberlab.__version__} from {where}")
EOF
cp -r "$ROOT/crates/emberlab-py/tests" "$WORK/tests"
cd "$WORK"
if [ "$MUJOCO" = 1 ]; then
    "$WORK/user/bin/python" -m pytest -q -p no:cacheprovider tests "$@"
else
    echo "== the plain wheel has no MuJoCo tasks: tests/test_mujoco.py left out (--mujoco runs it)"
    "$WORK/user/bin/python" -m pytest -q -p no:cacheprovider --ignore=tests/test_mujoco.py tests "$@"
fi
