"""What else used the node during a timed loop: CPU time of other processes, swapping, GPU
processes that are not the run's.

A benchmark number taken beside other work is not the node's number. The sampler reads
``/proc`` at both ends of the timed loop:

- **CPU**: of the CPU time the run's CPUs (its affinity) spent busy, the part not spent by the
  run's own process tree (the process named by ``BENCHLIB_RUN_ROOT_PID``, set by the launcher
  for its ranks, else this process, and every descendant: loader workers, ranks). Time stolen
  by a hypervisor counts as others'. ``contention_cpu_share`` is that part over all the time
  those CPUs had (busy or idle).
- **Memory pressure**: pages swapped in and out (``/proc/vmstat``), ``contention_swap_pages``.
- **Disk reads**: bytes read from the node's local disks (``/proc/diskstats``) less those the
  run's own tree read (``/proc/<pid>/io``), ``contention_read_bytes``, and the rate they were
  read at over the loop, ``contention_read_rate`` (:mod:`benchlib.measure.node_io`: reads only,
  as writes cannot be told apart by whose they were). A user-space file system's daemon (FUSE)
  is not in the run's tree: what it reads from a local disk for the run counts as others', as
  its CPU time does.
- **Pressure stall information** (``/proc/pressure``): the share of the loop's time in which
  some task on the node waited for a CPU (``pressure_cpu_share``) or for I/O
  (``pressure_io_share``). It counts the run's own waits too (its loader workers queueing for
  a core, its reads from a slow file system), so it is recorded beside the figures above to
  read them by, never judged alone.
- **GPU**: compute processes on the run's device that are not in the run's tree (NVML), and the
  device's utilization just before the loop.

A run is ``contended`` by :data:`RULE`; :func:`reasons` says which part of it, in words.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from benchlib.measure.node_io import disk_read_bytes, leaf_disks, pressure_us, process_read_bytes
from benchlib.measure.process_tree import (
    own_tree,
    process_times,
    run_root_pid,
)

if TYPE_CHECKING:
    import torch

#: Others' share of the run's CPU time above which a run is contended (10 %).
CONTENDED_CPU_SHARE = 0.10
#: Pages swapped in + out during the loop above which a run is contended (1 MiB of 4 KiB pages).
CONTENDED_SWAP_PAGES = 256
#: Bytes others read from the local disks during the loop above which, read faster than
#: :data:`CONTENDED_READ_RATE` (bytes/s), a run is contended: another job reading a data set
#: (a quiet node reads kilobytes a second; docs/measurements.md).
CONTENDED_READ_BYTES = 64 * 2**20
CONTENDED_READ_RATE = 32 * 2**20
#: When a run is contended, in words (the flag's, the record column's and the pages' text).
RULE = (f"other processes took more than {CONTENDED_CPU_SHARE:.0%} of the run's CPU time, read "
        f"more than {CONTENDED_READ_BYTES // 2**20} MiB from the local disks at over "
        f"{CONTENDED_READ_RATE // 2**20} MiB/s, swapped more than {CONTENDED_SWAP_PAGES} pages, "
        "or shared its GPU")
#: CUDA contexts a rank holds on its own device (one process a device): where NVML lists host
#: PIDs (a container), the processes beyond these on the device are others'.
OWN_CONTEXTS = 1
PROC = Path("/proc")
SYS_BLOCK = Path("/sys/block")


@dataclass(frozen=True)
class CpuTimes:
    """Jiffies of the run's CPUs (busy and total) and of the run's own process tree."""

    busy: int
    total: int
    own: int


def _cpu_lines(stat_text: str, cpus: set[int] | None) -> tuple[int, int]:
    """(busy, total) jiffies over ``cpus`` (None: the machine's ``cpu`` line)."""
    busy = total = 0
    for line in stat_text.splitlines():
        name, *fields = line.split()
        if not name.startswith("cpu"):
            continue
        if (cpus is None and name != "cpu") or (cpus is not None and (
                name == "cpu" or int(name[3:]) not in cpus)):
            continue
        values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
        values += [0] * (8 - len(values))
        idle = values[3] + values[4]
        total += sum(values)
        busy += sum(values) - idle
    return busy, total


def _allowed_cpus() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _swap_pages(proc: Path) -> int | None:
    try:
        text = (proc / "vmstat").read_text()
    except OSError:
        return None
    values = dict(line.split() for line in text.splitlines() if line.count(" ") == 1)
    try:
        return int(values["pswpin"]) + int(values["pswpout"])
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True)
class Snapshot:
    """``/proc`` at one end of the loop: CPU jiffies, per-process times, swapped pages, the
    bytes read from the local disks and by the run's own tree, the pressure stall totals (µs),
    the clock (s)."""

    busy: int
    total: int
    processes: dict[int, tuple[int, int]]
    swap_pages: int | None
    disk_read: int | None = None
    own_read: int = 0
    pressure: dict[str, int | None] = field(default_factory=dict)
    at: float = 0.0


