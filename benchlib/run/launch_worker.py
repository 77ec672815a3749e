"""What torchrun starts on every rank: join the process group, run the workload, save the result.

``python -m benchlib.run.launch_worker SPEC.json`` (the launcher writes the spec). Files in the
spec's ``out`` folder, all written through a temporary file and a rename:

- ``heartbeat-<rank>.json`` every second: pid, host and iterations finished so far;
- ``result-<rank>.pkl`` at the end: the rank's result (and rank 0's environment capture);
- ``error-<rank>.txt`` when the workload raised: the traceback;
- ``stack-<rank>.txt``: every thread's stack, dumped on SIGUSR1 (the launcher asks for it when
  a rank stops making progress).
"""

from __future__ import annotations

import faulthandler
import json
import os
import pickle
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from benchlib.records.store import write_bytes_atomic

HEARTBEAT_S = 1.0


class Heartbeat(threading.Thread):
    """Writes this rank's progress (iterations finished) every :data:`HEARTBEAT_S` seconds."""

    def __init__(self, path: Path, rank: int) -> None:
        super().__init__(daemon=True, name="benchlib-heartbeat")
        self.path, self.rank = path, rank
        self.stopped = threading.Event()

    def beat(self) -> None:
        from benchlib.workloads.loop import progress

        write_bytes_atomic(self.path, json.dumps({
            "rank": self.rank, "pid": os.getpid(), "host": socket.gethostname(),
            "iterations": progress.iterations, "time": time.time()}).encode())

    def run(self) -> None:
        while not self.stopped.wait(HEARTBEAT_S):
            self.beat()


def main(argv: list[str] | None = None) -> int:
    """Run one rank of the launch described by the spec file ``argv[0]``."""
    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    out = Path(spec["out"])
    rank = int(os.environ["RANK"])
    for folder in reversed(spec.get("python_path", [])):
        sys.path.insert(0, folder)
    stacks = (out / f"stack-{rank}.txt").open("w")
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    heartbeat = Heartbeat(out / f"heartbeat-{rank}.json", rank)
    heartbeat.beat()
    heartbeat.start()
    from benchlib.workloads import distributed

    try:
        from benchlib.run.launch import load_config, resolve_target
        from benchlib.run.waiting import collective_timeout_s

        config = load_config(spec["config"])
        # collectives give up after the launcher would have stopped a hang (its diagnosis comes
        # first), and not before a peer's torch.compile is done
        distributed.init(config.device, timeout_s=collective_timeout_s(config))
        result = resolve_target(spec.get("target") or "", config)(config)
        env = {}
        if rank == 0:
            from benchlib.kinds import data_path
            from benchlib.measure.environment import capture

            env = capture(result.device, data_path(config))
        payload = {"rank": rank, "node": distributed.current().node_rank,
                   "host": socket.gethostname(), "result": result, "env": env,
                   "backend": distributed.backend()}
        write_bytes_atomic(out / f"result-{rank}.pkl", pickle.dumps(payload))
        distributed.shutdown()
    except BaseException:  # not shutting down: a process group with a dead peer may not
        write_bytes_atomic(out / f"error-{rank}.txt", traceback.format_exc().encode())
        raise
    finally:
        heartbeat.stopped.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
