"""Loading result records back: a campaign folder (or one notebook) into one table.

A record is a flat mapping (one row per benchmark run) with a ``schema_version``. The executed
notebook holds it as a ``application/vnd.benchlib.result+json`` output; the sweep also writes it
next to the notebook as ``<point>.json`` (the sidecar), which :func:`load` prefers while it
matches its notebook. Building a record is :mod:`benchlib.records.build`, its files
:mod:`benchlib.records.store`.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from benchlib import SCHEMA_HISTORY
from benchlib.errors import RecordError
from benchlib.inputs.layout import LEDGER, REPORT
from benchlib.measure.timing import PHASES
from benchlib.records import schema, values
from benchlib.records.build import failed_record
from benchlib.records.flags import with_flags
from benchlib.records.run_table import RunTable, record_order
from benchlib.records.store import (
    ITERATIONS_KEY,
    encodable,
    find_record,
    path_text,
    read_json_bounded,
    read_sidecar,
    sidecar_path,
    write_json_atomic,
    write_sidecar,
)
from benchlib.vocabulary import RecordStatus

KNOWN_SCHEMA_VERSIONS = set(SCHEMA_HISTORY)
log = logging.getLogger(__name__)

#: Columns every record has, in the order tables show them (from :mod:`benchlib.records.schema`).
CORE_COLUMNS = schema.core_columns(PHASES)
#: Count columns kept as (nullable) integers even when a failed record leaves them empty.
INTEGER_COLUMNS = schema.names(dtype="count")


def _cell_error(nb: Mapping) -> str:
    for index, cell in enumerate(nb.get("cells", [])):
        for output in cell.get("outputs", []) or []:
            if output.get("output_type") == "error":
                return f"{output.get('ename')}: {output.get('evalue')} (cell {index})"
    return "notebook execution failed"


def record_from_notebook(path: Path) -> dict | None:
    """The record inside an executed benchmark notebook.

    Returns None for notebooks that are not benchlib benchmark notebooks (summaries); a failed
    execution without a record gives a ``failed`` record built from papermill's parameters.
    Raises RecordError for unreadable or malformed files and benchmark notebooks that never
    finished.
    """
    nb = read_json_bounded(path, "notebook")
    try:
        record = find_record(nb)
        metadata = nb.get("metadata", {})
        kind = metadata.get("benchlib", {}).get("kind")
        papermill = metadata.get("papermill", {})
        failed = papermill.get("exception") and kind == "benchmark"
        parameters = dict(papermill.get("parameters") or {}) if failed else {}
        error_text = _cell_error(nb) if failed else ""
    except (AttributeError, TypeError, ValueError) as error:
        raise RecordError(f"{path}: not a notebook (malformed JSON structure: {error})") from error
    if record is not None:
        if not isinstance(record, dict):
            raise RecordError(f"{path}: its result record is {values.json_kind(record)}, "
                              "not a mapping")
        bad = values.problems(record)
        if bad:
            raise RecordError(f"{path}: not a usable record ({'; '.join(bad)})")
        return dict(record)
    if kind != "benchmark":
        return None
    if failed:
        span = papermill_span(papermill, parameters, error_text, path.stat().st_mtime)
        return failed_record(parameters, error_text, **span)
    raise RecordError(f"{path}: benchmark notebook without a result record (unfinished run?)")


def papermill_span(papermill: Mapping, parameters: Mapping, error: str,
                   written: float) -> dict[str, object]:
    """When a failed notebook without a record ran (papermill's ``start_time`` / ``end_time``
    as epoch seconds; the end unsaid: ``written``, the file's modification time) and its run
    id, made from its start, parameters and error, so every load builds the same record."""
    times = {"ended": written}
    for key, name in (("started", "start_time"), ("ended", "end_time")):
        try:
            moment = datetime.fromisoformat(str(papermill.get(name)))
        except ValueError:
            continue
        aware = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
        times[key] = aware.timestamp()
    said = json.dumps([papermill.get("start_time"), parameters, error], sort_keys=True,
                      default=str)
    return {**times, "run_id": uuid.uuid5(uuid.NAMESPACE_OID, said).hex}


def is_complete_notebook(path: Path) -> bool:
    """Whether ``path`` holds a whole notebook (valid JSON with cells), not a truncated one."""
    try:
        return isinstance(json.loads(path.read_bytes()).get("cells"), list)
    except (OSError, ValueError, AttributeError):
        return False


def keep_ok_result(target: Path, failure: Mapping[str, object]) -> Path | None:
    """When ``target`` (a point's notebook) already holds an ``ok`` record, keep it: restore
    its sidecar if a re-submission set it aside, write ``failure`` under
    ``.benchlib/rejected/`` and return that path. None when there is no ok result to keep."""
    try:
        current = read_record(target) if target.exists() or sidecar_path(target).exists() else None
    except RecordError:
        return None
    if not current or current.get("status") != RecordStatus.OK:
        return None
    if read_sidecar(target) is None:
        write_sidecar(target, current)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-%f")
    kept = target.parent / LEDGER / "rejected" / f"{target.stem}-{stamp}.json"
    write_json_atomic(kept, dict(failure))
    log.warning("%s: kept the earlier ok result; the new failure is in %s", target.name, kept)
    return kept


def read_record(notebook: Path) -> dict | None:
    """The record of one notebook: its sidecar while it matches the notebook, else the
    notebook's own record."""
    record = read_sidecar(notebook)
    if record is not None:
        return values.clean_record(record)
    sidecar = sidecar_path(notebook)
    if not notebook.is_file() and sidecar.is_file():
        data = read_json_bounded(sidecar)
        why = values.problems(data) if isinstance(data, dict) else [
            f"{values.json_kind(data)}, not a record"]
        raise RecordError(f"{sidecar}: no usable record and no notebook"
                          + (f" ({'; '.join(why)})" if why else ""))
    return values.clean_record(record_from_notebook(notebook))


def iter_notebooks(path: Path) -> Iterator[Path]:
    """Executed notebooks under ``path`` (regular files only), skipping hidden folders (work in
    progress) and reports."""
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != REPORT)
        for name in sorted(files):
            if name.endswith(".ipynb") and os.path.isfile(os.path.join(root, name)):
                yield Path(root) / name


def iter_lone_sidecars(path: Path) -> Iterator[Path]:
    """Sidecars under ``path`` whose notebook does not exist (a point that failed before its
    notebook was written), as the notebook paths they stand for."""
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != REPORT)
        names = set(files)
        for name in sorted(files):
            stem = name[:-5]
            if name.endswith(".json") and f"{stem}.ipynb" not in names:
                yield Path(root) / f"{stem}.ipynb"


