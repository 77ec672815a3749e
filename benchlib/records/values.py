"""Record values checked against :mod:`benchlib.records.schema` when records are loaded.

A bad value in an essential column (:attr:`~benchlib.records.schema.Column.essential`) leaves its
record out; a bad value elsewhere is set missing and noted (``docs/record.md``, "Values checked
on load"). :func:`problems` checks one record's essential columns (a sidecar with such a value is
passed over for its notebook); :func:`check_frame` checks a whole table, one column at a time
(vectorised: a column of the types it should hold costs a few numpy operations, only a column
holding other types is looked at value by value).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Hashable, Mapping

import numpy as np
import pandas as pd

from benchlib.records import schema
from benchlib.records.schema import Column

#: Longest value shown in a message (its ``repr``, cut).
SHOWN_CHARS = 60
_NUMERIC = ("count", "int", "float")
_TEXT = ("text", "shape")
#: A terminal escape sequence: CSI (``ESC [ ... m``, or C1 CSI), OSC (``ESC ] ... BEL``/ST, or
#: C1 OSC) and the other ``ESC [intermediates] final`` forms (``ESC c``, ``ESC ( B``).
_ESCAPE = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
                     r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[ -/]*[0-~]")
#: C0 and C1 control characters but tab and newline.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: What a control character left after the escape sequences are removed becomes.
REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """``text`` safe to print: terminal escape sequences removed, every other C0/C1 control
    character (tab and newline are kept) replaced by U+FFFD."""
    if text.isprintable() or not _CONTROL.search(text):
        return text
    return _CONTROL.sub(REPLACEMENT, _ESCAPE.sub("", text))


def one_line(text: object) -> str:
    """Record text inside a line of output: a newline (or a line or paragraph separator) shown
    as ``\\n``, so that no value prints a line of its own (a forged verdict or command)."""
    return re.sub(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]", "\\\\n", str(text))


def _clean_value(value: object) -> object:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean_value(item) for item in value]
    return value


def clean_record(record: Mapping | None) -> dict | None:
    """``record`` with :func:`clean_text` applied to its keys, text values and lists (a mapping
    value, which no column takes but the per-iteration times, is left as it is; None stays
    None)."""
    if record is None:
        return None
    return {clean_text(str(key)): _clean_value(value) for key, value in record.items()}


def shown(value: object) -> str:
    """``value`` for a message: its ``repr`` (quotes, control characters and lone surrogates
    escaped), cut to :data:`SHOWN_CHARS`."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


def json_kind(data: object) -> str:
    """What a parsed JSON value is, in JSON's words (``JSON null``, ``a JSON list``), for a
    message saying that a file holds no record."""
    if data is None:
        return "JSON null"
    if isinstance(data, bool):
        return f"JSON {str(data).lower()}"
    kinds = {dict: "object", list: "list", str: "string", int: "number", float: "number"}
    return f"a JSON {kinds.get(type(data), 'value')}"


def is_missing(value: object) -> bool:
    """None, NaN and pandas' NA: a missing value, valid in every column."""
    if value is None or value is pd.NA:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def _out_of_range(entry: Column, numbers: np.ndarray) -> np.ndarray:
    """Where float ``numbers`` break ``entry``'s range (NaN never does)."""
    with np.errstate(invalid="ignore"):
        bad = np.isinf(numbers)
        low = entry.low
        if low is not None:
            bad |= numbers < low
        if entry.dtype in ("count", "int"):
            bad |= (numbers % 1 != 0) | (np.abs(numbers) >= schema.MAX_INTEGER)
    return bad & ~np.isnan(numbers)


def _number_bad(entry: Column, number: float) -> bool:
    """:func:`_out_of_range` of one number (without numpy: one record's checks stay cheap)."""
    if math.isnan(number):
        return False
    low = entry.low
    if math.isinf(number) or (low is not None and number < low):
        return True
    return entry.dtype != "float" and (number % 1 != 0 or abs(number) >= schema.MAX_INTEGER)


def _items_bad(entry: Column, items: list) -> bool:
    """Whether a list in a column that takes lists holds a bad item (a shape: whole numbers)."""
    scalar = dataclasses.replace(entry, lists=False, words=())
    if entry.dtype == "shape":
        scalar = dataclasses.replace(scalar, dtype="count", minimum=1)
    return any(_items_bad(entry, item) if isinstance(item, list) else
               is_missing(item) or is_bad(scalar, item) for item in items)


