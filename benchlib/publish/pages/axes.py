"""Axes that show every value: a log axis when plotted values span more than a decade (a linear
one makes the small ones invisible), labelled in plain numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from benchlib import formatting


def spans_decades(values: object, ratio: float = 10.0) -> bool:
    """Whether the positive ``values`` span more than ``ratio`` (a decade): a linear axis would
    make the small ones invisible, so the plot takes a log axis (or separate panels)."""
    found = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").astype(float)
    found = found[found > 0]
    return len(found) > 1 and float(found.max() / found.min()) > ratio


def log_axis(ax: plt.Axes, axis: str = "x") -> None:
    """A log ``axis`` labelled in plain numbers (``0.1``, ``1``, ``10``; no crowded minor
    labels such as ``2x10^1 3x10^1``); where the plotted values span at most three decades,
    at 1, 2 and 5 of each (``10``, ``20``, ``50``: never a single label)."""
    getattr(ax, f"set_{axis}scale")("log")
    low, high = getattr(ax, f"get_{axis}lim")()  # the view the log scale chose
    scale = ax.xaxis if axis == "x" else ax.yaxis
    if 0 < low < high <= low * 1e3:
        scale.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    scale.set_major_formatter(FuncFormatter(lambda v, _: formatting.number(v)))
    scale.set_minor_formatter(NullFormatter())
