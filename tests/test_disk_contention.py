"""Contention on the node's local disks and the pressure stall figures beside a run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchlib.measure.contention import (
    CONTENDED_IO_BYTES,
    CONTENDED_IO_RATE,
    Contention,
    ContentionSampler,
    others_io_bytes,
    reasons,
    snapshot,
)
from benchlib.measure.node_io import disk_bytes, leaf_disks, pressure_us, process_io_bytes
from benchlib.records.hand_run import result_line

MIB = 2**20


def _block(root: Path, names: dict[str, list[str]]) -> Path:
    """A /sys/block whose devices have these slaves."""
    for name, slaves in names.items():
        (root / name / "slaves").mkdir(parents=True)
        for slave in slaves:
            (root / name / "slaves" / slave).touch()
    return root


def test_only_leaf_disks_are_counted(tmp_path):
    block = _block(tmp_path / "block", {"sda": [], "nvme0n1": [], "dm-0": ["nvme0n1"],
                                        "md0": ["sda"], "loop3": [], "zram0": [], "ram1": []})
    assert leaf_disks(block) == {"sda", "nvme0n1"}
    assert leaf_disks(tmp_path / "absent") is None
    (tmp_path / "diskstats").write_text(
        "   8       0 sda 10 0 2048 5 3 0 4096 7 0 9 12 0 0 0 0\n"
        "   8       1 sda1 10 0 2048 5 3 0 4096 7 0 9 12 0 0 0 0\n"  # a partition: counted in sda
        " 253       0 dm-0 1 0 999999 1 1 0 999999 1 0 1 1 0 0 0 0\n"
        " 259       0 nvme0n1 1 0 8 1 1 0 8 1 0 1 1\n")
    assert disk_bytes(tmp_path, leaf_disks(block)) == (2048 + 4096 + 8 + 8) * 512
    assert disk_bytes(tmp_path, None) is None


def test_process_bytes_and_pressure_are_read(tmp_path):
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "io").write_text("rchar: 99999\nwchar: 5\nread_bytes: 4096\n"
                                        "write_bytes: 8192\ncancelled_write_bytes: 0\n")
    assert process_io_bytes(tmp_path, [7, 8]) == 4096 + 8192  # 8 ended: 0
    (tmp_path / "pressure").mkdir()
    (tmp_path / "pressure" / "io").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=1500\n"
                                              "full avg10=0.00 avg60=0.00 avg300=0.00 total=9\n")
    assert pressure_us(tmp_path, "io") == 1500
    assert pressure_us(tmp_path, "cpu") is None


def _fake(root: Path, disk_sectors: int, own_bytes: int, cpu_us: int, io_us: int) -> None:
    root.mkdir(exist_ok=True)
    (root / "stat").write_text("cpu  100 0 0 100 0 0 0 0\n")
    (root / "diskstats").write_text(f" 254 0 vda 1 0 {disk_sectors} 1 1 0 0 1 0 1 1\n")
    (root / "100").mkdir(exist_ok=True)
    fields = ["S", "1"] + ["0"] * 9 + ["5", "0", "0", "0"] + ["0"] * 30
    (root / "100" / "stat").write_text("100 (python) " + " ".join(fields))
    (root / "100" / "io").write_text(f"read_bytes: {own_bytes}\nwrite_bytes: 0\n")
    (root / "pressure").mkdir(exist_ok=True)
    (root / "pressure" / "cpu").write_text(f"some avg10=0 avg60=0 avg300=0 total={cpu_us}\n")
    (root / "pressure" / "io").write_text(f"some avg10=0 avg60=0 avg300=0 total={io_us}\n")


def test_others_disk_bytes_are_the_disks_less_the_runs_own(tmp_path):
    proc, block = tmp_path / "proc", _block(tmp_path / "block", {"vda": []})
    _fake(proc, 0, 0, 0, 0)
    with ContentionSampler(torch.device("cpu"), proc=proc, root_pid=100,
                           sys_block=block) as sampler:
        # the disks moved 600 MiB, the run read 100 MiB of them
        _fake(proc, 600 * MIB // 512, 100 * MIB, 0, 0)
    seen = sampler.contention
    assert seen.io_bytes == 500 * MIB
    assert seen.contended  # 500 MiB in a few milliseconds
    assert seen.columns()["contention_io_bytes"] == 500 * MIB
    # the run's own reads alone are no contention
    _fake(proc, 0, 0, 0, 0)
    with ContentionSampler(torch.device("cpu"), proc=proc, root_pid=100,
                           sys_block=block) as sampler:
        _fake(proc, 600 * MIB // 512, 600 * MIB, 0, 0)
    assert sampler.contention.io_bytes == 0 and not sampler.contention.contended


def test_disk_contention_needs_both_the_amount_and_the_rate():
    def of(moved: int, seconds: float) -> bool:
        return Contention(0.0, 0, None, None, 1, moved, seconds).contended

    assert of(CONTENDED_IO_BYTES * 4, 1.0)
    assert not of(CONTENDED_IO_BYTES // 2, 0.1)  # a fast but small burst (a log flush)
    assert not of(CONTENDED_IO_BYTES * 4, CONTENDED_IO_BYTES * 4 / CONTENDED_IO_RATE * 2)
    assert not of(None, 1.0) and not of(CONTENDED_IO_BYTES * 4, None)


def test_the_reason_says_which_disturbance_and_the_run_page_line_says_it():
    record = {"contention_cpu_share": 0.02, "contention_io_bytes": 1200 * MIB,
              "wall_time_s": 8.0, "contended": True}
    assert reasons(record) == ["others moved 1,200 MiB on the local disks (150 MiB/s)"]
    both = {**record, "contention_cpu_share": 0.42, "contention_gpu_processes": 1}
    assert reasons(both) == ["others took 42 % of the CPU time",
                             "others moved 1,200 MiB on the local disks (150 MiB/s)",
                             "1 other process on the GPU"]
    line = result_line({"benchmark": "train", "throughput": 100.0, "unit": "images/s",
                         "iterations": 50, "time_iteration_s": 0.1, **record,
                         "flags": "contended"})
    assert "contended (others moved 1,200 MiB on the local disks (150 MiB/s))" in line


def test_pressure_shares_come_from_the_psi_totals(tmp_path):
    proc, block = tmp_path / "proc", _block(tmp_path / "block", {"vda": []})
    _fake(proc, 0, 0, 0, 0)
    with ContentionSampler(torch.device("cpu"), proc=proc, root_pid=100,
                           sys_block=block) as sampler:
        _fake(proc, 0, 0, 10**9, 10**9)  # 1,000 s of waiting in a short window: capped at 1
    seen = sampler.contention
    assert seen.cpu_pressure == 1.0 and seen.io_pressure == 1.0
    assert not seen.contended  # pressure is read beside the others, never judged alone
    assert seen.columns()["pressure_io_share"] == 1.0


def _filesystem(path: Path) -> str:
    best, kind = "", ""
    for line in Path("/proc/mounts").read_text().splitlines():
        _, mount, fstype, *_ = line.split()
        if str(path).startswith(mount) and len(mount) > len(best):
            best, kind = mount, fstype
    return kind


@pytest.mark.skipif(not Path("/proc/diskstats").exists(), reason="needs Linux's /proc")
def test_a_real_process_writing_to_disk_is_others_io_unless_it_is_the_runs(tmp_path):
    if _filesystem(tmp_path) in ("tmpfs", "ramfs"):
        pytest.skip("the temporary folder is in memory: no disk to see")
    disks = leaf_disks(Path("/sys/block"))
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        me, other = os.getpid(), stranger.pid
        before = {root: snapshot(root=root, disks=disks) for root in (me, other)}
        script = ("import os, sys\nwith open(sys.argv[1], 'wb') as f:\n"
                  "    for _ in range(128): f.write(os.urandom(2**20))\n"
                  "    f.flush(); os.fsync(f.fileno())\n")
        subprocess.run([sys.executable, "-c", script, str(tmp_path / "blob")], check=True)
        after = {root: snapshot(root=root, disks=disks) for root in (me, other)}
    finally:
        stranger.kill()
        stranger.wait()
    as_run = others_io_bytes(before[me], after[me])
    as_stranger = others_io_bytes(before[other], after[other])
    assert as_stranger >= 120 * MIB  # the writer is not the stranger's: others' bytes
    assert as_run < as_stranger - 100 * MIB  # the writer was this process's child: its own
