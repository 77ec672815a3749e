"""The rows of the ``--json`` documents' tables (:mod:`benchlib.cli.documents.schema`): one pydantic
model per table, each field required (``null`` where it is not known) and none beyond them."""

from __future__ import annotations

from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field

#: One cell of a table: text, a number, true / false, or null (not known).
Scalar = Union[str, int, float, bool, None]  # noqa: UP007  (pydantic reads it at runtime)
Number = Union[float, None]  # noqa: UP007
Text = Union[str, None]  # noqa: UP007
Count = Union[int, None]  # noqa: UP007


def said(text: str) -> Any:
    """A required field (null where it is not known) described by ``text``."""
    return Field(description=text)


class Strict(BaseModel):
    """No field beyond those declared: a field added to a table is added here first."""

    model_config = ConfigDict(extra="forbid")


class CheckRow(Strict):
    """One run checked against the references."""

    run: str = said("the run (its notebook's name)")
    host: Text = said("the node it ran on")
    configuration: Text = said("what was run, in words")
    verdict: str = said("pass, fail, run failed, unreliable, no measurement or no reference")
    metric: Text = said("the column checked")
    measured: Number = said("the run's value")
    expected: Number = said("the reference's value")
    low: Number = said("the lowest value that passes (null: unbounded)")
    high: Number = said("the highest value that passes (null: unbounded)")
    unit: Text = said("the unit of measured and expected")
    ratio: Number = said("measured / expected")
    reference: Text = said("the reference's name")
    reference_index: Count = said("the reference's number in its file (#1 is the first)")
    reference_source: Text = said("where the reference's figure comes from")
    message: Text = said("the verdict in words")
    note: Text = said("the reference's note")
    flags: Text = said("the run's flags (contended, throttled, ...), comma-separated")


class CompareRow(Strict):
    """One configuration, NEW against BASE."""

    configuration: str = said("the pairing columns that vary, in words")
    settings: dict[str, Scalar] = said("the pairing columns and their values")
    base: Number = said("BASE's geometric mean (the mean where values may be negative)")
    new: Number = said("NEW's, as base")
    ratio: Number = said("new / base (base / new where lower is better): above 1 is better")
    low: Number = said("the 95 % interval's low end (null: none)")
    high: Number = said("its high end")
    verdict: str = said("regression, improvement, no change, undecided, unknown, unreliable, "
                        "only in base or only in new")
    reason: Text = said("why unknown or unreliable")
    interval: Text = said("how the interval was made, or why there is none")
    decides: Text = said("what would decide an undecided verdict")
    effect: Text = said("the change in words")
    pairs: Count = said("pairs of runs")
    base_runs: Count = said("BASE's runs")
    new_runs: Count = said("NEW's runs")
    base_campaigns: Count = said("BASE's campaigns")
    new_campaigns: Count = said("NEW's campaigns")
    base_flags: Text = said("BASE's runs' flags")
    new_flags: Text = said("NEW's runs' flags")
    flags: Text = said("both sides' flags")


class ChangePointRow(Strict):
    """One change point of a configuration's campaigns on one node."""

    configuration: str = said("the configuration, in words")
    settings: dict[str, Scalar] = said("its columns and their values")
    node: Text = said("the node")
    time: Text = said("the first campaign after the change")
    before: Number = said("geometric mean of the campaigns before")
    after: Number = said("and after")
    ratio: Number = said("after / before")
    low: Number = said("the 95 % interval's low end")
    high: Number = said("its high end")
    verdict: str = said("regression or improvement")
    pvalue: Number = said("the change point's p-value")
    campaigns_before: Count = said("campaigns before")
    campaigns_after: Count = said("campaigns after")
    runs_before: Count = said("runs before")
    runs_after: Count = said("runs after")
    changed: Text = said("what changed in the environment then")
    interval: Text = said("how the interval was made")


class Finding(Strict):
    """An outlier campaign, the newest campaigns too early to tell, or runs dated in the future."""

    configuration: Text = said("the configuration (null for runs dated in the future)")
    node: Text = said("the node")
    time: Text = said("when")
    campaign: Text = said("the outlier's campaign (else null)")
    campaigns: Count = said("campaigns too early to tell (else null)")
    runs: Count = said("runs dated in the future (else null)")
    ratio: Number = said("against the campaigns around it, or before it (else null)")


