"""The record schema: every column a result record can hold, with its role, type, unit and
meaning. One table (:mod:`benchlib.records.columns`, each entry a
:class:`~benchlib.records.column.Column`), from which the loader's dtypes, the analysis column
sets, the roles columns play in people's tables and the record documentation
(``docs/record.md``, ``python -m benchlib.records.schema``) are made.

Roles:

- ``configuration``: what was run (pairs and groups runs in comparisons);
- ``measurement``: what was measured or derived from the measurement;
- ``bookkeeping``: where and how the record was made (ids, status, counts of what ran);
- ``environment``: the ``env_*`` provenance columns;
- ``derived``: not in a record, what analysis and the pages add (:mod:`benchlib.records.derived`).

Families of columns (``time_<phase>_s``, ``env_var_<name>``, ``busbw_<size>``, ...) are one
entry each with a ``{...}`` placeholder in the name.
"""

from __future__ import annotations

import re
import sys
from functools import cache

from benchlib.records.column import (  # noqa: F401  (the schema's names, read as schema.X)
    ESSENTIAL_OTHERS,
    MAX_INTEGER,
    STRICT_TEXT,
    B,
    C,
    Column,
    E,
    M,
    Role,
)
from benchlib.records.columns import every_column
from benchlib.records.derived import DERIVED
from benchlib.vocabulary import RecordStatus, values


def label(name: str) -> str:
    """A column's name for people (no unit): its entry's label (record or derived), else the
    name with spaces."""
    entry = described(name)
    return entry.label if entry is not None and entry.label else name.replace("_", " ")


@cache
def described(name: str) -> Column | None:
    """The entry describing a column a table may show: a derived column's
    (:mod:`benchlib.records.derived`), else the record's (:func:`column`); None for neither."""
    return _derived().get(name) or column(name)


@cache
def _derived() -> dict[str, Column]:
    return {c.name: c for c in DERIVED}


@cache
def _exact() -> dict[str, Column]:
    return {c.name: c for c in every_column() if "{" not in c.name}


@cache
def column(name: str) -> Column | None:
    """The schema entry of ``name``: the exact entry, else the most specific family that
    matches (the one with the most literal characters). Kept per name: tables ask for the
    same few hundred names thousands of times."""
    found = _exact().get(name)
    if found is not None:
        return found
    families = [c for c in every_column() if "{" in c.name and c.pattern.match(name)]
    return max(families, key=lambda c: len(re.sub(r"\{\w+\}", "", c.name)), default=None)


def names(role: Role | None = None, dtype: str | None = None, core: bool | None = None
          ) -> tuple[str, ...]:
    """Exact column names (no families) with the given role / dtype / core flag."""
    return tuple(c.name for c in every_column() if "{" not in c.name
                 and (role is None or c.role == role) and (dtype is None or c.dtype == dtype)
                 and (core is None or c.core == core))


@cache
def describing() -> tuple[str, ...]:
    """Columns that describe a run's configuration in tables and labels, in their order."""
    return tuple(c.name for c in sorted((c for c in every_column() if c.describes),
                                        key=lambda c: c.describes))


@cache
def factors() -> tuple[str, ...]:
    """Columns the comparisons pair runs over, in the comparisons' order."""
    return tuple(c.name for c in sorted((c for c in every_column() if c.factor), key=lambda c: c.factor))


@cache
def said_once() -> tuple[str, ...]:
    """Columns a table names once in its caption when every row has the same value."""
    return tuple(c.name for c in every_column() if c.said_once)


@cache
def added_later() -> tuple[str, ...]:
    """Exact columns a later schema version added (:attr:`Column.since` above 1): every loaded
    table has them, missing where a record of an earlier version has none."""
    return tuple(c.name for c in every_column() if c.since > 1 and "{" not in c.name)


def better(name: str) -> str:
    """Which way ``name`` is better: "higher", "lower", or "" for a measurement that is neither
    (power, temperature), a column that is not a measurement and one the schema does not
    know (which way it is better is unknown)."""
    found = column(name)
    return found.better if found is not None and found.role == "measurement" else ""


def signed(name: str) -> bool:
    """Whether measurement ``name`` may be negative (its column has no lower bound: an overhead
    or a difference): compared on its values, not on their logarithm."""
    found = column(name)
    return found is not None and found.role == "measurement" and found.low is None


def role(name: str) -> Role | None:
    """The role of a column (None: not in the schema)."""
    found = column(name)
    return found.role if found else None


