"""Regenerate the benchmark notebooks in notebooks/ (clean, without outputs).

The parameters cell is written from benchlib.inputs.config so that notebook parameters and config
fields cannot drift apart; tests check the committed notebooks against this generator.
Usage: python tools/make_notebooks.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from benchlib import registry
from benchlib.inputs.config import ClassificationConfig
from benchlib.inputs.probe_config import AllReduceConfig, NodeProbeConfig

ROOT = Path(__file__).resolve().parent.parent


def code_cell(source: str, **options: object) -> nbformat.NotebookNode:
    """A code cell whose runs of ``from benchlib...`` lines are in isort's order (ruff lints the
    committed notebooks, so the generator writes what ruff would)."""
    lines, run = [], []
    for line in [*source.split("\n"), None]:
        if line is not None and line.startswith("from benchlib"):
            run.append(line)
            continue
        lines.extend(sorted(run, key=lambda text: text.split(" import ")[0]))
        run = []
        if line is not None:
            lines.append(line)
    return new_code_cell("\n".join(lines), **options)

SMOOTH_ONLY = ("noise_samples", "sigma")
#: Classification notebooks: their titles and descriptions come from the registry.
TITLES = {b.notebook: (b.title, b.description) for b in registry.BENCHMARKS
          if b.config is ClassificationConfig}
COMMENTS = {
    "iterations": 'timed iterations after warm-up, "epoch" (one pass over the data) or "auto"',
    "min_time_s": 'iterations "auto": time at least this long, then stop once the mean is known',
    "max_time_s": 'iterations "auto": stop after this long in any case',
    "probe_time_s": "seconds each figure may take (iterations and sizes shrink to fit)",
    "dataset": "synthetic | real",
    "synthetic_kind": "device: tensors made once on the device; loader: made by CPU workers",
    "data_dir": "ImageNet-layout JPEG folder (dataset: real)",
    "image_size": "None: the model's default (224, inception_v3 299)",
    "device": "auto | cuda | cpu",
    "precision": "fp32 | tf32 | amp_fp16 | amp_bf16",
    "compile": "none | default | reduce-overhead | max-autotune",
    "breakdown": "per-phase timers (False: whole iterations only)",
    "cluster": "empty: SLURM cluster name, $BENCHLIB_CLUSTER or host name",
    "volume": "CREMI-layout HDF5 (.h5) or zarr (.zarr): benchlib data volume PATH --shape Z Y X",
    "pooling": "one [z, y, x] for every level, or one per level",
    "padding": "valid | same (3x3x3 convolutions)",
    "norm": "none | batch | group",
    "target": "affinities (3 channels) | boundaries (1)",
    "patch_shape": "network input (z, y, x); the loss covers the valid output",
    "block_shape": "output block per pass, a multiple of the network's downsampling",
    "halo": "None: what valid convolutions consume (same: the receptive field)",
    "output": "HDF5 / zarr for the predictions; empty: a temporary file beside the volume",
    "output_dtype": "uint8 | float16 | float32",
    "num_devices": "devices (one process each) over all nodes; > 1 runs through torchrun",
    "num_nodes": "nodes; > 1: a c10d rendezvous (srun in a SLURM allocation)",
    "node_launcher": "auto (srun in SLURM) | srun | localhost (every node on this machine)",
    "hang_timeout_s": "a rank that finishes no iteration for this long stops the launch",
    "scaling": "weak: batch_size per device | strong: batch_size is the global batch",
    "min_bytes": "smallest message (bytes); sizes double up to max_bytes",
    "max_bytes": "largest message (bytes)",
    "dtype": "float32 | bfloat16 | float16",
    "telemetry_interval_s": "seconds between NVML samples over the timed loop (0: off)",
}
UNET_COMMENTS = {
    "unet3d_train": {"num_workers": "loader processes sampling patches (dataset: real)",
                     "dataset": "synthetic (device tensors) | real (the volume)",
                     "iterations": "Adam steps timed after warm-up (the reference ran 1001)"},
    "unet3d_predict": {"num_workers": "threads reading blocks ahead of the compute",
                       "iterations": 'batches of blocks, or "epoch" for the whole volume',
                       "warmup": "batches run before the timed pass, not written"},
}
UNET_TITLES = {b.notebook: (b.title, b.description, b.config.__name__)
               for b in registry.BENCHMARKS if b.notebook.startswith("unet3d")}
UNET_CONFIGS = {b.notebook: b.config for b in registry.BENCHMARKS if b.notebook.startswith("unet3d")}


RUN_MARKDOWN = (
    "## Run\n\nWith `num_devices` 1 the benchmark runs in this kernel. With more, torchrun starts "
    "one process per device (NCCL on GPUs, gloo on CPUs) and the kernel only watches them; each "
    "rank works on its own share of the data and the ranks' results are merged: samples of all "
    "ranks over the slowest rank's time.")


def _environment_and_ranks() -> list:
    return [
        new_markdown_cell("## Environment (rank 0)\n\nSoftware, hardware and job, as rank 0 saw them."),
        code_cell("environment_tables(result.env)"),
        new_markdown_cell(
            "## Ranks\n\nOne row per rank when several ran; `straggler_spread` in the record is "
            "the slowest rank's wall time over the fastest's."),
        code_cell("table(rank_table(result).reset_index(), \"One row per rank\", "
                      "keep=(\"throughput\",))"),
        new_markdown_cell(
            "## GPU telemetry\n\nNVML readings every `telemetry_interval_s` over the timed loop "
            "(rank 0's device); red points are samples whose clocks were held down by a power or "
            "thermal limit. The record has the means, the throttled share and joules per sample."),
        code_cell(
            "if result.telemetry is not None and result.telemetry.available:\n"
            "    show(telemetry_plot(result.telemetry))\n"
            "mapping_table(result.telemetry_record(), \"GPU telemetry over the timed loop\")"),
    ]


def _parameters_cell(config: object, names: list[str], comments: dict[str, str]) -> str:
    lines = []
    for name in names:
        value = getattr(config, name)
        comment = f"  # {comments[name]}" if name in comments else ""
        lines.append(f"{name} = {value!r}{comment}")
    return "\n".join(lines)


def _finish(cells: list, kind: dict) -> nbformat.NotebookNode:
    for index, cell in enumerate(cells):
        cell.id = f"cell-{index:02d}"  # stable ids: regenerating gives identical files
    nb = new_notebook(cells=cells)
    nb.metadata.update(
        kernelspec={"name": "python3", "display_name": "Python 3", "language": "python"},
        language_info={"name": "python"},
        benchlib=kind,
    )
    return nb


def build_unet(benchmark: str) -> nbformat.NotebookNode:
    title, what, class_name = UNET_TITLES[benchmark]
    config_class = UNET_CONFIGS[benchmark]
    names = [n for n in config_class.model_fields if n != "benchmark"]
    defaults = config_class.model_construct()
    arguments = "\n".join(f"    {n}={n}," for n in names)
    cells = [
        new_markdown_cell(
            f"# {title}\n\n{what}\n\nRun it with papermill (`benchlib sweep params/unet3d.yaml`, or "
            f"`papermill notebooks/{benchmark}.ipynb out.ipynb -p volume data/em.h5`) or cell by "
            "cell in JupyterLab. The parameters cell below holds every parameter and its default."),
        code_cell(_parameters_cell(defaults, names, {**COMMENTS, **UNET_COMMENTS[benchmark]}),
                      metadata={"tags": ["parameters"]}),
        code_cell(
            "from benchlib.analysis import comparisons as analysis\nfrom benchlib.run import launch\n"
            f"from benchlib.inputs.unet3d_config import {class_name}\n"
            "from benchlib.publish.plots import as_table, iteration_timeline, phase_bars, rank_table, "
            "show, telemetry_plot\n"
            "from benchlib.publish.present import config_table, environment_tables, mapping_table, table\n"
            "from benchlib.records.build import make_record, publish\n"
            "from benchlib.workloads import unet3d"),
        new_markdown_cell("## Configuration and network"),
        code_cell(f"config = {class_name}(\n{arguments}\n)\nconfig_table(config)"),
        code_cell("as_table(unet3d.network_summary(config))"),
        new_markdown_cell(RUN_MARKDOWN),
        code_cell("result = launch.run(config)\nprint(unet3d.headline(result))"),
        *_environment_and_ranks(),
        new_markdown_cell("## Per-iteration timing"),
        code_cell(
            'title = f"3D U-Net {config.benchmark}, batch {config.batch_size}, {config.precision}"\n'
            "show(iteration_timeline(result, title=title))"),
        new_markdown_cell(
            "## Phase breakdown\n\nMedian, p95 and spread (IQR / median) of seconds per "
            "iteration in each phase; `share` is the phase's median over the iteration median."
            + ("" if benchmark == "unet3d_train" else
               " `read` and `write` are the time the loop waited for the reader threads and the "
               "writer thread; their own busy time is in the record (`result_read_busy_s`, "
               "`result_write_busy_s`).")),
        code_cell("show(phase_bars(result))\nresult.breakdown()"),
        new_markdown_cell("## Lab units and result record\n\nThe machine-readable record "
                          "(`application/vnd.benchlib.result+json`) that summaries load."),
        code_cell("record = make_record(config, result)\nas_table(analysis.lab_units(record))"),
        code_cell("publish(record)"),
    ]
    return _finish(cells, {"kind": "benchmark", "benchmark": benchmark})


def build_allreduce() -> nbformat.NotebookNode:
    names = [n for n in AllReduceConfig.model_fields if n != "benchmark"]
    arguments = "\n".join(f"    {n}={n}," for n in names)
    cells = [
        new_markdown_cell(
            "# All-reduce probe: bus bandwidth over message sizes\n\nThe collective that "
            "data-parallel training waits for, timed as nccl-tests times it: for each message size "
            "(doubling from `min_bytes` to `max_bytes`), `warmup` untimed then `iterations` timed "
            "all-reduces; the time is the mean over ranks. `algbw` = bytes / time, `busbw` = algbw "
            "x 2(n-1)/n, the rate each link sustains. NCCL on GPUs, gloo on CPUs; at least 2 "
            "devices, through torchrun."),
        code_cell(_parameters_cell(AllReduceConfig(), names, COMMENTS),
                      metadata={"tags": ["parameters"]}),
        code_cell(
            "from benchlib.run import launch\n"
            "from benchlib.inputs.probe_config import AllReduceConfig\n"
            "from benchlib.publish.plots import busbw_plot, show\n"
            "from benchlib.publish.present import config_table, environment_tables\n"
            "from benchlib.records.build import publish\n"
            "from benchlib.workloads import collectives"),
        new_markdown_cell("## Configuration"),
        code_cell(f"config = AllReduceConfig(\n{arguments}\n)\nconfig_table(config)"),
        new_markdown_cell("## Run"),
        code_cell("result = launch.run(config)\nresult.table"),
        code_cell("record = collectives.make_record(config, result)\n"
                      "show(busbw_plot(result.table.assign(configuration="
                      "f\"{record['gpu']} x {result.num_devices}\")))"),
        new_markdown_cell("## Environment (rank 0)\n\nSoftware, hardware and job, as rank 0 saw them."),
        code_cell("environment_tables(result.env)"),
        new_markdown_cell("## Result record"),
        code_cell("publish(record)"),
    ]
    return _finish(cells, {"kind": "benchmark", "benchmark": "probe_allreduce"})


NODE_COMMENTS = {
    "precisions": "matmul precisions: fp32 | tf32 | fp16 | bf16",
    "matmul_size": "n of the n x n matrix products",
    "memory_bytes": "buffer copied within the device (bytes read + written per second)",
    "transfer_bytes": "buffer copied host <-> device, from pinned and from pageable memory",
    "iterations": "timed repetitions of each probe",
    "data_dir": "ImageNet-layout JPEG folder for the decode and read probes (empty: skip them)",
    "decode_workers": "loader worker counts to try (0: decode in this process)",
    "decode_batches": "timed batches per worker count",
    "read_max_bytes": "read at most this many bytes of data_dir",
    "allreduce_devices": "0: every visible GPU when there are 2 or more; 1: skip the all-reduce",
}


def build_node_probe() -> nbformat.NotebookNode:
    names = [n for n in NodeProbeConfig.model_fields
             if n not in ("benchmark", "num_devices", "num_nodes", "node_launcher")]
    arguments = "\n".join(f"    {n}={n}," for n in names)
    cells = [
        new_markdown_cell(
            "# Node probe: what this node can do at most\n\nMatrix-multiply TFLOP/s per "
            "precision, device memory bandwidth, host-to-device and device-to-host bandwidth "
            "(pinned and pageable), JPEG decode + transform images/s against the number of loader "
            "workers, the data directory's read throughput, and the all-reduce bus bandwidth where "
            "several GPUs exist. `summary_node` puts these ceilings beside datasheet figures and "
            "uses them to say what held each benchmark run back."),
        code_cell(_parameters_cell(NodeProbeConfig(), names, {**COMMENTS, **NODE_COMMENTS}),
                      metadata={"tags": ["parameters"]}),
        code_cell(
            "from benchlib.run import launch, probe_runs\n"
            "from benchlib.inputs.probe_config import NodeProbeConfig\n"
            "from benchlib.publish.plots import busbw_plot, decode_plot, show\n"
            "from benchlib.publish.present import config_table, environment_tables\n"
            "from benchlib.records.build import publish\n"
            "from benchlib.workloads import node_probe"),
        new_markdown_cell("## Configuration"),
        code_cell(f"config = NodeProbeConfig(\n{arguments}\n)\nconfig_table(config)"),
        new_markdown_cell("## Ceilings"),
        code_cell("result = launch.run(config)\nresult.table"),
        new_markdown_cell("## Loader capacity\n\nImages/s the training loader delivers "
                          "(decode, RandomResizedCrop, flip) against its worker processes."),
        code_cell("show(decode_plot(result.decode)) if len(result.decode) else "
                      "print(\"no data_dir: decode not probed\")"),
        new_markdown_cell("## All-reduce\n\nThe all-reduce probe over the node's GPUs "
                          "(torchrun, NCCL), when there are two or more."),
        code_cell(
            "allreduce, allreduce_record = probe_runs.allreduce_for_node(config)\n"
            "if allreduce is None:\n"
            "    print(\"fewer than 2 devices: all-reduce not probed\")\n"
            "else:\n"
            "    show(busbw_plot(allreduce.table.assign(configuration="
            "f\"{allreduce.num_devices} devices\")))"),
        new_markdown_cell("## Environment"),
        code_cell("environment_tables(result.env)"),
        new_markdown_cell("## Result record"),
        code_cell("record = node_probe.make_record(config, result, allreduce_record)\n"
                      "publish(record)"),
    ]
    return _finish(cells, {"kind": "benchmark", "benchmark": "probe_node"})


def parameter_names(benchmark: str) -> list[str]:
    names = [n for n in ClassificationConfig.model_fields if n != "benchmark"]
    return [n for n in names if benchmark == "smooth_inference" or n not in SMOOTH_ONLY]


def build(benchmark: str) -> nbformat.NotebookNode:
    title, what = TITLES[benchmark]
    defaults = ClassificationConfig(benchmark=benchmark)
    arguments = "\n".join(f"    {n}={n}," for n in parameter_names(benchmark))
    cells = [
        new_markdown_cell(
            f"# {title}\n\n{what}\n\nRun it with papermill (`benchlib sweep params/X.yaml`, or "
            f"`papermill notebooks/{benchmark}.ipynb out.ipynb -p model resnet50`) or cell by "
            "cell in JupyterLab. The parameters cell below holds every parameter and its default."),
        code_cell(_parameters_cell(defaults, parameter_names(benchmark), COMMENTS),
                      metadata={"tags": ["parameters"]}),
        code_cell(
            "from benchlib.run import launch\n"
            "from benchlib.inputs.config import ClassificationConfig\n"
            "from benchlib.publish.plots import iteration_timeline, phase_bars, rank_table, "
            "show, telemetry_plot\n"
            "from benchlib.publish.present import config_table, environment_tables, mapping_table, table\n"
            "from benchlib.records.build import make_record, publish"),
        new_markdown_cell("## Configuration"),
        code_cell(f"config = ClassificationConfig(\n    benchmark={benchmark!r},\n"
                      f"{arguments}\n)\nconfig_table(config)"),
        new_markdown_cell(RUN_MARKDOWN),
        code_cell(
            "result = launch.run(config)\n"
            'print(f"{result.throughput:.2f} {result.unit} over {result.iterations} timed "\n'
            '      f"iterations ({result.wall_time_s:.2f} s; {result.warmup} warm-up excluded)")'),
        *_environment_and_ranks(),
        new_markdown_cell("## Per-iteration timing"),
        code_cell(
            'title = f"{config.model} {config.benchmark}, batch {config.batch_size}, '
            '{config.dataset} data"\nshow(iteration_timeline(result, title=title))'),
        new_markdown_cell(
            "## Phase breakdown\n\nMedian, p95 and spread (IQR / median) of seconds per "
            "iteration in each phase; `share` is the phase's median over the iteration median."),
        code_cell("show(phase_bars(result))\nresult.breakdown()"),
        new_markdown_cell("## Result record\n\nThe machine-readable record "
                          "(`application/vnd.benchlib.result+json`) that summaries load."),
        code_cell("record = make_record(config, result)\npublish(record)"),
    ]
    return _finish(cells, {"kind": "benchmark", "benchmark": benchmark})


SUMMARY_HEAD = (
    "import pandas as pd\n"
    "from IPython.display import Markdown, display\n\n"
    "{reference}from benchlib.analysis import comparisons as analysis\n"
    "from benchlib.publish import plots, present, summary\n\n"
    "for option in (\"display.max_columns\", \"display.max_rows\", \"display.max_colwidth\"):\n"
    "    pd.set_option(option, None)  # never cut a table with \"...\"\n"
    "df = summary.load_results(results_dir)\n"
    "done = analysis.ok(df)\n"
    "display(Markdown(summary.describe(df, results_dir)))\n"
    "display(Markdown(summary.flag_notes(df)))\n"
    "summary.overview_table(df)"
)
SUMMARY_TAIL = [
    new_markdown_cell("## What this data cannot show"),
    code_cell('Markdown(summary.bullet_list(summary.missing(df), "Nothing missing."))'),
    new_markdown_cell("## Failed runs\n\nLeft out of every table above."),
    code_cell('failed = analysis.failed(df)\n'
                  'if len(failed):\n'
                  '    display(present.table(failed, "Failed runs and their errors", '
                  'keep=("error",)))\n'
                  'else:\n'
                  '    display(Markdown("No failed runs."))'),
]
SUMMARIES = {
    "summary_scaling": (
        "Scaling: throughput, speedup and efficiency against devices",
        "Speedup is throughput over the median throughput at the fewest devices of the same "
        "configuration; efficiency is speedup x fewest devices / devices. Repeated runs are "
        "medians.",
        {},
        [
            new_markdown_cell(
                "## The scaling sheet\n\nIn the reference campaigns' layout: one row per device "
                "count; blocks for throughput, speedup and efficiency per configuration, and for "
                "the speedup each factor gives, each with its median. ⚠ marks a configuration "
                "with a flagged run."),
            code_cell(
                "from benchlib.publish.sheet import Sheet\n\n"
                "runs = analysis.benchmarks(done)\n"
                "sheet = Sheet(runs)\n"
                "sheet if sheet else Markdown(\"No configuration ran on more than one device "
                "count: no scaling to show.\")"),
            code_cell(
                "scalable = summary.scalable(runs)\n"
                "if scalable[\"num_devices\"].nunique() > 1:\n"
                "    plots.show(plots.scaling_plot(analysis.scaling(scalable)))"),
            new_markdown_cell("## Throughput per configuration"),
            code_cell("summary.throughput_tables(runs) if len(runs) else "
                          "Markdown(\"No finished benchmark run.\")"),
            new_markdown_cell(
                "## Runs over several ranks\n\nThe slowest rank's wall time over the fastest's, "
                "and the launcher's seconds (process start, imports, rendezvous, model set-up, "
                "teardown) beyond the slowest rank's timed loop."),
            code_cell("several = analysis.distributed_runs(done)\n"
                          "if len(several):\n"
                          "    display(present.by_unit(several, \"Runs over several ranks\", "
                          "keep=(\"straggler_spread\",)))\n"
                          "else:\n"
                          "    display(Markdown(\"No run used more than one device.\"))"),
            new_markdown_cell(
                "## All-reduce bus bandwidth\n\nFrom the `allreduce` probe notebook: nccl-tests' "
                "bus bandwidth, algbw x 2(n-1)/n, against message size."),
            code_cell(
                "curves = analysis.allreduce_curves(done)\n"
                "if len(curves):\n"
                "    wide = curves.pivot_table(index=[\"size_bytes\", \"size\"], columns="
                "\"configuration\",\n"
                "                              values=\"busbw_GBps\").reset_index()\n"
                "    display(present.table(wide.drop(columns=\"size_bytes\"),\n"
                "                          \"Bus bandwidth (GB/s) per message size\", "
                "say_constant=False))\n"
                "    plots.show(plots.busbw_plot(curves))\n"
                "else:\n"
                "    display(Markdown(\"No all-reduce probe in these results.\"))"),
        ],
    ),
    "summary_comparisons": (
        "Comparisons: synthetic vs real data, batch sizes, GPUs, models, precisions, clusters",
        "Each comparison pairs runs equal in every other setting; the ratio is a / b of "
        "throughput and its median is the headline, with a 95 % interval (pairs resampled, each "
        "pair drawn within its runs' own intervals). An effect is significant when the interval "
        "excludes 1.0.",
        {},
        [
            new_markdown_cell("## Which factors matter"),
            code_cell("found = summary.comparisons(done)\n"
                          "display(Markdown(summary.factors_that_matter(found)))\n"
                          "summary.effects_table(found) if found else None"),
            new_markdown_cell("## Every comparison"),
            code_cell(
                "for comparison in found:\n"
                "    title = summary.md_text(comparison.title)\n"
                "    effect = summary.md_text(summary.describe_effect(comparison.effect))\n"
                "    display(Markdown(f\"### {title}\\n**{effect}** over {len(comparison.pairs)} pairs\"))\n"
                "    display(summary.pairs_table(comparison))\n"
                "    plots.show(plots.ratio_plot(comparison.pairs, comparison.title,\n"
                "                                xlabel=f\"{comparison.a} / {comparison.b} (x)\"))"),
        ],
    ),
    "summary_breakdown": (
        "Where the time goes: per-phase breakdown and bottlenecks",
        "Median milliseconds per iteration in each phase (waiting for data, copying to the "
        "device, forward, backward, ...), the bottleneck phase and the share of time spent "
        "waiting for data.",
        {"include_reference": True},
        [
            new_markdown_cell("## This campaign"),
            code_cell("table = analysis.breakdown(done)\n"
                          "summary.breakdown_table(table, \"Median milliseconds per iteration in "
                          "each phase, per configuration\")"),
            code_cell("plots.show(plots.breakdown_plot(table, summary.varying(table)))"),
            new_markdown_cell(
                "## Reference: ResNet-50 fp32 on the TN and JADE2 clusters\n\nPublished "
                "figures shipped with benchlib (iteration = sum of the published phases)."),
            code_cell(
                "if include_reference:\n"
                "    ref = reference.breakdown_records()\n"
                "    ref_table = analysis.breakdown(ref)\n"
                "    display(summary.breakdown_table(ref_table, \"Published milliseconds per "
                "iteration in each phase\"))\n"
                "    plots.show(plots.breakdown_plot(ref_table, summary.varying(ref_table),\n"
                '                                    "Reference breakdown"))'),
            new_markdown_cell(
                "## Reference: measured against expected speed\n\nHow many "
                "times slower the first system ran than a public benchmark says it should."),
            code_cell(
                "if include_reference:\n"
                '    one = ref[ref["num_devices"] == 1]\n'
                '    display(present.table(analysis.expected(one, "gpu", "V100", "A40", 0.943,\n'
                '                                            metric="time_iteration_s",\n'
                '                                            on=["cluster", "dataset", "benchmark"]),\n'
                '                          "1 x V100 vs 1 x A40 on TN (expected speed ratio 0.943)",\n'
                '                          keep=("slowdown",)))\n'
                '    display(present.table(analysis.expected(one[one["gpu"] == "V100"], "cluster",\n'
                '                                            "JADE2", "TN", 0.67,\n'
                '                                            metric="time_iteration_s",\n'
                '                                            on=["dataset", "benchmark"]),\n'
                '                          "JADE2 V100 vs TN V100 (expected speed ratio 0.67)",\n'
                '                          keep=("slowdown",)))'),
        ],
    ),
    "summary_node": (
        "The node: its ceilings, what each run got, and what held it back",
        "The node probe's ceilings (matrix multiply per precision, memory, host links, JPEG "
        "decode, data directory) beside datasheet figures; NVML telemetry of every run; and a "
        "verdict per run: **throttled** (clocks held down by power or heat in at least 10 % of "
        "the samples), **data-bound** (at least 10 % of each iteration spent waiting for the next "
        "batch, with the probe's loader capacity against what the model consumes) or "
        "**compute-bound** with its model FLOPs utilization (FLOPs per sample from "
        "torch.utils.flop_counter against the measured matmul peak in the run's precision).",
        {},
        [
            new_markdown_cell("## Ceilings against the datasheet"),
            code_cell(
                "from benchlib.analysis import verdict\nfrom benchlib.publish import verdict_page\n\n"
                "ceilings = verdict.ceilings(df)\n"
                "if len(ceilings):\n"
                "    display(verdict_page.ceilings_display(ceilings))\n"
                "    if ceilings[\"of_datasheet\"].notna().any():\n"
                "        plots.show(plots.ceilings_plot(ceilings))\n"
                "else:\n"
                "    display(Markdown(\"No node probe in these results: run \"\n"
                "                     \"`notebooks/node_probe.ipynb` (params/node.yaml).\"))"),
            new_markdown_cell("## Datasheet figures of the GPUs in these results"),
            code_cell("sheets = verdict.datasheets_seen(df)\n"
                          "nothing = Markdown(\"No listed GPU in these results (CPU runs, or a "
                          "GPU not in the datasheet file).\")\n"
                          "caption = (\"Dense TFLOP/s per precision, memory and host-link GB/s \"\n"
                          "           \"(benchlib/reference/gpu_datasheets.csv)\")\n"
                          "shown = present.table(sheets, caption, missing_reason=\"not on the "
                          "datasheet\") if len(sheets) else None\n"
                          "shown if len(sheets) else nothing"),
            new_markdown_cell("## Loader capacity\n\nImages/s the training loader delivered "
                              "against its worker processes, per probed node."),
            code_cell(
                "curves = verdict.decode_curves(df)\n"
                "if len(curves):\n"
                "    wide = curves.pivot_table(index=\"workers\", columns=\"configuration\",\n"
                "                              values=\"images_per_s\").reset_index()\n"
                "    display(present.table(wide, \"Images/s the loader delivered per worker "
                "count\", say_constant=False))\n"
                "    plots.show(plots.decode_plot(curves))\n"
                "else:\n"
                "    display(Markdown(\"No decode probe (the probe ran without data_dir).\"))"),
            new_markdown_cell("## Verdict per run"),
            code_cell(
                "judged = verdict.verdicts(df)\n"
                "if len(judged):\n"
                "    counts = judged.groupby(\"verdict\").size().rename(\"runs\").reset_index()\n"
                "    display(present.table(counts, \"Runs per verdict\", keep=(\"verdict\", "
                "\"runs\")))\n"
                "    display(verdict_page.verdict_display(judged))\n"
                "    display(Markdown(verdict_page.reasons(judged)))\n"
                "    plots.show(plots.verdict_plot(judged))\n"
                "else:\n"
                "    display(Markdown(\"No finished benchmark run.\"))"),
            new_markdown_cell("## Telemetry per run\n\nNVML means over each timed loop."),
            code_cell("verdict_page.telemetry_display(df)"),
        ],
    ),
    "summary_projection": (
        "Projections: time to a training target and to process a data set",
        "Training runs: hours to reach `target_iterations` from the median iteration time. "
        "Image runs: hours for `epochs` passes (training) or one pass (inference) over "
        "`dataset_samples` images from the throughput. 3D U-Net runs: days to 100k iterations "
        "and hours per teravoxel beside the reference campaign. Probes are left out.",
        {"target_iterations": 100_000, "dataset_samples": 1_281_167, "epochs": 90},
        [
            new_markdown_cell("## Hours to the target number of iterations (training runs)"),
            code_cell(
                "training = summary.training_runs(done)\n"
                "if len(training):\n"
                "    projected = analysis.derived_units(analysis.extrapolate(\n"
                "        training, iterations=target_iterations))\n"
                "    columns = [*summary.described(training), \"time_iteration_s\", "
                "\"iterations_per_minute\", \"hours\"]\n"
                "    caption = (f\"Hours to {target_iterations:,} iterations at each run's \"\n"
                "               \"median iteration time\")\n"
                "    display(present.table(projected[columns], caption, keep=(\"hours\",)))\n"
                "    plots.show(plots.hours_plot(projected, summary.described(training),\n"
                "                                title=f\"Hours to {target_iterations:,} "
                "iterations\",\n"
                "                                xlabel=\"hours\"))\n"
                "else:\n"
                "    display(Markdown(\"No training run: nothing to project in iterations.\"))"),
            new_markdown_cell("## Hours for the data set (image runs)"),
            code_cell(
                "images = analysis.benchmarks(done[done[\"unit\"] == \"images/s\"])\n"
                "if len(images):\n"
                "    passes = images[\"benchmark\"].map(lambda b: epochs if b == \"train\" "
                "else 1)\n"
                "    hours = dataset_samples * passes / images[\"throughput\"] / 3600\n"
                "    table = images.assign(passes=passes, hours=hours)\n"
                "    display(present.table(table[[*summary.described(images), \"throughput\", "
                "\"unit\", \"passes\", \"hours\"]],\n"
                "                          f\"Hours for the passes over {dataset_samples:,} \"\n"
                "                          f\"images ({epochs} epochs when training, one pass \"\n"
                "                          \"for inference)\",\n"
                "                          keep=(\"hours\",)))\n"
                "else:\n"
                "    display(Markdown(\"No image run.\"))"),
            new_markdown_cell(
                "## 3D U-Net beside the reference campaign\n\nThis campaign's `unet3d_train` and "
                "`unet3d_predict` runs next to the published CREMI figures (PyTorch 0.4.0, CUDA "
                "9.1: 1001 training iterations; blockwise prediction of about 1.9 gigavoxels): "
                "days to 100k iterations and hours per teravoxel."),
            code_cell(
                "unet = analysis.unet3d_units(done, reference.unet3d_records() if "
                "include_reference else None)\n"
                "if len(unet):\n"
                "    display(Markdown(summary.unet_caveat(unet, done)))\n"
                "    display(present.table(\n"
                "        unet, \"3D U-Net runs in lab units, this campaign beside the reference\",\n"
                "        keep=(\"source\",), missing_reason=\"does not apply (training rows have \"\n"
                "        \"no prediction figures and the reverse)\"))\n"
                "    plots.show(plots.lab_units_plot(unet))\n"
                "else:\n"
                "    display(Markdown(\"No 3D U-Net runs.\"))"),
        ],
    ),
    "summary_acceptance": (
        "Acceptance: each run against the published figure it should reach",
        "Each finished run is held against the most specific reference that matches it (GPU "
        "variant, benchmark, model, precision, batch, data, ... like for like): the shipped "
        "published figures and datasheet ceilings, or the references file given to the report "
        "(`benchlib report DIR --references FILE`). A run passes when its measurement lies "
        "within the reference's bounds. When the runs come from several nodes, the fleet "
        "section finds the nodes slower than their peers.",
        {"references_file": ""},
        [
            new_markdown_cell("## Against the references"),
            code_cell(
                "from benchlib.analysis import references\n"
                "from benchlib.publish import acceptance, fleet_page\n\n"
                "given = summary.resolve_results_dir(references_file) if references_file else None\n"
                "refs = references.load_references(given) if given else references.shipped()\n"
                "checked = acceptance.check(df, refs)\n"
                "matched = checked[\"verdict\"].isin(acceptance.CHECKED).any()\n"
                "display(Markdown(acceptance.headline(checked, df, given=bool(given))))\n"
                "if matched:\n"
                "    display(acceptance.check_display(checked))\n"
                "    plots.show(acceptance.check_plot(checked))\n"
                "    display(Markdown(\"**Sources of the references above**\\n\\n\"\n"
                "                     + acceptance.sources_used(checked)))\n"
                "    if acceptance.unmatched_note(checked):\n"
                "        display(Markdown(acceptance.unmatched_note(checked)))"),
            code_cell(
                "if fleet_page.node_count(df) > 1:\n"
                "    display(Markdown(f\"## Fleet: {fleet_page.node_count(df)} nodes\"))\n"
                "    nodes = fleet_page.node_table(df)\n"
                "    if len(nodes):\n"
                "        display(Markdown(fleet_page.outlier_text(nodes)))\n"
                "        display(fleet_page.node_display(nodes))\n"
                "    display(Markdown(\"Each node's median over the fleet's median per probe and \"\n"
                "                     \"workload, per GPU model: 1.0 is the median node.\"))\n"
                "    for figure, alt in fleet_page.heatmaps(df):\n"
                "        plots.show(figure, alt=alt)"),
            new_markdown_cell("## The references"),
            code_cell(
                "display(Markdown(f\"From {summary.md_text(given)}.\" if given else \"Shipped \"\n"
                "                 \"with benchlib: benchlib/reference/expectations.yaml (published \"\n"
                "                 \"figures) and the datasheet matmul ceilings.\"))\n"
                "acceptance.references_display(refs)"),
        ],
    ),
    "summary_compare": (
        "Compared with the baseline campaign",
        "Runs of this campaign paired with the baseline's by configuration (repeats pooled): "
        "the new speed over the base speed with its 95 % interval, and a verdict per "
        "configuration: **regression** (the whole interval below 1 and the median more than "
        "`threshold` below), **improvement** (the mirror image) or **no change**. Built by "
        "`benchlib report DIR --baseline BASE_DIR`.",
        {"baseline_dir": "outputs/demo-base", "threshold": 0.05},
        [
            new_markdown_cell("## Verdict per configuration"),
            code_cell(
                "from benchlib.publish import compare_page\n\n"
                "base_dir = summary.resolve_results_dir(baseline_dir)\n"
                "base = summary.load_results(base_dir)\n"
                "compared = compare_page.compare_runs(base, df, threshold=threshold)\n"
                "units = done[\"unit\"].dropna().unique()\n"
                "if compare_page.warnings_text(compared):\n"
                "    display(Markdown(compare_page.warnings_text(compared)))\n"
                "display(Markdown(compare_page.compare_headline(compared, base_dir.name)))\n"
                "if len(compared):\n"
                "    display(compare_page.compare_display(compared, units[0] if len(units) == 1 "
                "else \"\"))\n"
                "    plots.show(compare_page.compare_plot(compared, base_dir.name))"),
        ],
    ),
}


def build_summary(name: str) -> nbformat.NotebookNode:
    title, what, extra, body = SUMMARIES[name]
    parameters = {"results_dir": "outputs/demo", **extra}
    if name == "summary_projection":
        parameters["include_reference"] = True
    cells = [
        new_markdown_cell(f"# {title}\n\n{what}\n\nRun by `benchlib report outputs/<campaign>` "
                          "or open it in JupyterLab and set `results_dir`."),
        code_cell("\n".join(f"{k} = {v!r}" for k, v in parameters.items()),
                      metadata={"tags": ["parameters"]}),
        code_cell(SUMMARY_HEAD.format(
            reference="from benchlib import reference\n" if "include_reference" in parameters else "")),
        *[nbformat.from_dict(c) for c in body],
        *[nbformat.from_dict(c) for c in SUMMARY_TAIL],
    ]
    return _finish(cells, {"kind": "summary"})


def main(check: bool = False) -> int:
    stale = []
    builds = {name: lambda n=name: build(n) for name in TITLES}
    builds.update({name: lambda n=name: build_unet(n) for name in UNET_TITLES})
    builds.update({name: lambda n=name: build_summary(n) for name in SUMMARIES})
    builds["allreduce"] = build_allreduce
    builds["node_probe"] = build_node_probe
    for name, make in builds.items():
        path = ROOT / "notebooks" / f"{name}.ipynb"
        text = nbformat.writes(make()) + "\n"
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
