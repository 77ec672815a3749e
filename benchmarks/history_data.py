"""Synthetic nightly histories for the history benchmarks and calibration: one record per
night, configuration and node, made from a real record's columns (a ResNet-50 training run on
an H100), with multiplicative noise, a planted step and an environment change where asked.

    from history_data import nights
    frame = nights(nodes=4, nights=40, noise=0.02, step={"node002": (20, 0.9)},
                   driver={"node002": 20})
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from benchlib import SCHEMA_VERSION

#: The columns of a real record (trimmed) that every synthetic run carries.
RUN = {"schema_version": SCHEMA_VERSION, "cluster": "jade", "gpu": "H100",
       "device_name": "NVIDIA H100 80GB HBM3", "benchmark": "train", "model": "resnet50",
       "dataset": "synthetic", "precision": "amp_bf16",
       "num_devices": 1, "num_nodes": 1, "num_workers": 8, "channels_last": True,
       "compile": "none", "unit": "images/s", "status": "ok", "error": "", "iterations": 200,
       "wall_time_s": 60.0, "env_driver": "580.65.06", "env_cuda": "13.0", "env_cudnn": "91300",
       "env_nccl": "2.27.7", "env_torch": "2.14.1+cu130", "env_container": "",
       "env_os": "Linux-6.8.0-49-generic-x86_64-with-glibc2.39", "flags": ""}
#: The speed of each batch size before any step.
SPEED = {64: 2900.0, 128: 3050.0}
START = pd.Timestamp("2026-09-01T01:00:00Z")


def from_record(path: Path) -> tuple[dict, dict[int, float]]:
    """A real run's record (a sidecar ``benchlib sweep`` wrote) as the template of every night's
    runs, in place of :data:`RUN`, and its own speed at its batch size in place of
    :data:`SPEED`; its iterations, source and identity are left out (each night's are new)."""
    import json

    from benchlib.records.store import ITERATIONS_KEY

    record = json.loads(Path(path).read_text())
    template = {k: v for k, v in record.items()
                if k not in (ITERATIONS_KEY, "source", "run_id", "started_at", "ended_at",
                             "campaign", "host", "repeat")}
    template.update(flags="", contended=False, noisy=False, env_driver=RUN["env_driver"])
    return template, {int(record["batch_size"]): float(record["throughput"])}


def from_records(paths: list[Path]) -> tuple[dict, dict[int, float]]:
    """:func:`from_record` of the first of ``paths`` (the repeats of one point, a glob's
    matches), its speed the median of theirs."""
    found = [from_record(path) for path in paths]
    template, speeds = found[0]
    batch = next(iter(speeds))
    return template, {batch: float(np.median([next(iter(s.values())) for _, s in found]))}


def nights(nodes: int = 4, nights: int = 40, noise: float = 0.02,
           step: Mapping[str, tuple[int, float]] | None = None,
           driver: Mapping[str, int] | None = None, batches: tuple[int, ...] = (64,),
           seed: int = 0, repeats: int = 1, template: Mapping[str, object] | None = None,
           speeds: Mapping[int, float] | None = None) -> pd.DataFrame:
    """One run per night (``repeats`` per night), batch size and node (``node001``, ...):
    ``step`` maps a node to (first night, factor) of a planted step; ``driver`` a node to the
    night its driver changes to 580.82.07. ``started_at`` is ISO 8601 UTC text. ``template``
    and ``speeds`` (:func:`from_record`) replace :data:`RUN` and :data:`SPEED`."""
    base, speed = dict(template or RUN), dict(speeds or SPEED)
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
                    rows.append({**base, "campaign": f"nightly-{when:%Y-%m-%d}", "host": node,
                                 "batch_size": batch, "repeat": repeat,
                                 "throughput": speed.get(batch, 3000.0) * factor
                                 * float(np.exp(noise * rng.standard_normal())),
                                 "env_driver": "580.82.07" if new_driver else RUN["env_driver"],
                                 "started_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                 "run_id": f"{node}-{batch}-{night}-{repeat}",
                                 "source": f"/nightly-{night:02d}/{node}-b{batch}-r{repeat}.ipynb"})
    return pd.DataFrame(rows)


def times_follow_speed(frame: pd.DataFrame, template: Mapping[str, object]) -> pd.DataFrame:
    """``frame`` with the template's seconds (per iteration, per phase, the loop's wall time and
    their percentiles) and rates (achieved TFLOP/s, the within-run interval) scaled as its
    throughput was: a night 12 % slower takes 1/0.88 the time,
    so ``history --metric time_iteration_s`` finds what ``--metric throughput`` finds."""
    slower = float(template["throughput"]) / frame["throughput"]  # type: ignore[arg-type]
    for column, value in template.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if (column.startswith("time_") and column.endswith("_s")) or column == "wall_time_s":
            frame[column] = value * slower
        elif column in ("achieved_tflops", "throughput_low", "throughput_high"):  # rates
            frame[column] = value / slower
    return frame


def write_campaigns(root: Path, frame: pd.DataFrame) -> list[Path]:
    """Each campaign of ``frame`` as a folder under ``root`` (``nightly-2026-09-01``, ...): one
    notebook per run holding its record (benchlib's record output) and its sidecar, as a sweep
    leaves them. The folders, oldest first."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from benchlib.records.store import RECORD_MIME, write_sidecar

    folders = []
    for campaign, runs in frame.groupby("campaign", sort=True):
        folder = root / str(campaign)
        folder.mkdir(parents=True, exist_ok=True)
        for record in runs.drop(columns=["source"]).to_dict("records"):
            notebook = folder / f"{record['host']}-b{record['batch_size']}-r{record['repeat']}.ipynb"
            cell = new_code_cell("publish(record)")
            cell.outputs = [new_output("display_data", data={RECORD_MIME: record,
                                                              "text/plain": "record"})]
            book = new_notebook(cells=[cell])
            book.metadata["benchlib"] = {"kind": "benchmark"}
            nbformat.write(book, str(notebook))
            write_sidecar(notebook, record)
        folders.append(folder)
    return folders


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Write synthetic nightly campaigns: node002's "
                                     "speed drops 12 % from night 26, when its driver changes.")
    parser.add_argument("root", type=Path)
    parser.add_argument("--nights", type=int, default=40)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--from-record", type=Path, metavar="SIDECAR", nargs="+",
                        help="a real run's sidecar (<point>.json) as every run's template, at "
                             "its own batch size and speed (several, the repeats of a point: "
                             "the first, at the median of their speeds)")
    parser.add_argument("--runs", type=int, default=1,
                        help="runs a night; with more than one, every run of a night on a node "
                             "moves by one shared factor (2 %%) and the runs by 1 %%")
    parser.add_argument("--oddities", action="store_true",
                        help="also node001's 13th night 20 %% slow (an outlier) and its newest "
                             "two nights 20 %% slow (too early to tell)")
    options = parser.parse_args()
    template, speeds = (from_records(options.from_record) if options.from_record
                        else (None, None))
    frame = nights(nodes=options.nodes, nights=options.nights, step={"node002": (25, 0.88)},
                   driver={"node002": 25}, batches=tuple(speeds) if speeds else (64, 128),
                   template=template, speeds=speeds, repeats=options.runs,
                   noise=0.01 if options.runs > 1 else 0.02, seed=41)
    if options.runs > 1:
        rng = np.random.default_rng(41)
        keys = list(zip(frame["campaign"], frame["host"], strict=True))
        shared = {key: float(np.exp(0.02 * rng.standard_normal())) for key in sorted(set(keys))}
        frame["throughput"] *= [shared[key] for key in keys]
    if options.oddities:
        days = sorted(frame["campaign"].unique())
        mine = frame["host"] == "node001"
        frame.loc[mine & (frame["campaign"] == days[12]), "throughput"] *= 0.8
        frame.loc[mine & frame["campaign"].isin(days[-2:]), "throughput"] *= 0.8
    if template is not None:
        frame = times_follow_speed(frame, template)
    made = write_campaigns(options.root, frame)
    print(f"{len(made)} campaigns under {options.root}: {made[0].name} ... {made[-1].name}")
