"""``make gpu-check``: every CUDA path of benchlib on this node's GPU, checked, in minutes.

Writes the generated data it needs (``data/gpu-check/``: a JPEG folder, an EM volume, a token
file), validates every params file of ``params/gpu-check/``, and on a CUDA device runs them as
one campaign (``outputs/gpu-check``): ResNet-50 train / inference / smooth inference (fp32,
amp_fp16, amp_bf16 + channels_last; synthetic and JPEG), GPT-2 small train and inference (one
point compiled), the 3D U-Net's training and blockwise prediction, and the node probe. Then it
asserts, per run: status ok, NVML telemetry sampled, no device synchronisation in the timed
loop, a throughput that is finite and no faster than the GPU's datasheet allows, and each run
with a shipped reference within its tolerance (``benchlib check``). It packs the executed
notebooks, their records, ``summary.md`` and ``check.txt`` into one ``.tar.gz``.

Without a CUDA device it prints the plan after the validation and exits 0. Exit status: 0 every
assertion held, 1 one failed (the summary names it), 2 a params file or the data is bad.
Runs in the project's venv or in an existing PyTorch environment (docs/gpu-check.md).
Usage: python tools/gpu_check.py [--outputs outputs] [--plan]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import shutil
import sys
import tarfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # an existing environment runs the checkout, not an install

PARAMS = Path("params/gpu-check")
DATA = Path("data/gpu-check")
CAMPAIGN = "gpu-check"
#: the order the params files run in (the probe last: its ceilings judge the runs' MFU)
ORDER = ("classification.yaml", "classification-bf16.yaml", "lm.yaml", "compile.yaml",
         "unet3d.yaml", "multi-gpu.yaml", "node.yaml")
MULTI_GPU = {"multi-gpu.yaml"}  #: run on a node of 2 or more GPUs only
IMAGES = {"classes": 8, "images_per_class": 48, "size": 256}  #: 384 JPEGs, 3 batches of 128
VOLUME_SHAPE = (96, 768, 768)  #: z >= the U-Net's 84-plane patch; 57 megavoxels, 16 block batches
TOKENS = 2_000_000
VOCABULARY = 50_257  #: GPT-2's
PACKED_MAX_BYTES = 50 << 20  #: a file larger than this (a prediction volume) stays out of the pack


@dataclass
class Outcome:
    """What the check found: one line per failed assertion, notes, and the summary's rows."""

    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, object]] = field(default_factory=list)


def prepare_data(quiet: bool = False) -> None:
    """The JPEG folder, the EM volume and the token file, each written whole to a temporary
    name and renamed into place; what is already there is kept."""
    from benchlib.data.em_volume import write_em_volume
    from benchlib.data.generate import write_imagefolder
    from benchlib.data.tokens import write_tokens

    DATA.mkdir(parents=True, exist_ok=True)
    images = DATA / "images"
    if not images.is_dir():
        partial = DATA / ".images.partial"
        shutil.rmtree(partial, ignore_errors=True)
        write_imagefolder(partial, **IMAGES)
        partial.rename(images)
    if not (DATA / "em.h5").is_file():
        write_em_volume(DATA / "em.h5", VOLUME_SHAPE, progress=not quiet)
    if not (DATA / "tokens.bin").is_file():
        write_tokens(DATA / "tokens.bin", TOKENS, VOCABULARY)


def sweeps() -> list:
    """Every params file of the check, validated (InputError naming the file and field)."""
    from benchlib.inputs.params import load_sweep

    found = sorted(p.name for p in PARAMS.glob("*.yaml"))
    if sorted(ORDER) != found:
        raise SystemExit(f"error: {PARAMS} holds {found}; tools/gpu_check.py runs {list(ORDER)}")
    return [load_sweep(str(PARAMS / name)) for name in ORDER]


