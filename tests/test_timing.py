import time

import numpy as np
import pandas as pd
import pytest
import torch

from benchlib.timing import NOISY_SPREAD, PhaseTimer, Stats, WallClock, is_noisy, summarize

CPU = torch.device("cpu")


def _sleepy_loop(timer: PhaseTimer, iterations: int) -> None:
    for _ in range(iterations):
        timer.start()
        time.sleep(0.004)
        timer.lap("data", host=True)
        time.sleep(0.002)
        timer.lap("forward")
        time.sleep(0.001)
        timer.lap("forward")  # a second chunk of the same phase adds up
        time.sleep(0.003)
        timer.lap("backward")
        timer.stop()


def test_phases_measure_what_ran_and_add_up_to_the_iteration():
    timer = PhaseTimer(CPU)
    _sleepy_loop(timer, 5)
    samples = timer.samples()
    assert list(samples.columns) == ["iteration", "data", "forward", "backward"]
    assert len(samples) == len(timer) == 5
    medians = samples.median()
    assert medians["data"] == pytest.approx(0.004, abs=0.002)
    assert medians["forward"] == pytest.approx(0.003, abs=0.002)
    assert medians["backward"] == pytest.approx(0.003, abs=0.002)
    summed = samples[["data", "forward", "backward"]].sum(axis=1)
    np.testing.assert_allclose(summed, samples["iteration"], rtol=0.02)


def test_without_breakdown_only_whole_iterations_are_timed():
    timer = PhaseTimer(CPU, breakdown=False)
    _sleepy_loop(timer, 3)
    samples = timer.samples()
    assert list(samples.columns) == ["iteration"]
    assert samples["iteration"].median() == pytest.approx(0.010, abs=0.004)


def test_an_iteration_started_but_not_stopped_is_not_counted():
    timer = PhaseTimer(CPU)
    _sleepy_loop(timer, 2)
    timer.start()
    timer.lap("data", host=True)
    assert len(timer) == 2
    assert len(timer.samples()) == 2


def test_stats_by_hand():
    stats = Stats.of([1.0, 2.0, 3.0, 4.0, 100.0, float("nan")])
    assert stats.count == 5
    assert stats.median == 3.0
    assert stats.iqr == 2.0  # numpy linear percentiles: q25 = 2, q75 = 4
    assert stats.spread == pytest.approx(2 / 3)
    assert stats.p95 == pytest.approx(80.8)  # 4 + 0.8 * (100 - 4)
    assert stats.mean == 22.0


def test_noisy_flag_follows_the_iqr_over_median_threshold():
    assert NOISY_SPREAD == 0.10
    assert not is_noisy(Stats.of([1.0, 1.0, 1.0, 1.05]))
    assert is_noisy(Stats.of([1.0, 1.2, 1.0, 1.3]))
    assert Stats.of([]).count == 0


def test_summarize_covers_every_column():
    frame = pd.DataFrame({"iteration": [1.0, 2.0], "data": [0.5, 0.5]})
    assert set(summarize(frame)) == {"iteration", "data"}


def test_wall_clock_measures_the_block():
    with WallClock(CPU) as clock:
        time.sleep(0.02)
    assert clock.seconds == pytest.approx(0.02, abs=0.01)


@pytest.mark.gpu
def test_cuda_events_time_device_work():
    device = torch.device("cuda")
    timer = PhaseTimer(device)
    x = torch.randn(2048, 2048, device=device)
    for _ in range(3):
        timer.start()
        timer.lap("data", host=True)
        for _ in range(10):
            x = x @ x / 2048
        timer.lap("forward")
        timer.stop()
    samples = timer.samples()
    assert (samples["forward"] > 0).all()
    np.testing.assert_allclose(samples[["data", "forward"]].sum(axis=1), samples["iteration"],
                               rtol=0.05, atol=1e-4)
