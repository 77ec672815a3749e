"""``benchlib diagnose`` against planted causes (issue 34), run as a user would run it on a CPU
(CPU defaults, ``--workers 1``), printing per case the cause it named, the widest step interval
and the wall time.

Cases:

a. ``decode``: big JPEGs (``benchlib data imagefolder --size 512``), resnet18: JPEG decode is
   the cause;
b. ``filesystem``: small JPEGs (64 px) behind ``tools/slowfs.py`` waiting 40 ms on every open,
   resnet18: the file system is the cause;
c. ``model``: resnet50 on the same small JPEGs (no slow file system): the model is the cause,
   no data step a significant loss.

The data is written once under ``--work`` (kept between runs); each case's campaign goes to
``--work/outputs`` (delete it to run a case afresh: running again resumes, as a user's would).
The widest interval is high over low of each waterfall step's 95 % interval (infinite when
unknown). Needs FUSE for case b (/dev/fuse, libfuse2, fusepy). Minutes per case: see
docs/diagnose.md's Budget.
Usage: python benchmarks/diagnose_planted.py [--cases decode filesystem model] [--work DIR]
       [--budget S] [--repeats N] [--json F]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import slowfs  # noqa: E402  (tools/slowfs.py)

#: Case -> (model, data folder name, slow file system, what it should name).
CASES = {
    "decode": ("resnet18", "big", False, "JPEG decode"),
    "filesystem": ("resnet18", "small", True, "reading the files from the file system"),
    "model": ("resnet50", "small", False, "No step that could be judged is a significant loss"),
}
#: Data folders: name -> (classes, images per class, short side in px).
DATA = {"big": (4, 32, 512), "small": (4, 64, 64)}
OPEN_DELAY_MS = 40.0


def benchlib_command(*args: str) -> list[str]:
    """The ``benchlib`` command beside this Python (the one a user of this venv types)."""
    return [str(Path(sys.executable).with_name("benchlib")), *args]


def make_data(work: Path, name: str) -> Path:
    """The case's JPEG folder, written once with ``benchlib data imagefolder``."""
    folder = work / "data" / name
    if not folder.is_dir():
        classes, images, size = DATA[name]
        subprocess.run(benchlib_command("data", "imagefolder", str(folder), "--classes",
                                        str(classes), "--images", str(images), "--size",
                                        str(size)), check=True)
    return folder


def widest(campaign_dir: Path) -> tuple[float, str]:
    """The widest waterfall step's interval factor (high over low) and its name."""
    from benchlib.diagnosis.analysis import load_diagnosis
    from benchlib.diagnosis.rounds import comparisons

    found = load_diagnosis(campaign_dir)
    table = comparisons(found.steps, found.workers, found.plan)
    steps = table[table["comparison"].isin(found.steps["step"])]
    if not len(steps):
        return math.nan, ""
    row = steps.loc[steps["factor"].idxmax()]
    return float(row["factor"]), str(row["comparison"])


def cause(answer: str) -> str:
    """The sentences of the paragraph that name the verdict and the biggest loss."""
    words = [s.strip() for s in answer.split(". ")
             if s.strip().startswith(("Your runs are", "The biggest loss", "No step"))]
    return ". ".join(words)


def outcome(answer: str, expected: str) -> str:
    """``right`` (the planted cause named), ``wrong`` (another cause, or "no significant
    loss" where one was planted) or ``cannot tell`` (no cause named)."""
    if expected in answer:
        return "right"
    if "The biggest loss is" in answer or "No step that could be judged" in answer:
        return "wrong"
    return "cannot tell"


def run_case(name: str, work: Path, extra: list[str]) -> dict:
    """Run one case as a user would; what it named, its widest interval and its wall time."""
    model, data, slow, expected = CASES[name]
    folder = make_data(work, data)
    child = None
    if slow:
        mountpoint = work / "slow" / data
        mountpoint.mkdir(parents=True, exist_ok=True)
        if slowfs.mounted(str(mountpoint)):
            slowfs.unmount(str(mountpoint))
        child = slowfs.mount_in_background(str(folder), str(mountpoint), OPEN_DELAY_MS)
        folder = mountpoint
    outputs = work / "outputs"
    command = benchlib_command("diagnose", "--model", model, "--data-dir", str(folder),
                               "--workers", "1", "--device", "cpu", "--outputs", str(outputs),
                               "--campaign", f"planted-{name}", "--no-report", *extra)
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    finally:
        if child is not None:
            slowfs.unmount(str(folder))
            child.wait(timeout=30)
    wall = time.perf_counter() - start
    if done.returncode:
        return {"case": name, "error": (done.stdout + done.stderr)[-2000:], "wall_s": wall}
    lines = done.stdout.splitlines()
    start_at = next(i for i, line in enumerate(lines) if " train on this node:" in line)
    end = next((i for i in range(start_at, len(lines)) if not lines[i].strip()), len(lines))
    answer = " ".join(line.strip() for line in lines[start_at:end])  # wrapped to the terminal
    factor, step = widest(outputs / f"planted-{name}")
    repeats = next((line for line in lines if line.startswith("Repeats:")), "")
    return {"case": name, "model": model, "plan": lines[0], "named": cause(answer),
            "expected": expected, "as_expected": expected in answer,
            "outcome": outcome(answer, expected), "widest_factor": factor,
            "widest_step": step, "repeats": repeats, "wall_s": wall,
            "rounds": sum(line.startswith("round ") for line in lines)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--work", default="/tmp/diagnose-planted",
                        help="where the data and the campaigns go (default /tmp/diagnose-planted)")
    parser.add_argument("--budget", type=float, help="passed to benchlib diagnose")
    parser.add_argument("--repeats", type=int, help="passed to benchlib diagnose (fixed repeats)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    work = Path(args.work).absolute()
    extra = [*(["--budget", str(args.budget)] if args.budget else []),
             *(["--repeats", str(args.repeats)] if args.repeats else [])]
    results = []
    for name in args.cases:
        result = run_case(name, work, extra)
        results.append(result)
        if "error" in result:
            print(f"{name}: failed after {result['wall_s']:.0f} s:\n{result['error']}")
            continue
        print(f"{name} ({result['model']}): {result['wall_s']:.0f} s, {result['rounds']} extra "
              f"rounds; widest step interval x{result['widest_factor']:.3g} "
              f"({result['widest_step']}); {result['outcome']}\n  {result['named']}\n"
              f"  {result['repeats']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