def chosen(loaded: list, gpus: int) -> list[tuple[str, object]]:
    """(file name, sweep) of the params files this node runs: the multi-GPU ones with 2+ GPUs."""
    return [(name, sweep) for name, sweep in zip(ORDER, loaded, strict=True)
            if gpus >= 2 or name not in MULTI_GPU]


def print_plan(loaded: list, gpus: int) -> None:
    """One line per params file and per point (``gpus``: the devices this node has)."""
    total = sum(len(s.points) for _, s in chosen(loaded, gpus))
    print(f"gpu-check: {total} points from {len(chosen(loaded, gpus))} of {len(loaded)} params files into "
          f"outputs/{CAMPAIGN} ({gpus} CUDA device{'s' * (gpus != 1)})")
    for name, sweep in zip(ORDER, loaded, strict=True):
        skipped = " (skipped: needs 2 or more GPUs)" if (name, sweep) not in chosen(loaded, gpus) else ""
        print(f"  {PARAMS / name}: {len(sweep.points)} point{'s' * (len(sweep.points) != 1)}"
              f"{skipped}")
        for point in sweep.points:
            print(f"    {point.name}")


def run_sweeps(outputs: Path, names: list[str]) -> None:
    """Each params file through ``benchlib sweep --force`` (a re-run replaces the last)."""
    from benchlib.cli import main

    for name in names:
        print(f"== benchlib sweep {PARAMS / name}", flush=True)
        main(["sweep", str(PARAMS / name), "--outputs", str(outputs), "--force"])


def reference_check(folder: Path) -> tuple[int, str]:
    """``benchlib check`` on the campaign: its exit status and what it printed."""
    from benchlib.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["check", str(folder)])
    return status, out.getvalue()


def datasheet_peak_tflops(device_name: str) -> float | None:
    """The GPU's fastest dense tensor rate on its datasheet (no run can exceed it)."""
    from benchlib.records.flags import number
    from benchlib.reference import datasheet_for

    sheet = datasheet_for(device_name) or {}
    rates = [number(sheet.get(k)) for k in ("fp16_tflops", "bf16_tflops", "tf32_tflops",
                                             "fp32_tflops")]
    rates = [r for r in rates if r]
    return max(rates) if rates else None


def judge(frame, expected: int, outcome: Outcome) -> None:
    """Each run's assertions, into ``outcome``."""
    from benchlib.records.flags import number

    if len(frame) != expected:
        outcome.failures.append(f"{len(frame)} records for {expected} points")
    for row in frame.to_dict("records"):
        name = Path(str(row.get("source", "?"))).stem
        probe = str(row.get("benchmark", "")).startswith("probe")
        syncs = number(row.get("result_syncs_in_timed_loop"))
        tflops, peak = number(row.get("achieved_tflops")), datasheet_peak_tflops(
            str(row.get("device_name", "")))
        flags = str(row.get("flags") or "")
        problems = []
        if row.get("status") != "ok":
            problems.append(f"status {row.get('status')}: {row.get('error', '')}")
        throughput = number(row.get("throughput"))
        if throughput is None or not math.isfinite(throughput) or throughput <= 0:
            problems.append(f"throughput {row.get('throughput')!r}")
        if not probe and row.get("telemetry") != "nvml":
            problems.append(f"telemetry {row.get('telemetry')!r}, not NVML samples")
        if not probe and syncs != 0:
            problems.append(f"{row.get('result_syncs_in_timed_loop')} device synchronisations "
                            "in the timed loop (0 expected)")
        if tflops is not None and peak is not None and tflops > peak:
            problems.append(f"{tflops:.0f} TFLOP/s is above the datasheet's {peak:.0f}: a "
                            "timing error")
        if "mfu_over_100" in flags:
            problems.append("MFU above 100 % of the node probe's ceiling")
        outcome.failures += [f"{name}: {p}" for p in problems]
        outcome.rows.append({"run": name, "throughput": throughput, "unit": row.get("unit"),
                             "TFLOP/s": tflops, "syncs": syncs, "flags": flags,
                             "ok": "no" if problems else "yes"})