@dataclass(frozen=True)
class Skipped:
    """A file under a results folder that was left out, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return self.reason if self.reason.startswith(str(self.path)) else f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class Scan:
    """What :func:`scan` found: the records as a table, the files it left out, and the records
    it kept with bad values set missing (``notes``: file, column, value)."""

    frame: pd.DataFrame
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Skipped] = field(default_factory=list)


def _usable_record(notebook: Path) -> dict | None:
    if not notebook.exists():  # a lone sidecar: a record only if it reads as one
        try:
            data = read_json_bounded(sidecar_path(notebook))
        except RecordError:
            return None
        if isinstance(data, dict) and "schema_version" not in data:
            return None  # foreign JSON (a record is a JSON object with a schema_version)
    record = read_record(notebook)
    if record is None:
        return None
    version = record.get("schema_version")
    if version not in KNOWN_SCHEMA_VERSIONS:
        raise RecordError(f"{notebook}: unknown schema_version {version!r} "
                          f"(known: {sorted(KNOWN_SCHEMA_VERSIONS)})")
    return record


def _linked(notebook: Path) -> list[Skipped]:
    """The point's files (its notebook, its sidecar) that are symbolic links, each named (a
    link may lead anywhere on the machine: only the folder's own files are read); a regular
    notebook whose sidecar is a link is named too, as left out with it."""
    why = "a symbolic link; only the folder's own files are read"
    sidecar = sidecar_path(notebook)
    links = [Skipped(p, f"{p}: {why}") for p in (notebook, sidecar) if p.is_symlink()]
    if links and notebook.exists() and not notebook.is_symlink():
        links.insert(0, Skipped(notebook, f"{notebook}: its sidecar {sidecar.name} is {why}"))
    return links


def _not_found(root: Path) -> str:
    """Why ``root`` cannot be read, and where it is when it lies beside a parent folder (a
    notebook in ``notebooks/`` typing ``outputs/demo``)."""
    here = Path.cwd()
    said = f"results path {str(root)!r} does not exist"
    if root.is_absolute():
        return said
    for depth, parent in enumerate(here.parents, start=1):
        if (parent / root).exists():
            found = Path(*([".."] * depth), root)
            return (f"{said} here ({here}); it is at {str(found)!r}: give that, or an "
                    "absolute path")
    return f"{said} (relative to {here})"


def scan(path: str | Path, strict: bool = False) -> Scan:
    """Every record under ``path`` (a folder or one notebook), and the files left out.

    Unreadable or malformed notebooks, unfinished runs, unknown schema versions, records
    with a bad value in an essential column and (in a folder) notebooks or sidecars that are
    symbolic links are left out, each logged as a warning naming the
    file (raised when ``strict``); a bad value elsewhere is set missing, logged and noted
    (:mod:`benchlib.records.values`, ``docs/record.md``); the rest loads.
    """
    if not str(path).strip():
        raise FileNotFoundError("results path is empty: give a campaign folder "
                                "(outputs/<campaign>), outputs/ or one notebook")
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(_not_found(root))
    walked = not root.is_file()  # found in a folder, not named by the user
    rows, sources, skipped = _Rows(), [], []
    for notebook in candidates(root) if walked else [root]:
        origin, record, left_out = read_point(notebook, walked, strict)
        skipped.extend(left_out)
        if record is not None:
            rows.append(record)
            sources.append(origin)
    frame, dropped, notes = _checked(rows, sources, strict)
    return Scan(frame, [*skipped, *dropped], notes)


def candidates(root: Path) -> Iterator[Path]:
    """The points under the folder ``root`` a scan reads: its notebooks, then its lone
    sidecars (as the notebook paths they stand for), one at a time."""
    yield from iter_notebooks(root)
    yield from iter_lone_sidecars(root)


def read_point(notebook: Path, walked: bool = True, strict: bool = False
               ) -> tuple[Path, dict | None, list[Skipped]]:
    """One point of a scan: the file read (its notebook, or its lone sidecar), its record as
    :func:`scan` keeps it (``source`` and ``point_id`` set; None: no record, or left out) and
    what was left out (each logged as a warning; raised when ``strict``). ``walked``: found in
    a folder (a symbolic link there is left out)."""
    origin = notebook if notebook.exists() else sidecar_path(notebook)  # the file read
    if walked and (linked := _linked(notebook)):
        if strict:
            raise RecordError(linked[0].reason)
        for found in linked:
            log.warning("%s", found.reason)
        return origin, None, linked
    try:
        record = _usable_record(notebook)
    except RecordError as error:
        if strict:
            raise
        log.warning("%s", error)
        return origin, None, [Skipped(origin, str(error))]
    if record is None:
        return origin, None, []
    record.pop(ITERATIONS_KEY, None)
    record.setdefault("point_id", encodable(notebook.stem))
    record["source"] = path_text(notebook)
    return origin, record, []


class _Rows:
    """Records kept column by column, as ``pd.DataFrame(records)`` would hold them (a missing
    value NaN): a campaign of thousands of records loads without holding a dict per record."""

    def __init__(self) -> None:
        self.columns: dict[str, list] = {}
        self.count = 0

    def append(self, record: Mapping) -> None:
        for key, value in record.items():
            column = self.columns.get(key)
            if column is None:
                column = self.columns[key] = [np.nan] * self.count
            column.append(value)
        self.count += 1
        for column in self.columns.values():
            if len(column) < self.count:
                column.append(np.nan)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.columns, index=pd.RangeIndex(self.count))


def _checked(rows: _Rows, sources: list[Path], strict: bool
             ) -> tuple[pd.DataFrame, list[Skipped], list[Skipped]]:
    """The table of ``rows`` (read from ``sources``) checked against the schema
    (:func:`values.check_frame`): the rows left out and the values set missing, each logged."""
    frame, dropped, cleared = values.check_frame(rows.frame())
    left_out = [Skipped(sources[label], f"{sources[label]}: {'; '.join(why)}; record left out")
                for label, why in dropped.items()]
    notes = [Skipped(sources[label], f"{sources[label]}: {'; '.join(why)}; set missing, the "
                     "rest of the record kept") for label, why in cleared.items()]
    if strict and left_out:
        raise RecordError(left_out[0].reason)
    for found in (*left_out, *notes):
        log.warning("%s", found.reason)
    return _frame(frame.reset_index(drop=True)), left_out, notes


def left_out(records: list[dict], origins: list[Path]) -> dict[int, Skipped]:
    """Which of ``records`` (read from ``origins``) a scan leaves out for a bad value in an
    essential column (by position), and why; nothing is logged."""
    rows = _Rows()
    for record in records:
        rows.append(record)
    _, dropped, _ = values.check_frame(rows.frame())
    return {int(label): Skipped(origins[label], f"{origins[label]}: {'; '.join(why)}; record "
                                "left out") for label, why in dropped.items()}


def frame_of(records: Iterable[Mapping]) -> pd.DataFrame:
    """The table :func:`load` makes of ``records`` (as :func:`read_point` gives them): values
    checked (bad essential values leave their record out, each logged), column types and order
    as :func:`load`'s. A table of records kept elsewhere (the catalog) reads as a folder's."""
    rows, origins = _Rows(), []
    for record in records:
        rows.append(record)
        origins.append(Path(str(record.get("source", ""))))
    return RunTable.of(_checked(rows, origins, strict=False)[0])


def load(path: str | Path, strict: bool = False) -> pd.DataFrame:
    """Every record under ``path`` as one row each (see :func:`scan` for what is left out).
    A ``source`` column names each row's notebook. Every record column is in the frame; shown in
    a notebook it leads with the settings that vary and the results
    (:class:`~benchlib.records.run_table.RunTable`: ``df.tidy()``, ``df.every_column()``)."""
    return RunTable.of(scan(path, strict).frame)


def _frame(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        return pd.DataFrame(columns=[*CORE_COLUMNS, "source"])
    frame = with_flags(frame)  # records written before flags existed get theirs too
    for column in schema.added_later():  # records of earlier schema versions: missing
        if column not in frame:
            frame[column] = pd.Series(np.nan, index=frame.index, dtype=object)
    for column in INTEGER_COLUMNS:
        if column in frame:
            numbers = pd.to_numeric(frame[column], errors="coerce")
            if (numbers.dropna() % 1 == 0).all():
                frame[column] = numbers.astype("Int64")
    return frame[record_order(frame)]