def snapshot(proc: Path = PROC, cpus: set[int] | None = None, root: int | None = None,
             disks: set[str] | None = None) -> Snapshot | None:
    """Read ``/proc`` (None where it cannot be read: not Linux); ``root``'s process tree gives
    the run's own reads, ``disks`` the local disks counted (:func:`leaf_disks`)."""
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        return None
    busy, total = _cpu_lines(stat, cpus)
    processes = process_times(proc)
    own = process_read_bytes(proc, own_tree(root, processes)) if root is not None else 0
    return Snapshot(busy, total, processes, _swap_pages(proc), disk_read_bytes(proc, disks), own,
                    {r: pressure_us(proc, r) for r in ("cpu", "io")}, time.monotonic())


def others_read_bytes(before: Snapshot, after: Snapshot) -> int | None:
    """Bytes others read from the local disks between two snapshots (None where unread). The
    run's own reads from a network file system are in its counters too, so they can hide
    others' local reads: the figure errs towards calm, never towards contended."""
    if before.disk_read is None or after.disk_read is None:
        return None
    read = after.disk_read - before.disk_read
    return max(read - max(after.own_read - before.own_read, 0), 0)


def pressure_share(before: Snapshot, after: Snapshot, resource: str) -> float | None:
    """The share of the time between two snapshots in which some task waited for ``resource``
    (None without PSI)."""
    start, end = before.pressure.get(resource), after.pressure.get(resource)
    seconds = after.at - before.at
    if start is None or end is None or seconds <= 0:
        return None
    return min(max((end - start) / 1e6 / seconds, 0.0), 1.0)


def others_share(before: Snapshot, after: Snapshot, root: int) -> float | None:
    """Others' share of the CPUs' time between two snapshots (None when no time passed)."""
    total = after.total - before.total
    if total <= 0:
        return None
    tree = own_tree(root, after.processes) | own_tree(root, before.processes)
    own = sum(after.processes[p][1] - before.processes.get(p, (0, 0))[1]
              for p in tree if p in after.processes)
    others = (after.busy - before.busy) - max(own, 0)
    return min(max(others / total, 0.0), 1.0)


@dataclass(frozen=True)
class Contention:
    """What the sampler found; :meth:`columns` are the record's columns."""

    cpu_share: float | None
    swap_pages: int | None
    gpu_processes: int | None
    gpu_util_before: float | None
    threads_per_process: int
    read_bytes: int | None = None
    read_rate: float | None = None  #: read_bytes over the sampler's span (bytes/s)
    cpu_pressure: float | None = None
    io_pressure: float | None = None

    @property
    def contended(self) -> bool:
        return bool(reasons(self.columns(contended=False)))

    def columns(self, contended: bool = True) -> dict[str, object]:
        found = {"contention_cpu_share": self.cpu_share,
                 "contention_swap_pages": self.swap_pages,
                 "contention_gpu_processes": self.gpu_processes,
                 "contention_gpu_util_before": self.gpu_util_before,
                 "contention_read_bytes": self.read_bytes,
                 "contention_read_rate": self.read_rate,
                 "pressure_cpu_share": self.cpu_pressure,
                 "pressure_io_share": self.io_pressure,
                 "threads_per_process": self.threads_per_process}
        return {**found, "contended": self.contended} if contended else found


