"""Partition limits and never-starting jobs, on captured ``scontrol`` / ``squeue`` text (no Slurm).

The same cases on the real local Slurm are in tests/test_slurm.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchlib.errors import RequestTooLarge
from benchlib.execute import campaign, slurm, slurm_limits, slurm_pending
from benchlib.execute.slurm_sweep import submit_sweep
from benchlib.inputs.executors import SlurmExecutor
from benchlib.inputs.params import load_sweep

# scontrol -o show partition / node of tools/local-slurm on a 2-CPU host, trimmed, plus a GPU
# partition of two sizes of node and a drained node
PARTITIONS = "\n".join([
    'PartitionName=debug AllowGroups=ALL Default=YES QoS=N/A MaxNodes=UNLIMITED '
    'MaxTime=01:00:00 MinNodes=0 MaxCPUsPerNode=UNLIMITED Nodes=vm State=UP TotalCPUs=2 '
    'TotalNodes=1 MaxMemPerNode=UNLIMITED',
    'PartitionName=short AllowGroups=ALL Default=NO QoS=N/A MaxNodes=UNLIMITED '
    'MaxTime=00:02:00 MinNodes=0 MaxCPUsPerNode=UNLIMITED Nodes=vm State=UP TotalCPUs=2 '
    'TotalNodes=1 MaxMemPerNode=UNLIMITED',
    'PartitionName=multi AllowGroups=ALL Default=NO QoS=N/A MaxNodes=UNLIMITED '
    'MaxTime=01:00:00 MinNodes=0 MaxCPUsPerNode=UNLIMITED Nodes=lnode[1-2] State=UP '
    'TotalCPUs=4 TotalNodes=2 MaxMemPerNode=UNLIMITED',
    'PartitionName=gpu AllowGroups=ALL Default=NO QoS=N/A MaxNodes=2 MaxTime=2-00:00:00 '
    'MinNodes=0 MaxCPUsPerNode=UNLIMITED Nodes=g[1-3] State=UP TotalCPUs=160 TotalNodes=3 '
    'MaxMemPerNode=UNLIMITED',
]) + "\n"
NODES = "\n".join([
    'NodeName=lnode1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 '
    'CPULoad=0.52 Gres=(null) NodeAddr=127.0.0.1 OS=Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0'
    '  RealMemory=1024 AllocMem=0 State=IDLE ThreadsPerCore=1 Partitions=multi  '
    'CfgTRES=cpu=2,mem=1G,billing=2',
    'NodeName=lnode2 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 '
    'CPULoad=0.31 Gres=(null) NodeAddr=127.0.0.1 RealMemory=1024 AllocMem=0 '
    'State=IDLE+DRAIN ThreadsPerCore=1 Partitions=multi  CfgTRES=cpu=2,mem=1G,billing=2 '
    'Reason=bench test [root@2026-11-22T07:21:37]',
    'NodeName=vm Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.52 '
    'Gres=(null) NodeAddr=127.0.0.1 RealMemory=23081 AllocMem=0 State=IDLE ThreadsPerCore=1'
    ' Partitions=debug,short  CfgTRES=cpu=2,mem=23081M,billing=2',
    'NodeName=g1 CPUAlloc=64 CPUEfctv=64 CPUTot=64 Gres=gpu:h100:8(S:0-1) '
    'RealMemory=1000000 State=ALLOCATED Partitions=gpu',
    'NodeName=g2 CPUAlloc=0 CPUEfctv=64 CPUTot=64 Gres=gpu:h100:8(S:0-1) RealMemory=1000000'
    ' State=DOWN+NOT_RESPONDING Partitions=gpu Reason=Not responding '
    '[slurm@2026-11-20T10:00:00]',
    'NodeName=g3 CPUAlloc=0 CPUEfctv=32 CPUTot=32 Gres=gpu:a100:4 RealMemory=500000 '
    'State=MIXED Partitions=gpu',
]) + "\n"
TRAIN = {"model": "resnet18", "image_size": 32, "num_classes": 10, "iterations": 2, "warmup": 1,
         "num_workers": 0, "device": "cpu"}


def _partition(name: str | None) -> slurm_limits.Partition:
    partition = slurm_limits.parse_partition(name, PARTITIONS, NODES)
    assert partition is not None
    return partition


def _fake_run(jobs: dict[str, str], calls: list[list[str]] | None = None, partitions: str = PARTITIONS):
    """A stand-in for slurm._run answering scontrol, sinfo, squeue and scancel from text."""
    def run(command: list[str]) -> subprocess.CompletedProcess:
        if calls is not None:
            calls.append(command)
        out, code = "", 0
        if command[:4] == ["scontrol", "-o", "show", "partition"]:
            out = partitions
        elif command[:4] == ["scontrol", "-o", "show", "node"]:
            out = NODES
        elif command[:4] == ["scontrol", "-o", "show", "job"]:
            out, code = jobs.get(command[4], ""), 0 if command[4] in jobs else 1
        elif command[:3] == ["scontrol", "show", "hostnames"]:
            out = "\n".join(command[3].replace("g[1-2]", "g1,g2").split(","))
        elif command[0] == "squeue":
            out = "".join(f"{job}|PENDING|{reason}|\n" for job, reason in SQUEUE.items() if job in jobs)
        elif command == ["sinfo", "-a", "-h", "-o", "%P"]:
            out = "debug*\nshort\nmulti\ngpu\n"
        elif command[0] == "sinfo":
            out = "debug*|(null)\n"
        return subprocess.CompletedProcess(command, code, out, "")

    return run


SQUEUE: dict[str, str] = {}


# --- parsing ---------------------------------------------------------------------------------------

def test_partitions_and_their_nodes_are_read_from_scontrol():
    debug = _partition(None)  # the default partition
    assert (debug.name, debug.max_time_min, debug.max_nodes) == ("debug", 60, None)
    assert debug.nodes == (slurm_limits.Node("vm", 2, 23081, 0, "IDLE"),)
    assert _partition("short").max_time_min == 2
    multi = _partition("multi")
    assert [n.name for n in multi.nodes] == ["lnode1", "lnode2"]
    assert [n.unavailable for n in multi.nodes] == [False, True]
    assert multi.nodes[1].reason == "bench test [root@2026-11-22T07:21:37]"
    gpu = _partition("gpu")
    assert (gpu.max_time_min, gpu.max_nodes) == (2880, 2)
    assert [(n.cpus, n.gpus, n.memory_mb, n.unavailable) for n in gpu.nodes] == [
        (64, 8, 1000000, False), (64, 8, 1000000, True), (32, 4, 500000, False)]
    assert slurm_limits.parse_partition("nope", PARTITIONS, NODES) is None


@pytest.mark.parametrize(("text", "minutes"), [
    ("2", 2), ("2:00", 2), ("2:30", 3), ("01:00:00", 60), ("1-00:00:00", 1440), ("1-12", 2160),
    ("1-00:30", 1470), ("UNLIMITED", None), ("NONE", None)])
def test_slurm_times_in_minutes(text, minutes):
    assert slurm_limits.minutes(text) == minutes


@pytest.mark.parametrize(("text", "mb"), [("23081", 23081), ("23081M", 23081), ("1G", 1024),
                                          ("2T", 2 * 1024**2), ("0", 0), ("UNLIMITED", 0)])
def test_memory_sizes_in_mb(text, mb):
    assert slurm_limits.memory_mb(text) == mb


@pytest.mark.parametrize(("gres", "gpus"), [
    ("(null)", 0), ("gpu:4", 4), ("gpu:h100:8(S:0-1)", 8), ("gpu:a100:2,gpu:v100:1(S:0)", 3),
    ("gres:gpu:1", 1), ("gres/gpu:2", 2), ("shard:8,gpu:a100-80:4", 4), ("gpu:tesla:2(IDX:0-1)", 2)])
def test_gpu_counts_from_gres(gres, gpus):
    assert slurm_limits.gpu_count(gres) == gpus


def test_unreadable_or_unknown_partitions_fall_back_to_sbatch(monkeypatch):
    monkeypatch.setattr(slurm, "_run", lambda command: subprocess.CompletedProcess(command, 1, "", "x"))
    assert slurm_limits.read_partition("debug") is None
    monkeypatch.setattr(slurm, "_run", lambda command: None)  # no scontrol at all
    assert slurm_limits.read_partition(None) is None
    monkeypatch.setattr(slurm, "_run", _fake_run({}))
    assert slurm_limits.read_partition("nope") is None
    assert slurm_limits.refusals([], SlurmExecutor(), {}, None) == []


# --- points against the partition -----------------------------------------------------------------

class Point:
    def __init__(self, name: str, **parameters):
        self.name, self.parameters = name, {**TRAIN, **parameters}


def _refusals(executor: SlurmExecutor, points: list[Point], partition: str | None,
              memory: bool = False, has_gpus: bool = False) -> list[str]:
    requests = {p.name: slurm.submission_parameters(executor, p.parameters, "x", has_gpus)
                for p in points}
    return slurm_limits.refusals(points, executor, requests, _partition(partition), memory)


def test_more_cpus_than_any_node_names_the_point_the_field_and_what_fits():
    assert _refusals(SlurmExecutor(), [Point("train-a")], None) == [
        "point train-a: cpus_per_device 8 x 1 device = 8 CPUs per node, but the largest node of "
        "partition debug has 2; set cpus_per_device: 2 (or --cpus-per-device 2)"]
    (line,) = _refusals(SlurmExecutor(cpus_per_device=2),
                        [Point(f"p{i}", num_devices=2, batch_size=i) for i in range(5)], "debug")
    assert line.startswith("points p0, p1, p2 (and 2 more): cpus_per_device 2 x 2 devices = 4 CPUs")
    assert line.endswith("has 2; set cpus_per_device: 1 (or --cpus-per-device 1)")
    (line,) = _refusals(SlurmExecutor(cpus_per_device=1), [Point("p", num_devices=3)], "debug")
    assert line.endswith("= 3 CPUs per node, but the largest node of partition debug has 2; run at "
                         "most 2 devices per node")
    assert _refusals(SlurmExecutor(cpus_per_device=2), [Point("p")], "debug") == []


def test_time_nodes_and_gpus_above_the_partition_are_refused():
    executor = SlurmExecutor(time_min=5, cpus_per_device=1)
    assert _refusals(executor, [Point("p")], "short") == [
        "point p: time_min 5 is above the 2 min MaxTime of partition short; set time_min: 2 "
        "(or --time-min 2)"]
    assert _refusals(executor, [Point("p", num_nodes=2, num_devices=2)], "debug") == [
        "point p: num_nodes 2: 2 nodes, but partition debug has 1 that fits; set num_nodes: 1"]
    # multi's drained node still counts: it comes back
    assert _refusals(executor, [Point("p", num_nodes=2, num_devices=2)], "multi") == []
    assert _refusals(executor, [Point("p", num_nodes=3, num_devices=3)], "gpu") == [
        "point p: num_nodes 3: 3 nodes, but partition gpu allows 2 per job; set num_nodes: 2"]
    gpu = [Point("p", device="cuda", num_devices=16)]
    assert _refusals(executor, gpu, "gpu", has_gpus=True) == [
        "point p: 16 GPUs per node (num_devices 16 over 1 node(s)), but the largest node of "
        "partition gpu has 8; set num_devices: 8"]
    probe = [Point("p", device="cuda", allreduce_devices=12)]
    assert "(allreduce_devices 12)" in _refusals(executor, probe, "gpu", has_gpus=True)[0]
    (line,) = _refusals(executor, [Point("p", device="cuda")], "debug", has_gpus=True)
    assert line.endswith("has 0; choose a partition with GPUs (--partition), or device: cpu")


def test_memory_is_left_to_sbatch_and_explained_after_its_refusal():
    executor = SlurmExecutor(cpus_per_device=1, mem_gb_per_device=100)
    assert _refusals(executor, [Point("p", num_devices=2)], "debug") == []
    assert _refusals(executor, [Point("p", num_devices=2)], "debug", memory=True) == [
        "point p: mem_gb_per_device 100 x 2 devices = 200 GB per node, but the largest node of "
        "partition debug has 22 GB; set mem_gb_per_device: 11"]


def test_cpus_and_gpus_that_only_fit_apart_are_refused():
    partition = slurm_limits.Partition("mixed", nodes=(slurm_limits.Node("cpu1", 128, 10**6, 0),
                                                       slurm_limits.Node("gpu1", 16, 10**6, 4)))
    (short,) = slurm_limits.shortfalls(slurm_limits.Request(cpus=32, gpus=4), partition)
    assert short.what == "together"
    assert short.text == ("32 CPUs + 4 GPUs + 0 MB on one node, but no node of partition mixed "
                          "has them all (its nodes: 128 CPUs + 0 GPUs + 1000000 MB, 16 CPUs + 4 "
                          "GPUs + 1000000 MB)")


def test_a_sweep_that_no_node_can_run_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(slurm, "_run", _fake_run({}, calls))
    params = tmp_path / "big.yaml"
    params.write_text(yaml.safe_dump({"campaign": "big", "notebook": "train", "base": TRAIN,
                                      "grid": {"batch_size": [2, 4]},
                                      "executor": {"kind": "slurm", "partition": "debug"}}))
    sweep = load_sweep(params, base_dir=tmp_path)
    with pytest.raises(RequestTooLarge, match=r"^points train-.*, train-.*: cpus_per_device 8 x 1 device"):
        submit_sweep(sweep, sweep.spec.executor, tmp_path / "out", base_dir=tmp_path)
    assert not (tmp_path / "out").exists()
    assert not any(command[0] == "sbatch" for command in calls)


#: Slurm's commands on a cluster whose one partition is ``debug``: sinfo lists it (and nothing
#: with ``-p`` another), scontrol knows nothing, sbatch refuses a GPU request as Slurm does there.
FAKE_SLURM = {
    "sinfo": 'case "$*" in *-p*) exit 0;; *%P*) printf "debug*\\n";; esac\n',
    "scontrol": "exit 1\n",
    "srun": "exit 1\n",  # submitit looks for it before it submits
    "sbatch": ('echo "sbatch: error: Batch job submission failed: Invalid generic resource '
               '(gres) specification" >&2; exit 1\n'),
}


def _fake_slurm(folder: Path) -> dict[str, str]:
    """The environment of a command run where :data:`FAKE_SLURM`'s commands are on PATH."""
    folder.mkdir()
    for name, body in FAKE_SLURM.items():
        (folder / name).write_text("#!/bin/sh\n" + body)
        (folder / name).chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}


