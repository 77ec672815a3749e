"""Each command's typed result as its ``--json`` document (:mod:`benchlib.cli.documents.schema`,
docs/json.md): the same answer its terminal text and JUnit file say, its tables as lists of
objects (NaN and unbounded numbers as null, times as ISO 8601 in UTC), written to ``--json FILE``
or, for ``--json -``, to stdout (:func:`benchlib.cli.documents.aside` sends the text to stderr)."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

import benchlib
import benchlib.cli.documents.schema as documents
from benchlib.cli.documents.rows import Scalar, Strict
from benchlib.errors import InputError, OutputError
from benchlib.records.store import write_output_file

if TYPE_CHECKING:
    from benchlib.compare.regression import Comparison
    from benchlib.diagnosis.analysis import Diagnosis
    from benchlib.diagnosis.rung_speeds import RungSpeed
    from benchlib.execute.campaign import PointStatus
    from benchlib.fleet.health import FleetStates
    from benchlib.history.series import ChangePoints


def when(value: object) -> str:
    """A time as ISO 8601 in UTC (``2026-09-09T02:00:00Z``); a time without a zone is UTC."""
    stamp = pd.Timestamp(value)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.isoformat().replace("+00:00", "Z")


def scalar(value: object) -> Scalar:
    """One table cell as JSON holds it: NaN, NA, NaT and infinities as None, numpy numbers as
    Python's, times by :func:`when`, anything else as its text."""
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, datetime | np.datetime64):
        return when(value)
    return str(value)


def rows(frame: pd.DataFrame, model: type[Strict], settings: Sequence[str] = ()) -> list[Any]:
    """``frame``'s rows as ``model`` (a column it lacks: None); ``settings``, where the model
    has that field, its columns and values as one object."""
    fields = [name for name in model.model_fields if name != "settings"]
    made = []
    for record in frame.to_dict("records") if len(frame) else []:
        values = {name: scalar(record.get(name)) for name in fields}
        if "settings" in model.model_fields:
            values["settings"] = {key: scalar(record.get(key)) for key in settings}
        made.append(model(**values))
    return made


def dicts(found: Iterable[dict], model: type[Strict]) -> list[Any]:
    """Findings (one dict each) as ``model``, their private keys (``_trend``) left out."""
    return rows(pd.DataFrame([{k: v for k, v in d.items() if not k.startswith("_")}
                              for d in found]), model)


def _head(command: str, code: int) -> dict[str, object]:
    """What every document opens with."""
    return {"benchlib_json": documents.SCHEMA_VERSION, "command": command, "exit_status": code,
            "benchlib_version": benchlib.__version__}


def results(frame: pd.DataFrame, source: str, csv: str | None,
            code: int) -> documents.ResultsDocument:
    """``benchlib results``: every record, every column (``frame``: a RunTable)."""
    every = frame.every_column()
    return documents.ResultsDocument(
        **_head("results", code), source=source, runs=len(every), columns=list(every.columns),
        shown=list(frame.tidy().columns), csv=csv,
        records=[{k: scalar(v) for k, v in r.items()} for r in every.to_dict("records")])


def check(checked: pd.DataFrame, results_path: str, references: str | None, junit: str | None,
          code: int) -> documents.CheckDocument:
    """``benchlib check``: one row per run (``checked``: :func:`references.check`'s table)."""
    return documents.CheckDocument(
        **_head("check", code), results=results_path, references=references or "shipped",
        counts={str(k): int(n) for k, n in checked["verdict"].value_counts().items()},
        checks=rows(checked, documents.CheckRow), junit=junit)


def compare(comparison: Comparison, energy: pd.DataFrame, names: tuple[str, str],
            junit: str | None, code: int, added: Sequence[str] = ()
            ) -> documents.CompareDocument:
    """``benchlib compare``: the speed per configuration and the energy efficiency beside it."""
    pairing = list(comparison.pairing)
    return documents.CompareDocument(
        **_head("compare", code), base=names[0], new=names[1], metric=comparison.metric,
        threshold=comparison.threshold, pairing=pairing, warnings=list(comparison.warnings),
        configurations=rows(comparison.table, documents.CompareRow, pairing),
        energy=rows(energy, documents.CompareRow, [c for c in pairing if c in energy]),
        junit=junit, added_campaigns=list(added))


