"""One record per run of any kind: where it ran, its kind's columns, FLOPs, the within-run
interval, ``env_*`` and flags (the one ``make_record`` every kind's records go through)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from benchlib.kinds import data_path, kind_of
from benchlib.records.build import finite, per_iteration_lists
from benchlib.records.flags import join, record_flags
from benchlib.records.store import ITERATIONS_KEY
from benchlib.vocabulary import RecordStatus

if TYPE_CHECKING:
    from benchlib.inputs.config import CommonConfig


def make_record(config: CommonConfig, result: object, env: Mapping[str, object] | None = None,
                **context: object) -> dict:
    """The flat record of a finished run of any kind: where it ran, its kind's columns
    (:meth:`benchlib.kinds.Kind.record_fields`, given ``context``), FLOPs, the within-run
    interval, ``env_*`` (``env``, else the result's own capture) and flags."""
    from benchlib.measure.environment import run_identity  # imports torch: loading records does not
    from benchlib.records.flops import flops_columns

    kind = kind_of(config)
    record: dict[str, object] = {**run_identity(config, result),
                                 **kind.record_fields(config, result, **context),
                                 "data_path": recorded_data_path(config),
                                 "status": RecordStatus.OK.value, "error": ""}
    record.update(flops_columns(lambda: kind.flops_per_sample(config), record.get("throughput")))
    record.update(kind.interval(result))
    record.update(result.env if env is None else env)  # type: ignore[attr-defined]
    record["flags"] = join(record_flags(record))
    record = {k: finite(v) for k, v in record.items()}
    per_iteration = getattr(result, "per_iteration", None)
    if per_iteration is not None:
        record[ITERATIONS_KEY] = per_iteration_lists(per_iteration)
    return record


def recorded_data_path(config: object) -> str:
    """The record's ``data_path``: the data ``config`` reads
    (:func:`benchlib.kinds.data_path`) resolved where the run ran, so two
    spellings of one folder are one configuration and two folders are two, then redacted as
    ``env_*`` values are (:func:`benchlib.measure.redact.redact`); '' for synthetic data."""
    from benchlib.measure.redact import redact

    path = data_path(config)
    return redact(os.path.realpath(path)) if path else ""