def _sweep_on_the_fake(folder: Path, partition: str) -> subprocess.CompletedProcess:
    """``benchlib sweep params/p.yaml --executor slurm --partition PARTITION`` from ``folder``
    where :data:`FAKE_SLURM`'s commands are on PATH (campaign ``x``)."""
    (folder / "params").mkdir()
    (folder / "params" / "p.yaml").write_text(yaml.safe_dump(
        {"campaign": "x", "notebook": "train", "base": {**TRAIN, "device": "auto"}}))
    return subprocess.run([str(Path(sys.executable).with_name("benchlib")), "sweep",
                           "params/p.yaml", "--executor", "slurm", "--partition", partition],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env=_fake_slurm(folder / "bin"))


def test_a_partition_the_cluster_lacks_is_named_with_those_it_has(tmp_path):
    """``sweep --executor slurm --partition gpu`` where only ``debug`` exists: before, sbatch's
    'Invalid generic resource (gres) specification'; now exit 2 naming both, nothing submitted."""
    done = _sweep_on_the_fake(tmp_path, "gpu")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no partition gpu (partitions here: debug)" in done.stderr, done.stderr
    assert "gres" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "outputs" / "x").exists()


# --- pending reasons ------------------------------------------------------------------------------

@pytest.mark.parametrize("reason", [
    "None", "Resources", "Priority", "BeginTime", "Dependency", "JobHeldUser", "JobHeldAdmin",
    "Licenses", "Reservation", "PartitionDown", "QOSMaxJobsPerUserLimit", "QOSMaxCpuPerUserLimit",
    "QOSMaxSubmitJobPerUserLimit", "AssocMaxJobsLimit", "AssocGrpCpuLimit", "QOSGrpGRES",
    "ReqNodeNotAvail, Reserved for maintenance", "launch failed requeued held"])
