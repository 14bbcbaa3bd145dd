#!/usr/bin/env python3
"""Checks every publishable crate of the workspace against the rules crates.io applies at
upload (`cargo package` checks none of these; the upload is the first place they fail, after
earlier crates of the family went out).

The rules, from crates.io's own sources (rust-lang/crates.io at 57fa000, 2026-08-21:
`src/controllers/krate/publish.rs`, `crates/crates_io_database/src/models/keyword.rs`,
`src/boot/categories.toml`):
- a description (at most 1,000 characters) and a licence (an SPDX expression) or licence file;
- at most 5 keywords, each at most 20 characters, ASCII letters, digits, `_`, `-` or `+`,
  starting with a letter or digit;
- at most 5 categories, each a slug of crates.io's category list (an unknown slug is dropped
  at upload with a warning: a crate would silently lose its category);
- at most 300 features, names of letters, digits, `_`, `-`, `+` or `.`;
- URLs (homepage, documentation, repository) that are http(s).

And the family's own rules, so that a crate's page on crates.io reads right:
- a readme that lies inside the crate's folder, is in its package (`cargo package --list`),
  and links nothing relatively except files of the package (crates.io cannot resolve a link
  to the repository without a `repository` URL);
- a crate with features off by default has `[package.metadata.docs.rs]` (docs.rs builds the
  default features only);
- every dependency of a library has a version requirement (a path alone cannot be
  published), and none is pinned exactly (`=x.y.z`): an application on a later patch release
  could not resolve. `~x.y.z` is allowed where a minor release changes a native library.

With `--registry`, also asks crates.io's index (index.crates.io) whether each name is free
(a check for the session that picks names, not for CI: once published, ours are taken).

Usage: scripts/check-crates-io.py [--registry]
"""

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

MAX_KEYWORDS = 5
MAX_KEYWORD_LEN = 20
MAX_CATEGORIES = 5
MAX_DESCRIPTION = 1000
MAX_FEATURES = 300

# crates.io's category slugs (src/boot/categories.toml at the commit above).
CATEGORIES = set(
    """
accessibility aerospace aerospace::drones aerospace::protocols aerospace::simulation
aerospace::space-protocols aerospace::unmanned-aerial-vehicles algorithms api-bindings
artificial-intelligence asynchronous authentication automotive caching compilers
command-line-interface command-line-utilities compression computer-vision config concurrency
cryptography cryptography::cryptocurrencies database database-implementations data-structures
date-and-time development-tools development-tools::build-utils development-tools::cargo-plugins
development-tools::debugging development-tools::ffi development-tools::procedural-macro-helpers
development-tools::profiling development-tools::testing email embedded emulators encoding
external-ffi-bindings filesystem finance game-engines game-development games graphics gui
hardware-support internationalization localization mathematics memory-management multimedia
multimedia::audio multimedia::video multimedia::images multimedia::encoding network-programming
no-std no-std::no-alloc os os::android-apis os::linux-apis os::freebsd-apis os::macos-apis
os::unix-apis os::windows-apis parser-implementations parsing rendering rendering::engine
rendering::graphics-api rendering::data-formats rust-patterns science
science::computational-chemistry science::computational-chemistry::electronic-structure
science::computational-chemistry::molecular-simulation
science::computational-chemistry::cheminformatics science::computational-biology
science::computational-biology::structural-modeling science::computational-biology::systems-biology
science::materials science::geo science::robotics science::neuroscience science::bioinformatics
science::bioinformatics::genomics science::bioinformatics::proteomics
science::bioinformatics::sequence-analysis science::quantum-computing security simulation
template-engine text-editors text-processing value-formatting virtualization visualization wasm
web-programming web-programming::http-client web-programming::http-server
web-programming::websocket
""".split()
)

# SPDX identifiers this family may use; another one must be added here after checking that
# SPDX lists it (https://spdx.org/licenses/).
SPDX_IDS = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Zlib", "MPL-2.0"}

KEYWORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]*$")
FEATURE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_+.-]*$")
CRATE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
# Markdown links and images: [text](target) and <img src="target">.
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|src=\"([^\"]+)\"")


def metadata(root: Path) -> dict:
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def packaged_files(root: Path, name: str):
    """The package's files (`cargo package --list`), or cargo's error when it refuses."""
    run = subprocess.run(
        ["cargo", "package", "--list", "--allow-dirty", "--offline", "-p", name],
        cwd=root, capture_output=True, text=True,
    )
    if run.returncode != 0:
        lines = [l for l in run.stderr.splitlines() if l.strip()]
        return None, lines[0] if lines else f"cargo package --list failed ({run.returncode})"
    return {line.strip() for line in run.stdout.splitlines() if line.strip()}, None


def check_license(expr: str) -> list:
    tokens = re.split(r"\s+|[()]", expr)
    ids = [t for t in tokens if t and t not in ("OR", "AND", "WITH")]
    bad = [t for t in ids if t not in SPDX_IDS]
    return [f"licence `{expr}`: unknown SPDX identifier {', '.join(bad)}"] if bad or not ids else []


def check_readme(pkg: dict, files: set) -> list:
    manifest_dir = Path(pkg["manifest_path"]).parent
    readme = pkg.get("readme")
    if not readme:
        return ["no readme: crates.io shows an empty page"]
    path = (manifest_dir / readme).resolve()
    try:
        rel = path.relative_to(manifest_dir.resolve())
    except ValueError:
        return [f"readme {readme} lies outside the crate's folder (its relative links break)"]
    if not path.is_file():
        return [f"readme {readme} does not exist"]
    if str(rel) not in files:
        return [f"readme {rel} is not in the package (cargo package --list)"]
    problems = []
    for m in LINK.finditer(path.read_text(encoding="utf-8")):
        target = m.group(1) or m.group(2)
        if re.match(r"^(https?:|mailto:|#)", target):
            continue
        inside = (rel.parent / target.split("#")[0]).as_posix()
        inside = str(Path(inside))
        if inside not in files:
            problems.append(f"readme {rel} links `{target}`, which is not a file of the package")
    return problems


