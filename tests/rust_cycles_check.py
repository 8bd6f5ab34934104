"""Report cycles between the source files of a Rust crate.

A node is a source file. There is an edge A -> B when file A names an item of file B
through a ``crate::``, ``super::`` or ``self::`` path (in a ``use`` or inline), or through
a path that starts with a child module in scope; a ``mod x;`` declaration is an edge
from the declaring file to the child's file. A path resolves to the file of the longest
module prefix it names, so ``crate::forest::Pool`` (a re-export) points at
``forest/mod.rs`` while ``crate::forest::pool::Pool`` points at ``forest/pool.rs``.
Inline modules (``mod tests { ... }``) belong to their file, and ``super`` inside them
is the module of that file: a unit test's ``use super::*`` is no edge.

Usage: ``python tests/rust_cycles_check.py [SRC_DIR]`` (default
``rust/kanon-core/src``); prints every cycle and exits 1 if there is one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

Module = tuple[str, ...]


def module_of(path: Path, src: Path) -> Module:
    """Return the module path of a source file (``lib.rs`` is the crate root).

    Args:
        path: A ``.rs`` file under ``src``.
        src: The crate's ``src`` directory.

    Returns:
        The module path as a tuple of names.
    """
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return tuple(parts)


def strip(text: str) -> str:
    """Blank comments, string and char literals, keeping the code's braces and paths.

    Args:
        text: Rust source.

    Returns:
        The source with comments and literals replaced by spaces.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif m := re.match(r'b?r(#*)"', text[i:]):
            end = text.find('"' + m.group(1), i + m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif m := re.match(r"b?'(\\.[^']*|[^\\'])'", text[i:]):
            i += m.end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def use_paths(tree: str) -> list[list[str]]:
    """Expand a ``use`` tree (``a::{b, c::{d, e}}``) into its paths.

    Args:
        tree: The text between ``use`` and ``;``.

    Returns:
        One list of segments per imported path (``self``, ``*`` and aliases dropped).
    """
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    paths: list[list[str]] = []

    def walk(prefix: list[str], text: str) -> None:
        depth, start, items = 0, 0, []
        for k, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                items.append(text[start:k])
                start = k + 1
        items.append(text[start:])
        for item in filter(None, items):
            brace = item.find("{")
            if brace >= 0:
                head = [s for s in item[:brace].split("::") if s]
                walk(prefix + head, item[brace + 1 : item.rfind("}")])
            else:
                segs = [s for s in item.split("::") if s and s not in ("self", "*")]
                paths.append(prefix + segs)

    walk([], tree)
    return paths


def edges_of(
    path: Path, src: Path, files: dict[Module, Path]
) -> tuple[set[Path], dict[Module, Path]]:
    """Return the files that ``path`` names, and the inline modules it defines.

    Args:
        path: The source file to read.
        src: The crate's ``src`` directory.
        files: Module path -> file, for every file module of the crate.

    Returns:
        The set of files named from ``path`` (itself excluded) and its inline modules.
    """
    code = strip(path.read_text())
    root = module_of(path, src)
    # Inline modules: map a character offset to the module it lies in.
    scopes: list[tuple[int, int, Module]] = []
    inline: dict[Module, Path] = {}
    stack: list[tuple[Module, int]] = [(root, -1)]
    depth = 0
    opens: list[tuple[int, Module]] = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{|[{}]", code):
        if m.group(1):
            module = stack[-1][0] + (m.group(1),)
            stack.append((module, depth))
            opens.append((m.end(), module))
            inline[module] = path
            depth += 1
        elif m.group(0) == "{":
            depth += 1
        else:
            depth -= 1
            if len(stack) > 1 and stack[-1][1] == depth:
                start = next(s for s, mod in reversed(opens) if mod == stack[-1][0])
                scopes.append((start, m.start(), stack.pop()[0]))

    def scope_at(offset: int) -> Module:
        inner = [s for s in scopes if s[0] <= offset < s[1]]
        return max(inner, key=lambda s: s[0])[2] if inner else root

    known = {**files, **inline}
    named: set[Path] = set()

    def resolve(segments: list[str], here: Module) -> None:
        if not segments:
            return
        if segments[0] == "crate":
            base: Module = ()
            rest = segments[1:]
        elif segments[0] in ("super", "self"):
            base, rest = here, segments
            while rest and rest[0] in ("super", "self"):
                base = base[:-1] if rest[0] == "super" else base
                rest = rest[1:]
        elif (*here, segments[0]) in known:
            base, rest = here, segments
        else:
            return  # an external crate, std, or a name that is no module
        target = base
        for seg in rest:
            if (*target, seg) in known:
                target = (*target, seg)
            else:
                break
        file = known.get(target)
        if file is not None and file != path:
            named.add(file)

    remaining = code
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        for segments in use_paths(m.group(1)):
            resolve(segments, scope_at(m.start()))
        remaining = remaining[: m.start()] + " " * (m.end() - m.start()) + remaining[m.end() :]
    for m in re.finditer(r"(?<![\w:])((?:crate|super|self)(?:\s*::\s*\w+)+)", remaining):
        segments = [s.strip() for s in m.group(1).split("::")]
        resolve(segments, scope_at(m.start()))
    for m in re.finditer(r"\bmod\s+(\w+)\s*;", code):
        child = files.get((*scope_at(m.start()), m.group(1)))
        if child is not None:
            named.add(child)
    return named, inline


def graph_of(src: Path) -> dict[Path, list[Path]]:
    """Return every source file of the crate with the files it names.

    Args:
        src: The crate's ``src`` directory.

    Returns:
        File -> the files it has an edge to (sorted).
    """
    files = {module_of(p, src): p for p in sorted(src.rglob("*.rs"))}
    inline: dict[Module, Path] = {}
    for p in files.values():
        inline.update(edges_of(p, src, files)[1])
    return {p: sorted(edges_of(p, src, {**files, **inline})[0]) for p in files.values()}


def find_cycles(src: Path) -> list[list[Path]]:
    """Return one cycle of every strongly connected component of more than one file.

    Args:
        src: The crate's ``src`` directory.

    Returns:
        Each cycle as a list of files, the first file repeated at the end.
    """
    graph = graph_of(src)

    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    components: list[list[Path]] = []

    def connect(v: Path) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            connect(v)
    return [cycle_in(graph, component) for component in components]


def cycle_in(graph: dict[Path, list[Path]], component: list[Path]) -> list[Path]:
    """Return a shortest cycle through the first file of a strongly connected component.

    Args:
        graph: File -> the files it names.
        component: A strongly connected component of ``graph`` (two files or more).

    Returns:
        The cycle as a list of files, the first file repeated at the end.
    """
    inside = set(component)
    start = component[0]
    previous: dict[Path, Path] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in graph[v]:
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if w in inside and w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    return [*component, start]  # unreachable for a strongly connected component


def main() -> int:
    """Print the cycles of the crate named on the command line; 1 if any."""
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "rust/kanon-core/src")
    cycles = find_cycles(src)
    for cycle in cycles:
        print("cycle:", " -> ".join(str(p.relative_to(src)) for p in cycle))
    if not cycles:
        print(f"no cycle between the modules of {src}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