def test_reasons_that_may_pass_keep_waiting(reason):
    assert slurm_pending.never_starts(reason) == ""


@pytest.mark.parametrize(("reason", "words"), [
    ("PartitionConfig", "asks for more than any node of its partition has"),
    ("PartitionTimeLimit", "lower time_min (--time-min)"),
    ("PartitionNodeLimit", "lower num_nodes"),
    ("InvalidAccount", "set account (--account)"),
    ("InvalidQOS", "set qos (--qos)"),
    ("BadConstraints", "constraint"),
    ("DependencyNeverSatisfied", "a job it depends on failed or was cancelled"),
    ("QOSMaxWallDurationPerJobLimit", "per-job limit of its QOS or association"),
    ("QOSMaxGRESPerJob", "(QOSMaxGRESPerJob)"),
    ("AssocMaxCpuPerJobLimit", "per-job limit"),
    ("QOSMaxMemoryPerNode", "per-job limit"),
    ("QOSMinCpuNotSatisfied", "per-job limit"),
])
def test_reasons_that_never_pass_are_explained(reason, words):
    assert words in slurm_pending.never_starts(reason)


JOB_TIME = ("JobId=21 JobName=wrap JobState=PENDING Reason=PartitionTimeLimit Dependency=(null) "
            "TimeLimit=00:05:00 Partition=short ReqNodeList=(null) NumNodes=1 MinCPUsNode=1 "
            "MinMemoryNode=0 TresPerNode=(null)")
