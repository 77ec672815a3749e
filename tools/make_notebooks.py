"""Regenerate the benchmark notebooks in notebooks/ (clean, without outputs).

The parameters cell is written from benchlib.config so that notebook parameters and config
fields cannot drift apart; tests check the committed notebooks against this generator.
Usage: python tools/make_notebooks.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from benchlib.config import ClassificationConfig

ROOT = Path(__file__).resolve().parent.parent
SMOOTH_ONLY = ("noise_samples", "sigma")
TITLES = {
    "train": ("Training benchmark",
              "Forward, loss, backward and an SGD-with-momentum step per iteration."),
    "inference": ("Inference benchmark", "Eval mode, no gradients: one forward pass per batch."),
    "smooth_inference": (
        "Smooth inference benchmark (randomized smoothing)",
        "For each input image, `noise_samples` Gaussian copies (`sigma`) are classified in "
        "chunks of `batch_size` and the class votes counted; one iteration is one input image."),
}
COMMENTS = {
    "iterations": 'timed iterations after warm-up, or "epoch" for one pass over the data',
    "dataset": "synthetic | real",
    "synthetic_kind": "device: tensors made once on the device; loader: made by CPU workers",
    "data_dir": "ImageNet-layout JPEG folder (dataset: real)",
    "image_size": "None: the model's default (224, inception_v3 299)",
    "device": "auto | cuda | cpu",
    "precision": "fp32 | tf32 | amp_fp16 | amp_bf16",
    "compile": "none | default | reduce-overhead | max-autotune",
    "breakdown": "per-phase timers (False: whole iterations only)",
    "cluster": "empty: SLURM cluster name, $BENCHLIB_CLUSTER or host name",
}


def parameter_names(benchmark: str) -> list[str]:
    names = [n for n in ClassificationConfig.model_fields if n != "benchmark"]
    return [n for n in names if benchmark == "smooth_inference" or n not in SMOOTH_ONLY]


def build(benchmark: str) -> nbformat.NotebookNode:
    title, what = TITLES[benchmark]
    defaults = ClassificationConfig(benchmark=benchmark)
    lines = []
    for name in parameter_names(benchmark):
        value = getattr(defaults, name)
        comment = f"  # {COMMENTS[name]}" if name in COMMENTS else ""
        lines.append(f"{name} = {value!r}{comment}")
    arguments = "\n".join(f"    {n}={n}," for n in parameter_names(benchmark))
    cells = [
        new_markdown_cell(
            f"# {title}\n\n{what}\n\nRun it with papermill (`benchlib sweep params/X.yaml`, or "
            f"`papermill notebooks/{benchmark}.ipynb out.ipynb -p model resnet50`) or cell by "
            "cell in JupyterLab. The parameters cell below holds every parameter and its default."),
        new_code_cell("\n".join(lines), metadata={"tags": ["parameters"]}),
        new_code_cell(
            "from benchlib.config import ClassificationConfig\n"
            "from benchlib.environment import capture\n"
            "from benchlib.plots import as_table, iteration_timeline, phase_bars\n"
            "from benchlib.results import make_record, publish\n"
            "from benchlib.workloads import classification\n"
            "from benchlib.workloads.runtime import resolve_device"),
        new_markdown_cell("## Configuration"),
        new_code_cell(f"config = ClassificationConfig(\n    benchmark={benchmark!r},\n"
                      f"{arguments}\n)\nas_table(config.model_dump())"),
        new_markdown_cell("## Environment"),
        new_code_cell("env = capture(resolve_device(config.device))\nas_table(env)"),
        new_markdown_cell("## Run"),
        new_code_cell(
            "result = classification.run(config)\n"
            'print(f"{result.throughput:.2f} {result.unit} over {result.iterations} timed "\n'
            '      f"iterations ({result.wall_time_s:.2f} s; {result.warmup} warm-up excluded)")'),
        new_markdown_cell("## Per-iteration timing"),
        new_code_cell(
            'title = f"{config.model} {config.benchmark}, batch {config.batch_size}, '
            '{config.dataset} data"\nfigure = iteration_timeline(result, title=title)'),
        new_markdown_cell(
            "## Phase breakdown\n\nMedian, p95 and spread (IQR / median) of seconds per "
            "iteration in each phase; `share` is the phase's median over the iteration median."),
        new_code_cell("figure = phase_bars(result)\nresult.breakdown()"),
        new_markdown_cell("## Result record\n\nThe machine-readable record "
                          "(`application/vnd.benchlib.result+json`) that summaries load."),
        new_code_cell("record = make_record(config, result, env)\npublish(record)"),
    ]
    for index, cell in enumerate(cells):
        cell.id = f"cell-{index:02d}"  # stable ids: regenerating gives identical files
    nb = new_notebook(cells=cells)
    nb.metadata.update(
        kernelspec={"name": "python3", "display_name": "Python 3", "language": "python"},
        language_info={"name": "python"},
        benchlib={"kind": "benchmark", "benchmark": benchmark},
    )
    return nb


def main(check: bool = False) -> int:
    stale = []
    for benchmark in TITLES:
        path = ROOT / "notebooks" / f"{benchmark}.ipynb"
        text = nbformat.writes(build(benchmark)) + "\n"
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.write_text(text)
    if stale:
        print("stale notebooks (run python tools/make_notebooks.py):", *stale, sep="\n  ")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(check="--check" in sys.argv))
