"""A notebook's cells as function calls, for the benchmark notebooks
(:mod:`benchlib.publish.benchmark_notebook`) and the summary notebooks
(:mod:`benchlib.publish.pages`): a code cell is one call of a function that displays what the
cell shows; ``tools/make_notebooks.py`` writes each call as source and the imports it needs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

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
        """The name the notebook imports the function's module by: its own name, or for a
        kind folder's module (``benchlib.kinds.unet3d.layout``) the kind's (``unet3d``)."""
        parts = self.function.__module__.split(".")
        return parts[2] if parts[:2] == ["benchlib", "kinds"] and len(parts) == 4 else parts[-1]

    @property
    def imported(self) -> str:
        """What the import line names: the module, as its alias where it has one."""
        name = self.function.__module__.rsplit(".", 1)[-1]
        return name if name == self.module else f"{name} as {self.module}"

    @property
    def package(self) -> str:
        """The package the notebook imports the function's module from."""
        return self.function.__module__.rsplit(".", 1)[0]

    def source(self) -> str:
        call = f"{self.module}.{self.function.__name__}({self.arguments})"
        return f"{self.assign} = {call}" if self.assign else call


#: A cell of a page: Markdown text, one call, or several calls in one code cell.
Cell = str | Call | tuple[Call, ...]


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
    """The modules ``cells`` call, sorted: what a notebook imports."""
    return sorted({call.module for call in calls(cells)})


def imports(cells: Iterable[Cell]) -> list[str]:
    """The import lines of the modules ``cells`` call, one per package, in isort's order."""
    found: dict[str, set[str]] = {}
    for call in calls(cells):
        found.setdefault(call.package, set()).add(call.imported)
    return [f"from {package} import {', '.join(sorted(names))}"
            for package, names in sorted(found.items())]
