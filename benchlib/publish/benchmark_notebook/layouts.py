"""The cells of each kind's benchmark notebook: its introduction (title, description, how to
run it), the heading over the configuration, and the sections after it (functions of
:mod:`~benchlib.publish.benchmark_notebook.run` or of the kind's own ``layout`` module, found
through :mod:`benchlib.discovery`). ``tools/make_notebooks.py`` writes them into
``notebooks/<notebook>.ipynb``; a kind without a layout of its own (a site's, say) gets the
timed loop's sections."""

from __future__ import annotations

from dataclasses import dataclass

from benchlib import discovery, kinds, registry
from benchlib.publish.benchmark_notebook import run

#: The cells of a benchmark notebook: its first Markdown cell, the heading over the
#: configuration, and the cells after the configuration cell.
Cells = tuple[str, str, tuple]


@dataclass(frozen=True)
class Layout:
    """A notebook's sections and the params file its introduction's papermill line shows."""

    sections: tuple
    params: str = "params/X.yaml"
    example: str = "iterations 50"
    heading: str = "## Configuration"
    #: The probes write their own introduction (no papermill line).
    about: str = ""

    def cells(self, entry: registry.Benchmark) -> Cells:
        """The notebook's introduction, configuration heading and cells after it."""
        how = run.PAPERMILL.format(params=self.params, name=entry.notebook, example=self.example)
        intro = self.about or f"# {entry.title}\n\n{entry.description}\n\n{how}"
        return intro, self.heading, self.sections


#: The layouts of a kind without one of its own: a timed loop's, and one run's (not a loop).
TIMED_LOOP = Layout(run.TIMED_LOOP)
ONE_RUN = Layout(run.ONE_RUN, example="device cpu")
#: Each kind's layout, by the kind's registered name (:func:`register_layout`).
LAYOUTS: dict[str, Layout] = {}


def register_layout(kind: str, layout: Layout) -> Layout:
    """``layout`` as the notebook cells of ``kind`` (a registered name of
    :mod:`benchlib.kinds`; a site's kind registers its own from its package); ValueError when
    the kind has one already."""
    if kind in LAYOUTS:
        raise ValueError(f"kind {kind!r} has a layout already")
    LAYOUTS[kind] = layout
    return layout




def cells(entry: registry.Benchmark) -> Cells:
    """The cells of ``entry``'s notebook: its kind's layout, else a timed loop's or one run's
    (as the kind says)."""
    default = TIMED_LOOP if kinds.get(entry.kind).timed_loop else ONE_RUN
    return LAYOUTS.get(entry.kind, default).cells(entry)


# The kind folders' layouts register themselves on import (:mod:`benchlib.discovery`).
discovery.role_modules("layout")
