"""Which pending reasons mean Slurm will never start a job, and what to change
(:func:`explain_pending`, :func:`never_starts`).

Pending reasons, decided as follows (:data:`NEVER_STARTS`, :data:`NEVER_STARTS_PATTERN`):

* never starts: ``PartitionConfig``, ``PartitionTimeLimit``, ``PartitionNodeLimit``,
  ``InvalidAccount``, ``InvalidQOS``, ``BadConstraints``, ``DependencyNeverSatisfied``, a QOS or
  association limit on a single job (``QOSMax...PerJob...``, ``QOSMax...PerNode...``,
  ``AssocMax...PerJob...``, ``AssocMax...PerNode...``, ``QOSMin...``): the job asks for more than
  it may, whatever else runs; and ``ReqNodeNotAvail`` / ``Nodes required for job are DOWN,
  DRAINED ...`` when the nodes it names, or too many of the partition's nodes that fit it, are
  down, drained or failed (node states from :mod:`benchlib.execute.slurm_limits`).
* waits: everything else, e.g. ``Resources``, ``Priority``, ``BeginTime``, ``Dependency``,
  ``Licenses``, ``Reservation``, ``PartitionDown``, held jobs, limits on what a user, account or
  group runs at once (``QOSMaxJobsPerUserLimit``, ``AssocGrpCpuLimit``, ``AssocMaxJobsLimit``,
  ...), and ``ReqNodeNotAvail`` for a reservation (maintenance) or nodes that are only busy.
"""

from __future__ import annotations

import re

from benchlib.execute import slurm
from benchlib.execute.slurm_limits import (
    Node,
    Partition,
    Request,
    gpu_count,
    memory_mb,
    minutes,
    number,
    read_partition,
    records,
    shortfalls,
)
from benchlib.vocabulary import JobPhase

#: Pending reasons that mean the job never starts as it is: what they mean and what to change.
NEVER_STARTS = {
    "PartitionConfig": "the job asks for more than any node of its partition has (CPUs, memory, "
                       "GPUs) or for something the partition does not allow; ask for less "
                       "(cpus_per_device, mem_gb_per_device, num_devices) or choose another "
                       "partition (--partition)",
    "PartitionTimeLimit": "its time limit is above the partition's MaxTime; lower time_min "
                          "(--time-min) or choose a partition with a longer limit",
    "PartitionNodeLimit": "it asks for more nodes than the partition has or allows per job; "
                          "lower num_nodes or choose a partition with more nodes",
    "InvalidAccount": "its account is unknown or not yours; set account (--account) to one of "
                      "yours (sacctmgr show associations user=$USER)",
    "InvalidQOS": "its QOS is unknown or not allowed for its account; set qos (--qos) to one "
                  "you may use (sacctmgr show associations user=$USER format=qos)",
    "BadConstraints": "its constraints (sbatch: constraint) match no node of the partition; "
                      "change the constraint or the partition",
    "DependencyNeverSatisfied": "a job it depends on failed or was cancelled, so the dependency "
                                "(sbatch: dependency) can never be met; drop or change it",
}

#: QOS / association limits on one job (not on what a user or group runs at once): never start.
NEVER_STARTS_PATTERN = re.compile(r"^(?:(?:QOS|Assoc)Max\w*Per(?:Job|Node)\w*|QOSMin\w+)$")
PER_JOB_LIMIT = ("a per-job limit of its QOS or association ({reason}) is below what the job "
                 "asks; ask for less (time_min, cpus_per_device, num_devices, num_nodes) or use "
                 "another qos / account")

#: Reasons that name unavailable nodes: never start only when those nodes are down or drained.
NODE_REASONS = ("ReqNodeNotAvail", "Nodes required for job are DOWN", "Nodes_required_for_job_are_DOWN")


