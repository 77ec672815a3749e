"""What a partition's nodes can run, and whether a job's request fits them.

Before submitting, :func:`refusals` compares each point's request (CPUs, GPUs and memory per
node, nodes, time) with the partition (``scontrol show partition``, ``scontrol show node``): a
request above every node would sit in the queue for ever (``PartitionConfig``,
``PartitionTimeLimit``, ``PartitionNodeLimit``), so the sweep is refused instead. Node states do
not count there (a drained node comes back); they count for a queued job
(:func:`benchlib.execute.slurm_pending.explain_pending`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from benchlib.execute import slurm
from benchlib.inputs.executors import SlurmExecutor

#: Node state flags of a node that runs nothing until an administrator acts.
UNAVAILABLE_FLAGS = {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "INVAL", "FUTURE"}


@dataclass(frozen=True)
class Node:
    """One node as the scheduler configures it."""

    name: str
    cpus: int
    memory_mb: int
    gpus: int
    state: str = ""
    reason: str = ""

    @property
    def unavailable(self) -> bool:
        """Down, drained or failed: it runs nothing new until an administrator acts."""
        flags = {flag.strip("*~#!%$@^-") for flag in self.state.upper().split("+")}
        return bool(flags & UNAVAILABLE_FLAGS)


@dataclass(frozen=True)
class Partition:
    """A partition's limits and its nodes."""

    name: str
    max_time_min: int | None = None
    max_nodes: int | None = None
    nodes: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Request:
    """What one job asks for: per node CPUs, GPUs, memory (MB, 0: not asked); nodes; minutes."""

    nodes: int = 1
    cpus: int = 1
    gpus: int = 0
    memory_mb: int = 0
    time_min: int = 0
    node_list: tuple[str, ...] = field(default=())

    def fits(self, node: Node) -> bool:
        """Whether ``node`` has what the job asks for on each node."""
        return (node.cpus >= self.cpus and node.gpus >= self.gpus
                and node.memory_mb >= self.memory_mb)


@dataclass(frozen=True)
class Shortfall:
    """One way a request exceeds a partition: the resource, what is asked, the most there is."""

    what: str  # cpus, gpus, memory, time, nodes, together
    asked: int
    most: int
    text: str
    partition: str = ""


# --- scontrol / sinfo text ------------------------------------------------------------------------

def fields_of(text: str) -> dict[str, str]:
    """``Key=value`` pairs of one ``scontrol`` record; ``Reason`` keeps its spaces."""
    fields = dict(re.findall(r"(\w+)=(\S*)", text))
    reason = re.search(r"\bReason=(.*?)(?=\s+\w+=|\s*$)", text, re.MULTILINE)
    if reason:
        fields["Reason"] = reason.group(1)
    return fields


def records(text: str) -> list[dict[str, str]]:
    """``scontrol -o show ...`` output: one record a line (blank-line blocks also work)."""
    blocks = text.splitlines() if "\n\n" not in text.strip() else re.split(r"\n\s*\n", text)
    return [fields for fields in map(fields_of, blocks) if fields]


def minutes(text: str) -> int | None:
    """A Slurm time (``2``, ``2:00``, ``01:00:00``, ``1-00:00:00``, ``UNLIMITED``) in whole
    minutes, rounded up; None for unlimited or unreadable."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text.strip())
    if not match:
        return None
    days, first, second, third = (int(g) if g else None for g in match.groups())
    if days is not None:  # days-hours[:minutes[:seconds]]
        seconds = ((days * 24 + first) * 60 + (second or 0)) * 60 + (third or 0)
    elif third is not None:  # hours:minutes:seconds
        seconds = (first * 60 + second) * 60 + third
    else:  # minutes[:seconds]
        seconds = first * 60 + (second or 0)
    return math.ceil(seconds / 60)


def memory_mb(text: str) -> int:
    """``23081``, ``23081M``, ``1G``, ``2T`` -> MB; 0 when absent or unreadable."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)B?", text.strip().upper())
    if not match:
        return 0
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2}[match.group(2)]
    return int(float(match.group(1)) * scale)


def gpu_count(gres: str) -> int:
    """GPUs in a GRES string: ``gpu:h100:8(S:0-1),gpu:a100:2`` -> 10, ``(null)`` -> 0."""
    return sum(int(n) for n in re.findall(r"(?:^|[,=])(?:gres[:/])?gpu(?::[^:,(]+)?:(\d+)", gres))


