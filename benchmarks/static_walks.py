"""Static walks through the code: follow one value from a command's entry through the calls
as a reviewer reading the source would, without running anything (issue 53's table).

A walk starts at a function with one of its parameters marked (``cli/sweep.py:Sweep.run:args``).
Inside a function the mark spreads to every name assigned from an expression that holds a
marked name (``sweep = load_sweep(args.params)`` marks ``sweep``; loops, ``with`` and walrus
targets too); a call with a marked argument that resolves to a benchlib function (by the
module's imports, the function's own lazy imports, ``self`` / ``cls`` methods, a class's
methods, re-exports followed) marks that function's matching parameters and the walk goes
there. Calls on values whose type the source does not say (``executor_for(s).submit(...)``)
are not followed: a reader cannot follow them either.

- **stays**: the functions the walk reaches;
- **modules**: their modules;
- **climbs**: stays, in the order a depth-first reading reaches them, in a higher layer than
  the stay before them (the reader going back up the layers; the layers as that checkout's
  ``tests/test_layers.py`` places modules);
- **ping-pong**: module pairs the walk crosses both ways (A calls into B and B back into A).

    python benchmarks/static_walks.py                 # this checkout
    python benchmarks/static_walks.py /tmp/old        # an earlier one (a git worktree)
    python benchmarks/static_walks.py . cli/sweep.py:Sweep.run:args
    python benchmarks/static_walks.py --through-calls  # a call's result carries the value too

Neither reading reproduces the figures of issue 53's table (14 / 9 / 2 for the sweep on
3cfbc92: this walk reads 4 stays by values alone and 62 through calls); the tool that made
them is not in the tree. Both readings compare trees by one rule (docs/measurements.md).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: The walks of issue 53's table, as entry:parameter.
WALKS = ("cli/sweep.py:Sweep.run:args", "report/build.py:build_report:campaign_dir",
         "cli/diagnose.py:Diagnose.run:args", "cli/history.py:History.run:args")
#: ``--through-calls``: a call's result carries the value when an argument does (broader: every
#: value made from it, ``sweep = load_sweep(args.params)`` included).
THROUGH_CALLS = False
#: Where a walk's entry moved to in later trees (the first that exists is taken).
MOVED = {"report/build.py:build_report:campaign_dir": (
             "publish/report/build.py:build_report:campaign_dir",),
         "cli/diagnose.py:Diagnose.run:args": ("diagnosis/command.py:Diagnose.run:args",),
         "cli/history.py:History.run:args": ("history/command.py:History.run:args",)}


@dataclass
class Module:
    name: str
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # qualname -> def
    imports: dict[str, str] = field(default_factory=dict)  # alias -> module or module:symbol


def _imports_of(node: ast.AST, package: str) -> dict[str, str]:
    """The names ``node``'s own import statements bind (not those of nested functions)."""
    bound: dict[str, str] = {}
    for child in ast.walk(node):
        if isinstance(child, ast.Import):
            for alias in child.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
                    bound[alias.name] = alias.name
        elif (isinstance(child, ast.ImportFrom) and child.module is not None) or (
                isinstance(child, ast.ImportFrom) and child.level):
            base = child.module or ""
            if child.level:
                parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            for alias in child.names:
                bound[alias.asname or alias.name] = f"{base}:{alias.name}"
    return bound


def load(tree: Path) -> dict[str, Module]:
    """Every module of ``tree``'s ``benchlib/``, parsed, with its functions and imports."""
    modules = {}
    root = tree / "benchlib"
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(tree).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        parsed = ast.parse(path.read_text(encoding="utf-8"))
        module = Module(name, parsed, imports=_imports_of(parsed, package))
        for node in parsed.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                module.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        module.functions[f"{node.name}.{item.name}"] = item
        modules[name] = module
    return modules


