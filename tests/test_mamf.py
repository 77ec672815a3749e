"""MAMF as ml-engineering's ``mamf-finder.py`` reports it (issue 51, build 1): each shape's
TFLOP/s over the mean time of its calls, the best shape's mean, not the fastest single call.
The device clock is replaced by scripted call times: nothing here is timed."""

from __future__ import annotations

import pytest
import torch

from benchlib.kinds.probes import workload_achievable as achievable


def _scripted(monkeypatch, times_per_shape: list[list[float]]) -> None:
    """Each shape's timed calls take the listed seconds, shape after shape."""
    script = iter(t for times in times_per_shape for t in times)
    monkeypatch.setattr(achievable, "device_seconds", lambda fn, device: next(script))


def test_mamf_is_the_best_shape_mean_not_its_fastest_call(monkeypatch):
    found = [(128, 128, 128), (128, 128, 64)]  # two shapes, the larger first
    flops = [2 * m * n * k for m, n, k in found]
    # the first shape: one call 4x faster than its others (mean 2.5 s); the second, steady
    first, second = [1.0, 4.0, 4.0, 1.0], [1.5, 1.5, 1.5, 1.5]
    second = [t * flops[1] / flops[0] for t in second]  # 1.5 s per call at the first's flops
    _scripted(monkeypatch, [first, second])
    monkeypatch.setattr(achievable, "shapes", lambda base, largest: found)
    best = achievable.achievable_matmul(torch.device("cpu"), torch.float32, 64, 128, 4, 0, 60.0)
    assert best.tried == 2 and best.calls == 4
    assert best.shape == found[1]  # mean 1.5 s beats mean 2.5 s, though 1.0 s was the fastest
    assert best.value == pytest.approx(flops[0] / 1.5 / 1e12)
    assert best.fastest_call == pytest.approx(flops[0] / 1.0 / 1e12)  # the finder's "max"


def test_a_shape_throughput_is_over_the_mean_time_as_the_finder_computes_it():
    # mamf-finder: flos / (np.mean(times) * 10**12), the mean of times, not of rates
    mean, fastest = achievable.mean_and_fastest_tflops(2e12, [1.0, 2.0, 3.0])
    assert mean == pytest.approx(2e12 / 2.0 / 1e12) and fastest == pytest.approx(2.0)


def test_the_probe_note_names_the_mean_and_the_fastest_call():
    from benchlib.kinds.probes import workload as node_probe
    from benchlib.kinds.probes.config import NodeProbeConfig

    config = NodeProbeConfig(device="cpu", precisions=["fp32"], matmul_size=128, mamf_repeats=2,
                             iterations=1, warmup=0, memory_bytes=1 << 20, probe_time_s=1.0)
    best = node_probe.achievable_for(torch.device("cpu"), "fp32", 128, config)
    assert best.value > 0 and best.fastest_call >= best.value
    assert best.calls_text(2) == "each the mean of 2 calls"
