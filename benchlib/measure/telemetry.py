"""GPU telemetry during a timed loop: NVML (nvidia-ml-py) sampled in a background thread.

Every ``interval_s`` the sampler reads the device's utilization, memory, power, SM and memory
clocks, temperature and the clock-event (throttle) reasons. Energy comes from NVML's energy
counter (millijoules since the driver loaded; Volta and newer) read at both ends, or, where the
counter is not supported or too coarse for the span, from the power samples integrated over
time (``energy_source`` ``counter`` or ``integrated power``). The counter advances in steps:
about every 100 ms on an H200 (driver 580.159.04, docs/measurements.md), so a 65 ms loop read it
as 0 J or as one whole 13 J step; it is used only where it advanced at least
:data:`COUNTER_MIN_STEPS` times within the span (its step then at most a tenth of the energy).
Without a CUDA device or without NVML the sampler does
nothing and the record says why (``telemetry: unavailable: ...``); a CPU run's energy is the
packages' RAPL counters (:mod:`benchlib.measure.rapl`, added by the timed loop).

The thread only calls NVML, which reads the driver's counters and does not touch the CUDA
stream, so it adds no synchronisation to the timed loop.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import torch

DEFAULT_INTERVAL_S = 0.1
COUNTER_MIN_STEPS = 10  #: the energy counter's advances a span needs before it is used
#: NVML clock-event reason bits (nvml.h ``nvmlClocksEventReason*``) that mean the clocks were
#: held down: power cap and power brake, thermal slowdown (software and hardware), and the
#: hardware slowdown (power brake or over-temperature). Idle, application clock settings, sync
#: boost and display clocks are not throttling.
THROTTLE_BITS = {
    "power": 0x4 | 0x80,      # SwPowerCap, HwPowerBrakeSlowdown
    "thermal": 0x20 | 0x40,   # SwThermalSlowdown, HwThermalSlowdown
    "hw_slowdown": 0x8,       # HwSlowdown
}
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
COLUMNS = ("t_s", "gpu_util", "mem_util", "memory_used_bytes", "power_w", "power_instant_w",
           "sm_clock_mhz", "mem_clock_mhz", "temperature_c", "throttle_reasons")


@dataclass
class Telemetry:
    """What one device's sampler saw: ``samples`` (one row per reading, columns of
    :data:`COLUMNS` that NVML supported) and the energy over the sampled window."""

    available: bool
    reason: str = ""
    samples: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["t_s"]))
    energy_j: float | None = None
    energy_source: str = ""

    def energy(self, samples_processed: int | None) -> dict[str, object]:
        """The energy columns: ``energy_j``, ``energy_source`` (where it came from, or ``none:
        why``), ``joules_per_sample`` and ``samples_per_joule`` (None where not measured)."""
        return energy_columns(self.energy_j, self.energy_source, samples_processed)

    def summary(self, samples_processed: int | None = None) -> dict[str, object]:
        """Record columns: means and maxima, the throttled share of samples (in all and per
        cause), energy, joules per processed sample and samples per joule. Unavailable: why,
        and the energy where another source measured it (a CPU's RAPL)."""
        if not self.available:
            out = {"telemetry": f"unavailable: {self.reason}"}
            if self.energy_j is not None or self.energy_source:
                out.update(self.energy(samples_processed))
            return out
        frame = self.samples
        out = {"telemetry": "nvml", "telemetry_samples": len(frame),
               **self.energy(samples_processed)}

        def column(name: str) -> pd.Series:
            return frame[name].dropna() if name in frame else pd.Series(dtype=float)

        for name, key, how in (
            ("gpu_util", "gpu_util_mean", "mean"), ("mem_util", "gpu_mem_util_mean", "mean"),
            ("memory_used_bytes", "gpu_memory_used_max_bytes", "max"),
            ("power_w", "power_mean_w", "mean"), ("power_w", "power_max_w", "max"),
            ("sm_clock_mhz", "sm_clock_mean_mhz", "mean"), ("sm_clock_mhz", "sm_clock_min_mhz", "min"),
            ("mem_clock_mhz", "mem_clock_mean_mhz", "mean"),
            ("temperature_c", "temperature_mean_c", "mean"),
            ("temperature_c", "temperature_max_c", "max"),
        ):
            values = column(name)
            out[key] = float(getattr(values, how)()) if len(values) else None
        reasons = column("throttle_reasons")
        if len(reasons):
            bits = reasons.astype("int64")
            out["throttled_share"] = float(((bits & THROTTLE_MASK) != 0).mean())
            for cause, mask in THROTTLE_BITS.items():
                out[f"throttle_{cause}_share"] = float(((bits & mask) != 0).mean())
        else:
            out["throttled_share"] = None
        return out


def energy_columns(energy_j: float | None, source: str,
                   samples: int | None) -> dict[str, object]:
    """``energy_j``, ``energy_source``, ``joules_per_sample`` = energy / samples and
    ``samples_per_joule`` = samples / energy. A figure that was not measured (no energy, or a
    reading of 0 J) is None, shown as unknown, never 0; ``energy_source`` then says ``none: why``."""
    if energy_j is None or energy_j <= 0:
        why = source if source.startswith("none") else \
            f"none: {source + ' read 0 J' if energy_j is not None else source or 'not measured'}"
        return {"energy_j": None, "energy_source": why, "joules_per_sample": None,
                "samples_per_joule": None}
    return {"energy_j": energy_j, "energy_source": source,
            "joules_per_sample": energy_j / samples if samples else None,
            "samples_per_joule": samples / energy_j if samples else None}


def unavailable(reason: str) -> Telemetry:
    """A Telemetry that says why nothing was sampled."""
    return Telemetry(available=False, reason=reason)


def merge_summaries(summaries: list[dict[str, object]], samples: int,
                    hosts: list[str] | None = None) -> dict[str, object]:
    """One device's summary from several ranks' (one device each): energy summed and divided by
    all ranks' ``samples``; means averaged; maxima and throttled shares of the worst device.
    Without NVML, a CPU's RAPL energy counts whole packages, which the ranks of one host share:
    one rank's per host (``hosts``, each rank's) is summed; without ``hosts`` several ranks'
    energy is unknown."""
    sampled = [s for s in summaries if s.get("telemetry") == "nvml"]
    if not sampled:
        return _merge_packages(summaries, samples, hosts)
    out: dict[str, object] = {"telemetry": "nvml", "telemetry_devices": len(sampled)}
    keys = list(dict.fromkeys(k for s in sampled for k in s))
    for key in keys:
        if key in ("telemetry", "joules_per_sample", "samples_per_joule", "energy_source"):
            continue
        values = [s[key] for s in sampled if isinstance(s.get(key), (int, float))]
        if not values:
            out[key] = None
        elif key in ("energy_j", "telemetry_samples"):
            out[key] = float(sum(values)) if key == "energy_j" else int(sum(values))
        elif key.endswith(("_max_bytes", "_max_w", "_max_c")) or key.endswith("_share"):
            out[key] = float(max(values))
        elif key.endswith("_min_mhz"):
            out[key] = float(min(values))
        else:
            out[key] = float(np.mean(values))
    complete = all(isinstance(s.get("energy_j"), (int, float)) for s in sampled)
    energy = out.get("energy_j") if complete else None  # a device without energy: unknown
    source = str(sampled[0].get("energy_source", "")) if complete else \
        "none: a device measured no energy"
    out.update(energy_columns(energy, source, samples))  # type: ignore[arg-type]
    return out


def _merge_packages(summaries: list[dict[str, object]], samples: int,
                    hosts: list[str] | None) -> dict[str, object]:
    """Several ranks without NVML: rank 0's columns, the energy of one rank per host."""
    if not summaries:
        return {"telemetry": "unavailable: no rank reported"}
    out = dict(summaries[0])
    if "energy_j" not in out or len(summaries) == 1:
        return out
    if hosts is None or len(hosts) != len(summaries):
        return {**out, **energy_columns(None, "none: several ranks, hosts not known", samples)}
    first = {host: summary for host, summary in reversed(list(zip(hosts, summaries, strict=True)))}
    values = [s.get("energy_j") for s in first.values()]
    if not all(isinstance(v, (int, float)) for v in values):
        return {**out, **energy_columns(None, "none: a host measured no energy", samples)}
    return {**out, **energy_columns(float(sum(values)), str(out.get("energy_source", "")),  # type: ignore[arg-type]
                                    samples)}


def _handle(nvml: ModuleType, device: torch.device) -> object:
    """The NVML handle of a torch CUDA device: by UUID, so CUDA_VISIBLE_DEVICES renumbering
    cannot pick the wrong GPU; by index where torch cannot say."""
    index = device.index or 0
    try:
        import torch

        if torch.cuda.is_available():
            uuid = str(torch.cuda.get_device_properties(index).uuid)
            return nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except Exception:
        pass
    return nvml.nvmlDeviceGetHandleByIndex(index)


def open_nvml(device: torch.device, nvml: ModuleType | None = None) -> tuple[ModuleType, object] | str:
    """Initialise NVML and find ``device``: (the module, the handle), or why not. ``nvml``
    replaces pynvml (tests pass a fake). The caller shuts NVML down."""
    if nvml is None:
        if device.type != "cuda":
            return f"no CUDA device (device {device.type}); NVML samples GPUs only"
        try:
            import pynvml
        except ImportError:
            return "nvidia-ml-py is not installed"
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as error:
        return f"NVML: {error}"
    try:
        return nvml, _handle(nvml, device)
    except Exception as error:
        nvml.nvmlShutdown()
        return f"NVML has no handle for {device}: {error}"


def interconnect(device: torch.device, nvml: ModuleType | None = None) -> dict[str, object]:
    """How the GPU connects, for the record's provenance: active NVLinks, the PCIe link it
    can run at and the one it runs at now (idle GPUs drop to a lower generation), and a short
    ``env_gpu_interconnect`` (``NVLink x18 + PCIe Gen5 x16``); empty without NVML."""
    opened = open_nvml(device, nvml)
    if isinstance(opened, str):
        return {"env_gpu_interconnect": ""}
    nvml, handle = opened

    def read(name: str, *args: object) -> int | None:
        try:
            return int(getattr(nvml, name)(handle, *args))
        except Exception:
            return None

    try:
        links = 0
        for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
            state = read("nvmlDeviceGetNvLinkState", link)
            if state is None:
                break
            links += state == 1  # NVML_FEATURE_ENABLED
        gen, width = read("nvmlDeviceGetMaxPcieLinkGeneration"), read("nvmlDeviceGetMaxPcieLinkWidth")
        now = (read("nvmlDeviceGetCurrPcieLinkGeneration"), read("nvmlDeviceGetCurrPcieLinkWidth"))
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    pcie = f"PCIe Gen{gen} x{width}" if gen and width else ""
    parts = [f"NVLink x{links}"] if links else []
    return {"env_gpu_nvlinks": links, "env_gpu_pcie": pcie,
            "env_gpu_pcie_now": f"PCIe Gen{now[0]} x{now[1]}" if all(now) else "",
            "env_gpu_interconnect": " + ".join([*parts, pcie] if pcie else parts)}


class TelemetrySampler:
    """Context manager sampling one CUDA device through NVML every ``interval_s`` seconds.

    ``nvml`` replaces the ``pynvml`` module (tests pass a fake). ``interval_s`` 0 turns
    sampling off. After the block, :attr:`telemetry` holds what was seen.
    """

    def __init__(self, device: torch.device, interval_s: float = DEFAULT_INTERVAL_S,
                 nvml: ModuleType | None = None) -> None:
        self.device, self.interval_s, self._nvml = device, interval_s, nvml
        self.telemetry = unavailable("not started")
        self._rows: list[dict[str, float]] = []
        self._readers: dict[str, object] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._energy0: float | None = None

    def _open(self) -> str:
        """Initialise NVML and find the device; '' on success, else the reason it failed."""
        if self.interval_s <= 0:
            return "turned off (telemetry_interval_s 0)"
        opened = open_nvml(self.device, self._nvml)
        if isinstance(opened, str):
            return opened
        nvml, handle = opened
        self._nvml = nvml
        getters = {
            "gpu_util": lambda: nvml.nvmlDeviceGetUtilizationRates(handle).gpu,
            "mem_util": lambda: nvml.nvmlDeviceGetUtilizationRates(handle).memory,
            "memory_used_bytes": lambda: nvml.nvmlDeviceGetMemoryInfo(handle).used,
            "power_w": lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1e3,
            "power_instant_w": lambda: instant_power_w(nvml, handle),
            "sm_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, 1),  # NVML_CLOCK_SM
            "mem_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, 2),  # NVML_CLOCK_MEM
            "temperature_c": lambda: nvml.nvmlDeviceGetTemperature(handle, 0),  # _GPU
            "throttle_reasons": lambda: _reasons(nvml, handle),
        }
        for name, getter in getters.items():  # keep what this GPU supports
            try:
                getter()
            except Exception:
                continue
            self._readers[name] = getter
        self._energy = lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1e3
        try:
            self._energy0 = float(self._energy())
        except Exception:
            self._energy0 = None
        return ""

    def _sample(self) -> None:
        row = {"t_s": time.perf_counter() - self._t0}
        if self._energy0 is not None:
            with contextlib.suppress(Exception):
                row["energy_j"] = float(self._energy())  # its steps: is it fine enough?
        for name, getter in self._readers.items():
            try:
                row[name] = float(getter())
            except Exception:
                row[name] = float("nan")
        self._rows.append(row)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> TelemetrySampler:
        reason = self._open()
        if reason:
            self.telemetry = unavailable(reason)
            return self
        self._t0 = time.perf_counter()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="benchlib-telemetry", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._sample()
        frame = pd.DataFrame(self._rows, columns=[c for c in COLUMNS if c == "t_s" or c in self._readers])
        energy, source = None, ""
        readings = [self._energy0] + [r["energy_j"] for r in self._rows if "energy_j" in r]
        if self._energy0 is not None and counter_steps(readings) >= COUNTER_MIN_STEPS:
            energy, source = readings[-1] - self._energy0, "counter"

        # the instantaneous field where the GPU has it: the averaged power lags the span
        column = "power_instant_w" if "power_instant_w" in frame else "power_w"
        if energy is None and column in frame and len(frame) > 1:
            power = frame[["t_s", column]].dropna()
            integrate = getattr(np, "trapezoid", None) or np.trapz  # numpy < 2 names it trapz
            energy = float(integrate(power[column], power["t_s"]))
            source = ("integrated instantaneous power" if column == "power_instant_w"
                      else "integrated power")
        self.telemetry = Telemetry(True, samples=frame, energy_j=energy, energy_source=source)
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()  # type: ignore[union-attr]


#: NVML's field of the instantaneous power (``NVML_FI_DEV_POWER_INSTANT``, milliwatts): on
#: Hopper ``nvmlDeviceGetPowerUsage`` is a 1 s average, which lags a short span.
FI_DEV_POWER_INSTANT = 186


def instant_power_w(nvml: ModuleType, handle: object) -> float:
    """The device's instantaneous power (W) from NVML's field values; raises where the GPU or
    driver does not give it (the sampler then keeps the averaged power only)."""
    [value] = nvml.nvmlDeviceGetFieldValues(handle, [FI_DEV_POWER_INSTANT])
    if getattr(value, "nvmlReturn", 0) != 0:
        raise RuntimeError(f"NVML field {FI_DEV_POWER_INSTANT}: not supported")
    reading = getattr(value, "value", None)
    milliwatts = getattr(reading, "uiVal", None)
    if milliwatts is None:
        milliwatts = getattr(reading, "ulVal", None)
    if milliwatts is None:
        raise RuntimeError(f"NVML field {FI_DEV_POWER_INSTANT}: no value")
    return float(milliwatts) / 1e3


def counter_steps(readings: list[float | None]) -> int:
    """How many times an energy counter's successive ``readings`` advanced."""
    values = [r for r in readings if r is not None]
    return sum(1 for a, b in itertools.pairwise(values) if b != a)


def _reasons(nvml: ModuleType, handle: object) -> int:
    """The clock-event reason bits: ``nvmlDeviceGetCurrentClocksEventReasons`` (drivers 535 and
    newer), else the older ``...ClocksThrottleReasons`` (a driver without the new symbol
    raises NVMLError_FunctionNotFound even where nvidia-ml-py has the function)."""
    newer = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if newer is not None:
        try:
            return int(newer(handle))
        except Exception:
            pass
    return int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))
