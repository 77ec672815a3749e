"""The notebooks' pages: what each code cell of a notebook shows, as functions.

One module per page (``scaling``, ``comparisons``, ``breakdown``, ``projection``, ``node``,
``acceptance``, ``compare`` for the summary notebooks, ``common`` for their shared head and tail;
``run`` and ``probes`` for the benchmark notebooks). A cell of a notebook is one call of a
function here, which displays what the cell shows; ``tools/make_notebooks.py`` assembles the
notebooks from each module's cells: Markdown text (a ``str``) and :class:`Call` entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from IPython.display import Markdown


def show(*values: object) -> None:
    """Display each value that is not None, as a cell's last expression would be."""
    from IPython.display import display  # looked up now: a caller may have replaced it

    for value in values:
        if value is not None:
            display(value)


def note(text: str) -> None:
    """Display ``text`` as Markdown."""
    show(Markdown(text))


@dataclass(frozen=True)
class Call:
    """One line of a code cell: ``[assign = ]<module>.<function>(arguments)``."""

    function: Callable
    arguments: str = ""
    assign: str = ""

    @property
    def module(self) -> str:
        """The name the notebook imports the function's page module by."""
        return self.function.__module__.rsplit(".", 1)[-1]

    def source(self) -> str:
        call = f"{self.module}.{self.function.__name__}({self.arguments})"
        return f"{self.assign} = {call}" if self.assign else call


#: A cell of a page: Markdown text, one call, or several calls in one code cell.
Cell = str | Call | tuple[Call, ...]


@dataclass(frozen=True)
class Page:
    """A summary notebook: its title and introduction, its parameters besides ``results_dir``
    (name: default), and its cells between the shared head and tail (see ``common``)."""

    title: str
    about: str
    cells: tuple[Cell, ...]
    parameters: dict[str, object] = field(default_factory=dict)


def calls(cells: Iterable[Cell]) -> list[Call]:
    """Every call in ``cells``, in order."""
    found: list[Call] = []
    for cell in cells:
        if isinstance(cell, Call):
            found.append(cell)
        elif isinstance(cell, tuple):
            found.extend(cell)
    return found


def modules(cells: Iterable[Cell]) -> list[str]:
    """The page modules ``cells`` call, sorted: what a notebook imports."""
    return sorted({call.module for call in calls(cells)})