class DriftRow(Strict):
    """A slow drift of one history."""

    configuration: str = said("the configuration")
    node: Text = said("the node")
    time: Text = said("where the drift starts")
    per_week: Number = said("the change per week (0.01: 1 %)")
    low: Number = said("its 95 % interval's low end")
    high: Number = said("its high end")
    so_far: Number = said("the change so far")
    so_far_low: Number = said("its interval's low end")
    so_far_high: Number = said("its high end")
    campaigns: Count = said("campaigns since it started")
    pvalue: Number = said("the drift's p-value")
    verdict: str = said("regression (the change so far beyond the threshold) or drift")


class FleetRow(Strict):
    """One node and configuration."""

    configuration: str = said("the configuration")
    gpu: Text = said("the GPU model")
    node: str = said("the node")
    state: str = said("ok, slow, failed, stale, missing or unknown")
    reason: Text = said("why")
    latest: Text = said("its latest run's start")
    runs: Count = said("recent undisturbed runs judged")
    value: Number = said("their median")
    baseline: Number = said("the configuration's baseline")
    ratio: Number = said("speed against the other healthy nodes")
    low: Number = said("the 95 % interval's low end")
    high: Number = said("its high end")
    robust_z: Number = said("robust z-score within the fleet")
    disturbed: Text = said("flags of recent runs left out")
    error: Text = said("the latest failed run's error")


class BaselineRow(Strict):
    """One configuration's baseline."""

    configuration: str = said("the configuration")
    gpu: Text = said("the GPU model")
    baseline: Number = said("the median of the healthy nodes' recent runs (null: too few)")
    healthy_nodes: Count = said("healthy nodes")
    nodes: Count = said("nodes")
    fleet_moved: Text = said("the whole fleet's own changes, in words")


class NodeRow(Strict):
    """One node: its most severe state."""

    node: str = said("the node")
    gpu: Text = said("the GPU model")
    state: str = said("its most severe state over its configurations (the exit status)")
    configurations: Text = said("its configurations per state, in words")
    reason: Text = said("why, for a node that is not ok")


class NoiseRow(Strict):
    """One configuration's noise between campaigns on one node."""

    configuration: str = said("the configuration")
    node: str = said("the node")
    sd: Number = said("the standard deviation of a campaign's mean speed (0.01: 1 %; null: "
                      "too few campaigns with an undisturbed speed)")
    campaigns: Count = said("campaigns it was measured over")
    half_width: Number = said("half the 95 % interval of one campaign against another")
    runs: int = said("runs")
    disturbed: int = said("contended or throttled runs, left out")


class RungRow(Strict):
    """A rung's runs."""

    name: str = said("the rung")
    label: str = said("its setting, in words")
    speed: float = said("the geometric mean of its runs (images/s)")
    runs: int = said("its runs")
    flags: list[str] = said("the flags its runs raised (contended, throttled, ...), each once")


class StepRow(Strict):
    """One step of the waterfall, from the best speed down to the user's setting."""

    step: str = said("what the step changes (precision, host copy, decode, filesystem, ...)")
    upper: str = said("the rung above")
    lower: str = said("the rung below")
    label: str = said("the rung below, in words")
    upper_speed: Number = said("the speed above")
    lower_speed: Number = said("and below")
    loss: Number = said("upper_speed - lower_speed")
    loss_low: Number = said("its 95 % interval's low end")
    loss_high: Number = said("its high end")
    share: Number = said("the loss in the speed before it (0.05: 5 %)")
    share_low: Number = said("its interval's low end")
    share_high: Number = said("its high end")
    of_best: Number = said("the loss in the best speed")
    ratio: Number = said("upper / lower")
    low: Number = said("its interval's low end")
    high: Number = said("its high end")
    known: bool = said("both rungs have enough runs for an interval")
    verdict: str = said("loss, small loss, cannot tell, gain, no significant change, unknown "
                        "or unreliable")
    unreliable: Text = said("why unreliable")
    doubt: Text = said("why a loss is not named")
    runs_upper: Count = said("runs above")
    runs_lower: Count = said("runs below")


class WorkerRow(Strict):
    """The user's last rung at one worker count."""

    workers: int = said("loader workers")
    speed: Number = said("the geometric mean of its runs")
    runs: Count = said("runs")
    ratio: Number = said("against the user's count")
    low: Number = said("the 95 % interval's low end")
    high: Number = said("its high end")
    verdict: Text = said("yours, faster, slower, ...")


class PointRow(Strict):
    """One point of the campaign."""

    name: str = said("the point")
    notebook: str = said("its notebook")
    status: str = said("done, failed, running or pending")
    job_id: Text = said("its Slurm job, else empty")
    detail: Text = said("its figure, or why it failed or waits")
    blocked: Text = said("queued, but Slurm will never start it: why")
    flags: list[str] = said("a finished run's flags")