def number(text: str) -> int | None:
    """The leading integer of ``2``, ``2-2``, ``UNLIMITED`` (None)."""
    match = re.match(r"\d+", text or "")
    return int(match.group()) if match else None


def parse_nodes(text: str) -> list[tuple[Node, list[str]]]:
    """``scontrol -o show node`` -> each node with the partitions it belongs to."""
    nodes = []
    for fields in records(text):
        if "NodeName" not in fields:
            continue
        cpus = number(fields.get("CPUEfctv", "")) or number(fields.get("CPUTot", "")) or 0
        node = Node(fields["NodeName"], cpus, number(fields.get("RealMemory", "")) or 0,
                    gpu_count(fields.get("Gres", "")), fields.get("State", ""),
                    fields.get("Reason", ""))
        nodes.append((node, [p for p in fields.get("Partitions", "").split(",") if p]))
    return nodes


def parse_partition(name: str | None, partitions_text: str, nodes_text: str) -> Partition | None:
    """The partition ``name`` (the default one when None) from ``scontrol -o show partition``
    and ``scontrol -o show node``; None when it is not there or has no nodes listed."""
    chosen = [f for f in records(partitions_text) if "PartitionName" in f
              and (f["PartitionName"] == name if name else f.get("Default") == "YES")]
    if not chosen:
        return None
    fields = chosen[0]
    cap_cpus = number(fields.get("MaxCPUsPerNode", ""))
    cap_mem = memory_mb(fields.get("MaxMemPerNode", ""))
    nodes = []
    for node, partitions in parse_nodes(nodes_text):
        if fields["PartitionName"] in partitions:
            nodes.append(Node(node.name, min(node.cpus, cap_cpus or node.cpus),
                              min(node.memory_mb, cap_mem or node.memory_mb), node.gpus,
                              node.state, node.reason))
    if not nodes:
        return None
    return Partition(fields["PartitionName"], minutes(fields.get("MaxTime", "")),
                     number(fields.get("MaxNodes", "")), tuple(nodes))


def read_partition(name: str | None) -> Partition | None:
    """The partition as ``scontrol`` reports it now; None when scontrol cannot tell."""
    parts = slurm._run(["scontrol", "-o", "show", "partition"] + ([name] if name else []))
    nodes = slurm._run(["scontrol", "-o", "show", "node"])
    if parts is None or nodes is None or parts.returncode != 0 or nodes.returncode != 0:
        return None
    return parse_partition(name, parts.stdout, nodes.stdout)


# --- requests against a partition -----------------------------------------------------------------

def shortfalls(request: Request, partition: Partition) -> list[Shortfall]:
    """How ``request`` exceeds every node (or the limits) of ``partition``; [] when it fits."""
    name, nodes = partition.name, partition.nodes
    found = []
    for what, asked, unit in (("cpus", request.cpus, "CPUs"), ("gpus", request.gpus, "GPUs"),
                              ("memory", request.memory_mb, "MB of memory")):
        most = max(getattr(n, "memory_mb" if what == "memory" else what) for n in nodes)
        if asked > most:
            found.append(Shortfall(what, asked, most, f"{asked} {unit} per node, but the largest "
                                                      f"node of partition {name} has {most}"))
    if not found and not any(request.fits(n) for n in nodes):
        shapes = ", ".join(sorted({f"{n.cpus} CPUs + {n.gpus} GPUs + {n.memory_mb} MB" for n in nodes}))
        found.append(Shortfall("together", 0, 0, f"{request.cpus} CPUs + {request.gpus} GPUs + "
                               f"{request.memory_mb} MB on one node, but no node of partition "
                               f"{name} has them all (its nodes: {shapes})"))
    fitting = sum(request.fits(n) for n in nodes)
    most_nodes = min(fitting, partition.max_nodes or fitting)
    if not found and request.nodes > most_nodes:
        limit = (f"allows {partition.max_nodes} per job" if most_nodes == partition.max_nodes
                 else f"has {fitting} that fit{'s' if fitting == 1 else ''}")
        found.append(Shortfall("nodes", request.nodes, most_nodes,
                               f"{request.nodes} nodes, but partition {name} {limit}"))
    if partition.max_time_min and request.time_min > partition.max_time_min:
        found.append(Shortfall("time", request.time_min, partition.max_time_min,
                               f"{request.time_min} min, but partition {name} allows at most "
                               f"{partition.max_time_min} min (MaxTime)"))
    return [Shortfall(s.what, s.asked, s.most, s.text, name) for s in found]


