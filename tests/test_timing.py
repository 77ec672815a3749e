
import numpy as np
import pandas as pd
import pytest
import torch

from benchlib.measure.timing import PhaseTimer, Stats, WallClock, is_noisy, summarize

CPU = torch.device("cpu")


class FakeClock:
    """Stands in for ``time.perf_counter`` in benchlib.measure.timing: time moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr("benchlib.measure.timing.time.perf_counter", fake)
    return fake


def _loop(timer: PhaseTimer, clock: FakeClock, iterations: int) -> None:
    """Each iteration: 4 ms data, 2 + 1 ms forward (two chunks), 3 ms backward."""
    for _ in range(iterations):
        timer.start()
        clock.advance(0.004)
        timer.lap("data", host=True)
        clock.advance(0.002)
        timer.lap("forward")
        clock.advance(0.001)
        timer.lap("forward")  # a second chunk of the same phase adds up
        clock.advance(0.003)
        timer.lap("backward")
        timer.stop()


def test_phases_measure_what_ran_and_add_up_to_the_iteration(clock):
    timer = PhaseTimer(CPU)
    _loop(timer, clock, 5)
    samples = timer.samples()
    assert list(samples.columns) == ["iteration", "data", "forward", "backward"]
    assert len(samples) == len(timer) == 5
    medians = samples.median()
    assert medians["data"] == pytest.approx(0.004)
    assert medians["forward"] == pytest.approx(0.003)
    assert medians["backward"] == pytest.approx(0.003)
    assert medians["iteration"] == pytest.approx(0.010)
    summed = samples[["data", "forward", "backward"]].sum(axis=1)
    np.testing.assert_allclose(summed, samples["iteration"])


def test_without_breakdown_only_whole_iterations_are_timed(clock):
    timer = PhaseTimer(CPU, breakdown=False)
    _loop(timer, clock, 3)
    samples = timer.samples()
    assert list(samples.columns) == ["iteration"]
    assert samples["iteration"].tolist() == pytest.approx([0.010] * 3)


def test_an_iteration_started_but_not_stopped_is_not_counted(clock):
    timer = PhaseTimer(CPU)
    _loop(timer, clock, 2)
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
    assert not is_noisy(Stats.of([1.0, 1.0, 1.0, 1.05]))
    assert is_noisy(Stats.of([1.0, 1.2, 1.0, 1.3]))
    assert Stats.of([]).count == 0


def test_summarize_covers_every_column():
    frame = pd.DataFrame({"iteration": [1.0, 2.0], "data": [0.5, 0.5]})
    assert set(summarize(frame)) == {"iteration", "data"}


def test_wall_clock_measures_the_block(clock):
    with WallClock(CPU) as wall:
        clock.advance(0.02)
    assert wall.seconds == pytest.approx(0.02)


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


def test_the_peak_memory_window_opens_after_warm_up(monkeypatch):
    """Peak memory is that of the timed steps: the window is reset after the warm-up steps
    (which allocate cuDNN's benchmark and autotune workspaces), before the first timed one."""
    from tests.fakes import loop_calls

    assert loop_calls(monkeypatch, 2, 2) == ["warm-up", "warm-up", "reset", "timed", "timed"]
