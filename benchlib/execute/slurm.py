"""SLURM: what the scheduler says about a job, its nodes, and the parameters of a submission.

Job states come from ``squeue`` while a job is queued or running. Once it has left the queue,
``sacct`` gives its final state where accounting is set up; without accounting, ``scontrol show
job`` (for ``MinJobAge`` seconds) and then the job's log (slurmstepd's ``*** JOB ... CANCELLED
AT ... DUE TO TIME LIMIT ***`` lines, the OOM killer's messages) say what happened.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib.errors import InputError
from benchlib.inputs.executors import SlurmExecutor
from benchlib.vocabulary import JobPhase

#: squeue / sacct states of a job that has not finished.
_P, _R = JobPhase.PENDING, JobPhase.RUNNING
ACTIVE_STATES = {"PENDING": _P, "CONFIGURING": _R, "RUNNING": _R, "COMPLETING": _R,
                 "SUSPENDED": _R, "REQUEUED": _P, "REQUEUE_HOLD": _P, "REQUEUE_FED": _P,
                 "RESIZING": _R, "SIGNALING": _R, "STAGE_OUT": _R, "STOPPED": _R}

#: Final states and how a status table words them.
FINAL_REASONS = {
    "TIMEOUT": "time limit: killed by Slurm at the job's time limit",
    "OUT_OF_MEMORY": "out of memory: killed by the OOM killer",
    "NODE_FAIL": "node failure: the node failed while the job ran",
    "PREEMPTED": "preempted by another job",
    "CANCELLED": "cancelled (scancel or an administrator)",
    "BOOT_FAIL": "boot failure of the node",
    "DEADLINE": "deadline reached",
    "FAILED": "the job exited with an error",
    "COMPLETED": "the job ended without writing its result",
}

#: Log lines that name the reason a job ended; checked in this order.
LOG_REASONS = (
    (re.compile(r"CANCELLED AT \S+ DUE TO TIME LIMIT"), "TIMEOUT"),
    (re.compile(r"oom[-_ ]kill|Out Of Memory|OUT_OF_MEMORY", re.IGNORECASE), "OUT_OF_MEMORY"),
    (re.compile(r"CANCELLED AT \S+ DUE TO NODE FAIL"), "NODE_FAIL"),
    (re.compile(r"CANCELLED AT \S+ DUE TO PREEMPTION"), "PREEMPTED"),
    (re.compile(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT"), "CANCELLED"),
)


@dataclass(frozen=True)
class JobState:
    """What the scheduler says about one job: ``pending`` / ``running`` / ``ended``."""

    job_id: str
    phase: JobPhase
    state: str = ""
    reason: str = ""
    nodes: str = ""
    blocked: str = ""  # pending for ever: what the reason means and what to change

    def describe(self) -> str:
        """A short explanation for a status table."""
        if self.phase == JobPhase.PENDING:
            text = f"queued ({self.reason})" if self.reason and self.reason != "None" else "queued"
            return f"{text}: Slurm will never start it: {self.blocked}" if self.blocked else text
        if self.phase == JobPhase.RUNNING:
            return f"on {self.nodes}" if self.nodes else "running"
        if self.phase == JobPhase.ENDED:
            text = FINAL_REASONS.get(self.state, self.state.lower() or "ended")
            return f"{self.state}: {text}" if self.state else text
        return "not known to the scheduler"


def _run(command: list[str]) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def split_job_id(job_id: str) -> tuple[str, str]:
    """``123_4`` -> (``123``, ``4``); a job outside an array -> (``123``, '')."""
    parent, _, task = job_id.partition("_")
    return parent, task


def parse_squeue(text: str) -> dict[str, JobState]:
    """``squeue -h -o '%i|%T|%r|%N'`` lines -> states by job id (``123_4`` for array tasks)."""
    states: dict[str, JobState] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4:
            continue
        job_id, state, reason, nodes = parts[:4]
        phase = ACTIVE_STATES.get(state, JobPhase.RUNNING)
        states[job_id] = JobState(job_id, phase, state, reason, nodes)
    return states


def parse_sacct(text: str) -> dict[str, JobState]:
    """``sacct -X -n -P -o JobID,State,NodeList`` lines -> states (``CANCELLED by 0`` -> CANCELLED)."""
    states: dict[str, JobState] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 3 or "." in parts[0]:
            continue
        job_id, state, nodes = parts[0], parts[1].split()[0] if parts[1] else "", parts[2]
        phase = ACTIVE_STATES.get(state)
        states[job_id] = JobState(job_id, phase or JobPhase.ENDED, state, "", nodes)
    return states


def parse_scontrol(job_id: str, text: str) -> JobState | None:
    """``scontrol show job`` output (one or more array tasks) -> the state of ``job_id``."""
    for block in re.split(r"\n\s*\n", text):
        fields = dict(re.findall(r"(\w+)=(\S*)", block))
        if not fields:
            continue
        ident = fields.get("JobId", "")
        if fields.get("ArrayTaskId") and fields.get("ArrayJobId"):
            ident = f"{fields['ArrayJobId']}_{fields['ArrayTaskId']}"
        if ident != job_id:
            continue
        state = fields.get("JobState", "")
        phase = ACTIVE_STATES.get(state) or JobPhase.ENDED
        return JobState(job_id, phase, state, fields.get("Reason", ""),
                        fields.get("NodeList", ""))
    return None


def reason_from_log(paths: Iterable[Path]) -> str:
    """The final state a job's logs name (``TIMEOUT``, ``OUT_OF_MEMORY``, ...), or ''."""
    text = ""
    for path in paths:
        try:
            text += path.read_text(errors="replace")[-200_000:]
        except OSError:
            continue
    for pattern, state in LOG_REASONS:
        if pattern.search(text):
            return state
    return ""


