"""Calibrate `benchlib compare` on this machine: an A/A test (one small campaign run twice) and
an A/B test with a real slowdown planted in B that the contention measure does not see.

First ``benchlib calibrate`` runs the params file ``--calibration`` times (5) into a catalog
(``<outputs>/calibration.sqlite``): each configuration's noise between campaigns on this
machine. Each round then runs three campaigns of the same small params file (resnet18 train and
inference, 64 px, batch 16, synthetic data, ``repeats: 3`` interleaved) one after the other: A,
A again (A2), and B with the slowdown; then ``benchlib compare A A2`` and ``benchlib compare A
B``, each judged with the catalog (the campaign as the unit of noise) and without it (one
campaign each: judged only beyond the floor).

Slowdowns (``--slowdown``):

- ``quota:F`` (default ``quota:0.75``): B's sweep runs in a CPU cgroup limited to F of the
  machine's cores (cgroup v1 or v2, as root): the kernel throttles it, no other process runs,
  so ``contended`` stays false;
- ``threads``: B's runs use one intra-op thread (``OMP_NUM_THREADS=1``) instead of every core.

Reported per round and in total: configurations called regression / improvement in A/A (false
alarms; goal: none), and configurations of A/B called regression (goal: 4 rounds of 5 for a
25 % slowdown), with the planted slowdown's measured size (median B / A). Results go to
``outputs/calibration/calibration.json``. ``--busy N`` starts N busy-looping processes beside
the runs (then most runs are ``contended`` and their verdicts ``unreliable``).

    python benchmarks/calibrate_compare.py --rounds 5
    python benchmarks/calibrate_compare.py --rounds 3 --busy 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHLIB = str(Path(sys.executable).with_name("benchlib"))
PARAMS = """campaign: {campaign}
notebook: [train, inference]
base: {{model: resnet18, image_size: 64, num_classes: 10, batch_size: 16, dataset: synthetic,
       iterations: auto, min_time_s: 1, max_time_s: 2, warmup: 3, device: cpu}}
