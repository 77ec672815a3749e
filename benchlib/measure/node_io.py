"""Node-wide counters read beside the CPU times: traffic on the node's local disks
(``/proc/diskstats``), the bytes a process tree moved to and from storage (``/proc/<pid>/io``),
and Linux pressure stall information (``/proc/pressure/{cpu,io}``).

The disks counted are the leaves of the block-device tree (``/sys/block`` entries with no
``slaves``: ``sda``, ``nvme0n1``, ``vda``), never loop, RAM or zram devices, so a byte on a
partition, a device-mapper or an md device above them is counted once. Network file systems
(NFS, Lustre, GPFS) move no bytes on local disks and are not seen here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

#: Bytes in a sector of ``/proc/diskstats`` (always 512, whatever the device's own).
SECTOR = 512
#: Block devices that are no disk: their traffic is other devices' (loop) or memory's.
NOT_DISKS = ("loop", "ram", "zram")


def leaf_disks(sys_block: Path) -> set[str] | None:
    """The names of the node's leaf disks under ``sys_block`` (None where it cannot be read)."""
    try:
        entries = list(sys_block.iterdir())
    except OSError:
        return None
    leaves = set()
    for entry in entries:
        if entry.name.startswith(NOT_DISKS):
            continue
        try:
            has_slaves = any((entry / "slaves").iterdir())
        except OSError:
            has_slaves = False  # no slaves folder: a plain disk
        if not has_slaves:
            leaves.add(entry.name)
    return leaves


def disk_bytes(proc: Path, disks: set[str] | None) -> int | None:
    """Bytes read and written so far on ``disks`` (``/proc/diskstats``; None where unread)."""
    if disks is None:
        return None
    try:
        text = (proc / "diskstats").read_text()
    except OSError:
        return None
    moved = 0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 10 and fields[2] in disks:
            try:
                moved += (int(fields[5]) + int(fields[9])) * SECTOR
            except ValueError:
                continue
    return moved


def process_io_bytes(proc: Path, pids: Iterable[int]) -> int:
    """Bytes the processes ``pids`` caused to be read from and written to storage so far
    (``read_bytes`` + ``write_bytes`` of ``/proc/<pid>/io``; a process's reaped children are
    in its own counters); a process that ended or cannot be read counts 0."""
    total = 0
    for pid in pids:
        try:
            text = (proc / str(pid) / "io").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name in ("read_bytes", "write_bytes"):
                try:
                    total += int(value)
                except ValueError:
                    continue
    return total


def pressure_us(proc: Path, resource: str) -> int | None:
    """Microseconds so far in which some task on the node waited for ``resource`` (``cpu``,
    ``io``): the ``some`` line's ``total`` of ``/proc/pressure/<resource>`` (None without PSI)."""
    try:
        text = (proc / "pressure" / resource).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("some "):
            for part in line.split()[1:]:
                key, _, value = part.partition("=")
                if key == "total":
                    try:
                        return int(value)
                    except ValueError:
                        return None
    return None