def request_of(submitted: dict[str, Any]) -> Request:
    """The :class:`Request` of :func:`benchlib.execute.slurm.submission_parameters`' answer."""
    return Request(nodes=int(submitted["nodes"]),
                   cpus=int(submitted["cpus_per_task"]) * int(submitted.get("ntasks_per_node", 1)),
                   gpus=int(submitted.get("gpus_per_node", 0)),
                   memory_mb=int(submitted.get("mem", 0)) * 1024, time_min=int(submitted["time"]))


def advice(shortfall: Shortfall, executor: SlurmExecutor, parameters: dict[str, Any]) -> str:
    """One shortfall in the point's own settings, with the largest value that fits."""
    per_node = slurm.devices_per_node(parameters)
    devices = f"{per_node} device{'s' if per_node > 1 else ''}"
    nodes = int(parameters.get("num_nodes") or 1)
    if shortfall.what == "cpus":
        fit = shortfall.most // per_node
        change = (f"set cpus_per_device: {fit} (or --cpus-per-device {fit})" if fit
                  else f"run at most {shortfall.most} devices per node")
        return (f"cpus_per_device {executor.cpus_per_device} x {devices} = {shortfall.asked} CPUs "
                f"per node, but the largest node of partition {shortfall.partition} has "
                f"{shortfall.most}; {change}")
    if shortfall.what == "memory":
        fit = shortfall.most // 1024 // per_node
        change = f"set mem_gb_per_device: {fit}" if fit else "leave mem_gb_per_device unset"
        return (f"mem_gb_per_device {executor.mem_gb_per_device} x {devices} = "
                f"{shortfall.asked // 1024} GB per node, but the largest node of partition "
                f"{shortfall.partition} has "
                f"{shortfall.most // 1024} GB; {change}")
    if shortfall.what == "gpus":
        allreduce = int(parameters.get("allreduce_devices") or 0)
        if allreduce == shortfall.asked and allreduce > int(parameters.get("num_devices") or 1) // nodes:
            source, change = f"allreduce_devices {allreduce}", f"set allreduce_devices: {shortfall.most}"
        else:
            source = f"num_devices {parameters.get('num_devices', 1)} over {nodes} node(s)"
            change = f"set num_devices: {shortfall.most * nodes}"
        if not shortfall.most:
            change = "choose a partition with GPUs (--partition), or device: cpu"
        return (f"{shortfall.asked} GPUs per node ({source}), but the largest node of partition "
                f"{shortfall.partition} has {shortfall.most}; {change}")
    if shortfall.what == "time":
        most = shortfall.most
        return (f"time_min {shortfall.asked} is above the {most} min MaxTime of partition "
                f"{shortfall.partition}; set time_min: {most} (or --time-min {most})")
    if shortfall.what == "nodes":
        return f"num_nodes {shortfall.asked}: {shortfall.text}; set num_nodes: {shortfall.most}"
    return f"{shortfall.text}; ask for less (cpus_per_device, num_devices, mem_gb_per_device)"


def refusals(points: list, executor: SlurmExecutor, requests: dict[str, dict[str, Any]],
             partition: Partition | None, memory: bool = False) -> list[str]:
    """Why points cannot run on ``partition``: one line per distinct problem naming its points.

    ``requests`` maps point names to their submission parameters. Memory is left out unless
    ``memory``: sbatch refuses a request above every node's memory itself.
    """
    if partition is None:
        return []
    problems: dict[str, list[str]] = {}
    for point in points:
        for shortfall in shortfalls(request_of(requests[point.name]), partition):
            if (shortfall.what == "memory") == memory:
                text = advice(shortfall, executor, point.parameters)
                problems.setdefault(text, []).append(point.name)
    lines = []
    for text, names in problems.items():
        more = f" (and {len(names) - 3} more)" if len(names) > 3 else ""
        lines.append(f"point{'s' if len(names) > 1 else ''} {', '.join(names[:3])}{more}: {text}")
    return lines
