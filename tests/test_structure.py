"""The package's structure: no import cycles, every source file names its one job.

The import graph counts every import of a kanon module, wherever it stands: at the top,
inside a function, or under ``if TYPE_CHECKING:``. A cycle is named in full.
"""

from __future__ import annotations

import ast
import importlib.util
import typing
from dataclasses import fields
from pathlib import Path

import pytest

from kanon._options import MACROS
from kanon.plan.metrics import METRICS, Metrics
from kanon.plan.release.registry import METHODS

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "python" / "kanon"
RUST_CORE = REPO / "rust" / "kanon-core" / "src"


def _load_rust_cycles_check():  # type: ignore[no-untyped-def]
    """tests/rust_cycles_check.py, a script beside this file (tests is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "rust_cycles_check", Path(__file__).with_name("rust_cycles_check.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rust_cycles_check = _load_rust_cycles_check()


def _module(path: Path, package: Path = PACKAGE) -> str:
    """The dotted name of a module of the package (``kanon.plan.release.forest``)."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str], root: Path) -> set[str]:
    """The kanon modules ``path`` imports, anywhere in it."""
    name = _module(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            out.add(source)
            # `from kanon import x` imports the module kanon.x when there is one.
            out |= {f"{source}.{a.name}" for a in node.names}
    found = set()
    for target in out:
        # `import kanon.a.b` depends on kanon.a.b (and its packages, but those are
        # imported first by Python anyway and would make every subpackage a cycle).
        if target in modules and target != name:
            found.add(target)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the package's modules it imports.

    The top package (``kanon``, the public API importing everything) is left out: its
    modules import their siblings from it (``from kanon import hierarchy``) while it
    initializes.
    """
    top = root.name
    paths = sorted(root.rglob("*.py"))
    modules = {_module(p, root) for p in paths}
    return {
        _module(p, root): _imports(p, modules, root) - {top}
        for p in paths
        if _module(p, root) != top
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    """The check itself works: a planted cycle is found and named."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_import_graph_is_read(tmp_path: Path) -> None:
    """Function-local, relative and TYPE_CHECKING imports count as edges too."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "a.py").write_text("def f():\n    from pkg.sub import b\n")
    (root / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import x\n"
    )
    (root / "c.py").write_text("import pkg.a\n")
    graph = import_graph(root)
    assert graph["pkg.a"] == {"pkg.sub", "pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.c"}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]


def test_no_import_cycles() -> None:
    """No kanon module imports itself through others, at any place in the code."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


#: The layers of python/kanon, lowest first (ARCHITECTURE.md): a module imports only from
#: its own layer and those below. ``plan.release`` sits above the rest of ``plan``.
LAYERS = [
    ("kanon.exceptions", "kanon._options"),
    ("kanon.sql",),
    ("kanon.hierarchy", "kanon.datagen"),
    ("kanon.plan",),
    ("kanon.plan.release",),
    ("kanon.engine",),
    ("kanon.api",),
    ("kanon.store",),
    ("kanon.cli", "kanon.spark", "kanon.__main__"),
]


def layer_of(module: str) -> int:
    """The layer of a module: the one whose longest prefix names it."""
    best, rank = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank >= 0, f"{module} is in no layer of LAYERS"
    return rank


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """The imports of a module from a layer above its own."""
    return [
        f"{a} ({layer_of(a)}) imports {b} ({layer_of(b)})"
        for a, targets in sorted(graph.items())
        for b in sorted(targets)
        if layer_of(b) > layer_of(a)
    ]


def test_the_layer_check_finds_upward_imports() -> None:
    planted = {"kanon.plan.check": {"kanon.store.owned"}, "kanon.api.check": {"kanon.plan"}}
    assert upward_imports(planted) == ["kanon.plan.check (3) imports kanon.store.owned (7)"]
    assert layer_of("kanon.plan.release.forest") == 4
    assert layer_of("kanon.plan.coding") == 3


def test_no_module_imports_from_a_layer_above() -> None:
    """The layers hold: sql < hierarchy < plan < plan.release < engine < api < store < cli."""
    up = upward_imports(import_graph())
    assert not up, "imports from a layer above: " + "; ".join(up)


def test_architecture_names_the_layers_in_order() -> None:
    """ARCHITECTURE.md's table of layers lists LAYERS' folders, lowest first."""
    text = (REPO / "ARCHITECTURE.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    named = [line.split("`")[1] for line in rows]
    folders = [p.removeprefix("kanon.").replace(".", "/") for layer in LAYERS for p in layer]
    listed = [n.rstrip("/").removesuffix(".py") for n in named]
    assert [f for f in listed if f in folders] == folders, (listed, folders)


def test_every_method_is_registered_and_takes_declared_scoped_options() -> None:
    """Each method is under its name; it names only scoped options, each taken by one."""
    assert all(method.name == name for name, method in METHODS.items())
    declared = MACROS["kanon"].options()
    scoped = {name for name, (_, opt) in declared.items() if opt.scoped}
    for method in METHODS.values():
        assert set(method.options) <= scoped, (method.name, set(method.options) - scoped)
    assert scoped == {o for m in METHODS.values() for o in m.options}


RUST_CRATES = [RUST_CORE, REPO / "rust" / "kanon-py" / "src"]
PLACEHOLDERS = {"todo", "tbd", "fixme", "xxx", "placeholder", "module", "docs", "doc"}


def _names_its_job(line: str) -> bool:
    """A first doc line names a job: a sentence of words, not a placeholder."""
    text = line.strip().rstrip(".").strip()
    words = text.split()
    return len(words) >= 3 and text.lower() not in PLACEHOLDERS and not text.startswith("...")


def _missing_job_line(files: list[Path]) -> list[str]:
    """The files whose first line is no doc line naming the file's one job."""
    missing = []
    for p in files:
        text = p.read_text()
        if p.suffix == ".rs":
            first = text.split("\n", 1)[0]
            ok = first.startswith("//!") and _names_its_job(first.removeprefix("//!"))
        else:
            doc = ast.get_docstring(ast.parse(text))
            ok = doc is not None and _names_its_job(doc.strip().split("\n", 1)[0])
        if not ok:
            missing.append(str(p.relative_to(REPO) if p.is_relative_to(REPO) else p))
    return missing


def test_every_source_file_names_its_one_job() -> None:
    """Every Rust file of the crates and every module of python/kanon opens with a doc line
    naming its one job (a file may be long if it has one job)."""
    files = [p for src in RUST_CRATES for p in sorted(src.rglob("*.rs"))]
    files += sorted(PACKAGE.rglob("*.py"))
    missing = _missing_job_line(files)
    assert not missing, "files without a first doc line naming their job: " + ", ".join(missing)


def test_the_job_line_check_finds_a_file_without_one(tmp_path: Path) -> None:
    good_rs = tmp_path / "good.rs"
    good_rs.write_text("//! Union-find over the vertices of a forest.\npub struct Sets;\n")
    bad_rs = tmp_path / "bad.rs"
    bad_rs.write_text("use std::fmt;\n//! Too late for a module doc.\n")
    empty_rs = tmp_path / "empty.rs"
    empty_rs.write_text("//!\n//! The job, one line too low.\n")
    good_py = tmp_path / "good.py"
    good_py.write_text('"""Read a release back from its table."""\n')
    bad_py = tmp_path / "bad.py"
    bad_py.write_text("import os\n")
    todo_py = tmp_path / "todo.py"
    todo_py.write_text('"""TODO."""\n')
    files = [good_rs, bad_rs, empty_rs, good_py, bad_py, todo_py]
    assert sorted(_missing_job_line(files)) == sorted(
        str(p) for p in (bad_rs, empty_rs, bad_py, todo_py)
    )


@pytest.mark.slow
def test_no_module_cycles_in_the_rust_crates() -> None:
    """No source file of a crate names, through others, an item of itself."""
    for src in RUST_CRATES:
        cycles = rust_cycles_check.find_cycles(src)
        shown = [" -> ".join(str(p.relative_to(REPO)) for p in c) for c in cycles]
        assert not cycles, "module cycles: " + "; ".join(shown)


def test_the_rust_cycle_finder_finds_cycles(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "forest").mkdir(parents=True)
    (src / "lib.rs").write_text("pub mod forest;\npub mod pool;\n")
    (src / "forest" / "mod.rs").write_text("pub mod cut;\n")
    (src / "forest" / "cut.rs").write_text("use crate::pool::Pool;\npub struct Cut;\n")
    (src / "pool.rs").write_text("pub struct Pool(crate::forest::cut::Cut);\n")
    cycles = rust_cycles_check.find_cycles(src)
    assert [sorted({p.name for p in c}) for c in cycles] == [["cut.rs", "pool.rs"]]


def test_metrics_fields_are_the_declared_metrics() -> None:
    """kanon.Metrics has one field per declared metric, in order, of its declared type."""
    assert [f.name for f in fields(Metrics)] == [m.name for m in METRICS]
    hints = typing.get_type_hints(Metrics)
    for metric in METRICS:
        kind = dict[str, float] if metric.kind is dict else metric.kind
        assert hints[metric.name] == (kind | None if metric.optional else kind), metric.name