def history(found: ChangePoints, code: int) -> documents.HistoryDocument:
    """``benchlib history``: the change points, the drifts and what was counted."""
    from benchlib.history.series import COLUMNS

    counted = ("series", "judged", "runs", "campaigns", "points", "disturbed", "failed", "small",
               "uncertain")
    settings = [c for c in found.table.columns if c not in COLUMNS]
    return documents.HistoryDocument(
        **_head("history", code), metric=found.metric, unit=found.unit,
        threshold=found.threshold, min_size=found.min_size, ordered_by=found.ordered_by,
        **{name: int(getattr(found, name)) for name in counted},
        change_points=rows(found.table, documents.ChangePointRow, settings),
        drifts=dicts(found.drifts, documents.DriftRow),
        outliers=dicts(found.outliers, documents.Finding),
        early=dicts(found.early, documents.Finding), future=dicts(found.future, documents.Finding))


def fleet(states: FleetStates, summary: pd.DataFrame, drain: list[str], junit: str | None,
          code: int) -> documents.FleetDocument:
    """``benchlib fleet``: each node, each node and configuration, the baselines."""
    return documents.FleetDocument(
        **_head("fleet", code), now=when(states.now), window_days=states.window_days,
        threshold=states.threshold, metric=states.metric,
        nodes=rows(summary, documents.NodeRow), states=rows(states.table, documents.FleetRow),
        baselines=rows(states.baselines, documents.BaselineRow), unplaced=states.unplaced,
        future=states.future, drain=drain, junit=junit)


def calibrate(folders: Sequence[Path], catalog: str, indexed: str, failed: bool,
              noise: list[dict[str, object]], code: int) -> documents.CalibrateDocument:
    """``benchlib calibrate``: the noise between campaigns per configuration and node."""
    found = dicts(noise, documents.NoiseRow)
    return documents.CalibrateDocument(
        **_head("calibrate", code), campaigns=[str(f) for f in folders], catalog=catalog,
        indexed=indexed, failed_points=failed, noise=found,
        measured=sum(row.sd is not None for row in found))


def _rung(speed: RungSpeed | None) -> documents.RungRow | None:
    """A rung's runs, or None."""
    if speed is None:
        return None
    return documents.RungRow(name=speed.rung.name, label=speed.rung.label,
                             speed=float(speed.speed), runs=len(speed.speeds),
                             flags=sorted({name.strip() for flags in speed.flags
                                           for name in str(flags).split(",") if name.strip()}))


def diagnose(found: Diagnosis, campaign_dir: Path, page: Path | None,
             code: int) -> documents.DiagnoseDocument:
    """``benchlib diagnose``: the answer, the waterfall and the worker counts."""
    from benchlib.diagnosis.analysis import recommendation
    from benchlib.diagnosis.text import UNIT

    plan = found.plan
    return documents.DiagnoseDocument(
        **_head("diagnose", code), campaign=plan.campaign, campaign_dir=str(campaign_dir),
        model=plan.model, benchmark=plan.benchmark, precision=plan.precision, unit=UNIT,
        answer=recommendation(found), verdict=found.verdict, reason=found.reason,
        best=_rung(found.best), user=_rung(found.user),
        steps=rows(found.steps, documents.StepRow), workers=rows(found.workers,
                                                                 documents.WorkerRow),
        notes=[str(n) for n in found.notes], runs=found.runs,
        page=None if page is None else str(page))


def status(campaign_dir: Path, table: list[PointStatus], code: int) -> documents.StatusDocument:
    """``benchlib status``: each point and where it stands."""
    from benchlib.execute.campaign import LEDGER_STATES

    return documents.StatusDocument(
        **_head("status", code), campaign_dir=str(campaign_dir),
        counts={str(s): sum(p.status == s for p in table) for s in LEDGER_STATES},
        points=[documents.PointRow(name=p.name, notebook=p.notebook, status=str(p.status),
                                   job_id=p.job_id, detail=p.detail, blocked=p.blocked,
                                   flags=list(p.flags)) for p in table])


def write(args: argparse.Namespace, document: documents.Document) -> None:
    """Write ``document`` where ``--json`` says: a file (atomically, as ``--junit``), or stdout
    for ``-`` (the one :func:`benchlib.cli.documents.aside` kept aside)."""
    text = document.model_dump_json(indent=1) + "\n"
    if args.json == "-":
        out = getattr(args, "json_stdout", None) or sys.stdout
        out.write(text.encode(getattr(out, "encoding", None) or "utf-8", errors="replace")
                  .decode(getattr(out, "encoding", None) or "utf-8", errors="replace"))
        out.flush()
        return
    try:
        write_output_file(Path(args.json), text.encode("utf-8", errors="replace"))
    except OutputError as error:
        raise InputError(f"--json {args.json}: cannot write the document: {error}") from None


def write_error(args: argparse.Namespace, message: str, code: int) -> None:
    """The error document of a command stopped by an error, where ``--json`` asked for a
    document; nothing when even that cannot be written (the message is on stderr)."""
    with contextlib.suppress(OSError, InputError):
        write(args, documents.ErrorDocument(**_head(args.command, code), error=message))