class Walker:
    def __init__(self, modules: dict[str, Module]) -> None:
        self.modules = modules
        self.marked: dict[tuple[str, str], set[str]] = {}
        self.order: list[tuple[str, str]] = []
        self.edges: set[tuple[str, str]] = set()

    # resolution ---------------------------------------------------------------------------
    def _symbol(self, module: str, symbol: str, depth: int = 0) -> tuple[str, str] | None:
        """(module, qualname) that ``module``'s name ``symbol`` is, following re-exports."""
        if depth > 8 or module not in self.modules:
            return None
        found = self.modules[module]
        if symbol in found.functions:
            return module, symbol
        if f"{symbol}.__init__" in found.functions or any(q.startswith(f"{symbol}.")
                                                          for q in found.functions):
            return module, f"{symbol}.__init__"
        if f"{module}.{symbol}" in self.modules:
            return f"{module}.{symbol}", ""  # a submodule
        target = found.imports.get(symbol)
        if target and ":" in target:
            where, name = target.split(":")
            return self._symbol(where, name, depth + 1)
        return None

    def _callee(self, module: str, qualname: str, local: dict[str, str], func: ast.expr
                ) -> tuple[str, str] | None:
        imports = {**self.modules[module].imports, **local}
        if isinstance(func, ast.Name):
            if func.id in self.modules[module].functions:
                return module, func.id
            target = imports.get(func.id)
            if target and ":" in target:
                return self._symbol(*target.split(":"))
            return None
        if not isinstance(func, ast.Attribute):
            return None
        base = func.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls") and "." in qualname:
            owner = qualname.split(".")[0]
            if f"{owner}.{func.attr}" in self.modules[module].functions:
                return module, f"{owner}.{func.attr}"
            return None
        dotted = _dotted(base)
        if dotted is None:
            return None
        head = dotted.split(".")[0]
        target = imports.get(dotted) or imports.get(head)
        if target is None:
            if dotted in self.modules[module].functions or any(
                    q.startswith(f"{dotted}.") for q in self.modules[module].functions):
                return (module, f"{dotted}.{func.attr}") if f"{dotted}.{func.attr}" in \
                    self.modules[module].functions else None
            return None
        if ":" in target:
            resolved = self._symbol(*target.split(":"))
            if resolved is None:
                return None
            where, name = resolved
            if name == "":  # a submodule imported by name
                where = where if dotted == head else f"{where}.{'.'.join(dotted.split('.')[1:])}"
                return self._symbol(where, func.attr)
            owner = name.removesuffix(".__init__")
            return (where, f"{owner}.{func.attr}") if f"{owner}.{func.attr}" in \
                self.modules[where].functions else None
        where = target if dotted == head or imports.get(dotted) else \
            f"{target}.{'.'.join(dotted.split('.')[1:])}"
        return self._symbol(where, func.attr)

    # the walk -----------------------------------------------------------------------------
    def visit(self, key: tuple[str, str], params: set[str], caller: str | None = None) -> None:
        module, qualname = key
        if caller is not None and caller != module:
            self.edges.add((caller, module))
        before = self.marked.get(key)
        if before is not None and params <= before:
            return
        if before is None:
            self.order.append(key)
        self.marked[key] = (before or set()) | params
        node = self.modules[module].functions[qualname]
        package = module if self.modules[module].name.endswith("__init__") else \
            module.rpartition(".")[0]
        local = _imports_of(node, package)
        marked = set(self.marked[key])
        for _ in range(3):  # assignments after their use in loops: a few passes
            for child in ast.walk(node):
                _spread(child, marked)
        for child in ast.walk(node):
            if not isinstance(child, ast.Call):
                continue
            positions = [i for i, a in enumerate(child.args) if _holds(a, marked)]
            keywords = [k.arg for k in child.keywords if _holds(k.value, marked)]
            if not positions and not keywords:
                continue
            callee = self._callee(module, qualname, local, child.func)
            if callee is None or callee[1] == "" or callee[1] not in \
                    self.modules[callee[0]].functions:
                continue
            definition = self.modules[callee[0]].functions[callee[1]]
            names = [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)]
            if "." in callee[1] and names and names[0] in ("self", "cls"):
                names = names[1:]
            chosen = {names[i] for i in positions if i < len(names)}
            if any(i >= len(names) for i in positions) and definition.args.vararg:
                chosen.add(definition.args.vararg.arg)
            every = {*names, *(a.arg for a in definition.args.kwonlyargs)}
            chosen |= {k for k in keywords if k in every}
            if any(k not in every for k in keywords if k) and definition.args.kwarg:
                chosen.add(definition.args.kwarg.arg)
            if chosen:
                self.visit(callee, chosen, module)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _holds(node: ast.AST, marked: set[str]) -> bool:
    """Whether ``node`` is the marked value or made from it without a call (a name, its
    attributes and items, arithmetic such as ``folder / name``, an f-string, a container): a
    call's result is another value, whose relation to the argument the source does not say."""
    if isinstance(node, ast.Name):
        return node.id in marked
    if isinstance(node, ast.Lambda) or (isinstance(node, ast.Call) and not THROUGH_CALLS):
        return False
    return any(_holds(child, marked) for child in ast.iter_child_nodes(node))


