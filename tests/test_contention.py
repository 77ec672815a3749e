"""Contention: other processes' CPU time, swapping and GPU processes beside a run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from benchlib.kinds.classification import workload as classification
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.record import make_record
from benchlib.measure.contention import (
    CONTENDED_CPU_SHARE,
    Contention,
    ContentionSampler,
    others_share,
    snapshot,
    worst_contention,
)
from benchlib.measure.process_tree import own_tree


class FakeProc:
    """A /proc with one CPU line, processes (pid -> ppid, jiffies) and vmstat swap counters."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write(self, busy: int, idle: int, processes: dict[int, tuple[int, int]],
              swapped: int = 0) -> None:
        (self.root / "stat").write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0\n")
        (self.root / "vmstat").write_text(f"nr_free_pages 1\npswpin {swapped}\npswpout 0\n")
        for entry in self.root.iterdir():
            if entry.name.isdigit() and int(entry.name) not in processes:
                (entry / "stat").unlink()
                entry.rmdir()
        for pid, (ppid, jiffies) in processes.items():
            folder = self.root / str(pid)
            folder.mkdir(exist_ok=True)
            fields = ["S", str(ppid)] + ["0"] * 9 + [str(jiffies), "0", "0", "0"] + ["0"] * 30
            (folder / "stat").write_text(f"{pid} (a (weird) name) " + " ".join(fields))


@contextlib.contextmanager
def _sampled(proc: FakeProc, before: dict, after: dict, **kwargs):
    proc.write(*before["cpu"], before["processes"], before.get("swap", 0))
    with ContentionSampler(torch.device("cpu"), proc=proc.root, root_pid=100, **kwargs) as sampler:
        proc.write(*after["cpu"], after["processes"], after.get("swap", 0))
    yield sampler.contention


def test_a_quiet_run_is_not_contended(tmp_path):
    # the run (100) and its loader worker (101) took all 190 busy jiffies of 200
    with _sampled(FakeProc(tmp_path), {"cpu": (0, 0), "processes": {100: (1, 0), 101: (100, 0)}},
                  {"cpu": (190, 10), "processes": {100: (1, 120), 101: (100, 70)}}) as seen:
        assert seen.cpu_share == 0.0 and seen.swap_pages == 0
        assert not seen.contended


def test_another_process_taking_cpu_time_is_contention(tmp_path):
    # 999 (not in the run's tree) took 80 of the 200 jiffies
    with _sampled(FakeProc(tmp_path), {"cpu": (0, 0), "processes": {100: (1, 0), 999: (1, 0)}},
                  {"cpu": (180, 20), "processes": {100: (1, 100), 999: (1, 80)}}) as seen:
        assert seen.cpu_share == pytest.approx(0.40)
        assert seen.contended and seen.cpu_share > CONTENDED_CPU_SHARE


def test_swapping_is_contention(tmp_path):
    with _sampled(FakeProc(tmp_path), {"cpu": (0, 0), "processes": {100: (1, 0)}},
                  {"cpu": (100, 100), "processes": {100: (1, 100)}, "swap": 5000}) as seen:
        assert seen.swap_pages == 5000 and seen.contended