def _known(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if number != number else number


def reasons(record: Mapping[str, object]) -> list[str]:
    """Why a run with these contention columns is contended (:data:`RULE`), in words
    (``others took 42 % of the CPU time``, ``others read 1,204 MiB from the local disks (95
    MiB/s)``); [] when it is not."""
    said = []
    share = _known(record.get("contention_cpu_share"))
    if share is not None and share > CONTENDED_CPU_SHARE:
        said.append(f"others took {share * 100:.0f} % of the CPU time")
    swapped = _known(record.get("contention_swap_pages"))
    if swapped is not None and swapped > CONTENDED_SWAP_PAGES:
        said.append(f"{swapped:,.0f} pages swapped")
    read, rate = (_known(record.get(f"contention_read_{c}")) for c in ("bytes", "rate"))
    if read is not None and rate is not None and read > CONTENDED_READ_BYTES \
            and rate > CONTENDED_READ_RATE:
        said.append(f"others read {read / 2**20:,.0f} MiB from the local disks "
                    f"({rate / 2**20:,.0f} MiB/s)")
    gpu = _known(record.get("contention_gpu_processes"))
    if gpu is not None and gpu > 0:
        said.append(f"{gpu:.0f} other process{'' if gpu == 1 else 'es'} on the GPU")
    return said


def _gpu_state(device: torch.device, nvml: ModuleType | None, own: set[int],
               holding: bool = False) -> tuple[int | None, float | None]:
    """(other compute processes on ``device``, its utilization %) from NVML, or Nones. While
    the run ``holding`` a CUDA context finds none of its own processes in NVML's list, NVML
    speaks of another PID namespace (a container: Docker, enroot / pyxis, Apptainer with
    ``--containall``, Kubernetes report host PIDs): the processes are then counted, the run's
    own context on the device (:data:`OWN_CONTEXTS`) taken from them, so another job on the
    GPU is still seen."""
    from benchlib.measure.telemetry import open_nvml

    opened = open_nvml(device, nvml)
    if isinstance(opened, str):
        return None, None
    nvml, handle = opened
    try:
        try:
            processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            ours = sum(1 for p in processes if p.pid in own)
            others = (max(0, len(processes) - OWN_CONTEXTS) if holding and not ours
                      else len(processes) - ours)
        except Exception:
            others = None
        try:
            util = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        except Exception:
            util = None
        return others, util
    finally:
        nvml.nvmlShutdown()


class ContentionSampler:
    """Context manager around a timed loop; :attr:`contention` is set on exit.

    ``proc`` and ``nvml`` replace ``/proc`` and pynvml in tests.
    """

    def __init__(self, device: torch.device, proc: Path = PROC, nvml: ModuleType | None = None,
                 root_pid: int | None = None, holds_context: bool | None = None,
                 sys_block: Path | None = None) -> None:
        self.device, self.proc, self.nvml = device, proc, nvml
        #: whether the run holds a CUDA context on the device when the loop ends (then NVML
        #: must list one of its processes)
        self.holds_context = device.type == "cuda" if holds_context is None else holds_context
        self.root = root_pid if root_pid is not None else run_root_pid()
        self.cpus = _allowed_cpus() if proc == PROC else None
        self.disks = leaf_disks(sys_block if sys_block is not None
                                else SYS_BLOCK if proc == PROC else proc / "sys-block")
        self.contention: Contention | None = None
        self._before: Snapshot | None = None
        self._gpu_util: float | None = None

    def __enter__(self) -> ContentionSampler:
        if self.device.type == "cuda" or self.nvml is not None:
            _, self._gpu_util = _gpu_state(self.device, self.nvml, set())
        self._before = snapshot(self.proc, self.cpus, self.root, self.disks)
        return self

    def __exit__(self, *exc: object) -> None:
        after = snapshot(self.proc, self.cpus, self.root, self.disks)
        share = swap = read = rate = None
        pressure: dict[str, float | None] = {}
        own: set[int] = {self.root}
        if self._before is not None and after is not None:
            share = others_share(self._before, after, self.root)
            read = others_read_bytes(self._before, after)
            seconds = after.at - self._before.at
            rate = read / seconds if read is not None and seconds > 0 else None
            pressure = {r: pressure_share(self._before, after, r) for r in ("cpu", "io")}
            own = own_tree(self.root, after.processes)
            if self._before.swap_pages is not None and after.swap_pages is not None:
                swap = after.swap_pages - self._before.swap_pages
        gpu_processes = None
        if self.device.type == "cuda" or self.nvml is not None:
            gpu_processes, _ = _gpu_state(self.device, self.nvml, own, self.holds_context)
        import torch

        self.contention = Contention(share, swap, gpu_processes, self._gpu_util,
                                     torch.get_num_threads(), read, rate,
                                     pressure.get("cpu"), pressure.get("io"))


def worst_contention(parts: list[Contention | None]) -> Contention | None:
    """One figure for several ranks: each column's worst (largest) value over the ranks, the
    disk reads' bytes and rate from one rank (:func:`_fastest_reads`)."""
    seen = [p for p in parts if p is not None]
    if not seen:
        return None

    def worst(values: list) -> object:
        known = [v for v in values if v is not None]
        return max(known) if known else None

    return Contention(worst([p.cpu_share for p in seen]), worst([p.swap_pages for p in seen]),
                      worst([p.gpu_processes for p in seen]),
                      worst([p.gpu_util_before for p in seen]), seen[0].threads_per_process,
                      *_fastest_reads(seen),
                      worst([p.cpu_pressure for p in seen]), worst([p.io_pressure for p in seen]))


def _fastest_reads(parts: list[Contention]) -> tuple[int | None, float | None]:
    """The read bytes and rate of one rank: one that others' reads made contended, else the
    one that saw them read fastest (a rank's bytes over another's span would judge neither)."""
    known = [p for p in parts if p.read_rate is not None]
    if not known:
        return None, None
    worst = max(known, key=lambda p: ((p.read_bytes or 0) > CONTENDED_READ_BYTES
                                      and (p.read_rate or 0.0) > CONTENDED_READ_RATE,
                                      p.read_rate or 0.0))
    return worst.read_bytes, worst.read_rate