def is_bad(entry: Column | None, value: object) -> bool:
    """Whether one value breaks the rule of its column (``entry`` None: a column the schema does
    not describe, which takes any single value but no list or mapping)."""
    if is_missing(value):
        return False
    if entry is None:
        return isinstance(value, (dict, list, tuple, set))
    if isinstance(value, str) and value in entry.words:
        return False
    if isinstance(value, list) and entry.lists:
        return not value or _items_bad(entry, value)
    if entry.dtype in _NUMERIC:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            return True
        try:
            number = float(value)
        except OverflowError:  # an int beyond a float's range
            return True
        return _number_bad(entry, number)
    if entry.dtype == "bool":
        return not isinstance(value, (bool, np.bool_))
    if entry.dtype == "time":
        return not isinstance(value, str) or _time_bad(pd.Series([value])).iloc[0]
    if isinstance(value, str):
        return False
    if entry.dtype == "shape" or entry.name in schema.STRICT_TEXT:
        return True
    return not isinstance(value, (int, float, np.number, np.bool_))  # free text takes numbers


#: What :func:`pandas.api.types.infer_dtype` calls a column of one kind of scalar.
_SCALARS = ("string", "boolean", "integer", "floating", "mixed-integer-float")


def _clean_kind(entry: Column | None, values: pd.Series) -> bool:
    """Whether the kind of the column's values alone shows every one is valid (the fast
    path: pandas infers the kind without a Python call per value)."""
    inferred = pd.api.types.infer_dtype(values, skipna=True)
    if inferred == "empty":
        return True
    if entry is None:
        return inferred in _SCALARS
    if entry.dtype == "bool":
        return inferred == "boolean"
    if entry.dtype in _TEXT:
        free = entry.dtype == "text" and entry.name not in schema.STRICT_TEXT
        return inferred == "string" or (free and inferred in _SCALARS)
    return False


def _time_bad(values: pd.Series) -> pd.Series:
    """Where text ``values`` are not ISO 8601 times (a missing value is not bad)."""
    parsed = pd.to_datetime(values.astype("string"), utc=True, errors="coerce", format="ISO8601")
    return values.notna() & parsed.isna()


def bad_cells(entry: Column | None, values: pd.Series) -> pd.Series:
    """Where one column's ``values`` break its rule (:func:`is_bad`), as a boolean Series."""
    if entry is not None and entry.dtype == "time" \
            and pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):
        return _time_bad(values)
    if entry is not None and entry.dtype in _NUMERIC and pd.api.types.is_numeric_dtype(values) \
            and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
        return pd.Series(_out_of_range(entry, numbers), index=values.index)
    if _clean_kind(entry, values):
        return pd.Series(False, index=values.index)
    return values.map(lambda value: is_bad(entry, value)).astype(bool)


def problems(record: dict) -> list[str]:
    """Why ``record`` cannot be used: an unknown ``status``, or a bad value in an essential
    column (each named with its value and what is valid); empty when it can."""
    found = []
    status = record.get("status")
    if not is_missing(status) and (not isinstance(status, str) or status not in schema.STATUSES):
        found.append(f"status {shown(status)} is not one of {', '.join(schema.STATUSES)}")
    for entry in schema.essential():
        value = record.get(entry.name)
        if entry.name != "status" and is_bad(entry, value):
            found.append(f"{entry.name} {shown(value)} is not {entry.valid}")
    return found


def check_frame(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[Hashable, list[str]],
                                               dict[Hashable, list[str]]]:
    """``frame`` with bad values of non-essential columns set missing and rows with a bad
    essential value dropped; and, by row label, why each row was dropped and which of a kept
    row's values were set missing (``column value is not what-is-valid``)."""
    dropped: dict[Hashable, list[str]] = {}
    cleared: dict[Hashable, list[str]] = {}
    repaired = {}
    for name in frame.columns:
        entry = schema.column(str(name))
        values = frame[name]
        bad = bad_cells(entry, values)
        if not bad.any():
            continue
        valid = entry.valid if entry else "a single value (not a list or mapping)"
        essential = entry is not None and entry.essential
        for label, value in values[bad].items():
            (dropped if essential else cleared).setdefault(label, []).append(
                f"{name} {shown(value)} is not {valid}")
        if not essential:
            repaired[name] = values.where(~bad)
    if repaired:
        frame = frame.copy()
        for name, kept in repaired.items():
            frame[name] = kept
    if dropped:
        frame = frame.drop(index=list(dropped))
        cleared = {label: why for label, why in cleared.items() if label not in dropped}
    return frame, dropped, cleared
