"""``make gpu-check``: every CUDA path of benchlib on this node's GPU, checked, in minutes.

Writes the generated data it needs (``data/gpu-check/``: a JPEG folder, an EM volume, a token
file), validates every params file of ``params/gpu-check/``, and on a CUDA device runs them as
one campaign (``outputs/gpu-check``): ResNet-50 train / inference / smooth inference (fp32,
amp_fp16, amp_bf16 + channels_last; synthetic and JPEG), ResNet-50 training at Lambda's TF32
and fp16 setups, GPT-2 small train and inference and training at llm.c's batch, eager and
compiled, the 3D U-Net's training and blockwise prediction, and the node probe. Then it
asserts, per run, from the records alone (:func:`run_problems`): status ok; a finite, positive
throughput; a row for the GPU in the ceiling table (``benchlib/reference/gpu_datasheets.csv``);
model TFLOP/s per device at most 100 % of the datasheet's dense peak in the run's own precision
(fp32 against fp32, not the fastest tensor rate), the node probe's matmul and memory figures at
most their ceilings; NVML telemetry with at least :data:`MIN_TELEMETRY_SAMPLES` samples, power
and energy above 0 over every timed loop longer than 1 s; no device synchronisation counted in
the timed loop; no epoch boundary inside the timed span of a run reading the JPEG folder (which
is sized from the points that read it, :func:`jpeg_images`); and each run with a shipped
reference within its tolerance (``benchlib check``). It packs the executed notebooks, their
records, ``summary.md`` and ``check.txt`` into one ``.tar.gz``.

``--judge FOLDER`` runs nothing: it judges the records of an existing campaign with the same
assertions (the count of points aside), on any machine, and prints what failed.

Without a CUDA device, and with ``--plan``, it writes no data: it validates the params against
stand-ins of the data's shapes (:func:`stand_in_data`; the data itself where it is there),
prints the plan and exits 0. Before it plans or runs, it checks that this Python has every
package the check imports (:data:`REQUIRED`) and lists those it lacks. Exit status: 0 every
assertion held, 1 one failed (the summary names the run and the assertion), 2 a params file or
the data is bad, or a package is missing (``--judge``: the folder is missing or holds no
record).
Runs in the project's venv or in an existing PyTorch environment (docs/gpu-check.md).
Usage: python tools/gpu_check.py [--outputs outputs] [--plan] [--judge FOLDER]
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
ORDER = ("classification.yaml", "classification-bf16.yaml", "classification-jpeg.yaml",
         "classification-jpeg-device.yaml",
         "lambda-tf32.yaml", "lambda-fp16.yaml", "lm.yaml", "llmc.yaml", "compile.yaml",
         "unet3d.yaml", "multi-gpu.yaml", "node.yaml")
MULTI_GPU = {"multi-gpu.yaml"}  #: run on a node of 2 or more GPUs only
#: The JPEG folder's classes and picture size; its image count comes from the points that read
#: it (:func:`jpeg_images`).
IMAGES = {"classes": 8, "size": 256}
VOLUME_SHAPE = (96, 768, 768)  #: z >= the U-Net's 84-plane patch; 57 megavoxels, 16 block batches
TOKENS = 2_000_000
VOCABULARY = 50_257  #: GPT-2's
PACKED_MAX_BYTES = 50 << 20  #: a file larger than this (a prediction volume) stays out of the pack
#: What the check imports (benchlib's dependencies in pyproject.toml but psycopg, which only a
#: PostgreSQL catalog needs), as import name: the package that installs it.
REQUIRED = {"torch": "torch", "torchvision": "torchvision", "numpy": "numpy", "pandas": "pandas",
            "matplotlib": "matplotlib", "seaborn": "seaborn", "PIL": "pillow", "yaml": "pyyaml",
            "pydantic": "pydantic", "tqdm": "tqdm", "h5py": "h5py", "zarr": "zarr",
            "papermill": "papermill", "nbformat": "nbformat", "nbconvert": "nbconvert",
            "nbclient": "nbclient", "nh3": "nh3", "ipykernel": "ipykernel", "submitit": "submitit",
            "pynvml": "nvidia-ml-py", "filelock": "filelock", "psutil": "psutil", "scipy": "scipy",
            "jinja2": "jinja2", "regex": "regex", "sqlalchemy": "sqlalchemy",
            "ruptures": "ruptures"}
#: The ceiling table: datasheet dense peaks per GPU variant and precision, HBM bandwidth.
CEILINGS_FILE = "benchlib/reference/gpu_datasheets.csv"
#: NVML readings a timed loop longer than :data:`TELEMETRY_SPAN_S` must hold: the sampler reads
#: at the start, every ``telemetry_interval_s`` (0.1 s by default: 11 or more in 1 s) and at the
#: end, so 5 leaves room for an interval up to 0.25 s and still proves readings were taken.
MIN_TELEMETRY_SAMPLES = 5
TELEMETRY_SPAN_S = 1.0  #: timed loops longer than this must show samples, power and energy
#: Node probe columns and the ceiling-table column that bounds each (matmul / MAMF per
#: precision, the device copy and the STREAM triad).
PROBE_CEILINGS = (*((f"{kind}_tflops_{p}", f"{p}_tflops") for kind in ("matmul", "mamf")
                    for p in ("fp32", "tf32", "fp16", "bf16")),
                  ("memory_GBps", "memory_GBps"), ("triad_GBps", "memory_GBps"))


@dataclass
class Outcome:
    """What the check found: one line per failed assertion, notes, and the summary's rows."""

    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, object]] = field(default_factory=list)