def check_dependencies(pkg: dict) -> list:
    problems = []
    for dep in pkg["dependencies"]:
        if dep.get("kind") == "dev" and dep.get("path") and dep["req"] == "*":
            # cargo drops dev-dependencies without a version from the package.
            continue
        req = dep["req"]
        where = f"{dep['kind'] or 'normal'} dependency {dep['name']}"
        if dep.get("path") and req == "*":
            problems.append(f"{where} has a path and no version: it cannot be published")
        elif re.search(r"(^|,)\s*=", req):
            problems.append(f"{where} is pinned exactly ({req}): use a caret requirement")
    return problems


def check_docs_rs(pkg: dict) -> list:
    """A crate with features off by default says which ones docs.rs builds with (docs.rs
    builds the default features only: the rest of the API would be missing there)."""
    features = pkg.get("features") or {}
    on = set()
    todo = list(features.get("default", []))
    while todo:
        f = todo.pop()
        if f in features and f not in on:
            on.add(f)
            todo += features[f]
    off = sorted(f for f in features if f != "default" and f not in on)
    docs_rs = ((pkg.get("metadata") or {}).get("docs") or {}).get("rs")
    if off and not docs_rs:
        return [f"features {', '.join(off)} are off by default and no [package.metadata.docs.rs] "
                "says which docs.rs builds with"]
    unknown = [f for f in (docs_rs or {}).get("features", []) if f.split("/")[0] not in features]
    return [f"[package.metadata.docs.rs] names unknown features {', '.join(unknown)}"] if unknown else []


def check_package(root: Path, pkg: dict) -> list:
    problems = []
    if not CRATE_NAME.match(pkg["name"]):
        problems.append(f"name `{pkg['name']}` is not a valid crate name")
    desc = (pkg.get("description") or "").strip()
    if not desc:
        problems.append("no description")
    elif len(desc) > MAX_DESCRIPTION:
        problems.append(f"description has {len(desc)} characters (at most {MAX_DESCRIPTION})")
    if pkg.get("license"):
        problems += check_license(pkg["license"])
    elif not pkg.get("license_file"):
        problems.append("no licence")
    keywords = pkg.get("keywords") or []
    if len(keywords) > MAX_KEYWORDS:
        problems.append(f"{len(keywords)} keywords (at most {MAX_KEYWORDS})")
    for k in keywords:
        if len(k) > MAX_KEYWORD_LEN:
            problems.append(f"keyword `{k}` has {len(k)} characters (at most {MAX_KEYWORD_LEN})")
        elif not KEYWORD.match(k):
            problems.append(f"keyword `{k}` has a character crates.io refuses")
    categories = pkg.get("categories") or []
    if len(categories) > MAX_CATEGORIES:
        problems.append(f"{len(categories)} categories (at most {MAX_CATEGORIES})")
    for c in categories:
        if c not in CATEGORIES:
            problems.append(f"category `{c}` is not one of crates.io's slugs")
    features = pkg.get("features") or {}
    if len(features) > MAX_FEATURES:
        problems.append(f"{len(features)} features (at most {MAX_FEATURES})")
    for f in features:
        if not FEATURE.match(f):
            problems.append(f"feature name `{f}` is not accepted")
    for field in ("homepage", "documentation", "repository"):
        url = pkg.get(field)
        if url and not re.match(r"^https?://", url):
            problems.append(f"{field} `{url}` is not an http(s) URL")
    files, error = packaged_files(root, pkg["name"])
    problems += [f"cargo package: {error}"] if error else check_readme(pkg, files)
    problems += check_dependencies(pkg)
    problems += check_docs_rs(pkg)
    return problems


def taken_on_crates_io(name: str):
    n = name.lower()
    prefix = {1: "1", 2: "2", 3: f"3/{n[0]}"}.get(len(n), f"{n[:2]}/{n[2:4]}")
    url = f"https://index.crates.io/{prefix}/{n}"
    request = urllib.request.Request(url, headers={"User-Agent": "emberlab-check-crates-io"})
    try:
        with urllib.request.urlopen(request, timeout=30):
            return True
    except urllib.error.HTTPError as e:
        if e.code in (403, 404):
            return False
        raise


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    registry = "--registry" in sys.argv[1:]
    meta = metadata(root)
    members = set(meta["workspace_members"])
    failed = 0
    checked = []
    for pkg in meta["packages"]:
        if pkg["id"] not in members or pkg.get("publish") == []:
            continue
        checked.append(pkg["name"])
        problems = check_package(root, pkg)
        if registry:
            # crates.io treats `-` and `_` as one: the index answers for both spellings.
            if taken_on_crates_io(pkg["name"]):
                problems.append("the name is taken on crates.io")
        for p in problems:
            print(f"error: {pkg['name']}: {p}", file=sys.stderr)
        failed += bool(problems)
    if not checked:
        print("error: no publishable crate found", file=sys.stderr)
        return 1
    if failed:
        print(f"{failed} of {len(checked)} crates break crates.io's rules", file=sys.stderr)
        return 1
    print(f"{len(checked)} crates meet crates.io's rules: {', '.join(sorted(checked))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
