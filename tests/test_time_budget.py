"""iterations: auto: time until the mean is known within 2 %, or until the budget is spent."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.unet3d.config import UNet3DPredictConfig
from benchlib.workloads.loop import TimeBudget, timed_loop


def _step(seconds):
    """A step that takes ``next(seconds)`` of busy time (host clock)."""
    import time

    def step(iterator, timer):
        timer.start()
        end = time.perf_counter() + next(seconds)
        while time.perf_counter() < end:
            pass
        timer.lap("forward")
        timer.stop()
        return 1

    return step


def test_steady_iterations_stop_once_stable_after_the_minimum_time():
    # a loaded machine preempts the 5 ms steps now and then: the budget leaves room for the
    # mean to settle (a steady run stops long before it)
    budget = TimeBudget(min_s=0.3, max_s=120.0)
    loop = timed_loop(_step(itertools.repeat(0.005)), iter(int, 1), torch.device("cpu"), 0, None,
                      budget=budget, telemetry_interval_s=0)
    assert loop.stop == "stable"
    assert 0.3 <= loop.wall_time_s < 120.0
    assert len(loop.timer) >= budget.min_iterations


def test_erratic_iterations_stop_at_the_time_budget():
    rng = np.random.default_rng(0)
    erratic = (float(s) for s in rng.choice([0.001, 0.05], size=10_000))
    loop = timed_loop(_step(erratic), iter(int, 1), torch.device("cpu"), 0, None,
                      budget=TimeBudget(min_s=0.2, max_s=0.6, precision=0.001),
                      telemetry_interval_s=0)
    assert loop.stop == "time budget" and 0.6 <= loop.wall_time_s < 5


def test_a_count_still_stops_at_the_count():
    loop = timed_loop(_step(itertools.repeat(0.001)), iter(int, 1), torch.device("cpu"), 1, 4,
                      telemetry_interval_s=0)
    assert (loop.stop, len(loop.timer)) == ("count", 4)


def test_stability_needs_enough_iterations_and_a_narrow_interval():
    budget = TimeBudget(min_s=0, max_s=1)
    assert not budget.stable(np.full(5, 0.01))  # too few
    assert budget.stable(np.full(50, 0.01))
    assert not budget.stable(np.array([0.01, 0.03] * 10))


def test_auto_is_validated():
    base = {"model": "resnet18", "device": "cpu", "iterations": "auto"}
    assert ClassificationConfig(**base).iterations == "auto"
    with pytest.raises(ValueError, match="ranks would stop at different counts"):
        ClassificationConfig(**base, num_devices=2)
    with pytest.raises(ValueError, match=r"max_time_s 1\.0 is below min_time_s 2\.0"):
        ClassificationConfig(**{**base, "max_time_s": 1.0})
    with pytest.raises(ValueError, match="Input should be 'epoch'"):
        UNet3DPredictConfig(iterations="auto", volume="x.h5")
    assert TimeBudget.of(ClassificationConfig(**base)) == TimeBudget(2.0, 60.0)
    assert TimeBudget.of(ClassificationConfig(model="resnet18")) is None


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_the_node_probe_keeps_to_its_time_budget():
    import time

    from benchlib.kinds.probes import workload as node_probe
    from benchlib.kinds.probes.config import NodeProbeConfig

    config = NodeProbeConfig(device="cpu", precisions=["fp32"], matmul_size=16384,
                             memory_bytes=64 << 20, iterations=10_000, probe_time_s=0.5)
    start = time.perf_counter()
    result = node_probe.run(config)
    assert time.perf_counter() - start < 60  # unbudgeted: a 16384^3 product alone takes minutes
    note = result.table.set_index(["probe", "setting"]).loc[("matmul", "fp32"), "note"]
    assert "matmul_size 16384 did not fit probe_time_s 0.5" in note
    assert result.value("matmul", "fp32") > 0 and result.value("memory", "device copy") > 0


def test_seconds_per_call_stops_at_the_budget_but_times_at_least_one_call():
    from benchlib.kinds.probes.workload import seconds_per_call

    calls = []
    seconds = seconds_per_call(lambda: calls.append(time_sleep(0.05)), torch.device("cpu"),
                               iterations=1000, warmup=1, budget_s=0.2)
    assert 2 <= len(calls) < 50 and seconds >= 0.04


def time_sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)