def core_columns(phases: tuple[str, ...]) -> tuple[str, ...]:
    """Core columns in table order, the ``time_{phase}_s`` family expanded over ``phases``."""
    out: list[str] = []
    for c in every_column():
        if c.core:
            out += [f"time_{p}_s" for p in phases] if c.name == "time_{phase}_s" else [c.name]
    return tuple(out)


STATUSES = values(RecordStatus)


@cache
def essential() -> tuple[Column, ...]:
    """The columns whose bad value leaves the record out (:attr:`Column.essential`)."""
    return tuple(c for c in every_column() if c.essential)


#: What loading does with a value that breaks its column's rule (``docs/record.md``).
VALUES_RULE = (
    "## Values checked on load", "",
    "`benchlib.records.results.scan` / `load` check every value against its column's type and "
    "valid values (the tables below; a missing value, `null` or NaN, is always valid), one "
    "column at a time (`benchlib.records.values`):", "",
    "- a bad value in an **essential** column (the core configuration: what was run; and "
    "`throughput`, `status`, `schema_version`) leaves the whole record out: `scan()` lists it "
    "in `skipped` with the file, the column and the value (shortened and escaped), `benchlib` "
    "commands warn, and the report's index names it; a sidecar with such a value is passed over "
    "for its notebook's own record;",
    "- a bad value in any other column is set missing and the record kept: `scan()` lists it in "
    "`notes` (file, column, value) and `benchlib` commands warn;",
    "- a column the schema does not describe keeps any single value; a list or mapping there "
    "is set missing (noted); the records benchlib writes itself (failed ones carry the point's "
    "parameters: `iterations: auto`, lists such as `decode_workers`) load without a note;",
    "- text that cannot be encoded (a lone surrogate such as `\\ud800`, which JSON allows) has "
    "those characters replaced by U+FFFD (�), so every table, CSV, JUnit file and page can be "
    "written; other control characters (C0 and C1, but tab and newline) become U+FFFD and "
    "terminal escape sequences (`ESC [31m`) are removed, so no output of a record drives a "
    "terminal.", "",
    "Whole numbers are below 2^53 in magnitude (exact in a float64); numbers are finite "
    "(infinity is bad; NaN is missing); `true` / `false` are the only booleans (not 0 / 1).",
)


def _described(column: Column) -> str:
    """A column's meaning in docs/record.md: ``benchmark``'s lists the shipped benchmarks, read
    from the kind folders (:func:`benchlib.registry.shipped`), so a new kind touches no list."""
    if column.name != "benchmark":
        return column.description
    from benchlib import registry

    shipped = ", ".join(f"`{entry.benchmark}`" for entry in registry.shipped())
    return f"the benchmark the run is, one per notebook: {shipped}, or a site's"


def markdown() -> str:
    """The record documentation (``docs/record.md``)."""
    lines = ["# Result record columns", "",
             "Generated from `benchlib/records/schema.py` (`python -m benchlib.records.schema"
             " > docs/record.md`); do not edit by hand.", "",
             "A record is one flat row per run. `{x}` stands for a family of columns.", "",
             *VALUES_RULE, ""]
    for title, wanted in (("Configuration", C), ("Measurement", M), ("Bookkeeping", B),
                          ("Environment", E)):
        lines += [f"## {title}", "", "| column | type | valid values | unit | meaning |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| `{c.name}` | {c.dtype} | {c.valid} | {c.unit} | {_described(c)}"
                  f"{f'; {c.better} is better' if c.better else ''}"
                  f"{' (core, essential)' if c.essential else ' (core)' if c.core else ''} |"
                  for c in every_column() if c.role == wanted]
        lines.append("")
    lines += ["## Columns tables add", "",
              "Not in a record: what analysis and the pages compute from records "
              "(`benchlib/records/derived.py`), named and shown as the record's columns are.", "",
              "| column | shown as | meaning |", "| --- | --- | --- |"]
    lines += [f"| `{c.name}` | {schema_words(c)} | {c.description}"
              f"{f'; {c.better} is better' if c.better else ''} |" for c in DERIVED]
    lines.append("")
    return "\n".join(lines)


def schema_words(column: Column) -> str:
    """How a derived column reads in a table: its label and its unit or form."""
    form = {"ratio": "1.93x", "percent": "96.4 %", "tflops": "TFLOP/s",
            "throughput": "the run's unit"}.get(column.shown, column.unit)
    return f"{column.label or column.name.replace('_', ' ')}" + (f" ({form})" if form else "")


if __name__ == "__main__":
    sys.stdout.write(markdown())