JOB_NODES = ("JobId=8 JobName=wrap JobState=PENDING Reason=Nodes_required_for_job_are_DOWN,"
             "_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions Dependency=(null) "
             "TimeLimit=01:00:00 Partition=multi ReqNodeList=(null) ExcNodeList=(null) NodeList= "
             "NumNodes=2-2 NumCPUs=2 MinCPUsNode=1 MinMemoryNode=0")
JOB_GPU = ("JobId=30_1 ArrayJobId=30 ArrayTaskId=1 JobState=PENDING Reason=ReqNodeNotAvail "
           "TimeLimit=01:00:00 Partition=gpu ReqNodeList={nodes} NumNodes={count} MinCPUsNode=16 "
           "MinMemoryNode=100G TresPerNode=gres:gpu:8")


@pytest.mark.parametrize(("reason", "job", "expected"), [
    ("PartitionTimeLimit", JOB_TIME, "(asks 5 min, but partition short allows at most 2 min (MaxTime))"),
    ("Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions",
     JOB_NODES, "it needs 2 node(s) of partition multi that fit it, and only 1 are up: lnode2 "
                "idle+drain (bench test [root@2026-11-22T07:21:37])"),
    # one 8-GPU node is down, the other only busy: the job waits for it
    ("ReqNodeNotAvail, UnavailableNodes:g2", JOB_GPU.format(nodes="(null)", count=1), ""),
    # two 8-GPU nodes wanted, one down: never
    ("ReqNodeNotAvail, UnavailableNodes:g2", JOB_GPU.format(nodes="(null)", count=2),
     "only 1 are up: g2 down+not_responding (Not responding [slurm@2026-11-20T10:00:00])"),
    # named nodes, one down
    ("ReqNodeNotAvail, UnavailableNodes:g2", JOB_GPU.format(nodes="g[1-2]", count=2),
     "it asks for nodes that are down or drained: g2 down+not_responding"),
    ("ReqNodeNotAvail, Reserved for maintenance", JOB_GPU.format(nodes="(null)", count=2), ""),
])
def test_jobs_are_judged_with_their_request_and_the_nodes(monkeypatch, reason, job, expected):
    job_id = slurm_limits.fields_of(job)["JobId"]
    monkeypatch.setattr(slurm, "_run", _fake_run({job_id: job}))
    explained = slurm_pending.explain_pending({job_id: slurm.JobState(job_id, "pending", "PENDING", reason)})
    if expected:
        assert expected in explained[job_id]
    else:
        assert explained == {}


