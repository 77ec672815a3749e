"""Contention on the node's local disks and the pressure stall figures beside a run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchlib.measure.contention import (
    CONTENDED_READ_BYTES,
    CONTENDED_READ_RATE,
    RULE,
    Contention,
    ContentionSampler,
    others_read_bytes,
    reasons,
    snapshot,
    worst_contention,
)
from benchlib.measure.node_io import (
    disk_read_bytes,
    leaf_disks,
    pressure_us,
    process_read_bytes,
)
from benchlib.records import flags
from benchlib.records.hand_run import result_line

MIB = 2**20


def _block(root: Path, names: dict[str, list[str]], hidden: tuple[str, ...] = ()) -> Path:
    """A /sys/block whose devices have these slaves (``hidden``: NVMe multipath's paths)."""
    for name, slaves in names.items():
        (root / name / "slaves").mkdir(parents=True)
        for slave in slaves:
            (root / name / "slaves" / slave).touch()
        (root / name / "hidden").write_text("1\n" if name in hidden else "0\n")
    return root


def test_only_leaf_disks_are_counted_and_reads_only(tmp_path):
    block = _block(tmp_path / "block", {"sda": [], "nvme0n1": [], "nvme0c0n1": [],
                                        "dm-0": ["nvme0n1"], "md0": ["sda"], "loop3": [],
                                        "zram0": [], "ram1": []}, hidden=("nvme0c0n1",))
    assert leaf_disks(block) == {"sda", "nvme0n1"}
    assert leaf_disks(tmp_path / "absent") is None
    (tmp_path / "empty").mkdir()
    assert leaf_disks(tmp_path / "empty") is None  # a sandbox's: not measured, never 0
    (tmp_path / "diskstats").write_text(
        "   8       0 sda 10 0 2048 5 3 0 4096 7 0 9 12 0 0 0 0\n"
        "   8       1 sda1 10 0 2048 5 3 0 4096 7 0 9 12 0 0 0 0\n"  # a partition: in sda
        " 253       0 dm-0 1 0 999999 1 1 0 999999 1 0 1 1 0 0 0 0\n"
        " 259       1 nvme0c0n1 1 0 999999 1 1 0 8 1 0 1 1\n"  # a hidden path: in its head
        " 259       0 nvme0n1 1 0 8 1 1 0 8 1 0 1 1\n")
    assert disk_read_bytes(tmp_path, leaf_disks(block)) == (2048 + 8) * 512  # written: not
    assert disk_read_bytes(tmp_path, None) is None


def test_process_reads_and_pressure_are_read(tmp_path):
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "io").write_text("rchar: 99999\nwchar: 5\nread_bytes: 4096\n"
                                        "write_bytes: 8192\ncancelled_write_bytes: 0\n")
    assert process_read_bytes(tmp_path, [7, 8]) == 4096  # 8 ended: 0
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


def test_others_reads_are_the_disks_reads_less_the_runs_own(tmp_path):
    proc, block = tmp_path / "proc", _block(tmp_path / "block", {"vda": []})
    _fake(proc, 0, 0, 0, 0)
    with ContentionSampler(torch.device("cpu"), proc=proc, root_pid=100,
                           sys_block=block) as sampler:
        # the disks read 600 MiB, the run 100 MiB of them
        _fake(proc, 600 * MIB // 512, 100 * MIB, 0, 0)
    seen = sampler.contention
    assert seen.read_bytes == 500 * MIB and seen.read_rate > CONTENDED_READ_RATE
    assert seen.contended  # 500 MiB in a few milliseconds
    assert seen.columns()["contention_read_bytes"] == 500 * MIB
    # the run's own reads alone are no contention
    _fake(proc, 0, 0, 0, 0)
    with ContentionSampler(torch.device("cpu"), proc=proc, root_pid=100,
                           sys_block=block) as sampler:
        _fake(proc, 600 * MIB // 512, 600 * MIB, 0, 0)
    assert sampler.contention.read_bytes == 0 and not sampler.contention.contended


def test_disk_contention_needs_both_the_amount_and_the_rate():
    def of(read: int | None, rate: float | None) -> bool:
        return Contention(0.0, 0, None, None, 1, read, rate).contended

    assert of(CONTENDED_READ_BYTES * 4, CONTENDED_READ_RATE * 2)
    assert not of(CONTENDED_READ_BYTES // 2, CONTENDED_READ_RATE * 10)  # a fast small burst
    assert not of(CONTENDED_READ_BYTES * 4, CONTENDED_READ_RATE / 2)  # much, but slowly
    assert not of(None, CONTENDED_READ_RATE * 2) and not of(CONTENDED_READ_BYTES * 4, None)


def test_merged_ranks_keep_a_rank_that_others_reads_made_contended():
    slow_rank = Contention(0.0, 0, None, None, 1, 500 * MIB, 50 * MIB)  # contended
    fast_small = Contention(0.0, 0, None, None, 1, 10 * MIB, 100 * MIB)  # faster, too small
    merged = worst_contention([fast_small, slow_rank, None])
    assert (merged.read_bytes, merged.read_rate) == (500 * MIB, 50 * MIB) and merged.contended
    assert worst_contention([fast_small]).read_rate == 100 * MIB


def test_the_reason_says_which_disturbance_and_the_run_page_line_says_it():
    record = {"contention_cpu_share": 0.02, "contention_read_bytes": 1200 * MIB,
              "contention_read_rate": 150 * MIB, "wall_time_s": 8.0, "contended": True}
    assert reasons(record) == ["others read 1,200 MiB from the local disks (150 MiB/s)"]
    both = {**record, "contention_cpu_share": 0.42, "contention_gpu_processes": 1}
    assert reasons(both) == ["others took 42 % of the CPU time",
                             "others read 1,200 MiB from the local disks (150 MiB/s)",
                             "1 other process on the GPU"]
    line = result_line({"benchmark": "train", "throughput": 100.0, "unit": "images/s",
                        "iterations": 50, "time_iteration_s": 0.1, **record,
                        "flags": "contended"})
    assert "contended (others read 1,200 MiB from the local disks (150 MiB/s))" in line
    assert flags.FLAGS["contended"].startswith(RULE)  # one wording of the rule


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


READER = """import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # not from the page cache: from the disk
while os.read(fd, 2**20):
    pass
"""


@pytest.mark.skipif(not Path("/proc/diskstats").exists(), reason="needs Linux's /proc")
def test_a_real_process_reading_the_disk_is_others_unless_it_is_the_runs(tmp_path):
    if _filesystem(tmp_path) in ("tmpfs", "ramfs"):
        pytest.skip("the temporary folder is in memory: no disk to see")
    blob = tmp_path / "blob"
    with open(blob, "wb") as f:
        for _ in range(96):
            f.write(os.urandom(MIB))
        f.flush()
        os.fsync(f.fileno())  # clean pages, so that the reader can drop them from the cache
    disks = leaf_disks(Path("/sys/block"))
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        me, other = os.getpid(), stranger.pid
        before = {root: snapshot(root=root, disks=disks) for root in (me, other)}
        subprocess.run([sys.executable, "-c", READER, str(blob)], check=True)
        after = {root: snapshot(root=root, disks=disks) for root in (me, other)}
    finally:
        stranger.kill()
        stranger.wait()
    as_run = others_read_bytes(before[me], after[me])
    as_stranger = others_read_bytes(before[other], after[other])
    assert as_stranger >= 90 * MIB  # the reader is not the stranger's: others' bytes
    assert as_run < as_stranger - 80 * MIB  # the reader was this process's child: its own