def jpeg_images(loaded: list) -> int:
    """The JPEGs the folder needs: for each point that reads it (``dataset: real``, ``data_dir``
    the folder), its warm-up and timed batches, each loader worker's prefetched batches and a
    margin (:func:`benchlib.data.imagefolder.images_for_span`), the most of any point, in whole
    classes. So no epoch boundary falls inside a timed span and every worker has work to its
    end (the record's ``result_epoch_boundaries_in_timed_loop`` says 0). A point reading it with
    ``iterations: auto`` or ``epoch`` cannot be sized: an InputError naming it."""
    from benchlib.data.imagefolder import images_for_span
    from benchlib.errors import InputError
    from benchlib.kinds.classification.workload import STEPS
    from benchlib.registry import notebook_configs

    folder = (DATA / "images").as_posix()
    needed = IMAGES["classes"]
    for sweep in loaded:
        for point in sweep.points:
            values = point.parameters
            if values.get("dataset") != "real" or str(values.get("data_dir")) != folder:
                continue
            config_class, fixed = notebook_configs()[point.notebook]
            config = config_class.model_construct(**{**values, **fixed})
            if not isinstance(config.iterations, int):
                raise InputError(f"{point.name}: iterations {config.iterations!r} reads {folder} "
                                 "for a time the check cannot size the folder for; give a count")
            batch = STEPS[config.benchmark].images_per_batch(config)
            needed = max(needed, images_for_span(config.warmup + config.iterations, batch,
                                                 config.num_workers, config.num_devices))
    return -(-needed // IMAGES["classes"]) * IMAGES["classes"]


def jpeg_count(folder: Path) -> int:
    """The JPEGs of an ImageNet-layout ``folder`` (0 where it is missing)."""
    return sum(1 for _ in folder.glob("*/*.JPEG")) if folder.is_dir() else 0


def prepare_data(images: int, quiet: bool = False) -> None:
    """The JPEG folder of ``images`` pictures (:func:`jpeg_images`), the EM volume and the
    token file, each written whole to a temporary name and renamed into place; what is already
    there is kept, but a JPEG folder of another size, which is written again."""
    from benchlib.data.generate import write_imagefolder
    from benchlib.kinds.language_model.data import write_tokens
    from benchlib.kinds.unet3d.data_writer import write_em_volume

    DATA.mkdir(parents=True, exist_ok=True)
    folder = DATA / "images"
    if jpeg_count(folder) != images:
        partial = DATA / ".images.partial"
        shutil.rmtree(partial, ignore_errors=True)
        write_imagefolder(partial, images_per_class=images // IMAGES["classes"], **IMAGES)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    if not (DATA / "em.h5").is_file():
        write_em_volume(DATA / "em.h5", VOLUME_SHAPE, progress=not quiet)
    if not (DATA / "tokens.bin").is_file():
        write_tokens(DATA / "tokens.bin", TOKENS, VOCABULARY)


def missing_packages() -> list[str]:
    """The packages of :data:`REQUIRED` this Python cannot import ("pillow (PIL)"), looked up
    without importing any."""
    import importlib.util

    return [package if package == name else f"{package} ({name})"
            for name, package in REQUIRED.items() if importlib.util.find_spec(name) is None]


def stand_in_data(root: Path) -> Path:
    """Stand-ins of the data under ``root / DATA`` that the params' validation reads as it reads
    the data (a folder, a volume's datasets and their shapes, a token file's size) and that hold
    nothing on disk: an empty JPEG folder, an HDF5 volume of :data:`VOLUME_SHAPE` never written,
    a sparse token file. ``root``: the folder the params' relative paths then start from."""
    import h5py

    from benchlib.kinds.unet3d.data import LABEL_KEY, RAW_KEY

    folder = root / DATA
    (folder / "images").mkdir(parents=True)
    with h5py.File(folder / "em.h5", "w") as volume:
        for key, dtype in ((RAW_KEY, "uint8"), (LABEL_KEY, "uint64")):
            volume.create_dataset(key, shape=VOLUME_SHAPE, dtype=dtype, chunks=True)
    with open(folder / "tokens.bin", "wb") as tokens:
        tokens.truncate(2 * TOKENS)  # uint16 tokens
    return root


def sweeps(base_dir: Path | None = None) -> list:
    """Every params file of the check, validated (InputError naming the file and field); their
    relative paths from ``base_dir`` (default: the working folder, the checkout)."""
    from benchlib.inputs.params import load_sweep

    found = sorted(p.name for p in PARAMS.glob("*.yaml"))
    if sorted(ORDER) != found:
        raise SystemExit(f"error: {PARAMS} holds {found}; tools/gpu_check.py runs {list(ORDER)}")
    return [load_sweep(str(PARAMS / name), base_dir=base_dir) for name in ORDER]


def planned_sweeps() -> list:
    """The params validated for the plan only, writing no data: against the data where all of
    it is there, else against :func:`stand_in_data`."""
    import tempfile

    if (DATA / "images").is_dir() and all((DATA / f).is_file() for f in ("em.h5", "tokens.bin")):
        return sweeps()
    with tempfile.TemporaryDirectory(prefix="gpu-check-plan-") as scratch:
        return sweeps(stand_in_data(Path(scratch)))


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


def run_name(row: dict[str, object]) -> str:
    """The run's name in failures: its notebook's stem (``train-fp32``)."""
    return Path(str(row.get("source") or "?")).stem


def ceiling_row(row: dict[str, object]) -> tuple[dict[str, object] | None, str]:
    """The ceiling table's row for the run's GPU, or None and why: a CPU run, or a GPU the table
    lacks (named, with the file to add it to)."""
    from benchlib.reference import datasheet_for

    device = row["device_name"] if isinstance(row.get("device_name"), str) else ""
    if str(row.get("gpu") or "").lower() == "cpu":
        return None, f"ran on the CPU ({device or 'unnamed'}): no GPU ceiling to judge it against"
    sheet = datasheet_for(device)
    if sheet is None:
        return None, f"no ceiling row for {device or 'an unnamed device'}: add it to {CEILINGS_FILE}"
    return sheet, ""


def mfu_problems(row: dict[str, object], sheet: dict[str, object]) -> tuple[float | None, list[str]]:
    """MFU of the datasheet, computed here: model TFLOP/s per device over the dense peak of the
    run's own precision (an fp32 run, TF32 off, against the fp32 column); a problem above 100 %,
    or where the run's precision has no ceiling. (None, []) for runs without a TFLOP/s figure."""
    from benchlib.records.flags import number
    from benchlib.vocabulary import matmul_precision

    achieved = number(row.get("achieved_tflops"))
    if achieved is None:
        return None, []
    precision = matmul_precision(row.get("precision"))
    if precision is None:
        return None, [f"precision {row.get('precision')!r} has no ceiling column in "
                      f"{CEILINGS_FILE}: its {achieved:.1f} TFLOP/s cannot be judged"]
    ceiling = number(sheet.get(f"{precision}_tflops"))
    if not ceiling:
        return None, [f"no {precision} ceiling for {sheet['variant']} in {CEILINGS_FILE}: its "
                      f"{achieved:.1f} TFLOP/s cannot be judged"]
    per_device = achieved / (number(row.get("num_devices")) or 1)
    mfu = per_device / ceiling
    if mfu <= 1:
        return mfu, []
    return mfu, [f"MFU over 100 %: {per_device:.1f} TFLOP/s per device is {mfu:.0%} of the "
                 f"{sheet['variant']} {precision} ceiling ({ceiling:g} TFLOP/s dense, "
                 f"{CEILINGS_FILE}): a timing or FLOP-count error"]


def probe_problems(row: dict[str, object], sheet: dict[str, object]) -> list[str]:
    """The node probe's matmul, MAMF, copy and triad figures each at most the ceiling of its
    column (:data:`PROBE_CEILINGS`); a figure above it is a timing error."""
    from benchlib.records.flags import number

    problems = []
    for column, limit in PROBE_CEILINGS:
        measured, ceiling = number(row.get(column)), number(sheet.get(limit))
        if measured is not None and ceiling and measured > ceiling:
            unit = "GB/s" if limit == "memory_GBps" else "TFLOP/s"
            problems.append(f"{column} {measured:,.1f} {unit} is above the {sheet['variant']} "
                            f"ceiling {ceiling:g} ({limit}, {CEILINGS_FILE}): a timing error")
    return problems


def telemetry_problems(row: dict[str, object]) -> list[str]:
    """NVML telemetry of a model run: ``telemetry: nvml``, and over a timed loop longer than
    :data:`TELEMETRY_SPAN_S` (or of unknown length) at least :data:`MIN_TELEMETRY_SAMPLES`
    samples (``telemetry_samples``), mean power (``power_mean_w``) and energy (``energy_j``)
    above 0."""
    from benchlib.records.flags import number

    problems = []
    if row.get("telemetry") != "nvml":
        problems.append(f"telemetry {row.get('telemetry')!r}, not NVML samples")
    wall = number(row.get("wall_time_s"))
    if wall is not None and wall <= TELEMETRY_SPAN_S:
        return problems
    span = f"a {wall:.1f} s timed loop" if wall is not None else "a timed loop of unknown length"
    samples = number(row.get("telemetry_samples"))
    if samples is None or samples < MIN_TELEMETRY_SAMPLES:
        problems.append(f"telemetry samples: {0 if samples is None else samples:.0f} NVML "
                        f"readings over {span} (at least {MIN_TELEMETRY_SAMPLES} expected)")
    power = number(row.get("power_mean_w"))
    if power is None or power <= 0:
        problems.append(f"telemetry power: mean board power {power!r} W over {span} "
                        "(above 0 expected)")
    energy = number(row.get("energy_j"))
    if energy is None or energy <= 0:
        problems.append(f"telemetry energy: {energy!r} J over {span} (above 0 expected; "
                        f"energy_source {row.get('energy_source')!r})")
    return problems


def sync_problems(row: dict[str, object]) -> list[str]:
    """No device synchronisation counted in the timed loop (``result_syncs_in_timed_loop``, the
    sync debug mode's count); a missing count fails too (nothing was counted)."""
    from benchlib.records.flags import number

    syncs = number(row.get("result_syncs_in_timed_loop"))
    if syncs is None:
        return ["no synchronisation count (result_syncs_in_timed_loop empty: sync_debug off, "
                "or not a CUDA run)"]
    if syncs != 0:
        return [f"{syncs:.0f} device synchronisations counted in the timed loop (0 expected)"]
    return []


def epoch_problems(row: dict[str, object]) -> list[str]:
    """No epoch boundary inside the timed span of a run that reads an image folder again and
    again (``result_epoch_boundaries_in_timed_loop``; absent where the data has no epochs): a
    boundary drains the loader's workers, and the span then measures the folder's size."""
    from benchlib.records.flags import number

    boundaries = number(row.get("result_epoch_boundaries_in_timed_loop"))
    if not boundaries:
        return []
    return [f"{boundaries:.0f} epoch boundaries inside the timed span (0 expected): the image "
            "folder is too small for the run (tools/gpu_check.py sizes data/gpu-check/images "
            "from its points: jpeg_images)"]


def run_problems(row: dict[str, object]) -> tuple[list[str], float | None]:
    """Every assertion on one record, computed from its columns: the problems found (none: it
    holds) and its MFU of the datasheet (None where not computed). A failed run is its status."""
    from benchlib.records.flags import number

    if row.get("status") != "ok":
        return [f"status {row.get('status')}: {row.get('error', '')}"], None
    probe = str(row.get("benchmark", "")).startswith("probe")
    problems = []
    throughput = number(row.get("throughput"))
    if throughput is None or not math.isfinite(throughput) or throughput <= 0:
        problems.append(f"throughput {row.get('throughput')!r}")
    if not probe:
        problems += telemetry_problems(row) + sync_problems(row) + epoch_problems(row)
    sheet, missing = ceiling_row(row)
    if sheet is None:
        return [*problems, missing], None
    if probe:
        return problems + probe_problems(row, sheet), None
    mfu, over = mfu_problems(row, sheet)
    return problems + over, mfu


def judge(frame, expected: int | None, outcome: Outcome) -> None:
    """Each run's assertions (:func:`run_problems`), into ``outcome``; ``expected``: the points
    the check ran (None: a campaign judged as it is, ``--judge``)."""
    from benchlib.records.flags import number

    if expected is not None and len(frame) != expected:
        outcome.failures.append(f"{len(frame)} records for {expected} points")
    for row in frame.to_dict("records"):
        name = run_name(row)
        problems, mfu = run_problems(row)
        outcome.failures += [f"{name}: {p}" for p in problems]
        outcome.rows.append({"run": name, "throughput": number(row.get("throughput")),
                             "unit": row.get("unit"), "TFLOP/s": number(row.get("achieved_tflops")),
                             "MFU": mfu, "syncs": number(row.get("result_syncs_in_timed_loop")),
                             "samples": number(row.get("telemetry_samples")),
                             "flags": row["flags"] if isinstance(row.get("flags"), str) else "",
                             "ok": "no" if problems else "yes"})


def summary_text(frame, outcome: Outcome, check_text: str, seconds: float | None) -> str:
    """The one-page summary (Markdown): the node, each run, the failures, the check
    (``seconds``: the check's wall time; None for ``--judge``, which ran nothing)."""
    first = frame.iloc[0].to_dict() if len(frame) else {}
    node = ", ".join(f"{k} {first.get(c, '?')}" for k, c in [
        ("device", "device_name"), ("driver", "env_driver"), ("torch", "env_torch"),
        ("CUDA", "env_cuda"), ("cuDNN", "env_cudnn"), ("host", "host")])
    took = f" Wall time {seconds:.0f} s." if seconds is not None else " Judged from the records."
    lines = [f"# benchlib gpu-check, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             f"{node}.{took}", "",
             "| run | throughput | unit | TFLOP/s | MFU of the datasheet | syncs in loop | "
             "NVML samples | flags | ok |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in outcome.rows:
        def fmt(v: object, spec: str) -> str:
            return "" if v is None else format(v, spec)
        lines.append(f"| {r['run']} | {fmt(r['throughput'], ',.4g')} | {r['unit']} | "
                     f"{fmt(r['TFLOP/s'], '.1f')} | {fmt(r['MFU'], '.1%')} | "
                     f"{fmt(r['syncs'], '.0f')} | {fmt(r['samples'], '.0f')} | {r['flags']} | "
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


def add_reference_check(folder: Path, outcome: Outcome) -> str:
    """``benchlib check`` on ``folder`` into ``outcome`` (a failed reference fails, nothing
    judged is a note); what it printed."""
    status, check_text = reference_check(folder)
    if status == 1:
        outcome.failures.append("benchlib check: a run failed its reference (check.txt)")
    elif status == 3:
        outcome.notes.append("benchlib check judged no run (no shipped reference for this "
                             "GPU and configuration), or some could not be certified")
    return check_text


def judge_folder(folder: Path) -> int:
    """``--judge FOLDER``: an existing campaign's records judged with the check's assertions,
    nothing run; prints the failures, then the summary. 0 every assertion held, 1 one failed
    (each named by run), 2 the folder is missing or holds no record."""
    from benchlib.errors import BenchlibError
    from benchlib.records.results import scan

    if not folder.is_dir():
        print(f"error: {folder}: no such folder (give a campaign folder, outputs/<campaign>)",
              file=sys.stderr)
        return 2
    try:
        found = scan(folder)
    except (OSError, BenchlibError) as error:
        print(f"error: {folder}: {error}", file=sys.stderr)
        return 2
    if found.frame.empty:
        left = f" ({len(found.skipped)} files left out: {found.skipped[0]})" if found.skipped else ""
        print(f"error: {folder}: no records{left}", file=sys.stderr)
        return 2
    outcome = Outcome()
    judge(found.frame, None, outcome)
    outcome.failures += [f"{skipped.path.stem}: left out of the records ({skipped})"
                         for skipped in found.skipped]
    check_text = add_reference_check(folder, outcome)
    runs, failed = len(found.frame), len(outcome.failures)
    print(f"gpu-check --judge {folder}: {runs} run{'s' * (runs != 1)}, {failed} failed "
          f"assertion{'s' * (failed != 1)}")
    print("".join(f"- {f}\n" for f in outcome.failures))
    print(summary_text(found.frame, outcome, check_text, None))
    return 1 if outcome.failures else 0


def main(argv: list[str] | None = None) -> int:
    """The check (exit status in the module's docstring): ``--plan`` validates and prints the
    plan, ``--judge FOLDER`` judges existing records, otherwise it runs on this node's GPU."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", default="outputs", help="results root (default: outputs)")
    parser.add_argument("--plan", action="store_true", help="validate and print the plan only")
    parser.add_argument("--judge", metavar="FOLDER", type=Path,
                        help="judge an existing campaign's records, run nothing (no GPU needed)")
    args = parser.parse_args(argv)
    if args.judge is not None:
        try:
            return judge_folder(args.judge.resolve())
        except BrokenPipeError:  # its output piped into ``head``: end quietly, as benchlib does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
    missing = missing_packages()
    if missing:
        import textwrap

        print(f"error: this Python ({sys.executable}) lacks {len(missing)} of the packages the "
              "check imports:\n" + textwrap.fill(", ".join(missing), 96, initial_indent="  ",
                                                 subsequent_indent="  ", break_on_hyphens=False) +
              "\ninstall them (docs/gpu-check.md: the wheels of tools/gpu-check-wheels.txt),\n"
              "or run `make gpu-check` in the project's venv", file=sys.stderr)
        return 2
    os.chdir(ROOT)  # the params files name data/ and notebooks/ relative to the checkout
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT),
                                                             os.environ.get("PYTHONPATH")]))
    from benchlib.errors import BenchlibError

    started = time.perf_counter()
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    try:
        if args.plan or not gpus:  # nothing runs: the data is not written
            loaded = planned_sweeps()
        else:
            prepare_data(jpeg_images(planned_sweeps()))
            loaded = sweeps()
        images = jpeg_images(loaded)
    except BenchlibError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print_plan(loaded, gpus)
    print(f"{DATA / 'images'}: {images:,} JPEGs in {IMAGES['classes']} classes, the most a point "
          "takes with its workers' prefetch and 10 % more (no epoch ends in a timed span)")
    if args.plan or not gpus:
        print("no CUDA device: plan and params checked, nothing run" if not args.plan else
              "plan only (--plan)")
        if not (DATA / "em.h5").is_file():
            print(f"{DATA} not written: the params were checked against stand-ins of its "
                  "shapes; the check writes it where it runs")
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
    check_text = add_reference_check(folder, outcome)
    summary = summary_text(frame, outcome, check_text, time.perf_counter() - started)
    print(summary)
    print(f"packed: {pack(folder, summary, check_text)}")
    return 1 if outcome.failures else 0


if __name__ == "__main__":
    sys.exit(main())
