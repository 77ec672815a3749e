"""Regenerate the notebooks in notebooks/ (clean, without outputs) from their pages.

Every code cell is a call of a function in benchlib.publish.benchmark_notebook (what a benchmark
notebook shows) or benchlib.publish.pages (the summary notebooks' pages), tested and linted there;
this script only assembles the cells. A benchmark notebook's parameters cell and configuration cell
are written from its config class (benchlib.inputs.config, named by benchlib.registry) so that
notebook parameters and config fields cannot drift apart; a summary notebook's parameters come
from its page. Tests check the committed notebooks against this generator.

``--check`` compares what a notebook means, not how it was last saved: each cell's type, source
and tags (the ``parameters`` tag papermill reads), the kernel's name and the benchlib metadata.
What JupyterLab writes when it opens, runs and saves a notebook is left out: outputs, execution
counts, cell ids, other cell and notebook metadata (language_info, widgets, the kernel's display
name), nbformat_minor, the JSON's indentation and final newline.
Usage: python tools/make_notebooks.py [--check [FOLDER]]   (FOLDER: notebooks/ by default)
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable
from pathlib import Path

import nbformat
from jupyter_kernel import KERNELSPEC  # tools/, beside this script
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from benchlib import kinds, registry
from benchlib.publish.benchmark_notebook import layouts, parameters, run
from benchlib.publish.cells import Call, Cell, imports
from benchlib.publish.pages import common
from benchlib.publish.pages.catalog import SUMMARY_PAGES
from benchlib.report.export import HIDE_INPUT, REMOVE_CELL

ROOT = Path(__file__).resolve().parent.parent
#: Every summary notebook's cells: the PAGE of the module each entry of the catalog names.
SUMMARIES = {page.name: importlib.import_module(page.module).PAGE for page in SUMMARY_PAGES}


def _code(cell: Call | tuple[Call, ...]) -> nbformat.NotebookNode:
    lines = cell if isinstance(cell, tuple) else (cell,)
    return new_code_cell("\n".join(call.source() for call in lines))


def _cells(cells: Iterable[Cell]) -> list[nbformat.NotebookNode]:
    return [new_markdown_cell(c) if isinstance(c, str) else _code(c) for c in cells]


def _imports(cells: Iterable[Cell], *config: str) -> str:
    """The notebook's imports, in isort's order (ruff lints the committed notebooks): its
    config classes from their modules (through the registry), then the cells' modules."""
    classes = [registry.config_class(name) for name in config]
    lines = [f"from {cls.__module__} import {cls.__name__}" for cls in classes]
    return "\n".join(sorted([*lines, *imports(cells)], key=lambda line: line.split()[1]))


def _values_cell(values: dict[str, object], comments: dict[str, str]) -> nbformat.NotebookNode:
    lines = [f"{name} = {value!r}" + (f"  # {comments[name]}" if name in comments else "")
             for name, value in values.items()]
    return new_code_cell("\n".join(lines), metadata={"tags": ["parameters"]})


def _finish(cells: list, kind: dict) -> nbformat.NotebookNode:
    for index, cell in enumerate(cells):
        cell.id = f"cell-{index:02d}"  # stable ids: regenerating gives identical files
    nb = new_notebook(cells=cells)
    nb.metadata.update(
        kernelspec=dict(KERNELSPEC),  # the kernel make setup installs (tools/jupyter_kernel.py)
        language_info={"name": "python"},
        benchlib=kind,
    )
    return nb


def parameter_names(benchmark: str) -> list[str]:
    """The parameters ``notebooks/<benchmark>.ipynb`` takes (its config class's fields but
    those its registry entry ignores)."""
    return registry.by_notebook(benchmark).parameters


def _fixed(entry: registry.Benchmark) -> dict[str, object]:
    """What the configuration cell fixes: ``benchmark``, where notebooks share a config class."""
    shared = sum(b.config is entry.config for b in registry.benchmarks()) > 1
    return entry.fixed if shared else {}