def _blocked_campaign(tmp_path, monkeypatch, calls):
    """A campaign whose one point waits as job 21 with reason PartitionTimeLimit."""
    params = tmp_path / "p.yaml"
    params.write_text(yaml.safe_dump({"campaign": "c", "notebook": "train", "base": TRAIN,
                                      "grid": {"batch_size": [2]}}))
    (point,) = load_sweep(params, base_dir=tmp_path).points
    folder = tmp_path / "c"
    campaign.remember_points(folder, [point])
    campaign.remember_jobs(folder, {point.name: {"job_id": "21", "stderr": ""}})
    SQUEUE.clear()
    SQUEUE["21"] = "PartitionTimeLimit"
    monkeypatch.setattr(slurm, "_run", _fake_run({"21": JOB_TIME}, calls))
    return folder, point


def test_status_explains_a_job_that_never_starts_and_wait_fails_it(tmp_path, monkeypatch):
    calls: list[list[str]] = []
    folder, point = _blocked_campaign(tmp_path, monkeypatch, calls)
    (status,) = campaign.campaign_status(folder)
    assert status.status == "pending" and status.job_id == "21"
    assert status.detail.startswith("queued (PartitionTimeLimit): Slurm will never start it: its "
                                    "time limit is above the partition's MaxTime")
    assert not any(command[0] == "scancel" for command in calls)  # status only explains
    assert not (folder / f"{point.name}.json").exists()

    (failed,) = campaign.wait(folder, [point.name], poll_s=0.01, progress=False, timeout_s=5,
                              blocked_grace_s=0)
    assert ["scancel", "--state=PENDING", "21"] in calls
    assert failed.status == "failed" and failed.detail.endswith("benchlib cancelled it (scancel)")
    record = json.loads((folder / f"{point.name}.json").read_text())
    assert record["status"] == "failed" and record["slurm_state"] == "CANCELLED"
    assert "PartitionTimeLimit" in record["error"] and "asks 5 min" in record["error"]
    assert record["env_slurm_job_id"] == "21" and record["batch_size"] == 2


