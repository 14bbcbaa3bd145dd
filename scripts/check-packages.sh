#!/usr/bin/env bash
# Packages every crate of the workspace as crates.io would receive it (`cargo package`; the
# labs too, which are not published but test and lint with the others; not the Python
# wheel's crate, which scripts/check-python.sh builds from its sdist), unpacks the `.crate`
# files into a scratch workspace whose only links between them are their version
# requirements (patched to the unpacked packages), resolves a fresh lock file there (the
# newest versions their requirements allow, as a new user's `cargo add` gets them) and runs
# cargo in it:
#
#   scripts/check-packages.sh                   # cargo clippy --all-targets (a check)
#   scripts/check-packages.sh test ARGS...      # cargo test --workspace --all-targets ARGS...,
#                                               # then the doc tests (scripts/test.sh)
#   scripts/check-packages.sh dir               # only prints the scratch folder
#
# A crate that reads a file outside its own folder, or needs a workspace-only setting, fails
# here. The scratch folder is `$CARGO_TARGET_DIR/package-check` (default target/), and builds
# share the workspace's target folder. Set EMBER_PACKAGES_LOCKED=1 to keep the workspace's
# Cargo.lock instead of resolving a fresh one (offline work). EMBER_UNIFY_FEATURES and
# EMBER_UNIFY_ADDED: see below (scripts/test.sh sets them).
#
# (`cargo package`'s own verification builds every package in the unoptimised dev profile
# with full debug info, burn included, each on its own: about as long as the whole CI run.)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
SCRATCH="$TARGET/package-check"
mode="${1:-clippy}"
[ $# -gt 0 ] && shift
if [ "$mode" = dir ]; then
    echo "$SCRATCH"
    exit 0
fi

rm -rf "$TARGET/package"
cargo package --workspace --exclude emberlab-py --no-verify --locked \
    --allow-dirty -q
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
    # The workspace's build profiles are not part of any package; they are repeated here
    # (from the workspace's Cargo.toml) so that the packages build as the workspace's tests do.
    sed -n '/^\[profile\./,$p' "$ROOT/Cargo.toml"
} > "$SCRATCH/Cargo.toml"
if [ "${EMBER_PACKAGES_LOCKED:-}" = 1 ]; then
    cp Cargo.lock "$SCRATCH/Cargo.lock"
    echo "packages: the workspace's Cargo.lock (EMBER_PACKAGES_LOCKED=1)"
else
    (cd "$SCRATCH" && cargo generate-lockfile -q)
    changed="$(diff <(grep -A1 '^name = ' Cargo.lock) <(grep -A1 '^name = ' "$SCRATCH/Cargo.lock") |
        grep -c '^>' || true)"
    echo "packages: a freshly resolved lock file ($changed lines differ from the workspace's)"
fi
echo "${#members[@]} packages: ${members[*]}"
# A later build in this workspace with more features (EMBER_UNIFY_ADDED, on top of the
# test build's EMBER_UNIFY_FEATURES): a CI-only member asks for its features of the crates
# both builds share now, except those above EMBER_UNIFY_KEEP_OUT, so that it rebuilds only
# what the added features change (scripts/unify-features.py says why and what).
if [ -n "${EMBER_UNIFY_ADDED:-}" ]; then
    python3 "$ROOT/scripts/unify-features.py" "$SCRATCH" "${EMBER_UNIFY_FEATURES:?}" \
        "$EMBER_UNIFY_ADDED" "${EMBER_UNIFY_KEEP_OUT:?}"
    sed -i 's|^members = \[|members = ["ci-unify",|' "$SCRATCH/Cargo.toml"
    (cd "$SCRATCH" && cargo update -w -q)
fi
case "$mode" in
    clippy)
        (cd "$SCRATCH" && CARGO_TARGET_DIR="$TARGET" cargo clippy --workspace --all-targets \
            --locked -q -- -D warnings)
        echo "every package builds from its own files"
        ;;
    test)
        # Every target (benches run once each, in criterion's test mode), then the doc tests
        # (`--all-targets` leaves them out); one build serves both. Both run even if the
        # first fails, and either failing fails the script.
        status=0
        (cd "$SCRATCH" && CARGO_TARGET_DIR="$TARGET" cargo test --workspace --locked \
            --all-targets "$@") || status=$?
        (cd "$SCRATCH" && CARGO_TARGET_DIR="$TARGET" cargo test --workspace --locked \
            --doc "$@") || status=$?
        exit "$status"
        ;;
    *)
        echo "unknown mode $mode (clippy, test or dir)" >&2
        exit 2
        ;;
esac
