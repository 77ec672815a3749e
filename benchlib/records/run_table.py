"""A frame of runs that leads with what matters, shown and sliced.

:func:`benchlib.records.results.load` returns every record column (a campaign has 100 to 200).
A :class:`RunTable` is that frame with its columns reordered: the settings that vary between
its runs, then the results (:func:`leading_columns`), then every other column in the record's
order. So a plain slice of it (``df.head()``, ``df.sort_values(...)``, ``df.query(...)``,
``df[...]``: plain :class:`pandas.DataFrame`) still opens with those columns, and pandas' own
display of it shows them before its ``...``. Shown itself, a RunTable shows the leading columns
only, with a line saying what is left out. ``df.tidy()`` is that view as a frame;
``df.every_column()`` every column in the record's order (the order ``--csv`` writes).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd

from benchlib.formatting import DASH, missing, number
from benchlib.measure.timing import PHASES
from benchlib.records import schema
from benchlib.records.configuration import varies

#: At most this many columns are shown first ("about a dozen").
SHOWN = 12
#: What a run measured, in the order shown, where the frame has them (the analysis functions'
#: results among them, so ``analysis.scaling(df)`` leads with its speedup and efficiency).
RESULTS = ("throughput", "unit", "throughput_low", "throughput_high", "speedup", "efficiency",
           "flags")
#: Settings shown first when they vary, before the other configuration columns.
FIRST = ("benchmark", "model", "dataset", "batch_size", "num_devices", "precision", "gpu",
         "cluster", "host", "num_workers", "num_nodes")
#: Configuration columns never worth a column of their own in the first view.
HIDDEN = ("campaign",)


def leading_columns(frame: pd.DataFrame, results: Sequence[str] = RESULTS,
                    at_most: int = SHOWN) -> list[str]:
    """The columns a person reads first: the configuration columns that vary between the rows
    (``benchmark``, ``model``, ``dataset``, ``batch_size``, ... first), then the results in
    ``frame`` (``status`` too when some runs failed), ``at_most`` in all."""
    shown_results = [c for c in results if c in frame and frame[c].notna().any()]
    if "status" in frame and varies(frame["status"], missing_too=True):
        shown_results.append("status")
    settings = [c for c in (*FIRST, *schema.names(role="configuration"))
                if c in frame and c not in HIDDEN and c not in shown_results]
    varying = [c for c in dict.fromkeys(settings) if varies(frame[c], missing_too=True)]
    room = max(at_most - len(shown_results), 0)
    return [*varying[:room], *shown_results][:at_most]


def constant_settings(frame: pd.DataFrame, at_most: int = 6) -> str:
    """``benchmark=train, model=resnet50, ...``: the first view's settings that every row
    shares, for the line under it."""
    parts = []
    for column in FIRST:
        if column in frame and len(frame) and not varies(frame[column], missing_too=True):
            value = frame[column].iloc[0]
            if not missing(value):
                parts.append(f"{column}={' '.join(str(value).split())}")
    return ", ".join(parts[:at_most])


def record_order(frame: pd.DataFrame) -> list[str]:
    """``frame``'s columns as a record holds them: the core columns, the rest, ``env_*`` last."""
    core = [c for c in schema.core_columns(PHASES) if c in frame.columns]
    env = sorted(c for c in frame.columns if str(c).startswith("env_"))
    return [*core, *(c for c in frame.columns if c not in core and c not in env), *env]


class RunTable(pd.DataFrame):
    """Every column of the runs, the settings that vary and the results first; shown as
    :meth:`tidy` with a line saying what is left out."""

    #: The results shown after the settings that vary, where the frame has them.
    results: tuple[str, ...] = RESULTS

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame

    @classmethod
    def of(cls, frame: pd.DataFrame) -> RunTable:
        """``frame``'s runs with :func:`leading_columns` first, then the others in its order."""
        lead = leading_columns(frame, cls.results)
        return cls(frame[[*lead, *(c for c in frame.columns if c not in lead)]])

    def tidy(self) -> pd.DataFrame:
        """The view shown: :func:`leading_columns` (the settings that vary, then the results)."""
        return pd.DataFrame(self)[leading_columns(self, self.results)]

    def every_column(self) -> pd.DataFrame:
        """The same runs as a plain frame, every column in the record's order."""
        return pd.DataFrame(self)[record_order(self)]

    def note(self, more: str = "df.every_column() is every column, df.tidy() this view") -> str:
        """The line under the view: runs, columns shown of how many, what every row shares,
        then ``more`` (where the other columns are)."""
        shown = len(leading_columns(self, self.results))
        same = constant_settings(self)
        said = f" Every row: {same}." if same else ""
        runs = f"{len(self)} run{'' if len(self) == 1 else 's'}"
        return (f"{runs}; {shown} of {len(self.columns)} columns shown (the settings that vary, "
                f"then the results).{said} {more}.")

    def _repr_html_(self) -> str | None:
        with pd.option_context("display.float_format", readable):
            body = self.tidy()._repr_html_()
        return f"{body}<p>{html.escape(self.note())}</p>" if body is not None else None

    def __repr__(self) -> str:
        with pd.option_context("display.max_columns", None, "display.float_format", readable):
            return f"{self.tidy()!r}\n{self.note()}"


def readable(value: float) -> str:
    """A measurement as the report shows it (:func:`benchlib.formatting.number`: ``561,514``,
    ``145``, ``0.43``), a dash when missing."""
    return DASH if missing(value) else number(value)


class ScalingTable(RunTable):
    """:func:`benchlib.analysis.comparisons.scaling`'s frame: shown with speedup and efficiency
    first among the results."""

    results = ("speedup", "efficiency", "throughput", "unit", "flags")


@pd.api.extensions.register_dataframe_accessor("benchlib")
class RunsAccessor:
    """``frame.benchlib``: the views of any frame of runs, one :func:`benchlib.load` returned
    or one made from it (``df.query(...)``, ``df.head()``, a concatenation: plain pandas
    frames, which have no ``tidy()`` of their own)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    def tidy(self) -> pd.DataFrame:
        """The settings that vary among these runs, then the results (as ``df.tidy()``)."""
        return RunTable(self._frame).tidy()

    def every_column(self) -> pd.DataFrame:
        """Every column in the record's order (as ``df.every_column()``)."""
        return RunTable(self._frame).every_column()
