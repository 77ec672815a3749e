"""One record column (or family of columns): its role, type, unit, meaning, the values it
accepts, and the roles it plays in people's tables. The table of every column is
:mod:`benchlib.records.columns`; lookups and the documentation, :mod:`benchlib.records.schema`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

Role = Literal["configuration", "measurement", "bookkeeping", "environment", "derived"]
#: How a column's numbers are shown (:func:`benchlib.formatting.formatter`): ``ratio`` 1.93x,
#: ``percent`` of a 0-1 share, ``points`` of a 0-100 value, ``tflops``, ``throughput`` (in the
#: run's unit, named with it); '' by the column's name and unit (ms, bytes, FLOP, a number).
Shown = Literal["", "ratio", "percent", "points", "tflops", "throughput"]


@dataclass(frozen=True)
class Column:
    """One record column (or family of columns)."""

    name: str
    role: Role
    #: count: nullable Int64; time: ISO 8601 text (``2026-11-27T01:00:00+00:00``)
    dtype: Literal["text", "count", "int", "float", "bool", "shape", "time"]
    unit: str
    description: str
    core: bool = False  #: shown first, in this order, in every table
    #: smallest valid value of a number (None: the default, :attr:`low`; -inf: none)
    minimum: float | None = None
    #: text a number column also takes (``iterations: auto`` as a failed record carries it)
    words: tuple[str, ...] = ()
    #: a (nested) list of valid values is valid too: a parameter given as a list, as failed
    #: records carry it (a shape: a list of whole numbers)
    lists: bool = False
    #: describes a run's configuration in people's tables and plot labels (where it varies):
    #: its place among them (0: does not)
    describes: int = 0
    #: a factor the comparisons pair runs over (one value against another, all else equal):
    #: its place in the comparisons' order (0: not a factor)
    factor: int = 0
    #: said once, in a table's caption, when every row has the same value
    said_once: bool = False
    #: the schema version that added the column (records of earlier ones load it as missing)
    since: int = 1
    #: which way a measurement is better: "higher" (a rate), "lower" (a time, memory, energy
    #: per sample), "" (neither: a reading such as power or temperature; not a metric that
    #: ``compare`` or ``history`` can call an improvement or a regression)
    better: Literal["higher", "lower", ""] = ""
    #: its name for people where the name itself does not read well ('': the name with
    #: spaces); a table adds the unit where it shows one (:func:`benchlib.formatting.column_label`)
    label: str = ""
    #: how its numbers are shown (:data:`Shown`)
    shown: Shown = ""

    @property
    def pattern(self) -> re.Pattern[str]:
        """The names this entry covers (``{x}`` matches any run of name characters)."""
        return re.compile("^" + re.sub(r"\\\{\w+\\\}", r"[A-Za-z0-9_.]+", re.escape(self.name))
                          + "$")

    @property
    def essential(self) -> bool:
        """Whether a bad value leaves the whole record out (else the value is set missing): what
        was run (the core configuration) and its throughput, status and schema version."""
        return self.core and (self.role == "configuration" or self.name in ESSENTIAL_OTHERS)

    @property
    def low(self) -> float | None:
        """The smallest valid value of a number: :attr:`minimum`, else 0 for counts and
        measurements (None: no bound)."""
        if self.minimum is not None:
            return None if self.minimum == -math.inf else self.minimum
        return 0 if self.dtype == "count" or self.role == "measurement" else None

    @property
    def valid(self) -> str:
        """The values this column accepts, in words (missing is always accepted)."""
        lists = " or a list of whole numbers" if self.dtype == "shape" else " (or a list of them)"
        return self._scalar_valid() + "".join(f" or {w!r}" for w in self.words) + lists * self.lists

    def _scalar_valid(self) -> str:
        low = self.low
        if self.dtype in ("count", "int"):
            bound = f">= {low:g}, < 2^53" if low is not None else "magnitude < 2^53"
            return f"a number (whole, {bound})"
        if self.dtype == "float":
            return "a number (finite" + (f", >= {low:g})" if low is not None else ")")
        if self.dtype == "bool":
            return "true or false"
        if self.dtype == "time":
            return "an ISO 8601 time (2026-11-27T01:00:00+00:00)"
        return "text" if self.dtype == "shape" or self.name in STRICT_TEXT else "text or a number"


C, M, B, E, D = "configuration", "measurement", "bookkeeping", "environment", "derived"
#: Columns besides the core configuration whose bad value leaves the record out.
ESSENTIAL_OTHERS = ("schema_version", "throughput", "status")
#: Text columns whose values must be text (the rest of a record's text may be numbers too).
STRICT_TEXT = ("campaign", "cluster", "gpu", "benchmark", "model", "dataset", "precision", "unit",
               "error", "flags", "status")
#: Integers are valid below this magnitude (exact in a float64, as pandas holds them).
MAX_INTEGER = 2**53