def test_wait_gives_a_never_starting_reason_its_grace_first(tmp_path, monkeypatch):
    calls: list[list[str]] = []
    folder, point = _blocked_campaign(tmp_path, monkeypatch, calls)
    with pytest.raises(TimeoutError):
        campaign.wait(folder, [point.name], poll_s=0.01, progress=False, timeout_s=0.2,
                      blocked_grace_s=60)
    assert not any(command[0] == "scancel" for command in calls)
    SQUEUE["21"] = "Resources"  # a reason that passes: never cancelled
    with pytest.raises(TimeoutError):
        campaign.wait(folder, [point.name], poll_s=0.01, progress=False, timeout_s=0.2,
                      blocked_grace_s=0)
    assert not any(command[0] == "scancel" for command in calls)


def test_a_warning_during_the_jobs_start_up_is_held_until_the_point_can_act(tmp_path):
    # a job's Python starts through job_start: USR2 (Slurm's warning, which can come up to a
    # minute early) arriving before the point's handler is set is held, not fatal
    script = tmp_path / "point.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "os.kill(os.getpid(), signal.SIGUSR2)  # the early warning, while still starting\n"
        "time.sleep(0.2)\n"
        "print('alive', sys.argv[1:], signal.SIGUSR2 in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n"
        "signal.signal(signal.SIGUSR2, lambda *a: print('warned'))\n"
        "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})\n"
        "print('done')\n")
    command = [sys.executable, "-u", "-m", "benchlib.execute.job_start", "-u", "-m", "point", "x"]
    out = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["alive ['x'] True", "warned", "done"]
    # without it, the same early warning kills the process (USR2's default action)
    plain = subprocess.run([sys.executable, str(script), "x"], capture_output=True, text=True,
                           timeout=60)
    assert plain.returncode == -signal.SIGUSR2


def test_a_refused_first_submission_leaves_no_campaign_folder(tmp_path):
    """sbatch refuses the job array (here the fake's gres error on partition debug): exit 2
    with sbatch's words, and the campaign folder the sweep made for it is gone (it was left
    holding only .benchlib/: a campaign of no runs that later commands would read)."""
    done = _sweep_on_the_fake(tmp_path, "debug")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Invalid generic resource" in done.stderr, done.stderr
    assert not (tmp_path / "outputs" / "x").exists(), list((tmp_path / "outputs").rglob("*"))