repeats: {repeats}
"""


@contextlib.contextmanager
def cpu_quota(fraction: float) -> Iterator[str]:
    """A CPU cgroup limited to ``fraction`` of the cores; yields its ``cgroup.procs`` path."""
    cores = len(os.sched_getaffinity(0))
    period = 100_000
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    group = Path("/sys/fs/cgroup" if v2 else "/sys/fs/cgroup/cpu") / f"benchlib-calib-{os.getpid()}"
    group.mkdir()
    try:
        quota = int(fraction * cores * period)
        if v2:
            (group / "cpu.max").write_text(f"{quota} {period}")
        else:
            (group / "cpu.cfs_period_us").write_text(str(period))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
        yield str(group / "cgroup.procs")
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def sweep(outputs: Path, campaign: str, repeats: int, slowdown: str | None) -> None:
    params = outputs / f"{campaign}.yaml"
    params.write_text(PARAMS.format(campaign=campaign, repeats=repeats))
    command = [BENCHLIB, "sweep", str(params), "--outputs", str(outputs), "--quiet", "--strict"]
    env = dict(os.environ)
    if slowdown == "threads":
        env["OMP_NUM_THREADS"] = "1"
    if slowdown and slowdown.startswith("quota:"):
        with cpu_quota(float(slowdown.split(":", 1)[1])) as procs:
            shell = f'echo $$ > "{procs}" && exec "$@"'
            subprocess.run(["sh", "-c", shell, "sh", *command], check=True, env=env,
                           stdout=subprocess.DEVNULL)
        return
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)


def compare(outputs: Path, base: str, new: str, db: str | None = None) -> list[dict]:
    """``benchlib compare``'s verdicts (through its Python API, the same code) and its exit,
    with catalog ``db``'s noise between campaigns where given."""
    import benchlib
    from benchlib.compare import regression
    from benchlib.compare.tables import compare_runs

    os.environ.pop("BENCHLIB_DB", None)
    compared = compare_runs(benchlib.load(outputs / base), benchlib.load(outputs / new),
                            history_db=db)
    code = regression.exit_code(compared["verdict"])
    return [{"configuration": str(r["configuration"]), "verdict": r["verdict"],
             "ratio": float(r["ratio"]), "low": float(r["low"]), "high": float(r["high"]),
             "exit": code} for r in compared.to_dict("records")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--slowdown", default="quota:0.75",
                        help="quota:F (a CPU cgroup at F of the cores) or threads")
    parser.add_argument("--busy", type=int, default=0, help="busy processes beside the runs")
    parser.add_argument("--outputs", default="outputs/calibration")
    parser.add_argument("--calibration", type=int, default=5,
                        help="campaigns benchlib calibrate runs first (default 5)")
    args = parser.parse_args()
    outputs = Path(args.outputs).absolute() / f"busy{args.busy}"
    shutil.rmtree(outputs, ignore_errors=True)
    outputs.mkdir(parents=True)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    rounds = []
    db = str(outputs / "calibration.sqlite")
    params = outputs / "aa.yaml"
    params.write_text(PARAMS.format(campaign="aa", repeats=args.repeats))
    started = time.perf_counter()
    subprocess.run([BENCHLIB, "calibrate", str(params), "--rounds", str(args.calibration),
                    "--outputs", str(outputs / "calibrate"), "--db", db, "--quiet"], check=True)
    print(f"calibrated in {time.perf_counter() - started:.0f} s", flush=True)
    try:
        for index in range(args.rounds):
            names = [f"r{index}-a", f"r{index}-a2", f"r{index}-b"]
            started = time.perf_counter()
            for name, slowdown in zip(names, (None, None, args.slowdown), strict=True):
                sweep(outputs, name, args.repeats, slowdown)
            found = {"round": index, "aa": compare(outputs, names[0], names[1], db),
                     "ab": compare(outputs, names[0], names[2], db),
                     "aa_floor": compare(outputs, names[0], names[1]),
                     "ab_floor": compare(outputs, names[0], names[2]),
                     "seconds": time.perf_counter() - started}
            rounds.append(found)
            said = lambda rows: ", ".join(f"{r['verdict']} {r['ratio']:.2f}x" for r in rows)  # noqa: E731
            print(f"round {index + 1}/{args.rounds} ({found['seconds']:.0f} s): "
                  f"A/A: {said(found['aa'])}; A/B: {said(found['ab'])}", flush=True)
    finally:
        for process in busy:
            process.kill()
    summary = {"with the catalog's noise": tally(rounds, "aa", "ab", args),
               "one campaign each, no history (floor)": tally(rounds, "aa_floor", "ab_floor", args)}
    (outputs / "calibration.json").write_text(json.dumps({"summary": summary, "rounds": rounds},
                                                         indent=1))
    print(json.dumps(summary, indent=1))
    return 0


def tally(rounds: list[dict], aa_key: str, ab_key: str, args: argparse.Namespace) -> dict:
    """False alarms of the A/A comparisons and slowdowns found by the A/B ones."""
    aa = [r for found in rounds for r in found[aa_key]]
    ab = [r for found in rounds for r in found[ab_key]]
    alarms = sum(r["verdict"] in ("regression", "improvement") for r in aa)
    caught = sum(r["verdict"] == "regression" for r in ab)
    rounds_caught = sum(any(r["verdict"] == "regression" for r in found[ab_key]) for found in rounds)
    ratios = sorted(r["ratio"] for r in ab)
    summary = {
        "rounds": args.rounds, "repeats": args.repeats, "busy": args.busy,
        "slowdown": args.slowdown,
        "aa_false_alarms": f"{alarms} of {len(aa)} configurations",
        "aa_verdicts": {v: sum(r["verdict"] == v for r in aa) for v in {r["verdict"] for r in aa}},
        "ab_found": f"{caught} of {len(ab)} configurations; rounds with a regression found: "
                    f"{rounds_caught} of {len(rounds)}",
        "ab_verdicts": {v: sum(r["verdict"] == v for r in ab) for v in {r["verdict"] for r in ab}},
        "planted_slowdown_median": 1 - ratios[len(ratios) // 2] if ratios else None,
        "intervals_ab": [f"{r['low']:.2f}-{r['high']:.2f}" for r in ab],
    }
    return summary


if __name__ == "__main__":
    sys.exit(main())