def job_request(fields: dict[str, str]) -> Request:
    """The :class:`Request` of a ``scontrol show job`` record."""
    gres = fields.get("TresPerNode", "") or fields.get("Gres", "")
    nodes = () if fields.get("ReqNodeList", "(null)") == "(null)" else (fields["ReqNodeList"],)
    return Request(nodes=number(fields.get("NumNodes", "")) or 1,
                   cpus=number(fields.get("MinCPUsNode", "")) or 1, gpus=gpu_count(gres),
                   memory_mb=memory_mb(fields.get("MinMemoryNode", "")),
                   time_min=minutes(fields.get("TimeLimit", "")) or 0, node_list=nodes)


def hostnames(expression: str) -> list[str]:
    """``lnode[1-2],n3`` -> its node names (``scontrol show hostnames``)."""
    out = slurm._run(["scontrol", "show", "hostnames", expression])
    if out is None or out.returncode != 0:
        return [expression]
    return out.stdout.split()


def _down(nodes: list[Node]) -> str:
    return ", ".join(f"{n.name} {n.state.lower()}" + (f" ({n.reason})" if n.reason else "")
                     for n in nodes)


def nodes_blocking(request: Request, partition: Partition) -> str:
    """Why a job waiting for unavailable nodes never starts ('' when it may): the nodes it names
    are down or drained, or too few of the partition's nodes that fit it are up."""
    by_name = {n.name: n for n in partition.nodes}
    named = [by_name[h] for e in request.node_list for h in hostnames(e) if h in by_name]
    down = [n for n in named if n.unavailable]
    if down:
        return (f"it asks for nodes that are down or drained: {_down(down)}; drop the node list "
                f"(sbatch: nodelist) or wait for an administrator to resume them")
    fitting = [n for n in partition.nodes if request.fits(n)]
    up = [n for n in fitting if not n.unavailable]
    if fitting and len(up) < request.nodes:
        return (f"it needs {request.nodes} node(s) of partition {partition.name} that fit it, "
                f"and only {len(up)} are up: {_down([n for n in fitting if n.unavailable])}; "
                f"ask for fewer nodes, choose another partition, or wait for an administrator")
    return ""


def never_starts(reason: str, fields: dict[str, str] | None = None,
                 partitions: dict[str, Partition | None] | None = None) -> str:
    """What a pending reason means and what to change, when Slurm will never start the job as
    it is; '' for reasons that pass (``fields``: the job's ``scontrol show job`` record, used
    for the numbers and for reasons about nodes; ``partitions``: those known, by name)."""
    fields, partitions = fields or {}, partitions or {}
    base = reason.split(",")[0].strip()
    partition = partitions.get(fields.get("Partition", "").split(",")[0])
    details = ""
    if partition is not None and fields:
        details = "; ".join(s.text for s in shortfalls(job_request(fields), partition))
    if base in NEVER_STARTS:
        return NEVER_STARTS[base] + (f" (asks {details})" if details else "")
    if NEVER_STARTS_PATTERN.match(base):
        return PER_JOB_LIMIT.format(reason=base)
    if reason.startswith(NODE_REASONS) and "reserved for maintenance" not in reason.lower():
        return nodes_blocking(job_request(fields), partition) if partition and fields else ""
    return ""


def explain_pending(states: dict[str, slurm.JobState]) -> dict[str, str]:
    """Job id -> why Slurm will never start it, for the pending jobs among ``states`` that it
    will not start (asks ``scontrol`` about those whose reason needs the job or its nodes)."""
    explained: dict[str, str] = {}
    partitions: dict[str, Partition | None] = {}
    for job_id, state in states.items():
        if state.phase != JobPhase.PENDING or not state.reason or state.reason == "None":
            continue
        base = state.reason.split(",")[0].strip()
        if not (base in NEVER_STARTS or NEVER_STARTS_PATTERN.match(base)
                or state.reason.startswith(NODE_REASONS)):
            continue
        out = slurm._run(["scontrol", "-o", "show", "job", job_id])
        fields = next(iter(records(out.stdout)), {}) if out is not None and out.returncode == 0 else {}
        name = fields.get("Partition", "").split(",")[0]
        if name and name not in partitions:
            partitions[name] = read_partition(name)
        text = never_starts(state.reason, fields, partitions)
        if text:
            explained[job_id] = text
    return explained
