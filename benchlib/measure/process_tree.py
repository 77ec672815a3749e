"""The run's own processes: the root of its process tree (the launcher's notebook kernel for
torchrun's ranks, named by ``BENCHLIB_RUN_ROOT_PID``), its descendants, and each process's CPU
time, read from ``/proc`` (:mod:`benchlib.measure.contention` counts the rest as others')."""

from __future__ import annotations

import os
import socket
from pathlib import Path

ROOT_PID_VARIABLE = "BENCHLIB_RUN_ROOT_PID"
#: The host the launcher's pid is on: a rank on another host never takes that number as its own.
ROOT_HOST_VARIABLE = "BENCHLIB_RUN_ROOT_HOST"
PROC = Path("/proc")


def process_times(proc: Path) -> dict[int, tuple[int, int]]:
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


def ancestors(pid: int, proc: Path = PROC) -> list[int]:
    """``pid``'s parent, its parent's, ... up to the first process (as ``/proc`` says)."""
    found: list[int] = []
    while pid > 1 and len(found) < 256:
        try:
            text = (proc / str(pid) / "stat").read_text()
            pid = int(text[text.rfind(")") + 2:].split()[1])
        except (OSError, IndexError, ValueError):
            break
        found.append(pid)
    return found


def run_root_pid(proc: Path = PROC) -> int:
    """The root of the run's process tree: the launcher's notebook kernel for ranks, else us.
    A rank the launcher's process is no ancestor of (``srun`` starts each node's torchrun
    agent under ``slurmstepd``; on another node the number is another machine's process) roots
    it at its agent, its parent: the node's ranks are then the run, as on the launcher's node.
    On another host than the launcher's (:data:`ROOT_HOST_VARIABLE`) the number is never taken,
    even where it names an ancestor (pid 1 of a container)."""
    try:
        named = int(os.environ.get(ROOT_PID_VARIABLE, ""))
    except ValueError:
        return os.getpid()
    elsewhere = os.environ.get(ROOT_HOST_VARIABLE, socket.gethostname()) != socket.gethostname()
    if not elsewhere and (named == os.getpid() or named in ancestors(os.getpid(), proc)):
        return named
    return os.getppid() if "LOCAL_RANK" in os.environ else os.getpid()