def query_states(job_ids: Iterable[str], logs: dict[str, list[Path]] | None = None) -> dict[str, JobState]:
    """The state of each job: squeue, then sacct, then scontrol, then its logs."""
    job_ids = list(dict.fromkeys(job_ids))
    if not job_ids:
        return {}
    parents = sorted({split_job_id(j)[0] for j in job_ids})
    states: dict[str, JobState] = {}
    out = _run(["squeue", "-h", "-r", "-j", ",".join(parents), "-o", "%i|%T|%r|%N"])
    if out is not None and out.returncode == 0:
        states.update({j: s for j, s in parse_squeue(out.stdout).items() if j in job_ids})
    missing = [j for j in job_ids if j not in states]
    if missing:
        out = _run(["sacct", "-X", "-n", "-P", "-o", "JobID,State,NodeList", "-j",
                    ",".join(sorted({split_job_id(j)[0] for j in missing}))])
        if out is not None and out.returncode == 0:
            states.update({j: s for j, s in parse_sacct(out.stdout).items() if j in missing})
    for job_id in [j for j in job_ids if j not in states]:
        out = _run(["scontrol", "show", "job", job_id])
        found = parse_scontrol(job_id, out.stdout) if out is not None and out.returncode == 0 else None
        logged = reason_from_log((logs or {}).get(job_id, []))
        if found is not None and found.phase == JobPhase.ENDED and logged and found.state != logged:
            found = JobState(job_id, JobPhase.ENDED, logged, found.reason, found.nodes)
        if found is None:
            found = (JobState(job_id, JobPhase.ENDED, logged) if logged
                     else JobState(job_id, JobPhase.UNKNOWN))
        states[job_id] = found
    return states


def partitions() -> list[str] | None:
    """The partitions ``sinfo -a -h -o %P`` lists, hidden ones too, in its order (the default
    one's trailing ``*`` stripped); None when sinfo cannot tell (not installed, no
    controller)."""
    out = _run(["sinfo", "-a", "-h", "-o", "%P"])
    if out is None or out.returncode != 0:
        return None
    return list(dict.fromkeys(name for line in out.stdout.splitlines()
                              if (name := line.strip().rstrip("*"))))


def check_partition(partition: str | None) -> None:
    """InputError (exit 2) naming ``partition`` and the partitions there when sinfo does not
    list it: sbatch's own refusal names a consequence (``Invalid generic resource (gres)
    specification``), not the partition. Nothing is checked without a partition (the default
    one) or where sinfo cannot tell (sbatch says then)."""
    if not partition:
        return
    known = partitions()
    if known is None or partition in known:
        return
    raise InputError(f"no partition {partition} (partitions here: {', '.join(known) or 'none'}); "
                     "give one with --partition or executor.partition")


def partition_has_gpus(partition: str | None) -> bool:
    """Whether ``sinfo`` lists a ``gpu`` GRES on the partition's nodes (the default partition
    when None); True when sinfo cannot tell, so that GPU points ask for their GPUs."""
    command = ["sinfo", "-h", "-o", "%P|%G"] + (["-p", partition] if partition else [])
    out = _run(command)
    if out is None or out.returncode != 0 or not out.stdout.strip():
        return True
    lines = [line for line in out.stdout.splitlines() if "|" in line]
    if not partition:
        lines = [line for line in lines if line.split("|")[0].endswith("*")] or lines
    return any("gpu" in line.split("|", 1)[1] for line in lines)