def build(benchmark: str) -> nbformat.NotebookNode:
    """A benchmark notebook: parameters, configuration, then its page's sections."""
    entry = registry.by_notebook(benchmark)
    kind = kinds.get(entry.kind)
    intro, heading, after = layouts.cells(entry)
    names = parameter_names(benchmark)
    defaults = kind.shown_config(entry, _fixed(entry))
    comments = {**parameters.COMMENTS, **kind.comments}
    arguments = [f"    {k}={v!r}," for k, v in _fixed(entry).items()]
    arguments += [f"    {n}={n}," for n in names]
    show = Call(run.configuration, "config")
    class_name = entry.config.__name__
    cells = [
        new_markdown_cell(intro),
        _values_cell({n: getattr(defaults, n) for n in names}, comments),
        new_code_cell(_imports([show, *after], class_name)),
        new_markdown_cell(heading),
        # the run page shows the table this cell prints, not its lines of `name=name,`
        new_code_cell("\n".join([f"config = {class_name}(", *arguments, ")", show.source()]),
                      metadata={"tags": [HIDE_INPUT]}),
        *_cells(after),
    ]
    return _finish(cells, {"kind": "benchmark", "benchmark": entry.benchmark})


def build_summary(name: str) -> nbformat.NotebookNode:
    """A summary notebook: the campaign loaded, its page's sections, what is missing, failures."""
    page = SUMMARIES[name]
    body = [*page.cells, *common.TAIL]
    cells = [
        new_markdown_cell(f"# {page.title}\n\n{page.about}"),
        new_markdown_cell(common.RUN_BY, metadata={"tags": [REMOVE_CELL]}),
        _values_cell({"results_dir": "outputs/demo", **page.parameters}, {}),
        new_code_cell(_imports([common.HEAD, *body]) + "\n\n" + common.HEAD.source()),
        *_cells(body),
    ]
    return _finish(cells, {"kind": "summary"})


def essence(nb: nbformat.NotebookNode) -> dict:
    """What ``--check`` compares: each cell's type, source and tags, the kernel's name and the
    benchlib metadata (not outputs, counts, ids or the metadata JupyterLab writes)."""
    return {
        "nbformat": nb.nbformat,
        "kernel": nb.metadata.get("kernelspec", {}).get("name"),
        "benchlib": nb.metadata.get("benchlib"),
        "cells": [(c.cell_type, c.source, sorted(c.metadata.get("tags", []))) for c in nb.cells],
    }


def differences(expected: nbformat.NotebookNode, path: Path) -> list[str]:
    """How the notebook at ``path`` differs from ``expected`` in what matters (empty: it is
    current)."""
    if not path.is_file():
        return ["missing"]
    try:
        found = essence(nbformat.reads(path.read_text(encoding="utf-8"), as_version=4))
    except Exception as error:  # any unreadable file is stale, named with its reason
        return [f"unreadable: {error}"[:200]]
    want = essence(expected)
    found_cells, want_cells = found.pop("cells"), want.pop("cells")
    out = [f"{key}: {found[key]!r}, expected {want[key]!r}" for key in want if found[key] != want[key]]
    if len(found_cells) != len(want_cells):
        out.append(f"{len(found_cells)} cells, expected {len(want_cells)}")
    for index, (a, b) in enumerate(zip(found_cells, want_cells, strict=False)):
        out += [f"cell {index}: {part} differs"
                for part, x, y in zip(("type", "source", "tags"), a, b, strict=True) if x != y]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate (or --check) the notebooks.")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("folder", nargs="?", type=Path, default=ROOT / "notebooks")
    args = parser.parse_args(argv)
    stale = []
    builds = {b.notebook: build for b in registry.benchmarks()}
    builds.update(dict.fromkeys(SUMMARIES, build_summary))
    for name, make in builds.items():
        entry = registry.by_notebook(name)
        folder = entry.folder if entry is not None and entry.folder is not None else args.folder
        path = Path(folder) / f"{name}.ipynb"  # a site's benchmark: in its own package
        nb = make(name)
        if args.check:
            stale += [f"{path}: {why}" for why in differences(nb, path)]
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(nbformat.writes(nb) + "\n")
    if stale:
        print("stale notebooks (run python tools/make_notebooks.py):", *stale, sep="\n  ")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
