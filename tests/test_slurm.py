"""SLURM sweeps: the scheduler's answers parsed, job requests, and real sweeps on a local Slurm.

The tests marked ``slurm`` submit to the Slurm that ``tools/local-slurm start`` runs on this
machine (``.ci/run`` starts it). Without one they skip, saying why; with
``BENCHLIB_REQUIRE_SLURM=1`` (set by ``.ci/run``) they fail instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from benchlib.cli import main
from benchlib.errors import ConfigError
from benchlib.execute import campaign, slurm
from benchlib.inputs.executors import LocalExecutor, SlurmExecutor, apply_overrides
from benchlib.inputs.params import load_sweep
from benchlib.records.results import load

TRAIN = {"model": "resnet18", "image_size": 32, "num_classes": 10, "iterations": 2, "warmup": 1,
         "num_workers": 0, "device": "cpu"}


# --- what the scheduler says, parsed -------------------------------------------------------------

def test_squeue_lines_give_pending_and_running_array_tasks():
    states = slurm.parse_squeue("12_0|RUNNING|None|node7\n12_1|PENDING|Resources|\n"
                                "13|PENDING|QOSMaxJobsPerUserLimit|\n")
    assert states["12_0"].phase == "running" and states["12_0"].describe() == "on node7"
    assert states["12_1"].phase == "pending" and states["12_1"].describe() == "queued (Resources)"
    assert states["13"].describe() == "queued (QOSMaxJobsPerUserLimit)"


def test_sacct_lines_give_final_states_and_skip_steps():
    text = ("12_0|COMPLETED|node7\n12_0.batch|COMPLETED|node7\n12_1|TIMEOUT|node8\n"
            "12_2|CANCELLED by 1000|node8\n12_3|OUT_OF_MEMORY|node9\n12_4|NODE_FAIL|node9\n")
    states = slurm.parse_sacct(text)
    assert sorted(states) == ["12_0", "12_1", "12_2", "12_3", "12_4"]
    assert states["12_1"].describe() == "TIMEOUT: time limit: killed by Slurm at the job's time limit"
    assert states["12_2"].state == "CANCELLED"
    assert "out of memory" in states["12_3"].describe()
    assert "node failure" in states["12_4"].describe()


def test_scontrol_output_names_the_array_task():
    text = ("JobId=40 ArrayJobId=39 ArrayTaskId=1 JobName=benchlib-x\n   JobState=TIMEOUT "
            "Reason=TimeLimit Dependency=(null)\n   NodeList=vm\n\n"
            "JobId=39 ArrayJobId=39 ArrayTaskId=0 JobName=benchlib-x\n   JobState=COMPLETED "
            "Reason=None\n   NodeList=vm\n")
    state = slurm.parse_scontrol("39_1", text)
    assert (state.phase, state.state, state.reason, state.nodes) == ("ended", "TIMEOUT", "TimeLimit", "vm")
    assert slurm.parse_scontrol("39_0", text).state == "COMPLETED"
    assert slurm.parse_scontrol("39_5", text) is None


@pytest.mark.parametrize(("line", "state"), [
    ("slurmstepd: error: *** JOB 7 ON vm CANCELLED AT 2026-11-21T21:42:04 DUE TO TIME LIMIT ***",
     "TIMEOUT"),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=5.batch. Some of the step tasks "
     "have been OOM Killed.", "OUT_OF_MEMORY"),
    ("slurmstepd: error: *** JOB 9 ON n3 CANCELLED AT 2026-01-01T00:00:00 DUE TO NODE FAILURE, "
     "SEE SLURMCTLD LOG FOR DETAILS ***", "NODE_FAIL"),
    ("slurmstepd: error: *** JOB 9 ON n3 CANCELLED AT 2026-01-01T00:00:00 ***", "CANCELLED"),
    ("Traceback (most recent call last):", ""),
])
def test_job_logs_name_why_a_job_ended(tmp_path, line, state):
    log = tmp_path / "x_log.err"
    log.write_text(f"some output\n{line}\nmore\n")
    assert slurm.reason_from_log([log, tmp_path / "missing"]) == state


def test_a_job_gone_from_every_source_is_judged_by_its_log(tmp_path, monkeypatch):
    """No squeue entry, no accounting (sacct fails), scontrol forgot it: the log decides."""
    def fake_run(command):
        if command[0] == "squeue":
            return subprocess.CompletedProcess(command, 0, "", "")
        return subprocess.CompletedProcess(command, 1, "", "Slurm accounting storage is disabled")

    monkeypatch.setattr(slurm, "_run", fake_run)
    log = tmp_path / "7_log.err"
    log.write_text("slurmstepd-vm: error: *** JOB 7 ON vm CANCELLED AT 2026-11-21T21:42:04 DUE TO "
                   "TIME LIMIT ***\n")
    states = slurm.query_states(["7", "8"], {"7": [log]})
    assert (states["7"].phase, states["7"].state) == ("ended", "TIMEOUT")
    assert states["8"].phase == "unknown"


# --- requests and settings ------------------------------------------------------------------------

def test_each_point_asks_for_its_nodes_gpus_cpus_and_memory():
    executor = SlurmExecutor(partition="gpu", account="proj", time_min=30, cpus_per_device=6,
                                   mem_gb_per_device=40, sbatch={"constraint": "h100"})
    request = slurm.submission_parameters(executor, {"num_devices": 8, "num_nodes": 2}, "benchlib-x")
    assert request["nodes"] == 2 and request["ntasks_per_node"] == 1
    assert request["gpus_per_node"] == 4 and request["cpus_per_task"] == 24 and request["mem"] == 160
    assert (request["partition"], request["account"], request["time"]) == ("gpu", "proj", 30)
    assert request["additional_parameters"] == {"signal": "B:USR2@90", "constraint": "h100"}
    assert request["use_srun"] is False
    cpu = slurm.submission_parameters(SlurmExecutor(cpus_per_device=1),
                                      {"device": "cpu", "num_devices": 2}, "benchlib-x")
    assert "gpus_per_node" not in cpu and cpu["cpus_per_task"] == 2 and "partition" not in cpu
    auto = {"device": "auto", "num_devices": 2}
    assert slurm.submission_parameters(executor, auto, "x", has_gpus=True)["gpus_per_node"] == 2
    assert "gpus_per_node" not in slurm.submission_parameters(executor, auto, "x", has_gpus=False)
    probe = slurm.submission_parameters(executor, {"allreduce_devices": 8}, "x")
    assert probe["gpus_per_node"] == 8 and probe["nodes"] == 1  # the node probe's all-reduce


@pytest.mark.parametrize(("partition", "sinfo", "expected"), [
    (None, "debug*|(null)\ngpu|gpu:h100:8\n", False),
    ("gpu", "gpu|gpu:h100:8(S:0-1)\n", True),
    ("cpu", "cpu|(null)\n", False),
    ("gpu", None, True),  # sinfo failed: GPU points ask for GPUs
])
def test_auto_devices_ask_for_gpus_where_the_partition_has_them(monkeypatch, partition, sinfo,
                                                                 expected):
    def fake_run(command):
        assert command[:2] == ["sinfo", "-h"] and (partition is None or command[-1] == partition)
        return subprocess.CompletedProcess(command, 1 if sinfo is None else 0, sinfo or "", "")

    monkeypatch.setattr(slurm, "_run", fake_run)
    assert slurm.partition_has_gpus(partition) is expected


def test_executor_overrides_and_their_errors():
    local = LocalExecutor(cell_timeout_s=600)
    chosen = apply_overrides(local, "slurm", partition="debug", time_min=5)
    assert isinstance(chosen, SlurmExecutor)
    assert (chosen.partition, chosen.time_min, chosen.cell_timeout_s) == ("debug", 5, 600)
    assert apply_overrides(local, None) == local
    with pytest.raises(ConfigError, match=r"executor\.time_min: bad value 0"):
        apply_overrides(local, "slurm", time_min=0)


def test_a_params_file_with_a_bad_slurm_setting_stops_before_submitting(tmp_path, capsys):
    params = tmp_path / "p.yaml"
    params.write_text(yaml.safe_dump({"campaign": "x", "notebook": "train", "base": TRAIN,
                                      "executor": {"kind": "slurm", "gpus": 4}}))
    assert main(["sweep", str(params), "--outputs", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "executor.gpus: unknown parameter (allowed with kind slurm: kind, partition" in err
    assert not (tmp_path / "out").exists()
    params.write_text(yaml.safe_dump({"campaign": "x", "notebook": "train", "base": TRAIN}))
    assert main(["sweep", str(params), "--outputs", str(tmp_path / "out"),
                 "--partition", "gpu"]) == 2
    assert "need the slurm executor" in capsys.readouterr().err


def test_a_warning_that_lands_inside_an_import_still_reads_time_limit(tmp_path, monkeypatch):
    """Slurm may send USR2 seconds after the start, while papermill is still being imported; a
    library there (lark) wraps the exception in its own. The point is still a time limit."""
    import signal

    from benchlib.execute import slurm_sweep, sweep

    def importing(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGUSR2)
            time.sleep(1)
        except Exception as error:
            raise RuntimeError("VisitError: Error trying to process rule") from error
        raise AssertionError("the warning did not arrive")

    monkeypatch.setattr(sweep, "execute_point", importing)
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    (point,) = load_sweep(_params(tmp_path, "warned", {"kind": "local"})).points
    target = tmp_path / "out" / f"{point.name}.ipynb"
    saved = {s: signal.getsignal(s) for s in (signal.SIGCONT, signal.SIGUSR2, signal.SIGTERM)}
    try:
        status = slurm_sweep.run_point_job(point, target, None, tmp_path, tmp_path, 1, 30)
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
    record = json.loads(target.with_suffix(".json").read_text())
    assert status == "failed" and record["status"] == "failed"
    assert record["error"].startswith("time limit: Slurm warned (USR2, up to 30 s ahead)")
    assert record["env_slurm_job_id"] == "77" and record["point_id"] == point.point_id


def test_status_records_a_job_that_died_without_a_result(tmp_path, monkeypatch):
    """A job killed before its sidecar: status writes a failed one with the reason, once."""
    folder = tmp_path / "c"
    sweep_point = load_sweep(_params(tmp_path, "c", {"kind": "local"}), base_dir=tmp_path).points[0]
    campaign.remember_points(folder, [sweep_point])
    log = tmp_path / "log.err"
    log.write_text("slurmstepd: error: Detected 1 oom_kill event in StepId=31.batch.\n")
    campaign.remember_jobs(folder, {sweep_point.name: {"job_id": "31", "stderr": str(log)}})
    monkeypatch.setattr(slurm, "_run", lambda command: subprocess.CompletedProcess(command, 1, "", ""))
    (table,) = campaign.campaign_status(folder)
    assert table.status == "failed" and table.job_id == "31"
    assert table.detail.startswith("job 31 OUT_OF_MEMORY: out of memory")
    sidecar = json.loads((folder / f"{sweep_point.name}.json").read_text())
    assert sidecar["status"] == "failed" and sidecar["slurm_state"] == "OUT_OF_MEMORY"
    assert sidecar["batch_size"] == 2 and sidecar["notebook"] == "train"
    # from now on the sidecar answers; the scheduler is not asked again
    monkeypatch.setattr(slurm, "_run", lambda command: pytest.fail(f"asked {command}"))
    assert campaign.campaign_status(folder)[0].detail == table.detail


# --- a real Slurm ---------------------------------------------------------------------------------

def _controller_unreachable() -> str:
    """Why no slurmctld can answer, found in a second from slurm.conf (its host and port
    refuse a connection), or '' (ask sinfo)."""
    try:
        text = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")).read_text()
    except OSError:
        return ""
    host = re.search(r"^SlurmctldHost=([^(\s]+)(?:\(([^)]+)\))?", text, re.M)
    port = re.search(r"^SlurmctldPort=(\d+)", text, re.M)
    if not host:
        return ""
    address = (host.group(2) or host.group(1), int(port.group(1)) if port else 6817)
    try:
        socket.create_connection(address, timeout=1).close()
    except OSError as error:
        return f"slurmctld at {address[0]}:{address[1]} does not answer ({error})"
    return ""


def _slurm_available() -> str:
    """'' when a Slurm controller answers here, else the reason it does not."""
    if shutil.which("sinfo") is None:
        return "no Slurm commands (sinfo) on PATH"
    unreachable = _controller_unreachable()
    if unreachable:  # sinfo would take 9 s to say so
        return unreachable
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%P %a %D %T"], capture_output=True, text=True,
                             timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"sinfo did not answer ({error})"
    if out.returncode != 0:
        return f"sinfo failed: {(out.stderr or out.stdout).strip()}"
    if not re.search(r"\b(idle|mixed|allocated)", out.stdout):
        return f"no Slurm node is up: {out.stdout.strip() or 'sinfo lists none'}"
    return ""


@pytest.fixture(scope="module")
def local_slurm() -> None:
    reason = _slurm_available()
    if reason:
        message = f"no local Slurm ({reason}); start one with: tools/local-slurm start"
        if os.environ.get("BENCHLIB_REQUIRE_SLURM"):
            pytest.fail(message + " (BENCHLIB_REQUIRE_SLURM is set)")
        pytest.skip(message)


def _params(tmp_path: Path, name: str, executor: dict, base: dict | None = None,
            grid: dict | None = None) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"campaign": name, "notebook": "train",
                                    "base": {**TRAIN, **(base or {})},
                                    "grid": grid or {"batch_size": [2]}, "executor": executor}))
    return path


SLURM = {"kind": "slurm", "partition": "debug", "time_min": 5, "cpus_per_device": 1, "poll_s": 1}


@pytest.mark.slow
@pytest.mark.xdist_group("slurm_debug")
def test_a_sweep_runs_as_a_job_array_and_a_resubmit_skips_it(local_slurm, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    # three points: two on 1 device (one array of two tasks, 1 CPU each) and one on 2 devices
    # (its own job: 2 CPUs), the second sweep's grid adding it to the campaign
    params = _params(tmp_path, "array", SLURM, grid={"num_devices": [1, 2], "batch_size": [2]})
    ones = _params(tmp_path, "ones", SLURM, grid={"num_devices": [1], "batch_size": [2, 4]})
    ones.write_text(ones.read_text().replace("campaign: ones", "campaign: array"))
    out = tmp_path / "out"
    assert main(["sweep", str(ones), "--outputs", str(out), "--quiet"]) == 0
    assert main(["sweep", str(params), "--outputs", str(out), "--wait", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "submitted 2 of 2 points as job array" in printed
    # the second sweep: its 1-device point is queued already, its 2-device point is new
    assert "submitted 1 of 2 points as job array" in printed
    assert re.search(r"left alone: 1 (pending|running) as job \d+_[01]\b", printed)

    # --wait waited for the second sweep's points; the first sweep's other one may still run
    names = list(campaign.read_jobs(out / "array"))
    assert len(names) == 3
    campaign.wait(out / "array", names, poll_s=1, progress=False, timeout_s=300)
    frame = load(out / "array").sort_values(["num_devices", "batch_size"])
    assert list(frame["status"]) == ["ok"] * 3
    assert list(frame["samples"]) == [4, 8, 8]  # 2 iterations x batch x devices
    assert list(frame["dist_backend"].fillna("")) == ["", "", "gloo"]  # torchrun for 2
    # the 1-device points: one array, tasks 0 and 1; the 2-device point: a job of its own
    # (submitit submits a one-point array as a plain job)
    (one,) = set(frame[frame["num_devices"] == 1]["env_slurm_array_job_id"])
    assert one and sorted(frame[frame["num_devices"] == 1]["env_slurm_array_task_id"]) == ["0", "1"]
    (two,) = frame[frame["num_devices"] == 2]["env_slurm_job_id"]
    assert two and two not in set(frame[frame["num_devices"] == 1]["env_slurm_job_id"]) | {one}
    assert set(frame["env_slurm_job_nodelist"]) == {socket.gethostname()}
    assert set(frame["env_slurm_job_partition"]) == {"debug"}
    assert len(list((out / "array").glob("*.ipynb"))) == 3

    jobs = campaign.read_jobs(out / "array")
    assert main(["sweep", str(params), "--outputs", str(out)]) == 0
    assert "submitted 0 of 2 points; left alone: 2 done" in capsys.readouterr().out
    assert campaign.read_jobs(out / "array") == jobs

    assert main(["status", str(out / "array")]) == 0
    status = capsys.readouterr().out
    assert "3 points: 3 done, 0 failed, 0 running, 0 pending" in status
    assert f"job {one}_0" in status and f"job {one}_1" in status and f"job {two}" in status


@pytest.mark.slow
@pytest.mark.xdist_group("slurm_debug")
def test_time_limit_is_reported_and_retry_failed_resubmits(local_slurm, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    # Slurm's warning 30 s before the 1 min limit (slurmctld checks time limits every ~30 s, so
    # it may come later); not earlier: a warning during the job's start-up, before the point's
    # handler is set, is submitit's requeue signal
    executor = {**SLURM, "time_min": 1, "signal_delay_s": 30}
    params = _params(tmp_path, "limit", executor, base={"iterations": 10**6})
    out = tmp_path / "out"
    start = time.monotonic()
    assert main(["sweep", str(params), "--outputs", str(out), "--wait", "--quiet"]) == 0
    assert time.monotonic() - start < 150
    printed = capsys.readouterr().out
    assert "1 failed" in printed and "time limit" in printed
    (record,) = load(out / "limit").to_dict("records")
    assert record["status"] == "failed" and "time limit" in record["error"]
    assert record["env_slurm_job_partition"] == "debug"

    assert main(["sweep", str(params), "--outputs", str(out)]) == 0
    assert "left alone: 1 failed (use --retry-failed)" in capsys.readouterr().out
    before = campaign.read_jobs(out / "limit")
    assert main(["sweep", str(params), "--outputs", str(out), "--retry-failed"]) == 0
    assert "submitted 1 of 1 point" in capsys.readouterr().out
    (name, entry), = campaign.read_jobs(out / "limit").items()
    assert entry["job_id"] != before[name]["job_id"]
    (point,) = campaign.campaign_status(out / "limit")
    assert point.status in ("pending", "running") and point.job_id == entry["job_id"]
    subprocess.run(["scancel", entry["job_id"]], check=True)
    (point,) = campaign.wait(out / "limit", [name], poll_s=1, progress=False, timeout_s=60)
    assert point.status == "failed" and "CANCELLED" in point.detail


@pytest.mark.slow
@pytest.mark.parametrize(("override", "message"), [
    (["--partition", "nope"], "no partition nope (partitions here: debug"),
    ({"mem_gb_per_device": 10**6}, "Memory specification can not be satisfied"),
])
def test_sbatch_refusals_are_shown_and_nothing_is_recorded(local_slurm, tmp_path, capsys,
                                                           override, message):
    """An unknown partition (named with the partitions there, before sbatch is asked), and more
    memory than any node has (sbatch's own refusal)."""
    options = override if isinstance(override, list) else []
    params = _params(tmp_path, "refused", {**SLURM, **(override if isinstance(override, dict) else {})})
    out = tmp_path / "out"
    assert main(["sweep", str(params), "--outputs", str(out), *options]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err
    assert options or "sbatch refused the job array; nothing was submitted" in err
    # the partition is checked before the campaign's folder is made; the folder made for a
    # first submission that sbatch refused is removed with it (no campaign of no runs)
    assert not (out / "refused").exists()


def _partition_up(name: str, wait_s: float = 30) -> bool:
    """Two nodes idle or mixed; nodes still completing an earlier test's job are waited for."""
    deadline = time.monotonic() + wait_s
    while True:
        out = subprocess.run(["sinfo", "-h", "-N", "-p", name, "-o", "%T"], capture_output=True,
                             text=True, check=False)
        if out.returncode == 0 and sum(s in ("idle", "mixed") for s in out.stdout.split()) >= 2:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(1)


@pytest.mark.slow
@pytest.mark.xdist_group("slurm_multi")
def test_a_two_node_point_starts_its_ranks_with_srun_across_the_allocation(local_slurm, tmp_path,
                                                                           capsys, monkeypatch):
    if not _partition_up("multi"):
        pytest.skip("partition 'multi' (two emulated nodes from tools/local-slurm) is not up")
    monkeypatch.chdir(tmp_path)
    params = _params(tmp_path, "nodes", {**SLURM, "partition": "multi"}, base={"batch_size": 2},
                     grid={"num_devices": [2], "num_nodes": [2]})
    out = tmp_path / "out"
    assert main(["sweep", str(params), "--outputs", str(out), "--wait", "--quiet"]) == 0
    assert "1 done" in capsys.readouterr().out
    (record,) = load(out / "nodes").to_dict("records")
    assert (record["status"], record["num_nodes"], record["num_devices"]) == ("ok", 2, 2)
    assert record["node_launcher"] == "srun" and record["dist_backend"] == "gloo"
    assert record["samples"] == 8 and record["env_slurm_job_nodelist"] == "lnode[1-2]"
    notebook = Path(record["source"]).read_text()
    assert "launch: 2 ranks on 2 node(s), 1 per node, device cpu, srun" in notebook


def _node_cpus(partition: str) -> int:
    out = subprocess.run(["sinfo", "-h", "-p", partition, "-o", "%c"], capture_output=True,
                         text=True, check=True)
    return max(int(n.rstrip("+")) for n in out.stdout.split())


def _left_the_queue(name: str = "", job: str = "", limit_s: float = 180.0) -> bool:
    """Whether the jobs called ``name`` (or job ``job``) leave squeue within ``limit_s``: scancel
    returns before slurmctld has taken a cancelled job out of its list (slower on a loaded
    machine). A job id follows one job only: an earlier run's job of the same name (a test
    stopped half-way, its job restored from slurmctld's state) cannot hold the answer."""
    deadline = time.monotonic() + limit_s
    while (_job_queued(job) if job else _own_jobs(name)):
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def _job_queued(job: str) -> bool:
    out = subprocess.run(["squeue", "-h", "-t", "PD,CF,R,CG", "-o", "%i"], capture_output=True,
                         text=True, check=True)
    return job in out.stdout.split()


def _own_jobs(name: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i"], capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


@pytest.mark.parametrize("case", ["cpus", "time", "nodes"])
def test_a_point_no_node_can_run_is_refused_before_submitting(local_slurm, tmp_path, capsys,
                                                              monkeypatch, case):
    """More CPUs than the node has, more minutes than `short` allows, more nodes than `debug`
    has: exit 2, nothing submitted, the ledger as it was; the message says what fits."""
    monkeypatch.chdir(tmp_path)
    cpus = _node_cpus("debug")
    executor, options, grid = dict(SLURM), [], {"batch_size": [2]}
    if case == "cpus":
        executor.pop("cpus_per_device")  # the default, 8, or more than this host has
        options = ["--cpus-per-device", str(max(8, cpus + 1))] if cpus >= 8 else []
        expected = (f"cpus_per_device {max(8, cpus + 1)} x 1 device = {max(8, cpus + 1)} CPUs per "
                    f"node, but the largest node of partition debug has {cpus}; set "
                    f"cpus_per_device: {cpus} (or --cpus-per-device {cpus})")
    elif case == "time":
        options = ["--partition", "short", "--time-min", "5"]
        expected = "time_min 5 is above the 2 min MaxTime of partition short; set time_min: 2"
    else:
        grid = {"num_nodes": [2], "num_devices": [2]}
        expected = "num_nodes 2: 2 nodes, but partition debug has 1 that fits; set num_nodes: 1"
    params = _params(tmp_path, f"toobig-{case}", executor, grid=grid)
    folder = tmp_path / "out" / f"toobig-{case}"
    (point,) = load_sweep(params).points
    campaign.remember_points(folder, [point])  # an earlier sweep's ledger: left as it is
    campaign.remember_jobs(folder, {"other": {"job_id": "1"}})
    ledger = {p.name: p.read_bytes() for p in (folder / ".benchlib").iterdir()}
    assert main(["sweep", str(params), "--outputs", str(tmp_path / "out"), *options]) == 2
    err = capsys.readouterr().err
    assert "no node of the partition can run these points; nothing was submitted" in err
    assert f"point {point.name}: {expected}" in err
    assert {p.name: p.read_bytes() for p in (folder / ".benchlib").iterdir()} == ledger
    assert not list(folder.glob("*.json")) and not _own_jobs(f"benchlib-toobig-{case}")


def _wait_for_status(folder: Path, text: str, capsys, timeout_s: float = 60) -> str:
    """`benchlib status` until its output contains ``text`` (the scheduler sets the reason),
    its lines as one (status wraps them to the terminal)."""
    start = time.monotonic()
    while True:
        assert main(["status", str(folder)]) == 0
        printed = " ".join(capsys.readouterr().out.split())
        if text in printed or time.monotonic() - start > timeout_s:
            return printed
        time.sleep(1)


@pytest.mark.slow
def test_a_job_slurm_will_never_start_is_explained_and_failed_by_wait(local_slurm, tmp_path,
                                                                      capsys, monkeypatch):
    """A point that depends on a job that failed (sbatch: dependency) pends for ever with
    DependencyNeverSatisfied: status says so and why; --wait cancels it and records it failed."""
    monkeypatch.chdir(tmp_path)
    name = f"benchlib-test-fail-{os.getpid()}-{tmp_path.name}"  # no earlier run's job matches
    failing = subprocess.run(["sbatch", "--parsable", "-p", "debug", "-o", "/dev/null", "-J",
                              name, "--wrap", "exit 1"], capture_output=True,
                             text=True, check=True).stdout.strip()
    for _ in range(60):
        if not _own_jobs(name):
            break
        time.sleep(1)
    params = _params(tmp_path, "never", {**SLURM, "sbatch": {"dependency": f"afterok:{failing}"}})
    out = tmp_path / "out"
    try:
        assert main(["sweep", str(params), "--outputs", str(out)]) == 0
        assert "submitted 1 of 1 point" in capsys.readouterr().out
        status = _wait_for_status(out / "never", "DependencyNeverSatisfied): Slurm will never", capsys)
        assert "1 pending" in status and "queued (DependencyNeverSatisfied): Slurm will never " \
            "start it: a job it depends on failed or was cancelled" in status

        start = time.monotonic()
        assert main(["sweep", str(params), "--outputs", str(out), "--wait", "--quiet"]) == 0
        assert time.monotonic() - start < 120
        printed = capsys.readouterr().out
        assert "left alone: 1 pending as job" in printed and "1 failed" in printed
        assert "benchlib cancelled it (scancel)" in printed
        (sidecar,) = (out / "never").glob("*.json")  # no notebook: the job never started
        record = json.loads(sidecar.read_text())
        assert record["status"] == "failed" and "DependencyNeverSatisfied" in record["error"]
        assert _left_the_queue(job=record["env_slurm_job_id"]), subprocess.run(
            ["squeue", "-a", "-o", "%i %j %T %r"], capture_output=True, text=True).stdout
        assert main(["status", str(out / "never")]) == 0
        assert "1 failed" in capsys.readouterr().out
    finally:
        for job in _own_jobs("benchlib-never"):
            subprocess.run(["scancel", job], check=False)


@pytest.mark.slow
def test_a_job_above_the_partition_time_limit_is_failed_with_the_numbers(local_slurm, tmp_path,
                                                                         capsys):
    """A job submitted by hand to `short` with 5 min (its MaxTime is 2) pends with
    PartitionTimeLimit; wait fails it within a minute, saying what it asked and what fits."""
    name = f"benchlib-test-time-{os.getpid()}-{tmp_path.name}"  # no earlier run's job matches
    job = subprocess.run(["sbatch", "--parsable", "-p", "short", "-t", "5", "-o", "/dev/null",
                          "-J", name, "--wrap", "true"], capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        (point,) = load_sweep(_params(tmp_path, "time", {"kind": "local"})).points
        folder = tmp_path / "time"
        campaign.remember_points(folder, [point])
        campaign.remember_jobs(folder, {point.name: {"job_id": job}})
        status = _wait_for_status(folder, "queued (PartitionTimeLimit): Slurm will never", capsys)
        assert (f"job {job}" in status and "queued (PartitionTimeLimit)" in status
                and "(asks 5 min, but partition short allows at most 2 min (MaxTime))" in status)
        (failed,) = campaign.wait(folder, [point.name], poll_s=1, progress=False, timeout_s=90,
                                  blocked_grace_s=2)  # the reason is already seen (above)
        assert failed.status == "failed" and "lower time_min" in failed.detail
        assert _left_the_queue(name)
    finally:
        subprocess.run(["scancel", job], check=False)