def devices_per_node(parameters: dict[str, Any]) -> int:
    """Devices a point runs on each node: ``num_devices / num_nodes``, or the node probe's
    ``allreduce_devices`` where that is more; at least 1."""
    nodes = int(parameters.get("num_nodes") or 1)
    return max(1, int(parameters.get("num_devices") or 1) // nodes,
               int(parameters.get("allreduce_devices") or 0))


def cancel_pending(job_id: str) -> str:
    """``scancel`` the job if it is still pending; '' on success, else scancel's complaint."""
    out = _run(["scancel", "--state=PENDING", job_id])
    if out is None:
        return "scancel did not answer"
    return "" if out.returncode == 0 else (out.stderr or out.stdout).strip() or "scancel failed"


def _sinfo_nodes(partition: str | None, idle: bool = False) -> list[str]:
    """Node names of ``partition`` (the default one when None) in sinfo's order, once each."""
    command = ["sinfo", "-h", "-N", "-o", "%N|%P"] + (["-p", partition] if partition else []) \
        + (["-t", "idle"] if idle else [])
    out = _run(command)
    if out is None or out.returncode != 0:
        raise InputError("executor.nodes: sinfo could not list the partition's nodes"
                         + (f": {(out.stderr or out.stdout).strip()}" if out is not None else ""))
    rows = [line.split("|") for line in out.stdout.splitlines() if "|" in line]
    if not partition:
        rows = [r for r in rows if r[1].endswith("*")] or rows
    return list(dict.fromkeys(r[0].strip() for r in rows if r[0].strip()))


def fleet_nodes(executor: SlurmExecutor) -> list[str]:
    """The nodes a fleet run pins one job each to: ``all`` the partition's nodes, a list as
    given (each must be in the partition), N the first N idle nodes (sinfo's order).
    InputError naming ``executor.nodes`` when they cannot be had."""
    where = f"partition {executor.partition}" if executor.partition else "the default partition"
    if executor.nodes == "all":
        names = _sinfo_nodes(executor.partition)
    elif isinstance(executor.nodes, list):
        known = _sinfo_nodes(executor.partition)
        unknown = [n for n in executor.nodes if n not in known]
        if unknown:
            raise InputError(f"executor.nodes: {', '.join(unknown)} not in {where} "
                             f"(its nodes: {', '.join(known) or 'none'})")
        names = list(dict.fromkeys(executor.nodes))
    else:
        idle = _sinfo_nodes(executor.partition, idle=True)
        if len(idle) < int(executor.nodes or 0):
            raise InputError(f"executor.nodes: {executor.nodes} idle nodes asked, {where} has "
                             f"{len(idle)} idle now ({', '.join(idle) or 'none'})")
        names = idle[:executor.nodes]
    if not names:
        raise InputError(f"executor.nodes: {where} lists no nodes")
    return names


def submission_parameters(executor: SlurmExecutor, parameters: dict[str, Any], job_name: str,
                          has_gpus: bool = True, node: str | None = None) -> dict[str, Any]:
    """submitit.SlurmExecutor parameters for one point: nodes, GPUs, CPUs, memory, time.

    Points on ``device: cpu`` ask for no GPU, nor do ``device: auto`` points on a partition
    without GPUs (``has_gpus``); every other point asks for one GPU per device. A node probe
    asks for ``allreduce_devices`` GPUs (its all-reduce part), one where that is 0 or 1.
    ``node`` pins the job to that node (``--nodelist``).
    """
    nodes = int(parameters.get("num_nodes") or 1)
    per_node = devices_per_node(parameters)
    device = str(parameters.get("device", "auto"))
    gpus = 0 if device.startswith("cpu") or (device == "auto" and not has_gpus) else per_node
    request: dict[str, Any] = {
        "job_name": job_name, "time": executor.time_min, "nodes": nodes, "ntasks_per_node": 1,
        "cpus_per_task": executor.cpus_per_device * per_node,
        "use_srun": False,  # papermill runs on the first node; torchrun / srun start the ranks
    }
    if gpus:
        request["gpus_per_node"] = gpus
    if executor.mem_gb_per_device:
        request["mem"] = executor.mem_gb_per_device * per_node
    for key in ("partition", "account", "qos"):
        if getattr(executor, key):
            request[key] = getattr(executor, key)
    if executor.max_parallel:
        request["array_parallelism"] = executor.max_parallel
    if executor.setup:
        request["setup"] = list(executor.setup)
    # the batch shell gets the warning: python runs as the batch shell (exec), with no job steps
    request["additional_parameters"] = {"signal": f"B:USR2@{executor.signal_delay_s}",
                                        **executor.sbatch}
    if node:  # a fleet run's job: on this node only
        request["additional_parameters"]["nodelist"] = node
    return request
