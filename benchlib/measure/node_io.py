"""Node-wide counters read beside the CPU times: bytes read from the node's local disks
(``/proc/diskstats``), the bytes a process tree read from storage (``/proc/<pid>/io``), and Linux
pressure stall information (``/proc/pressure/{cpu,io}``).

Reads only: a write reaches the disk when the kernel writes the page back, often after the loop
that dirtied it and as a kernel thread's work, while ``/proc/<pid>/io`` counts it when the page
was dirtied, so no window can tell whose writes the disks did. A read is counted on both sides
when it is issued. The disks counted are the leaves of the block-device tree (``/sys/block``
entries with no ``slaves``: ``sda``, ``nvme0n1``, ``vda``), never loop, RAM or zram devices nor
NVMe multipath's hidden path devices, so a read through a partition, a device-mapper or an md
device above them is counted once. Network file systems (NFS, Lustre, GPFS) read nothing from
local disks and are not seen here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

#: Bytes in a sector of ``/proc/diskstats`` (always 512, whatever the device's own).
SECTOR = 512
#: Block devices that are no disk: their traffic is other devices' (loop) or memory's.
NOT_DISKS = ("loop", "ram", "zram")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def leaf_disks(sys_block: Path) -> set[str] | None:
    """The names of the node's leaf disks under ``sys_block`` (None where it cannot be read or
    holds none: a sandbox)."""
    try:
        entries = list(sys_block.iterdir())
    except OSError:
        return None
    leaves = set()
    for entry in entries:
        if entry.name.startswith(NOT_DISKS) or _read(entry / "hidden") == "1":
            continue  # a hidden NVMe path device: its head counts the same reads
        try:
            has_slaves = any((entry / "slaves").iterdir())
        except OSError:
            has_slaves = False  # no slaves folder: a plain disk
        if not has_slaves:
            leaves.add(entry.name)
    return leaves or None


def disk_read_bytes(proc: Path, disks: set[str] | None) -> int | None:
    """Bytes read so far from ``disks`` (``/proc/diskstats``; None where unread)."""
    if not disks:
        return None
    try:
        text = (proc / "diskstats").read_text()
    except OSError:
        return None
    read = 0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[2] in disks:
            try:
                read += int(fields[5]) * SECTOR
            except ValueError:
                continue
    return read


def process_read_bytes(proc: Path, pids: Iterable[int]) -> int:
    """Bytes the processes ``pids`` caused to be read from storage so far (``read_bytes`` of
    ``/proc/<pid>/io``; a process's reaped children are in its own counters); a process that
    ended or cannot be read counts 0."""
    total = 0
    for pid in pids:
        for line in _read(proc / str(pid) / "io").splitlines():
            name, _, value = line.partition(":")
            if name == "read_bytes":
                try:
                    total += int(value)
                except ValueError:
                    continue
    return total


def pressure_us(proc: Path, resource: str) -> int | None:
    """Microseconds so far in which some task on the node waited for ``resource`` (``cpu``,
    ``io``): the ``some`` line's ``total`` of ``/proc/pressure/<resource>`` (None without PSI)."""
    for line in _read(proc / "pressure" / resource).splitlines():
        if line.startswith("some "):
            for part in line.split()[1:]:
                key, _, value = part.partition("=")
                if key == "total":
                    try:
                        return int(value)
                    except ValueError:
                        return None
    return None
