"""One record per run of any kind: where it ran, its kind's columns, FLOPs, the within-run
interval, ``env_*`` and flags (the one ``make_record`` every kind's records go through)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from benchlib.kinds import kind_of
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
