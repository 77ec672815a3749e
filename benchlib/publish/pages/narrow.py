"""A figure re-laid for a phone (a 390 px screen): its panels stacked in one column, at most
:data:`WIDTH_IN` inches wide, no text under :data:`MIN_POINTS`, legends under their panel.

A report page offers it to narrow screens (``<picture>``), so a plot's labels stay at least
10 px there: a 10 pt label is 13.9 px in the PNG (100 dpi), and 364 px of page (a 390 px
screen) show a PNG of at most :data:`MAX_PIXELS` at :data:`MIN_SCALE` of its size or more."""

from __future__ import annotations

import io
import textwrap
import warnings

import matplotlib.pyplot as plt
from matplotlib.gridspec import GridSpec
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.ticker import LogLocator

#: The phone rendering's figure width (inches) and its smallest text (points).
WIDTH_IN = 4.0
MIN_POINTS = 10.0
#: The widest PNG a 390 px screen (364 px of page) shows at :data:`MIN_SCALE` or more.
MAX_PIXELS = 505
MIN_SCALE = 0.72
DPI = 100
#: A title's line on a phone (characters of 10-12 pt text in :data:`WIDTH_IN`).
TITLE_CHARACTERS = 48
#: A category label's line on a phone (beside a bar, it shares the width with the bars).
LABEL_CHARACTERS = 22
#: Inches a line of a category label takes (10 pt text and its leading).
LINE_IN = 0.19


def _panels(fig: plt.Figure) -> list[plt.Axes]:
    """The figure's panels (axes on its grid; not colour bars or insets), row by row."""
    found = [ax for ax in fig.axes if ax.get_subplotspec() is not None]
    return sorted(found, key=lambda ax: (ax.get_subplotspec().rowspan.start,
                                         ax.get_subplotspec().colspan.start))


def _wrap_tick_labels(ax: plt.Axes) -> None:
    """Long category labels (``TN, V100, 1 dev, train, real``) on lines of at most
    :data:`LABEL_CHARACTERS`: beside a bar they would take the panel's width."""
    for axis in (ax.xaxis, ax.yaxis):
        labels = [t.get_text() for t in axis.get_ticklabels()]
        if any(len(label) > LABEL_CHARACTERS for label in labels):
            axis.set_ticks(axis.get_ticklocs(),
                           [textwrap.fill(label, LABEL_CHARACTERS) for label in labels])


def _legends_below(ax: plt.Axes) -> None:
    """An axes' legend moved under it (a legend beside a panel widens the figure)."""
    legend = ax.get_legend()
    if legend is None:
        return
    handles, labels = legend.legend_handles, [t.get_text() for t in legend.get_texts()]
    title = legend.get_title().get_text()
    ax.legend(handles, labels, title=title or None, loc="upper center", frameon=False,
              bbox_to_anchor=(0.5, -0.22), ncol=2 if len(labels) > 3 else 1)


def _height(ax: plt.Axes, before: float) -> float:
    """Inches a stacked panel needs: its height before, or more where its category labels,
    wrapped, take more lines than that leaves them."""
    labels = [t.get_text() for t in ax.yaxis.get_ticklabels()]
    lines = max((label.count("\n") + 1 for label in labels), default=1) * len(labels)
    return max(before, 2.2, LINE_IN * lines + 1.0)


def _log_ticks_per_decade(ax: plt.Axes) -> None:
    """A log axis over more than one and a half decades labelled once a decade: its 1-2-5
    labels run together on a narrow panel (a shorter one keeps them: else one label)."""
    for axis, scale, (low, high) in ((ax.xaxis, ax.get_xscale(), ax.get_xlim()),
                                     (ax.yaxis, ax.get_yscale(), ax.get_ylim())):
        if scale == "log" and 0 < low < high and high / low > 10 ** 1.5:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0,)))


def render(fig: plt.Figure) -> bytes | None:
    """The phone rendering of ``fig`` as PNG bytes (the figure is changed: render the wide one
    first), or None when the figure already fits a phone as it is."""
    width, height = fig.get_size_inches()
    panels = _panels(fig)
    columns = {ax.get_subplotspec().colspan.start for ax in panels}
    if width <= WIDTH_IN + 0.5 and len(columns) <= 1:
        return None
    grid_rows = max((ax.get_subplotspec().rowspan.start for ax in panels), default=0) + 1
    for ax in panels:
        ax.tick_params(labelleft=True, labelbottom=True)  # a shared axis: each panel labelled
        ax.set_title(textwrap.fill(ax.get_title(), TITLE_CHARACTERS))
        _wrap_tick_labels(ax)
        _log_ticks_per_decade(ax)
        _legends_below(ax)
    heights = [_height(ax, height / grid_rows) for ax in panels] or [height]
    grid = GridSpec(len(heights), 1, figure=fig, height_ratios=heights)
    for at, ax in enumerate(panels):
        ax.set_subplotspec(grid[at, 0])
    if fig._suptitle is not None:
        fig._suptitle.set_text(textwrap.fill(fig._suptitle.get_text(), TITLE_CHARACTERS))
    for legend in list(fig.legends):  # a figure's own legend: under the last panel
        legend.set_bbox_to_anchor((0.5, 0.0), transform=fig.transFigure)
        legend.set_loc("upper center")
    for text in fig.findobj(lambda a: isinstance(a, Text | Legend)):
        if isinstance(text, Text) and text.get_fontsize() < MIN_POINTS:
            text.set_fontsize(MIN_POINTS)
    fig.set_size_inches(WIDTH_IN, sum(heights) + 0.8 * len(heights))
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:  # room for a wrapped title and legends below
            fig.set_layout_engine("constrained")
        except RuntimeError:  # a colour bar holds the figure to its engine: lay it out tightly
            fig.tight_layout()
        fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()