def summary_text(frame, outcome: Outcome, check_text: str, seconds: float) -> str:
    """The one-page summary (Markdown): the node, each run, the failures, the check."""
    first = frame.iloc[0].to_dict() if len(frame) else {}
    node = ", ".join(f"{k} {first.get(c, '?')}" for k, c in [
        ("device", "device_name"), ("driver", "env_driver"), ("torch", "env_torch"),
        ("CUDA", "env_cuda"), ("cuDNN", "env_cudnn"), ("host", "host")])
    lines = [f"# benchlib gpu-check, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             f"{node}. Wall time {seconds:.0f} s.", "",
             "| run | throughput | unit | TFLOP/s | syncs in loop | flags | ok |",
             "| --- | ---: | --- | ---: | ---: | --- | --- |"]
    for r in outcome.rows:
        def fmt(v: object, spec: str) -> str:
            return "" if v is None else format(v, spec)
        lines.append(f"| {r['run']} | {fmt(r['throughput'], ',.4g')} | {r['unit']} | "
                     f"{fmt(r['TFLOP/s'], '.1f')} | {fmt(r['syncs'], '.0f')} | {r['flags']} | "
                     f"{r['ok']} |")
    lines += ["", f"## {len(outcome.failures)} failed assertions", ""]
    lines += [f"- {f}" for f in outcome.failures] or ["None."]
    lines += ["", *[f"Note: {n}" for n in outcome.notes], "", "## benchlib check", "", "```",
              check_text.rstrip(), "```", ""]
    return "\n".join(lines)


def pack(folder: Path, summary: str, check_text: str) -> Path:
    """``outputs/gpu-check-HOST-STAMP.tar.gz``: summary, check output, notebooks, records."""
    import socket

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = folder.parent / f"gpu-check-{socket.gethostname()}-{stamp}.tar.gz"
    (folder / "summary.md").write_text(summary)
    (folder / "check.txt").write_text(check_text)
    partial = target.with_name(f".{target.name}.partial")
    with tarfile.open(partial, "w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= PACKED_MAX_BYTES:
                tar.add(path, arcname=str(Path(folder.name) / path.relative_to(folder)))
    partial.rename(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", default="outputs", help="results root (default: outputs)")
    parser.add_argument("--plan", action="store_true", help="validate and print the plan only")
    args = parser.parse_args(argv)
    os.chdir(ROOT)  # the params files name data/ and notebooks/ relative to the checkout
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT),
                                                             os.environ.get("PYTHONPATH")]))
    from benchlib.errors import BenchlibError

    started = time.perf_counter()
    try:
        prepare_data()
        loaded = sweeps()
    except BenchlibError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    print_plan(loaded, gpus)
    if args.plan or not gpus:
        print("no CUDA device: plan and params checked, nothing run" if not args.plan else
              "plan only (--plan)")
        return 0
    outputs = Path(args.outputs)
    runs = chosen(loaded, gpus)
    shutil.rmtree(outputs / CAMPAIGN, ignore_errors=True)  # this check's records only
    run_sweeps(outputs, [name for name, _ in runs])
    from benchlib.records.results import load

    folder = outputs / CAMPAIGN
    frame = load(folder)
    outcome = Outcome()
    judge(frame, sum(len(s.points) for _, s in runs), outcome)
    status, check_text = reference_check(folder)
    if status == 1:
        outcome.failures.append("benchlib check: a run failed its reference (check.txt)")
    elif status == 3:
        outcome.notes.append("benchlib check judged no run (no shipped reference for this "
                             "GPU and configuration), or some could not be certified")
    summary = summary_text(frame, outcome, check_text, time.perf_counter() - started)
    print(summary)
    print(f"packed: {pack(folder, summary, check_text)}")
    return 1 if outcome.failures else 0


if __name__ == "__main__":
    sys.exit(main())
