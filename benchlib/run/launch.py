"""Run a workload on one device in this process, or on several devices and nodes through torchrun.

``num_devices: 1`` on one node calls the workload here, with no launcher in between. Otherwise
torchrun starts one process per device (:mod:`benchlib.run.launch_worker`): standalone on one
node, a c10d rendezvous across nodes (``srun`` starts one torchrun agent per node of a SLURM
allocation; ``localhost`` starts them all on this machine). NCCL joins CUDA devices, gloo
CPUs. The calling process (a notebook kernel) only starts and watches subprocesses, so it never
initialises CUDA itself. Each rank saves its result; :func:`benchlib.run.merge.merge` makes them
one.

A rank that fails ends the launch at once, named with its error; a rank that finishes no
iteration for ``hang_timeout_s`` is reported with every rank's stack and the launch is killed.

Nothing a launch starts outlives it: its work folder (``benchlib-launch-*``) is in the run's
scratch folder (:mod:`benchlib.workloads.scratch`: the point's, in a sweep) and names the
processes it starts (:data:`~benchlib.workloads.scratch.SCRATCH_VARIABLE`), which are ended
and the folder removed however the launch ends; on Linux torchrun also gets SIGTERM when the
process that started it dies (``PR_SET_PDEATHSIG``: a kernel killed at its cell time limit).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib import PROJECT_ROOT, registry
from benchlib.errors import LaunchError
from benchlib.inputs.config import CommonConfig
from benchlib.kinds import data_path, kind_of, run_target
from benchlib.measure.process_tree import ROOT_HOST_VARIABLE, ROOT_PID_VARIABLE, run_root_pid
from benchlib.run.merge import merge
from benchlib.run.waiting import allowance
from benchlib.workloads.scratch import SCRATCH_VARIABLE, end_processes

POLL_S = 0.2
GRACE_S = 15.0  #: after one agent fails, how long the others get to exit on their own
#: Run by Python in an agent's place before it execs the agent's command: the agent gets
#: SIGTERM when the thread that started it ends (Linux's ``prctl(PR_SET_PDEATHSIG)``, kept
#: across ``exec``), and is not started when that process is already gone.
DEATH_SIGNAL_GUARD = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG\n"
    "if os.getppid() != int(sys.argv[1]): sys.exit('benchlib: the launching process is gone')\n"
    "os.execvp(sys.argv[2], sys.argv[2:])")


def with_death_signal(command: list[str]) -> list[str]:
    """``command`` started so that it gets SIGTERM when this process dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return command
    return [sys.executable, "-c", DEATH_SIGNAL_GUARD, str(os.getpid()), *command]


def dump_config(config: CommonConfig) -> dict[str, Any]:
    """A config as JSON-able data that :func:`load_config` turns back into the same config."""
    return {"class": type(config).__name__, "params": config.model_dump(mode="json")}


def load_config(data: dict[str, Any]) -> CommonConfig:
    """The config that :func:`dump_config` wrote (validated again)."""
    return registry.config_class(data["class"]).model_validate(data["params"])


def resolve_target(target: str, config: CommonConfig) -> Callable[[Any], Any]:
    """``module:function`` (empty: the workload of the config's type)."""
    target = target or run_target(config)
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def run(config: CommonConfig, target: str = "") -> Any:
    """Run ``config``'s workload (or ``target``, ``module:function``) on its devices and nodes.

    Returns the workload's result; a :class:`~benchlib.workloads.result.RunResult` of several
    ranks is merged (:func:`benchlib.run.merge.merge`). ``result.env`` holds the environment capture.
    """
    started = time.time()
    if config.num_devices == 1 and config.num_nodes == 1:
        from benchlib.measure.environment import capture

        result = resolve_target(target, config)(config)
        result.env = capture(result.device, data_path(config))
    else:
        result = Launch(config, target).run()
    return stamped(result, started, time.time())


