#!/usr/bin/env python3
"""Finds import circles between the modules of each crate (`crates/*/src`).

A module is a source file (`a/b.rs` and `a/b/mod.rs` are `a::b`). Module A depends on
module B when A's code names `crate::b...` or `super::...` resolving to B (or a module
under B). A child module naming its parent (`super::x` where `x` is an item of the parent)
is a dependency on the parent; the parent declaring `mod child` is not. Test modules
(`#[cfg(test)]` blocks to the end of a file) are left out. Prints every circle and exits 1
if there is one.

Usage: scripts/check-import-cycles.py [REPO_ROOT]
"""
import re
import sys
from pathlib import Path


def module_of(src: Path, path: Path) -> tuple:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def strip(text: str) -> str:
    # Drop the test module at the end of a file, comments and string literals.
    cut = re.search(r"^#\[cfg\((?:test|all\(test[^\n]*)\)\]\s*\nmod tests", text, re.M)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return text


def resolve(path: tuple, modules: set) -> tuple | None:
    """The longest prefix of `path` that is a module."""
    for n in range(len(path), -1, -1):
        if path[:n] in modules:
            return path[:n]
    return None


def paths_named(text: str):
    """`a::b::c` paths that start with `crate` or `super`, including `use` groups."""
    for m in re.finditer(r"\b(crate|super)((?:\s*::\s*(?:super|\w+))*)\s*::\s*\{([^;]*?)\}", text, re.S):
        head = [m.group(1)] + re.findall(r"\w+", m.group(2))
        for item in re.split(r",", m.group(3)):
            words = re.findall(r"\w+", item.split(" as ")[0])
            yield head + words[:1] if words else head
    for m in re.finditer(r"\b(crate|super)((?:\s*::\s*(?:super|\w+))+)", text):
        yield [m.group(1)] + re.findall(r"\w+", m.group(2))


def crate_graph(src: Path) -> dict:
    files = sorted(src.rglob("*.rs"))
    modules = {module_of(src, f) for f in files}
    graph = {}
    for f in files:
        me = module_of(src, f)
        deps = set()
        for path in paths_named(strip(f.read_text())):
            if path[0] == "crate":
                target = tuple(path[1:])
            else:
                here = list(me)
                i = 0
                while i < len(path) and path[i] == "super":
                    here = here[:-1]
                    i += 1
                target = tuple(here) + tuple(path[i:])
            dep = resolve(target, modules)
            if dep is None or dep == me:
                continue
            # A parent naming its own child's items (`mod child; use child::x`) is the
            # module tree, not a circle; only the child naming the parent counts below.
            deps.add(dep)
        graph[me] = deps
    return graph


def cycles(graph: dict) -> list:
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    found = 0
    for src in sorted(root.glob("crates/*/src")):
        graph = crate_graph(src)
        # The crate root (`lib.rs`/`main.rs`) declares and re-exports every module: it is
        # the module tree, not a dependency of them.
        for v in graph:
            graph[v].discard(())
        for comp in cycles(graph):
            found += 1
            names = ", ".join("::".join(m) or "(crate root)" for m in comp)
            print(f"{src.parent.name}: import circle between {names}")
    print(f"{found} import circle(s)" if found else "no import circles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
