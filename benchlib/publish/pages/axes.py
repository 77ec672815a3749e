"""Axes that show every value: a log axis when plotted values span more than a decade (a linear
one makes the small ones invisible), labelled in plain numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from benchlib import formatting


def spans_decades(values: object, ratio: float = 10.0) -> bool:
    """Whether the positive ``values`` span more than ``ratio`` (a decade): a linear axis would
    make the small ones invisible, so the plot takes a log axis (or separate panels)."""
    found = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").astype(float)
    found = found[found > 0]
    return len(found) > 1 and float(found.max() / found.min()) > ratio


def log_axis(ax: plt.Axes, axis: str = "x") -> None:
    """A log ``axis`` labelled in plain numbers (``0.1``, ``1``, ``10``; no crowded minor
    labels such as ``2x10^1 3x10^1``)."""
    getattr(ax, f"set_{axis}scale")("log")
    scale = ax.xaxis if axis == "x" else ax.yaxis
    scale.set_major_formatter(FuncFormatter(lambda v, _: formatting.number(v)))
    scale.set_minor_formatter(NullFormatter())
