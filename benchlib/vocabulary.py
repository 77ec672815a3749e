"""One vocabulary per concept: the words benchlib writes into records, ledgers and tables.

Each is an :class:`enum.StrEnum`, so a member *is* its plain string (``RecordStatus.OK ==
"ok"``, JSON and pandas hold ``"ok"``) while code names it once. Pydantic fields take the
:func:`literal` of a vocabulary (plain strings, the error lists the allowed values).

- :class:`RecordStatus`: a result record's ``status``;
- :class:`PointState`: where a point of a campaign stands (the sweep's outcome, the ledger and
  ``benchlib status``), and :class:`JobPhase`, where the scheduler has its job;
- :class:`Precision` (a run's ``precision``) and :class:`MatmulPrecision` (the node probe's
  matmul precisions), with :data:`MATMUL_PRECISION`, the one mapping between them;
- :class:`CheckVerdict` (``benchlib check``, :mod:`benchlib.analysis.references`) and
  :class:`CompareVerdict` (``benchlib compare``, :mod:`benchlib.compare.regression`), and the
  :class:`JUnitOutcome` each becomes in a JUnit file;
- :class:`NodeState`: a node's health in a fleet (``benchlib fleet``,
  :mod:`benchlib.fleet.health`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

#: The smallest change in speed that counts (5 %): compare's regressions, history's change
#: points, fleet's slow nodes, the report's comparisons. One figure, here.
DEFAULT_THRESHOLD = 0.05
#: The longest validity window fleet takes, in days (ten years; ``fleet --window``).
MAX_WINDOW_DAYS = 3653


class RecordStatus(StrEnum):
    """A result record's ``status``."""

    OK = "ok"
    FAILED = "failed"


class PointState(StrEnum):
    """Where a point stands: ``done`` / ``failed`` once its sidecar exists, else ``running`` or
    ``pending``; ``skipped``: a sweep left it alone (done before, or run by another process)."""

    DONE = "done"
    FAILED = "failed"
    RUNNING = "running"
    PENDING = "pending"
    SKIPPED = "skipped"

    @classmethod
    def of_record(cls, status: object) -> PointState:
        """The state of a point whose sidecar record has ``status`` (``ok`` -> done, anything
        else -> failed)."""
        return cls.DONE if status == RecordStatus.OK else cls.FAILED


class JobPhase(StrEnum):
    """Where the scheduler has a job (Slurm's many states in four words); a queued or running
    job's point is in the :class:`PointState` of the same name."""

    PENDING = "pending"
    RUNNING = "running"
    ENDED = "ended"
    UNKNOWN = "unknown"


class Precision(StrEnum):
    """A run's ``precision``: fp32, TF32 matmuls, or autocast to fp16 / bf16."""

    FP32 = "fp32"
    TF32 = "tf32"
    AMP_FP16 = "amp_fp16"
    AMP_BF16 = "amp_bf16"


class MatmulPrecision(StrEnum):
    """The node probe's matmul precisions (its ``matmul_tflops_<p>`` columns, the datasheet's
    ``<p>_tflops``)."""

    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"


#: The probe precision whose matmul peak bounds a run of each precision (its MFU's denominator).
MATMUL_PRECISION: dict[Precision, MatmulPrecision] = {
    Precision.FP32: MatmulPrecision.FP32, Precision.TF32: MatmulPrecision.TF32,
    Precision.AMP_FP16: MatmulPrecision.FP16, Precision.AMP_BF16: MatmulPrecision.BF16,
}


def matmul_precision(precision: object) -> MatmulPrecision | None:
    """The probe precision of a run's ``precision`` (None when it is not one of
    :class:`Precision`)."""
    try:
        return MATMUL_PRECISION[Precision(str(precision))]
    except ValueError:
        return None


class CheckVerdict(StrEnum):
    """A row of ``benchlib check``: a run against one published reference."""

    PASS = "pass"
    FAIL = "fail"
    UNRELIABLE = "unreliable"
    NO_MEASUREMENT = "no measurement"
    NO_REFERENCE = "no reference"
    RUN_FAILED = "run failed"


class CompareVerdict(StrEnum):
    """A configuration of ``benchlib compare`` / a campaign of the history: new against base."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no change"
    #: the interval holds both no change and a change of the threshold's size: more campaigns
    UNDECIDED = "undecided"
    UNKNOWN = "unknown"
    UNRELIABLE = "unreliable"
    ONLY_IN_NEW = "only in new"
    ONLY_IN_BASE = "only in base"


class NodeState(StrEnum):
    """A node's health for one configuration, and over all of them (its worst), most severe
    first: see :mod:`benchlib.fleet.health` for what each means."""

    FAILED = "failed"
    SLOW = "slow"
    STALE = "stale"
    MISSING = "missing"
    UNKNOWN = "unknown"
    OK = "ok"


class JUnitOutcome(StrEnum):
    """A JUnit test case's outcome (``benchlib check`` / ``compare --junit``)."""

    PASSED = "passed"
    FAILURE = "failure"
    ERROR = "error"
    SKIPPED = "skipped"


def literal(vocabulary: type[StrEnum]) -> Any:
    """``Literal["a", "b", ...]`` of a vocabulary's plain values, for pydantic fields (strict
    validation of YAML strings; errors list the values)."""
    return Literal[tuple(member.value for member in vocabulary)]  # type: ignore[valid-type]


def values(vocabulary: type[StrEnum]) -> tuple[str, ...]:
    """The vocabulary's values as plain strings, in order."""
    return tuple(member.value for member in vocabulary)