class FakeNVML:
    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return "gpu0"

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list:
        return [SimpleNamespace(pid=p, usedGpuMemory=1 << 30) for p in self.pids]

    def nvmlDeviceGetUtilizationRates(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(gpu=87, memory=30)


def test_other_gpu_processes_are_counted_but_not_the_runs_own(tmp_path):
    processes = {100: (1, 10), 101: (100, 0), 4242: (1, 0)}
    with _sampled(FakeProc(tmp_path), {"cpu": (0, 0), "processes": processes},
                  {"cpu": (10, 90), "processes": processes},
                  nvml=FakeNVML([100, 101, 4242])) as seen:
        assert seen.gpu_processes == 1  # 4242; 100 and its child 101 are the run
        assert seen.gpu_util_before == 87.0
        assert seen.contended


def test_in_a_container_nvml_speaks_of_host_pids_so_other_processes_are_counted(tmp_path):
    """Docker, enroot / pyxis, Apptainer --containall, Kubernetes: NVML lists host PIDs, so
    the run's own process (which holds a context) is missing from its list: the processes are
    counted, the run's own context taken from them: never "contended" for the run's own
    process under another PID, and another job on the GPU is still seen (it was unknown)."""
    processes = {100: (1, 10), 101: (100, 0)}
    with _sampled(FakeProc(tmp_path), {"cpu": (0, 0), "processes": processes},
                  {"cpu": (10, 90), "processes": processes},
                  nvml=FakeNVML([731_224]), holds_context=True) as seen:
        assert seen.gpu_processes == 0 and not seen.contended
    with _sampled(FakeProc(tmp_path), {"cpu": (0, 0), "processes": processes},
                  {"cpu": (10, 90), "processes": processes},
                  nvml=FakeNVML([731_224, 731_990]), holds_context=True) as seen:
        assert seen.gpu_processes == 1 and seen.contended  # another job's context
    with _sampled(FakeProc(tmp_path), {"cpu": (0, 0), "processes": processes},
                  {"cpu": (10, 90), "processes": processes},
                  nvml=FakeNVML([100, 4242]), holds_context=True) as seen:
        assert seen.gpu_processes == 1 and seen.contended  # ours listed: 4242 is another


def test_own_tree_follows_descendants_only():
    table = {1: (0, 0), 100: (1, 0), 101: (100, 0), 102: (101, 0), 200: (1, 0)}
    assert own_tree(100, table) == {100, 101, 102}


def test_ranks_merge_to_the_worst():
    a = Contention(0.05, 0, None, None, 4)
    b = Contention(0.30, 10, None, None, 4)
    assert worst_contention([a, b, None]) == Contention(0.30, 10, None, None, 4)
    assert worst_contention([None]) is None


def _busy_outside_the_run(count: int) -> list[int]:
    """Busy loops re-parented to init (a shell starts them and exits): not the run's tree."""
    script = f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"
    return [int(subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                               check=True).stdout) for _ in range(count)]


def _cpus() -> int:
    return min(len(os.sched_getaffinity(0)), 8)


def _until_running(pids: list[int], limit_s: float = 30.0) -> None:
    """Wait until every process in ``pids`` has used CPU time (its loop is running), so the
    measured window holds their load rather than their start-up."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        seen = snapshot()
        if seen is not None and all(seen.processes.get(p, (0, 0))[1] > 0 for p in pids):
            time.sleep(0.3)
            return
        time.sleep(0.1)


@pytest.mark.slow
def test_a_busy_process_beside_a_real_run_is_flagged_and_the_runs_own_workers_are_not():
    config = ClassificationConfig(benchmark="train", model="resnet18", image_size=32,
                                  batch_size=4, iterations=4, warmup=1, num_classes=10,
                                  num_workers=0, device="cpu")
    pids = _busy_outside_the_run(_cpus())
    try:
        time.sleep(0.3)
        busy = make_record(config, classification.run(config), {})
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
    assert busy["contended"] is True and busy["contention_cpu_share"] > 0.3, busy
    assert busy["threads_per_process"] == torch.get_num_threads() >= 1

    # the same load as the run's own descendants is the run's, not contention: seen from the
    # run's root it is own time; seen from another process's tree the same seconds are others'
    # four loops per CPU: their share stays well above other load on a shared machine
    own = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4 * _cpus())]
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        _until_running([p.pid for p in own])  # Python starts slowly on a loaded machine
        before = snapshot()
        time.sleep(2.0)
        after = snapshot()
    finally:
        for process in [*own, stranger]:
            process.kill()
    as_run = others_share(before, after, os.getpid())
    as_stranger = others_share(before, after, stranger.pid)
    assert as_stranger - as_run > 0.15, (as_run, as_stranger)
