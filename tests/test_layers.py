"""The package's shape (docs/architecture.md): layers import only the layers below them, no
import cycle among modules (imports inside functions counted), no module over 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "benchlib"
MAX_LINES = 400
#: Low to high: a module may import its own layer and the layers before it.
LAYERS = ["benchlib", "models", "data", "inputs", "measure", "workloads", "records", "run",
          "execute", "reference", "analysis", "publish", "kinds", "cli"]
#: Modules at the package's top level and the layer each belongs to.
TOP_LEVEL = {"errors": "benchlib", "formatting": "records", "vocabulary": "benchlib",
             "registry": "inputs", "results": "records", "cli": "cli"}
#: Upward imports kept on purpose, each with its reason (importer -> imported module). None is
#: left: the rank lives in ``data.shard`` (below the loaders and workloads that read it), the
#: process group in ``workloads.distributed``, a run's own interval in ``records.run_interval``,
#: and ``data`` sits below ``inputs`` (validating a config may open the volume it names). An
#: entry here that is no longer an upward import fails the test: the list cannot go stale.
ALLOWED_UPWARD: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """benchlib modules ``name`` imports anywhere in its body (functions included)."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            candidates = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found.update(c for c in candidates if c in MODULES and c != name)
    return found


def _layer(name: str) -> str:
    parts = name.split(".")
    if len(parts) == 1:
        return "benchlib"
    return TOP_LEVEL.get(parts[1], parts[1])


def test_every_module_sits_in_a_known_layer():
    assert {_layer(name) for name in MODULES} <= set(LAYERS)
    top = {name.split(".")[1] for name, path in MODULES.items() if path.parent == PACKAGE
           and path.name != "__init__.py"}
    assert top <= set(TOP_LEVEL)  # a new top-level module must be given a layer


def test_no_module_is_over_the_line_limit():
    long = {name: len(p.read_text().splitlines()) for name, p in MODULES.items()}
    assert {n: lines for n, lines in long.items() if lines > MAX_LINES} == {}


def test_layers_import_only_lower_layers():
    upward = set()
    for name in MODULES:
        for target in _imports(name):
            if LAYERS.index(_layer(target)) > LAYERS.index(_layer(name)):
                upward.add((name, target))
    assert upward - ALLOWED_UPWARD == set()
    assert ALLOWED_UPWARD - upward == set(), "stale entries: no longer upward imports"


def test_no_import_cycle():
    graph = {name: _imports(name) for name in MODULES}
    # a package imports its own submodules; a submodule importing its package is the cycle
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])
    assert cycles == []


@pytest.mark.parametrize("layer", [layer for layer in LAYERS if (PACKAGE / layer).is_dir()])
def test_each_layer_package_says_what_it_holds(layer):
    init = PACKAGE / layer / "__init__.py"
    assert ast.get_docstring(ast.parse(init.read_text()))
