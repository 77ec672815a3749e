"""A references file: its entries (which runs each applies to, the expected figure, its bounds
and source), read strictly and validated against the record's columns.

A references file follows ReFrame's convention, with record columns as the keys::

    references:
      - match: {gpu: A100, benchmark: train, model: resnet50, precision: tf32, batch_size: 256}
        metric: throughput          # a numeric measurement column
        value: 938
        lower: -0.10                # relative bounds: -0.10 = at most 10 % below; null = unbounded
        upper: null
        unit: images/s
        source: where the figure comes from

A ``match`` value is a scalar the record's column must equal (``'*'``: any value), a list of
scalars (any of them), or ``{regex: PATTERN}`` (searched in the column's text, ignoring case, as
the datasheet patterns are). A run matches a reference when every ``match`` column agrees and,
for a figure in the run's own unit (``throughput``), its unit is the reference's. Checking runs
against references: :mod:`benchlib.analysis.references`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import regex
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from benchlib.errors import InputError
from benchlib.inputs.config import describe_validation_error
from benchlib.inputs.yaml_input import load_yaml
from benchlib.records import schema

Scalar = StrictBool | StrictInt | StrictFloat | StrictStr


#: A reference's regular expression searches at most this many characters of a record's text,
#: for at most this many seconds (the ``regex`` module's timeout: no pattern hangs a check).
REGEX_TEXT = 1000
REGEX_TIMEOUT_S = 0.5


class RegexMatch(BaseModel):
    """``{regex: PATTERN}``: the column's text contains a match of PATTERN (ignoring case)."""

    model_config = ConfigDict(extra="forbid")
    regex: StrictStr

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            regex.compile(value)
        except regex.error as error:
            raise ValueError(f"not a regular expression: {error}") from None
        return value

    def search(self, text: str) -> bool:
        """Whether ``text`` (its first :data:`REGEX_TEXT` characters) contains a match, ignoring
        case; a pattern that takes longer than :data:`REGEX_TIMEOUT_S` (one that backtracks
        without end, such as ``^(a|a)*$``) is bad input naming it, not a hang."""
        try:
            return regex.search(self.regex, text[:REGEX_TEXT], flags=regex.IGNORECASE,
                                timeout=REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            raise InputError(f"references: {{regex: {self.regex!r}}} took over "
                             f"{REGEX_TIMEOUT_S} s on {text[:60]!r}: it backtracks without end; "
                             "write it without nested repetition such as (a|a)* or (a+)+") from None


MatchValue = Scalar | list[Scalar] | RegexMatch


class Reference(BaseModel):
    """One expected figure: which runs it applies to, the value and its relative bounds."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    match: dict[str, MatchValue]
    metric: StrictStr
    value: float = Field(gt=0, allow_inf_nan=False, strict=True)
    lower: float | None = Field(None, ge=-1, le=0, strict=True)
    upper: float | None = Field(None, ge=0, allow_inf_nan=False, strict=True)
    unit: StrictStr = ""
    source: StrictStr = Field(min_length=1)
    name: StrictStr = ""

    @field_validator("match", mode="before")
    @classmethod
    def _patterns_first(cls, match: object) -> object:
        """A ``{regex: ...}`` value read as one (its one error, not one per kind of value)."""
        if not isinstance(match, dict):
            return match
        found = {}
        for key, value in match.items():
            try:
                found[key] = RegexMatch.model_validate(value) if isinstance(value, dict) else value
            except ValidationError as error:
                raise ValueError(f"{key}: {error.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        return found

    @field_validator("match")
    @classmethod
    def _column_names(cls, match: dict[str, Any]) -> dict[str, Any]:
        bad = [key for key in match if not re.fullmatch(r"\w+", key) or schema.column(key) is None]
        if bad:
            raise ValueError(f"not a record column: {', '.join(map(repr, bad))} (match keys are "
                             "record columns: benchmark, gpu, model, batch_size, precision, ...; "
                             "docs/record.md lists them)")
        return match

    @field_validator("metric")
    @classmethod
    def _a_measurement(cls, metric: str) -> str:
        found = schema.column(metric)
        if found is None or found.role != "measurement" or found.dtype not in ("float", "int"):
            role = f"a {found.role} column" if found is not None else "not a record column"
            raise ValueError(f"{role}, not a numeric measurement (throughput, "
                             "time_iteration_s, matmul_tflops_fp16, ...; docs/record.md)")
        return metric

    @model_validator(mode="after")
    def _unit_of_the_metric(self) -> Reference:
        """A metric with a unit of its own (``matmul_tflops_*``: TFLOP/s) takes no other; one in
        the run's unit (``throughput``: images/s, tokens/s, GB/s...) must say which."""
        own = schema.column(self.metric).unit  # type: ignore[union-attr]
        if "unit" in own and not self.unit:
            raise ValueError(f"unit: give the unit of {self.metric} this figure is in (images/s, "
                             "tokens/s, ...; each run is judged only against a figure in its own "
                             "unit)")
        if self.unit and own and "unit" not in own and _bare(self.unit) != _bare(own):
            raise ValueError(f"unit {self.unit!r}: {self.metric} is in {own}")
        return self

    @property
    def specificity(self) -> int:
        """How many ``match`` keys constrain the run (those that are not ``'*'``)."""
        return sum(value != "*" for value in self.match.values())

    @property
    def label(self) -> str:
        """``name``, or the metric and the constrained match keys."""
        if self.name:
            return self.name
        keys = ", ".join(f"{k}={match_text(v)}" for k, v in self.match.items() if v != "*")
        return f"{self.metric} [{keys or 'any run'}]"

    def bounds(self) -> tuple[float, float]:
        """The absolute (low, high) bounds (-inf / inf when unbounded)."""
        low = self.value * (1 + self.lower) if self.lower is not None else -math.inf
        high = self.value * (1 + self.upper) if self.upper is not None else math.inf
        return low, high

    def applies_to(self, row: dict[str, Any]) -> bool:
        """Whether every ``match`` column of ``row`` agrees, and, for a metric in the run's own
        unit (``throughput``), the run's ``unit`` is the reference's (``GB/s`` takes ``GB/s
        (bus)``): an images/s run is never judged against a tokens/s figure."""
        own = schema.column(self.metric).unit  # type: ignore[union-attr]
        if "unit" in own and not missing_value(row.get("unit")):
            runs = _bare(str(row["unit"]))  # images/s; samples_per_joule's unit/J: images/J
            if _bare(own.replace("unit/J", f"{runs.removesuffix('/s')}/J").replace("unit", runs)) \
                    != _bare(self.unit):
                return False
        return all(_agrees(expected, row.get(column)) for column, expected in self.match.items())


class ReferencesFile(BaseModel):
    """A references YAML file: ``references:`` followed by a list of references."""

    model_config = ConfigDict(extra="forbid")
    references: list[Reference]


def _bare(unit: str) -> str:
    """A unit without its note, in lower case: ``GB/s (bus)`` -> ``gb/s``."""
    return unit.split("(")[0].strip().lower()


def match_text(value: object) -> str:
    """A ``match`` value as the tables show it (``~pattern``, ``a|b``)."""
    if isinstance(value, RegexMatch):
        return f"~{value.regex}"
    if isinstance(value, list):
        return "|".join(map(str, value))
    return str(value)


def missing_value(value: object) -> bool:
    """Whether a record's value is missing (None, NA, NaN)."""
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def _agrees(expected: object, actual: object) -> bool:
    """Whether a record's value ``actual`` satisfies one ``match`` value."""
    if expected == "*" and not isinstance(expected, bool):
        return True
    if missing_value(actual):
        return False
    if isinstance(expected, RegexMatch):
        return expected.search(str(actual))
    if isinstance(expected, list):
        return any(_agrees(item, actual) for item in expected)
    if isinstance(expected, bool) or isinstance(actual, (bool, np.bool_)):
        return isinstance(expected, bool) and isinstance(actual, (bool, np.bool_)) \
            and bool(actual) == expected
    if isinstance(expected, (int, float)) or isinstance(actual, (int, float, np.number)):
        try:  # a number, or a number written as text ("8"), against a number: by value
            return float(actual) == float(expected)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return str(actual) == expected
    return str(actual) == expected


def parse_references(data: object, where: str = "references file") -> list[Reference]:
    """Validate loaded YAML data; InputError naming ``where`` and each bad field."""
    if not isinstance(data, dict) or "references" not in data:
        keys = (f"its keys: {', '.join(map(str, data))}" if isinstance(data, dict)
                else "expected a mapping with a 'references' list")
        raise InputError(f"{where}: not a references file ({keys}); a references file is a "
                         "'references:' list of entries with name, match, metric, value, lower, "
                         "upper, unit and source (docs/acceptance.md)")
    try:
        return ReferencesFile(**data).references
    except ValidationError as error:
        lines = describe_validation_error(error, fields=ReferencesFile.model_fields)
        raise InputError("\n".join(f"{where}: {line}" for line in lines)) from None


def load_references(path: str | Path) -> list[Reference]:
    """Read and validate a references YAML file (strict YAML, as params files are read)."""
    return parse_references(load_yaml(path, what="references file"), str(path))
