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
- **GPU**: compute processes on the run's device that are not in the run's tree (NVML), and the
  device's utilization just before the loop.

A run is ``contended`` when others took more than :data:`CONTENDED_CPU_SHARE` of its CPUs' time,
swapped more than :data:`CONTENDED_SWAP_PAGES` pages, or shared its GPU with another process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

#: Others' share of the run's CPU time above which a run is contended (10 %).
CONTENDED_CPU_SHARE = 0.10
#: Pages swapped in + out during the loop above which a run is contended (1 MiB of 4 KiB pages).
CONTENDED_SWAP_PAGES = 256
ROOT_PID_VARIABLE = "BENCHLIB_RUN_ROOT_PID"
#: CUDA contexts a rank holds on its own device (one process a device): where NVML lists host
#: PIDs (a container), the processes beyond these on the device are others'.
OWN_CONTEXTS = 1
PROC = Path("/proc")


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


def _process_times(proc: Path) -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, utime + stime + cutime + cstime jiffies) of every process."""
    table = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue  # the process ended meanwhile
        fields = text[text.rfind(")") + 2:].split()  # after "pid (comm) "
        try:
            table[int(entry.name)] = (int(fields[1]), sum(int(v) for v in fields[11:15]))
        except (IndexError, ValueError):
            continue
    return table


def own_tree(root: int, table: dict[int, tuple[int, int]]) -> set[int]:
    """``root`` and its descendants in a pid -> (ppid, time) table."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo.extend(children.get(pid, []))
    return tree


def run_root_pid() -> int:
    """The root of the run's process tree: the launcher's notebook kernel for ranks, else us."""
    try:
        return int(os.environ.get(ROOT_PID_VARIABLE, ""))
    except ValueError:
        return os.getpid()


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
    """``/proc`` at one end of the loop: CPU jiffies, per-process times, swapped pages."""

    busy: int
    total: int
    processes: dict[int, tuple[int, int]]
    swap_pages: int | None


def snapshot(proc: Path = PROC, cpus: set[int] | None = None) -> Snapshot | None:
    """Read ``/proc`` (None where it cannot be read: not Linux)."""
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        return None
    busy, total = _cpu_lines(stat, cpus)
    return Snapshot(busy, total, _process_times(proc), _swap_pages(proc))


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

    @property
    def contended(self) -> bool:
        return bool((self.cpu_share or 0) > CONTENDED_CPU_SHARE
                    or (self.swap_pages or 0) > CONTENDED_SWAP_PAGES
                    or (self.gpu_processes or 0) > 0)

    def columns(self) -> dict[str, object]:
        return {"contention_cpu_share": self.cpu_share,
                "contention_swap_pages": self.swap_pages,
                "contention_gpu_processes": self.gpu_processes,
                "contention_gpu_util_before": self.gpu_util_before,
                "contended": self.contended,
                "threads_per_process": self.threads_per_process}


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
                 root_pid: int | None = None, holds_context: bool | None = None) -> None:
        self.device, self.proc, self.nvml = device, proc, nvml
        #: whether the run holds a CUDA context on the device when the loop ends (then NVML
        #: must list one of its processes)
        self.holds_context = device.type == "cuda" if holds_context is None else holds_context
        self.root = root_pid if root_pid is not None else run_root_pid()
        self.cpus = _allowed_cpus() if proc == PROC else None
        self.contention: Contention | None = None
        self._before: Snapshot | None = None
        self._gpu_util: float | None = None

    def __enter__(self) -> ContentionSampler:
        if self.device.type == "cuda" or self.nvml is not None:
            _, self._gpu_util = _gpu_state(self.device, self.nvml, set())
        self._before = snapshot(self.proc, self.cpus)
        return self

    def __exit__(self, *exc: object) -> None:
        after = snapshot(self.proc, self.cpus)
        share = swap = None
        own: set[int] = {self.root}
        if self._before is not None and after is not None:
            share = others_share(self._before, after, self.root)
            own = own_tree(self.root, after.processes)
            if self._before.swap_pages is not None and after.swap_pages is not None:
                swap = after.swap_pages - self._before.swap_pages
        gpu_processes = None
        if self.device.type == "cuda" or self.nvml is not None:
            gpu_processes, _ = _gpu_state(self.device, self.nvml, own, self.holds_context)
        import torch

        self.contention = Contention(share, swap, gpu_processes, self._gpu_util,
                                     torch.get_num_threads())


def worst_contention(parts: list[Contention | None]) -> Contention | None:
    """One figure for several ranks: each column's worst (largest) value over the ranks."""
    seen = [p for p in parts if p is not None]
    if not seen:
        return None

    def worst(values: list) -> object:
        known = [v for v in values if v is not None]
        return max(known) if known else None

    return Contention(worst([p.cpu_share for p in seen]), worst([p.swap_pages for p in seen]),
                      worst([p.gpu_processes for p in seen]),
                      worst([p.gpu_util_before for p in seen]), seen[0].threads_per_process)