def _targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _spread(node: ast.AST, marked: set[str]) -> None:
    """Mark the names ``node`` binds from a marked value."""
    if isinstance(node, ast.Assign) and _holds(node.value, marked):
        for target in node.targets:
            marked |= _targets(target)
    elif (isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None
          and _holds(node.value, marked)) or (isinstance(node, ast.For | ast.comprehension)
                                              and _holds(node.iter, marked)):
        marked |= _targets(node.target)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None \
            and _holds(node.context_expr, marked):
        marked |= _targets(node.optional_vars)
    elif isinstance(node, ast.NamedExpr) and _holds(node.value, marked):
        marked |= _targets(node.target)


def layers_of(tree: Path):
    """That checkout's layer of a module name and the layers' order (its tests/test_layers.py)."""
    sys.path[:0] = [str(tree)]
    for name in [m for m in sys.modules if m == "tests" or m.startswith(("tests.", "benchlib"))]:
        del sys.modules[name]
    module = importlib.import_module("tests.test_layers")
    sys.path.remove(str(tree))
    return module._layer, module.LAYERS


def run_walk(modules: dict[str, Module], spec: str, layer, order) -> dict[str, int] | None:
    """The walk ``spec`` (``path:qualname:parameter`` under benchlib/): its figures."""
    path, qualname, parameter = spec.split(":")
    module = "benchlib." + path.removesuffix(".py").replace("/", ".")
    if module not in modules or qualname not in modules[module].functions:
        return None
    walker = Walker(modules)
    walker.visit((module, qualname), {parameter})
    names = [m for m, _ in walker.order]
    ranks = [order.index(layer(m)) for m in names]
    climbs = sum(1 for a, b in itertools.pairwise(ranks) if b > a)
    pingpong = sum(1 for a, b in walker.edges if (b, a) in walker.edges and a < b)
    results = sum(1 for m, _ in walker.order if m.endswith("records.results"))
    return {"stays": len(walker.order), "modules": len(set(names)), "climbs": climbs,
            "pingpong": pingpong, "results_stays": results}


def main(argv: list[str]) -> int:
    global THROUGH_CALLS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="a checkout (default: this one)")
    parser.add_argument("walks", nargs="*", help="entries as path:qualname:parameter "
                        "(default: issue 53's four)")
    parser.add_argument("--through-calls", action="store_true",
                        help="a call's result carries the value when an argument does")
    args = parser.parse_args(argv)
    THROUGH_CALLS = args.through_calls
    tree = args.tree.resolve()
    if not (tree / "benchlib").is_dir():
        parser.error(f"{tree}: no benchlib/ folder (a checkout of this project)")
    walks = args.walks or list(WALKS)
    modules = load(tree)
    layer, order = layers_of(tree)
    print(f"{tree}: {len(modules)} modules")
    for spec in walks:
        for candidate in (spec, *MOVED.get(spec, ())):
            found = run_walk(modules, candidate, layer, order)
            if found is not None:
                print(f"  {candidate}: {found['stays']} stays / {found['modules']} modules / "
                      f"{found['climbs']} climbs; ping-pong {found['pingpong']} module pairs; "
                      f"records.results {found['results_stays']} stays")
                break
        else:
            print(f"  {spec}: no such entry in this tree")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
