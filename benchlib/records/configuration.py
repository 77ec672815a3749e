"""What tells one configuration from another, asked one way everywhere:

- whether a column's values differ between rows (:func:`varies`) and which of some columns do
  (:func:`varying`);
- a configuration's one label (:func:`label`: what varies, ``batch_size=64, precision=amp_bf16``,
  or in its short style for plots and narrow tables, ``batch 64, amp_bf16``);
- which columns two sets of runs are paired on (:func:`pair`).

Numbers are compared as numbers (1 and 1.0 are one value), other values as the text a table
shows (lists by their text); missing values (None, NaN, NA, '') are left aside: a run that
failed before it wrote its settings, or a probe without a batch size, does not make a column
vary."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from benchlib.formatting import label_value, missing, short_labels
from benchlib.records import schema
from benchlib.vocabulary import RecordStatus

#: Shown where no column of a label's keys varies and none names the runs.
ALL_RUNS = "all runs"
#: What a label falls back to where nothing varies: the columns that name the runs.
NAMING = ("benchmark", "model", "gpu")


def varies(values: pd.Series, missing_too: bool = False) -> bool:
    """Whether ``values`` hold more than one value (see the module's rule); with
    ``missing_too`` a missing value is one value of its own, for a column where a blank says
    something (``flags`` empty: no flag), so that set in some rows only it varies."""
    if len(values) < 2:
        return False
    if values.dtype.kind in "biufcmM":  # numbers and times: NaN / NaT is the missing value
        return values.nunique(dropna=not missing_too) > 1
    keys = values.map(_key)
    return (keys if missing_too else keys[keys != ""]).nunique() > 1


def _key(value: object) -> object:
    """What one value is compared by: '' when missing (left aside), a number as a float, else
    its text."""
    if missing(value):
        return ""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return str(value)


def varying(frame: pd.DataFrame, columns: Iterable[str], missing_too: bool = False) -> list[str]:
    """Those of ``columns`` that ``frame`` has and whose values vary between its rows, in the
    order given (``missing_too``: as :func:`varies`)."""
    return [c for c in columns if c in frame and varies(frame[c], missing_too)]


def label(frame: pd.DataFrame, keys: Sequence[str], short: bool = False) -> pd.Series:
    """Each row's configuration in words: those of ``keys`` whose values vary among the finished
    runs of ``frame`` (a blank is a value: it groups runs apart; a failed run's blanks are not),
    in the record schema's describing order, else the
    columns that name the runs (:data:`NAMING`); :data:`ALL_RUNS` when ``keys`` has none of
    them. Where the benchmark varies, a row names its benchmark and what varies among that
    benchmark's rows only (a language model's sequence length is no part of a ResNet's label).
    ``name=value, ...``; ``short``: ``batch 64, 2 dev`` (:func:`~benchlib.formatting.short_labels`)
    for plots and narrow tables. The one label of a configuration on every page and command."""
    described = schema.describing()
    order = [c for c in described if c in keys] + [c for c in keys if c not in described]
    shown_varying = varying(_finished(frame), order, missing_too=True)
    shown = shown_varying or [c for c in NAMING if c in keys and c in frame]
    if not shown:
        return pd.Series(ALL_RUNS, index=frame.index, dtype=object)
    if "benchmark" not in shown_varying:
        return written(frame, shown, short)
    labels = pd.Series("", index=frame.index, dtype=object)
    for _, rows in frame.groupby(frame["benchmark"].astype(str), sort=False):
        within = ["benchmark", *(c for c in shown_varying if c != "benchmark"
                                 and varies(_finished(rows)[c], missing_too=True))]
        labels.loc[rows.index] = written(rows, within, short)
    return labels


def _finished(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of finished runs where ``frame`` says which finished and some did, else all: a
    run that failed before it wrote its settings makes no column vary in a label."""
    if "status" not in frame:
        return frame
    done = frame[frame["status"].fillna(RecordStatus.OK).astype(str) == RecordStatus.OK]
    return done if len(done) else frame


def written(frame: pd.DataFrame, columns: Sequence[str], short: bool = False) -> pd.Series:
    """``name=value, ...`` of ``columns`` per row, missing and empty values left out (``short``:
    ``batch 64, 2 dev``): the words of :func:`label` for columns already chosen."""
    if short:
        return short_labels(frame, list(columns))
    return frame[list(columns)].apply(
        lambda row: ", ".join(f"{c}={label_value(v)}" for c, v in row.items() if not missing(v)),
        axis=1).astype(object)


@dataclass(frozen=True)
class Pairing:
    """How two sets of runs (base and new, or two values of one factor) are paired.

    ``on``: the columns both hold values of, paired on; ``differing``: those of ``on`` where
    each side holds one value and the two differ (the difference being compared: left out of
    the keys where the caller compares across it); ``only_base`` / ``only_new``: columns only
    one side holds (``synthetic_kind`` beside real data): never paired on."""

    on: tuple[str, ...]
    differing: tuple[str, ...]
    only_base: tuple[str, ...]
    only_new: tuple[str, ...]

    @property
    def keys(self) -> list[str]:
        """The columns runs are matched on across a difference: ``on`` less ``differing``."""
        return [c for c in self.on if c not in self.differing]


def pair(base: pd.DataFrame, new: pd.DataFrame, columns: Iterable[str]) -> Pairing:
    """Which of ``columns`` (the configuration columns, in order) the runs of ``base`` and
    ``new`` are paired on (see :class:`Pairing`); a value is one by :func:`varies`' rule."""
    on, differing, only_base, only_new = [], [], [], []
    for column in columns:
        a = distinct(base[column]) if column in base else set()
        b = distinct(new[column]) if column in new else set()
        if a and b:
            on.append(column)
            if len(a) == 1 and len(b) == 1 and a != b:
                differing.append(column)
        elif a or b:
            (only_base if a else only_new).append(column)
    return Pairing(tuple(on), tuple(differing), tuple(only_base), tuple(only_new))


def distinct(values: pd.Series) -> set[object]:
    """The values of a column by :func:`varies`' rule (numbers as numbers, the rest as text),
    missing ones left out."""
    return {k for k in values.map(_key).tolist() if k != ""}
