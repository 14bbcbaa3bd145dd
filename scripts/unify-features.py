#!/usr/bin/env python3
"""Lets a later build with more features rebuild only what those features change.

    scripts/unify-features.py WORKSPACE FEATURES ADDED KEEP_OUT

WORKSPACE is a cargo workspace (the scratch workspace of scripts/check-packages.sh) whose
tests build with FEATURES; a second build then adds ADDED (e.g. `emberlab-backend/tch`).
Cargo unifies features: the added ones pull in new crates whose requirements switch on
features of crates both builds share (tch's downloader turns on `libc/default`, `syn/fold`,
`half/default`…), and every crate above those rebuilds, burn's backends included (~15 of CI's
minutes on 2 cores for a six-test suite). This script compares the two feature resolutions
(`cargo tree`) and writes a crate, `ci-unify`, that asks for the later build's features of
every shared crate except those that depend on a crate named in KEEP_OUT (comma-separated,
e.g. `torch-sys`: what the first build must not link); added to the workspace, it gives both
builds the same feature set for all the others, so the second build compiles only the new
crates and those that use KEEP_OUT.

The crate is CI scaffolding: it is not a package of ours and is never published. Prints
what it unified. A crate listed with the same features in both builds is left alone.
"""

import re
import subprocess
import sys
from pathlib import Path

LINE = re.compile(r"^(\d+)(\S+) v(\S+)(?: \((?:proc-macro|[^)]*)\))*\|([^ ]*)(?: \(\*\))?$")


def resolve(workspace: Path, features: str):
    """Packages (name, version) -> features, and their dependency edges, as cargo resolves
    a `cargo test --workspace --all-targets` with `features`."""
    out = subprocess.run(
        # (cargo tree's --all-targets means every platform: the default is this machine's)
        ["cargo", "tree", "--workspace", "-e", "normal,build,dev",
         "--features", features, "--prefix", "depth", "-f", "{p}|{f}"],
        cwd=workspace, check=True, capture_output=True, text=True,
    ).stdout
    # A crate can build twice, for the host (build scripts, proc macros) and the target,
    # with a feature set each: the sets it has, and their union.
    feats: dict[tuple[str, str], set[frozenset[str]]] = {}
    deps: dict[tuple[str, str], set[tuple[str, str]]] = {}
    local: set[tuple[str, str]] = set()
    stack: list[tuple[str, str]] = []
    for line in out.splitlines():
        if not line.strip():
            continue
        m = LINE.match(line)
        if not m:
            sys.exit(f"unify-features: cannot read cargo tree's line {line!r}")
        depth, name, version, flist = int(m[1]), m[2], m[3], m[4]
        key = (name, version)
        if "(/" in line:  # a path package: a member of the workspace
            local.add(key)
        feats.setdefault(key, set()).add(frozenset(f for f in flist.split(",") if f))
        deps.setdefault(key, set())
        del stack[depth:]
        if stack:
            deps[stack[-1]].add(key)
        stack.append(key)
    return feats, deps, local


def main() -> None:
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    workspace, features, added = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    keep_out = {n for n in sys.argv[4].split(",") if n}
    before, _, local = resolve(workspace, features)
    after, deps, _ = resolve(workspace, f"{features},{added}")

    # Crates that depend, directly or not, on a KEEP_OUT crate: they rebuild in the later
    # build whatever we do, and the first build must not get what it brings.
    reaches = {pkg for pkg in after if pkg[0] in keep_out}
    if not reaches:
        sys.exit(f"unify-features: no crate named {sorted(keep_out)} in the later build")
    changed = True
    while changed:
        changed = False
        for pkg, ds in deps.items():
            if pkg not in reaches and ds & reaches:
                reaches.add(pkg)
                changed = True

    # ci-unify asks for the union of the later build's sets for the host and the target
    # alike, so that both builds end with that one set in both.
    wanted = []
    for pkg in sorted(set(before) & set(after)):
        if after[pkg] != before[pkg] and pkg not in reaches and pkg not in local:
            wanted.append((pkg, sorted(frozenset().union(*after[pkg]))))

    crate = workspace / "ci-unify"
    (crate / "src").mkdir(parents=True, exist_ok=True)
    (crate / "src" / "lib.rs").write_text("//! CI scaffolding (scripts/unify-features.py).\n")
    # A build script, so that the build-dependencies below take part in the host's features
    # (build scripts and proc macros share theirs).
    (crate / "build.rs").write_text("fn main() {}\n")
    lines = []
    for (name, version), fl in wanted:
        alias = f"{name}_{version}".replace(".", "_").replace("-", "_").replace("+", "_")
        fs = ", ".join(f'"{f}"' for f in fl if f != "default")
        default = "true" if "default" in fl else "false"
        lines.append(
            f'{alias} = {{ package = "{name}", version = "={version}", '
            f"default-features = {default}, features = [{fs}] }}"
        )
    deps_toml = "\n".join(lines)
    (crate / "Cargo.toml").write_text(
        "[package]\n"
        'name = "ci-unify"\n'
        'version = "0.0.0"\n'
        'edition = "2024"\n'
        "publish = false\n\n"
        f"[dependencies]\n{deps_toml}\n\n"
        f"[build-dependencies]\n{deps_toml}\n"
    )
    for (name, version), fl in wanted:
        print(f"unify-features: {name} {version}: {','.join(fl)}")
    print(f"unify-features: {len(wanted)} shared crates get the features `{added}` brings")


if __name__ == "__main__":
    main()