def stamped(result: Any, started: float, ended: float) -> Any:
    """``result`` with its run id (made here, once per run: every rank's record is one run) and,
    where the workload did not time a loop of its own (the probes), the launch's start and end
    as its ``started_at`` / ``ended_at`` (epoch seconds)."""
    from benchlib.measure.timing import new_run_id

    result.run_id = new_run_id()
    if getattr(result, "started_at", None) is None:
        result.started_at = started
    if getattr(result, "ended_at", None) is None:
        result.ended_at = ended
    return result


def node_launcher(config: CommonConfig) -> str:
    """How the nodes' agents start: ``standalone`` (one node), ``srun`` or ``localhost``."""
    if config.num_nodes == 1:
        return "standalone"
    if config.node_launcher != "auto":
        return config.node_launcher
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or 0)
    if nodes >= config.num_nodes:
        return "srun"
    raise LaunchError(
        f"num_nodes {config.num_nodes}: this is not a SLURM allocation of {config.num_nodes} nodes "
        f"(SLURM_JOB_NUM_NODES={nodes or 'unset'}); run inside one (srun starts torchrun on each "
        "node), or set node_launcher 'localhost' to run every node's processes on this machine")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _first_slurm_host() -> str:
    nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                         text=True, check=True, timeout=30)
    return out.stdout.split()[0]


def torchrun_command(config: CommonConfig, spec: Path, mode: str, endpoint: str = "",
                     run_id: str = "") -> list[str]:
    """The torchrun command line of one node's agent (``mode`` from :func:`node_launcher`)."""
    command = [sys.executable, "-m", "torch.distributed.run",
               f"--nproc-per-node={config.devices_per_node}", "--max-restarts=0",
               "--monitor-interval=0.5"]
    if mode == "standalone":
        command += ["--standalone", "--nnodes=1"]
    else:
        command += [f"--nnodes={config.num_nodes}", "--rdzv-backend=c10d",
                    f"--rdzv-endpoint={endpoint}", f"--rdzv-id={run_id}"]
        if mode == "localhost":
            command.append("--local-addr=127.0.0.1")
    return [*command, "-m", "benchlib.run.launch_worker", str(spec)]


