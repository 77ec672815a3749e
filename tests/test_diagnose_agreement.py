"""A diagnosis is never confidently wrong (issue 52): a step is named a loss only where it
clears the threshold and holds in both halves of the repeats, in the order they ran; a loss
that a disturbance made in the earlier runs only ("came and went") is "cannot tell", with
the rungs to re-run, never "the biggest loss"; a known loss under the threshold is a small
loss, not a cause."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchlib.diagnosis import agreement, analysis
from benchlib.diagnosis import plan as diagnose_plan
from benchlib.records.results import load
from tests.fakes import write_record_notebook

from .test_diagnose import SLOW_DATA, _plan


def _campaign(root: Path, plan: diagnose_plan.Plan, speed_of, repeats: int = 4) -> Path:
    """Fake records of every point but the probe, started in rounds (repeat 0 of every rung,
    then repeat 1, ...), at ``speed_of(rung, repeat)`` images/s times 1 % noise."""
    rng = np.random.default_rng(1)
    rungs = {rung.name: rung for rung in plan.rungs}
    for name, point in plan.points()[1:]:
        rung = rungs[name]
        speed = speed_of(rung.name, point.repeat) * (1 + 0.01 * rng.standard_normal())
        iteration = plan.batch_size / speed
        write_record_notebook(root / f"{point.name}.ipynb", {
            "schema_version": 2, "campaign": plan.campaign, "benchmark": plan.benchmark,
            "model": plan.model, "num_devices": 1, "batch_size": plan.batch_size,
            "image_size": plan.image_size, "unit": "images/s", "status": "ok", "error": "",
            "throughput": speed, "time_iteration_s": iteration, "time_data_s": 0.01 * iteration,
            "synthetic_kind": "", "data_source": "", "flags": "", "point_id": point.point_id,
            "started_at": f"2026-11-28T{point.repeat:02d}:{sorted(rungs).index(name):02d}:00Z",
            **rung.match})
    diagnose_plan.write_plan(plan, root)
    return root


def _found(root: Path) -> analysis.Diagnosis:
    return analysis.diagnose(load(root), diagnose_plan.read_plan(root))


def test_a_loss_in_both_halves_is_named(tmp_path: Path) -> None:
    plan = _plan(tmp_path, repeats=4)
    found = _found(_campaign(tmp_path / plan.campaign, plan, lambda rung, _: SLOW_DATA[rung]))
    assert found.biggest is not None and found.biggest["step"] == "decode"
    assert "The biggest loss is JPEG decode" in analysis.recommendation(found)


def test_a_disturbance_that_came_and_went_cannot_tell(tmp_path: Path) -> None:
    """The compute-bound ladder (nothing lost) whose memory rung's earlier 8 of 16 runs were
    slowed by half (another process, then gone): its interval says a loss of at least 5 %, and
    before, 'the biggest loss is JPEG decode'."""
    plan = _plan(tmp_path, repeats=16)
    calm = {"device-fp32": 100.0, "host-w1": 99.0, "memory-w1": 98.5, "disk-w1": 98.0,
            "disk-w2": 98.2}

    def speed(rung: str, repeat: int) -> float:
        return calm[rung] * (0.5 if rung == "memory-w1" and repeat < 8 else 1.0)

    found = _found(_campaign(tmp_path / plan.campaign, plan, speed))
    steps = found.steps.set_index("step")
    assert steps.loc["decode", "verdict"] == agreement.CANNOT_TELL, steps["verdict"]
    assert "the earlier half of the repeats loses" in steps.loc["decode", "doubt"]
    text = analysis.recommendation(found)
    assert "The biggest loss is" not in text
    assert "Cannot tell which step loses the most: decode" in text
    assert "Re-run the rungs host-w1, memory-w1" in text


def test_a_small_known_loss_is_not_a_cause(tmp_path: Path) -> None:
    plan = _plan(tmp_path, repeats=4)
    near = {"device-fp32": 100.0, "host-w1": 99.5, "memory-w1": 97.0, "disk-w1": 96.8,
            "disk-w2": 96.9}
    found = _found(_campaign(tmp_path / plan.campaign, plan, lambda rung, _: near[rung]))
    steps = found.steps.set_index("step")
    assert steps.loc["decode", "verdict"] in (agreement.SMALL_LOSS, "no significant change")
    assert found.biggest is None
    assert "No step that could be judged is a significant loss" in analysis.recommendation(found)
