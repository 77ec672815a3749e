"""The summary notebooks' pages: what each code cell of a summary notebook shows, as functions.

One module per page (``scaling``, ``comparisons``, ``breakdown``, ``projection``, ``node``,
``acceptance``, ``compare``, ``diagnose``; ``common`` for their shared head and tail). What a
benchmark notebook shows while it runs is :mod:`benchlib.publish.benchmark_notebook`. A cell is
one call of a function here, which displays what the cell shows; ``tools/make_notebooks.py``
assembles the notebooks from each module's cells: Markdown text (a ``str``) and
:class:`~benchlib.publish.cells.Call` entries (:mod:`benchlib.publish.cells`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchlib.publish.cells import Call, Cell, calls, imports, modules, note, show

__all__ = ["Call", "Cell", "Page", "calls", "imports", "modules", "note", "show"]


@dataclass(frozen=True)
class Page:
    """A summary notebook: its title and introduction, its parameters besides ``results_dir``
    (name: default), and its cells between the shared head and tail (see ``common``)."""

    title: str
    about: str
    cells: tuple[Cell, ...]
    parameters: dict[str, object] = field(default_factory=dict)
