"""NVML telemetry: the sampler against a fake NVML, the summary, merging ranks, the CPU path."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from benchlib.measure import telemetry
from benchlib.measure.telemetry import Telemetry, TelemetrySampler, merge_summaries
from benchlib.publish.pages.plots import telemetry_plot


class NVMLError(Exception):
    pass


class FakeNVML:
    """pynvml's calls that the sampler makes, with scripted readings. Power 250 W; every third
    reading reports a software power cap (bit 0x4); the energy counter advances 250 J per
    second of wall time."""

    def __init__(self, energy: bool = True, clocks: bool = True) -> None:
        self.energy, self.clocks = energy, clocks
        self.calls = 0
        self.initialised = False
        self.t0 = time.perf_counter()

    def nvmlInit(self) -> None:
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.initialised = False

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetUtilizationRates(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(gpu=90, memory=40)

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(used=8 << 30, total=80 << 30)

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        return 250_000  # milliwatts

    def nvmlDeviceGetClockInfo(self, handle: str, kind: int) -> int:
        if not self.clocks:
            raise NVMLError("Not Supported")
        return 1980 if kind == 1 else 2619

    def nvmlDeviceGetTemperature(self, handle: str, sensor: int) -> int:
        return 65

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
        self.calls += 1
        return 0x4 if self.calls % 3 == 0 else 0x0

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        if not self.energy:
            raise NVMLError("Not Supported")
        return int((time.perf_counter() - self.t0) * 250_000)  # millijoules


def sample(fake: FakeNVML, seconds: float = 0.3, interval: float = 0.01) -> Telemetry:
    with TelemetrySampler(torch.device("cuda", 0), interval, nvml=fake) as sampler:  # type: ignore[arg-type]
        time.sleep(seconds)
    assert not fake.initialised, "NVML was not shut down"
    return sampler.telemetry


def test_sampler_reads_nvml_in_the_background_and_summarises() -> None:
    seen = sample(FakeNVML())
    assert seen.available
    assert len(seen.samples) >= 10  # 0.3 s at 10 ms
    assert seen.samples["t_s"].is_monotonic_increasing
    summary = seen.summary(samples_processed=600)
    assert summary["telemetry"] == "nvml"
    assert summary["gpu_util_mean"] == 90 and summary["gpu_mem_util_mean"] == 40
    assert summary["power_mean_w"] == pytest.approx(250)
    assert summary["sm_clock_mean_mhz"] == 1980 and summary["mem_clock_mean_mhz"] == 2619
    assert summary["temperature_max_c"] == 65
    assert summary["gpu_memory_used_max_bytes"] == 8 << 30
    # every third reading had the power cap bit: a third of the time throttled, all by power
    assert summary["throttled_share"] == pytest.approx(1 / 3, abs=0.1)
    assert summary["throttle_power_share"] == summary["throttled_share"]
    assert summary["throttle_thermal_share"] == 0
    # energy from the counter: 250 J/s over about 0.3 s
    assert summary["energy_source"] == "counter"
    assert summary["energy_j"] == pytest.approx(250 * 0.3, rel=0.3)
    assert summary["joules_per_sample"] == pytest.approx(summary["energy_j"] / 600)


def test_energy_falls_back_to_integrated_power_and_unsupported_readings_are_left_out() -> None:
    seen = sample(FakeNVML(energy=False, clocks=False))
    assert "sm_clock_mhz" not in seen.samples
    summary = seen.summary(100)
    assert summary["sm_clock_mean_mhz"] is None
    assert summary["energy_source"] == "integrated power"
    span = seen.samples["t_s"].iloc[-1] - seen.samples["t_s"].iloc[0]
    assert summary["energy_j"] == pytest.approx(250 * span, rel=1e-6)


def test_cpu_and_missing_nvml_say_unavailable_without_failing() -> None:
    with TelemetrySampler(torch.device("cpu")) as sampler:
        pass
    assert sampler.telemetry.summary(10) == {
        "telemetry": "unavailable: no CUDA device (device cpu); NVML samples GPUs only"}

    class Broken(FakeNVML):
        def nvmlInit(self) -> None:
            raise NVMLError("NVML Shared Library Not Found")

    with TelemetrySampler(torch.device("cuda", 0), nvml=Broken()) as broken:  # type: ignore[arg-type]
        pass
    assert broken.telemetry.summary()["telemetry"] == "unavailable: NVML: NVML Shared Library Not Found"
    with TelemetrySampler(torch.device("cuda", 0), 0, nvml=FakeNVML()) as off:  # type: ignore[arg-type]
        pass
    assert "turned off" in off.telemetry.summary()["telemetry"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the path without a GPU")
def test_the_real_pynvml_without_a_driver_is_reported() -> None:
    pytest.importorskip("pynvml")
    with TelemetrySampler(torch.device("cuda", 0), 0.05) as sampler:
        pass
    assert sampler.telemetry.summary()["telemetry"].startswith("unavailable: NVML")


def test_merge_sums_energy_and_keeps_the_worst_device() -> None:
    a = {"telemetry": "nvml", "telemetry_samples": 10, "energy_j": 100.0, "power_mean_w": 200.0,
         "power_max_w": 300.0, "throttled_share": 0.0, "sm_clock_min_mhz": 1900.0,
         "energy_source": "counter", "joules_per_sample": 1.0}
    b = {**a, "energy_j": 300.0, "power_mean_w": 400.0, "throttled_share": 0.5,
         "sm_clock_min_mhz": 1500.0}
    merged = merge_summaries([a, b], samples=200)
    assert merged["energy_j"] == 400 and merged["joules_per_sample"] == 2.0
    assert merged["power_mean_w"] == 300 and merged["power_max_w"] == 300
    assert merged["throttled_share"] == 0.5 and merged["sm_clock_min_mhz"] == 1500
    assert merged["telemetry_samples"] == 20 and merged["telemetry_devices"] == 2
    cpu = {"telemetry": "unavailable: no CUDA device"}
    assert merge_summaries([cpu, cpu], 10) == cpu


def test_a_cpu_run_records_why_telemetry_is_unavailable(tiny: dict) -> None:
    from benchlib.kinds.classification.config import ClassificationConfig
    from benchlib.kinds.record import make_record
    from benchlib.run.launch import run

    config = ClassificationConfig(benchmark="inference", **tiny)
    record = make_record(config, run(config))
    assert record["telemetry"].startswith("unavailable: no CUDA device")


def test_telemetry_plot_marks_throttled_samples() -> None:
    seen = sample(FakeNVML(), seconds=0.1)
    figure = telemetry_plot(seen)
    assert len(figure.axes) == 4
    assert any(c.get_label().startswith("throttled") for c in figure.axes[0].collections)
    assert isinstance(seen.samples, pd.DataFrame)
    assert telemetry.THROTTLE_MASK & 0x1 == 0  # idle is not throttling


class LinkedNVML(FakeNVML):
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, links: int, gen: int = 5) -> None:
        super().__init__()
        self.links, self.gen = links, gen

    def nvmlDeviceGetNvLinkState(self, handle: str, link: int) -> int:
        if self.links == 0:
            raise NVMLError("Not Supported")
        return 1 if link < self.links else 0

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: str) -> int:
        return self.gen

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: str) -> int:
        return 16

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: str) -> int:
        return 1  # idle

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: str) -> int:
        return 16


def test_interconnect_names_nvlinks_and_the_pcie_link() -> None:
    sxm = telemetry.interconnect(torch.device("cuda", 0), LinkedNVML(18))  # type: ignore[arg-type]
    assert sxm == {"env_gpu_nvlinks": 18, "env_gpu_pcie": "PCIe Gen5 x16",
                   "env_gpu_pcie_now": "PCIe Gen1 x16",
                   "env_gpu_interconnect": "NVLink x18 + PCIe Gen5 x16"}
    pcie = telemetry.interconnect(torch.device("cuda", 0), LinkedNVML(0, gen=4))  # type: ignore[arg-type]
    assert pcie["env_gpu_interconnect"] == "PCIe Gen4 x16" and pcie["env_gpu_nvlinks"] == 0
    assert telemetry.interconnect(torch.device("cpu")) == {"env_gpu_interconnect": ""}


def test_throttle_reasons_fall_back_to_the_older_nvml_call() -> None:
    class OldDriver(FakeNVML):
        def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
            raise NVMLError("Function Not Found")

        def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: str) -> int:
            return 0x40  # hardware thermal slowdown

    summary = sample(OldDriver(), seconds=0.05).summary(10)
    assert summary["throttled_share"] == 1.0 and summary["throttle_thermal_share"] == 1.0


def test_the_energy_counter_agrees_with_integrated_power_on_a_constant_trace() -> None:
    """The fake board draws 250 W throughout: the counter's energy and the power samples
    integrated over the same window agree within what the sampling misses at the two ends."""
    interval = 0.01
    seen = sample(FakeNVML(), seconds=0.3, interval=interval)
    assert seen.energy_source == "counter"
    power = seen.samples[["t_s", "power_w"]]
    integrated = float(((power["t_s"].diff()) * power["power_w"]).sum())
    # the counter also covers the moments before the first and after the last sample
    assert seen.energy_j == pytest.approx(integrated, abs=250 * 4 * interval)
    assert seen.energy_j > integrated * 0.9


def test_an_unsupported_counter_falls_back_to_integrated_power_named_in_the_record() -> None:
    seen = sample(FakeNVML(energy=False), seconds=0.2)
    record = seen.summary(samples_processed=500)
    assert record["energy_source"] == "integrated power"
    assert record["samples_per_joule"] == pytest.approx(500 / record["energy_j"])
    assert record["joules_per_sample"] == pytest.approx(record["energy_j"] / 500)


def test_energy_not_measured_is_unknown_with_its_reason_never_zero() -> None:
    columns = telemetry.energy_columns(0.0, "counter", 100)
    assert columns["energy_j"] is None and columns["samples_per_joule"] is None
    assert columns["energy_source"] == "none: counter read 0 J"
    cpu = Telemetry(False, "no CUDA device", energy_source="none: no RAPL (x: gone)")
    assert cpu.summary(10) == {"telemetry": "unavailable: no CUDA device", "energy_j": None,
                               "energy_source": "none: no RAPL (x: gone)",
                               "joules_per_sample": None, "samples_per_joule": None}
    rapl = Telemetry(False, "no CUDA device", energy_j=20.0, energy_source="rapl").summary(10)
    assert rapl["energy_j"] == 20 and rapl["samples_per_joule"] == 0.5


def test_merged_package_energy_counts_each_host_once() -> None:
    rank = {"telemetry": "unavailable: no CUDA device", "energy_j": 30.0, "energy_source": "rapl"}
    other = {**rank, "energy_j": 50.0}
    one_host = merge_summaries([rank, rank], 60, hosts=["a", "a"])
    assert one_host["energy_j"] == 30 and one_host["samples_per_joule"] == 2
    assert merge_summaries([rank, other], 80, hosts=["a", "b"])["energy_j"] == 80
    unknown = merge_summaries([rank, other], 80)
    assert unknown["energy_j"] is None and unknown["energy_source"].startswith("none:")
    gpu = {"telemetry": "nvml", "energy_j": 10.0, "energy_source": "counter"}
    partial = merge_summaries([gpu, {**gpu, "energy_j": None}], 10)
    assert partial["energy_j"] is None and partial["samples_per_joule"] is None


class SteppedCounter(FakeNVML):
    """The energy counter as an H200 (driver 580.159.04) advanced it: in steps about every
    100 ms (25 J at the fake's 250 W), not continuously."""

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        return int((time.perf_counter() - self.t0) // 0.1) * 25_000  # millijoules


def test_a_counter_too_coarse_for_the_span_gives_way_to_integrated_power() -> None:
    """A 70 ms loop sees the stepped counter advance once or not at all (0 J or one whole
    25 J step, both wrong by 100 % or more): the power samples are integrated instead."""
    short = sample(SteppedCounter(), seconds=0.07)
    assert short.energy_source == "integrated power"
    assert short.energy_j == pytest.approx(250 * short.samples["t_s"].iloc[-1], rel=0.01)


@pytest.mark.slow  # 1.2 s of sampling
def test_a_span_of_many_counter_steps_uses_the_counter() -> None:
    long = sample(SteppedCounter(), seconds=1.2)
    assert long.energy_source == "counter"
    assert long.energy_j == pytest.approx(250 * 1.2, rel=0.15)


class InstantPower(SteppedCounter):
    """A Hopper: the averaged power lags (still 100 W, the reading of a second ago) while the
    instantaneous field reads the 250 W drawn now; the counter too coarse for a short span."""

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        return 100_000

    def nvmlDeviceGetFieldValues(self, handle: str, fields: list[int]) -> list:
        assert fields == [telemetry.FI_DEV_POWER_INSTANT]
        return [SimpleNamespace(nvmlReturn=0, value=SimpleNamespace(uiVal=250_000))]


def test_the_instantaneous_power_integrates_a_short_span_where_the_average_lags() -> None:
    """Before, the 1 s average was integrated (100 W here: 60 % low); the instantaneous field
    gives the power drawn in the span."""
    short = sample(InstantPower(), seconds=0.07)
    assert short.energy_source == "integrated instantaneous power"
    assert short.energy_j == pytest.approx(250 * short.samples["t_s"].iloc[-1], rel=0.01)
    assert short.samples["power_instant_w"].eq(250).all()
    assert short.summary(10)["power_mean_w"] == pytest.approx(100)  # the average, as named