def _threads_per_rank(config: CommonConfig, mode: str) -> int:
    """CPU threads per rank: the node's CPUs shared by the ranks that run on it."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    ranks_here = config.num_devices if mode == "localhost" else config.devices_per_node
    return max(1, cpus // ranks_here)


class Launch:
    """One torchrun launch of ``config`` and its outcome."""

    def __init__(self, config: CommonConfig, target: str = "") -> None:
        self.config, self.target = config, target
        self.mode = node_launcher(config)
        base = (os.environ.get("BENCHLIB_LAUNCH_DIR") or os.environ.get(SCRATCH_VARIABLE) or (
            str(Path.cwd() / ".benchlib-launch") if self.mode == "srun" else None))
        if base:
            Path(base).mkdir(parents=True, exist_ok=True)
        self.out = Path(tempfile.mkdtemp(prefix="benchlib-launch-", dir=base)).absolute()
        self.world = config.num_devices
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def commands(self) -> list[list[str]]:
        """One command per agent: one torchrun (standalone), one srun, or one per local node."""
        spec = self.out / "spec.json"
        python_path = []
        if self.target:
            module = importlib.import_module(self.target.partition(":")[0])
            top = Path(module.__file__).resolve().parents[self.target.count(".", 0,
                                                                            self.target.find(":"))]
            python_path.append(str(top))
        spec.write_text(json.dumps({"config": dump_config(self.config), "target": self.target,
                                    "out": str(self.out), "python_path": python_path}))
        run_id = uuid.uuid4().hex[:12]
        if self.mode == "standalone":
            return [torchrun_command(self.config, spec, "standalone")]
        if self.mode == "localhost":
            endpoint = f"127.0.0.1:{_free_port()}"
            command = torchrun_command(self.config, spec, "localhost", endpoint, run_id)
            return [command] * self.config.num_nodes
        port = 20000 + int(run_id, 16) % 20000
        command = torchrun_command(self.config, spec, "srun", f"{_first_slurm_host()}:{port}", run_id)
        n = self.config.num_nodes
        return [["srun", f"--nodes={n}", f"--ntasks={n}", "--ntasks-per-node=1",
                 "--kill-on-bad-exit=1", *command]]

    def run(self) -> Any:
        """Start the agents, watch them, and return the merged result (or raise LaunchError)."""
        env = {**os.environ, "OMP_NUM_THREADS": str(_threads_per_rank(self.config, self.mode)),
               ROOT_PID_VARIABLE: str(run_root_pid()),  # ranks count each other as the run
               ROOT_HOST_VARIABLE: socket.gethostname(),  # (on the launcher's host)
               SCRATCH_VARIABLE: str(self.out)}  # and are ended with the launch
        env["PYTHONPATH"] = os.pathsep.join(
            [str(PROJECT_ROOT), *filter(None, [env.get("PYTHONPATH")])])
        started = time.perf_counter()
        print(f"launch: {self.world} ranks on {self.config.num_nodes} node(s), "
              f"{self.config.devices_per_node} per node, device {self.config.device}, {self.mode} "
              f"(work folder {self.out})", flush=True)
        try:
            for index, command in enumerate(self.commands()):
                log = self.out / f"agent-{index}.log"
                self.logs.append(log)
                with log.open("wb") as handle:
                    self.procs.append(subprocess.Popen(with_death_signal(command), stdout=handle,
                                                       stderr=subprocess.STDOUT, env=env,
                                                       start_new_session=True))
            self._watch()
            parts = self._collect()
            seconds = time.perf_counter() - started
        finally:  # done, failed or interrupted: nothing of the launch is left
            self._kill()
            end_processes(self.out)
            shutil.rmtree(self.out, ignore_errors=True)
        result = merge(parts, num_nodes=self.config.num_nodes,
                       summed=kind_of(self.config).summed_extras)
        if hasattr(result, "extras"):
            slowest = max(p["result"].wall_time_s for p in parts)
            result.extras.update(launch_wall_s=seconds, launch_overhead_s=seconds - slowest,
                                 dist_backend=parts[0].get("backend", ""), node_launcher=self.mode)
        print(f"launch: {self.world} ranks ({parts[0].get('backend', '')}) done in {seconds:.1f} s",
              flush=True)
        return result

    # ------------------------------------------------------------- watching

    def _heartbeats(self) -> dict[int, dict]:
        beats = {}
        for path in self.out.glob("heartbeat-*.json"):
            try:
                beat = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            beats[int(beat["rank"])] = beat
        return beats

    def _done_ranks(self) -> set[int]:
        return {int(p.stem.split("-")[1]) for p in self.out.glob("result-*.pkl")}

    def _watch(self) -> None:
        timeout = self.config.hang_timeout_s
        start = time.monotonic()
        last: dict[int, tuple[int, float]] = {r: (-1, start) for r in range(self.world)}
        while True:
            codes = [p.poll() for p in self.procs]
            if all(c == 0 for c in codes):
                return
            if any(c not in (None, 0) for c in codes):
                self._wait_others()
                raise LaunchError(self._failure())
            now = time.monotonic()
            beats, done = self._heartbeats(), self._done_ranks()
            for rank, beat in beats.items():
                if beat["iterations"] != last[rank][0]:
                    last[rank] = (beat["iterations"], now)
            # a rank's clock starts at its first heartbeat; until its first iteration (torchrun,
            # imports and set-up on a loaded node, a compile: the first heartbeat comes before
            # them) it gets more (allowance)
            stalled = [r for r, (seen, t) in last.items() if r not in done
                       and now - t > allowance(self.config, seen)]
            if stalled:
                raise LaunchError(self._hang(stalled, beats, timeout))
            time.sleep(POLL_S)

    def _wait_others(self) -> None:
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline and any(p.poll() is None for p in self.procs):
            time.sleep(POLL_S)
        self._kill()

    def _kill(self) -> None:
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            alive = [p for p in self.procs if p.poll() is None]
            for proc in alive:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and any(p.poll() is None for p in alive):
                time.sleep(POLL_S)

    def _collect(self) -> list[dict]:
        parts = []
        for rank in range(self.world):
            path = self.out / f"result-{rank}.pkl"
            if not path.is_file():
                raise LaunchError(f"rank {rank} of {self.world} exited without a result; agent "
                                  f"output ends:\n{self._tail()}")
            parts.append(pickle.loads(path.read_bytes()))
        return parts

    # ------------------------------------------------------------- diagnosis

    def _tail(self, lines: int = 25) -> str:
        text = "\n".join(log.read_text(errors="replace") for log in self.logs if log.is_file())
        return "\n".join(text.strip().splitlines()[-lines:])

    def _failure(self) -> str:
        """Name the rank that failed first and its error (a signal, or the traceback's end)."""
        summary = "\n".join(log.read_text(errors="replace") for log in self.logs if log.is_file())
        found = re.finditer(
            r"host\s*:\s*(?P<host>\S+)\s*\n\s*rank\s*:\s*(?P<rank>\d+).*?\n\s*exitcode\s*:\s*"
            r"(?P<code>-?\d+)", summary)
        # torchrun lists the ranks it stopped (SIGTERM) under "Failures:" before the "Root
        # Cause (first observed failure)": the root causes first
        found = sorted(found, key=lambda m: "Root Cause" not in
                       summary[:m.start()].rpartition("Failures:")[2])
        killed = [(int(m["rank"]), int(m["code"]), m["host"]) for m in found]
        errors = sorted(self.out.glob("error-*.txt"), key=lambda p: p.stat().st_mtime)
        with_traceback = {int(p.stem.split("-")[1]) for p in errors}
        for rank, code, host in killed:
            if code < 0 and rank not in with_traceback:
                name = _signal_name(-code)
                others = sorted(with_traceback)
                after = f"; then rank(s) {others} failed after it" if others else ""
                return (f"rank {rank} of {self.world} (host {host}) was killed by signal {-code} "
                        f"({name}){after}. Logs: {self.out}")
        if errors:
            first = errors[0]
            rank = int(first.stem.split("-")[1])
            trace = first.read_text().strip().splitlines()
            others = sorted(with_traceback - {rank})
            after = f" (rank(s) {others} failed after it)" if others else ""
            return (f"rank {rank} of {self.world} failed: {trace[-1]}{after}\n"
                    + "\n".join(trace[-12:]) + f"\nLogs: {self.out}")
        codes = [p.returncode for p in self.procs]
        return (f"torchrun exited with {codes} and no rank reported an error; agent output "
                f"ends:\n{self._tail()}")

    def _hang(self, stalled: list[int], beats: dict[int, dict], timeout: float) -> str:
        """Dump every local rank's stack (SIGUSR1), kill the launch, describe where each stood."""
        here = socket.gethostname()
        for beat in beats.values():
            if beat["host"] == here:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(beat["pid"], signal.SIGUSR1)
        time.sleep(1.0)
        self._kill()
        lines = [f"rank(s) {stalled} of {self.world} finished no iteration for {timeout:g} s "
                 "(hang_timeout_s): launch stopped. Where each rank stood:"]
        for rank in range(self.world):
            beat = beats.get(rank)
            where = _innermost_frame(self.out / f"stack-{rank}.txt")
            state = "no heartbeat" if beat is None else f"{beat['iterations']} iterations"
            lines.append(f"  rank {rank}: {state}; {where}")
        lines.append(f"Logs and stacks: {self.out}")
        return "\n".join(lines)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _innermost_frame(path: Path) -> str:
    """The innermost frame of the main thread in a faulthandler dump."""
    try:
        text = path.read_text()
    except OSError:
        return "no stack"
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text.strip())
    main = next((b for b in blocks if "<module>" in b), blocks[-1] if blocks else "")
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', main)
    if not frames:
        return "no stack"
    file, line, function = frames[0]  # faulthandler lists the innermost frame first
    return f"in {function} ({file}:{line})"
