"""Synthetic nightly histories for the history benchmarks and calibration: one record per
night, configuration and node, made from a real record's columns (a ResNet-50 training run on
an H100), with multiplicative noise, a planted step and an environment change where asked.

    from history_data import nights
    frame = nights(nodes=4, nights=40, noise=0.02, step={"node002": (20, 0.9)},
                   driver={"node002": 20})
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

#: The columns of a real record (trimmed) that every synthetic run carries.
RUN = {"schema_version": 4, "cluster": "jade", "gpu": "H100", "device_name": "NVIDIA H100 80GB HBM3",
       "benchmark": "train", "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16",
       "num_devices": 1, "num_nodes": 1, "num_workers": 8, "channels_last": True,
       "compile": "none", "unit": "images/s", "status": "ok", "error": "", "iterations": 200,
       "wall_time_s": 60.0, "env_driver": "580.65.06", "env_cuda": "13.0", "env_cudnn": "91300",
       "env_nccl": "2.27.7", "env_torch": "2.14.1+cu130", "env_container": "",
       "env_os": "Linux-6.8.0-49-generic-x86_64-with-glibc2.39", "flags": ""}
#: The speed of each batch size before any step.
SPEED = {64: 2900.0, 128: 3050.0}
START = pd.Timestamp("2026-09-01T01:00:00Z")


def nights(nodes: int = 4, nights: int = 40, noise: float = 0.02,
           step: Mapping[str, tuple[int, float]] | None = None,
           driver: Mapping[str, int] | None = None, batches: tuple[int, ...] = (64,),
           seed: int = 0, repeats: int = 1) -> pd.DataFrame:
    """One run per night (``repeats`` per night), batch size and node (``node001``, ...):
    ``step`` maps a node to (first night, factor) of a planted step; ``driver`` a node to the
    night its driver changes to 580.82.07. ``started_at`` is ISO 8601 UTC text."""
    rng = np.random.default_rng(seed)
    rows = []
    for night in range(nights):
        for n in range(1, nodes + 1):
            node = f"node{n:03d}"
            for batch in batches:
                for repeat in range(repeats):
                    factor = 1.0
                    if step and node in step and night >= step[node][0]:
                        factor = step[node][1]
                    new_driver = driver and node in driver and night >= driver[node]
                    when = START + pd.Timedelta(days=night, minutes=10 * n + repeat)
                    rows.append({**RUN, "campaign": f"nightly-{when:%Y-%m-%d}", "host": node,
                                 "batch_size": batch, "repeat": repeat,
                                 "throughput": SPEED.get(batch, 3000.0) * factor
                                 * float(np.exp(noise * rng.standard_normal())),
                                 "env_driver": "580.82.07" if new_driver else RUN["env_driver"],
                                 "started_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                 "run_id": f"{node}-{batch}-{night}-{repeat}",
                                 "source": f"/nightly-{night:02d}/{node}-b{batch}-r{repeat}.ipynb"})
    return pd.DataFrame(rows)
