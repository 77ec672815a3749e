"""The sections the benchmark notebooks share (the shipped kinds' layouts, and a site's kind
without a layout of its own): run the configuration, then its
environment, ranks, telemetry, timings and the result record."""

from __future__ import annotations

import sys
from collections.abc import Mapping

import pandas as pd

from benchlib import kinds
from benchlib.errors import BenchlibError, describe_os_error
from benchlib.inputs.config import CommonConfig
from benchlib.kinds.record import make_record
from benchlib.publish.cells import Call, show
from benchlib.publish.pages import plots, present
from benchlib.records import build, hand_run
from benchlib.workloads.result import RunResult

RUN = ("## Run\n\nWith `num_devices` 1 the benchmark runs in this kernel. With more, torchrun "
       "starts one process per device (NCCL on GPUs, gloo on CPUs) and the kernel only watches "
       "them; each rank works on its own share of the data and the ranks' results are merged: "
       "samples of all ranks over the run's span (first start to last end).")
PHASES = ("## Phase breakdown\n\nMedian, p95 and spread (IQR / median) of seconds per iteration "
          "in each phase; `share` is the phase's median over the iteration median.")
PAPERMILL = ("Run it with papermill (`benchlib sweep {params}`, or `papermill notebooks/{name}.ipynb "
             "out.ipynb -p {example}`) or cell by cell in JupyterLab. The parameters cell below "
             "holds every parameter and its default.")
RECORD = ("The machine-readable record (`application/vnd.benchlib.result+json`) that summaries "
          "load.")


def configuration(config: object) -> None:
    """The configuration as a table of parameters."""
    show(present.config_table(config))


def headline(config: CommonConfig, result: RunResult) -> str:
    """One line on what the run achieved (its kind's headline)."""
    return kinds.kind_of(config).headline(config, result)


def launch(config: CommonConfig) -> RunResult:
    """Run ``config`` (in this kernel, or through torchrun on several devices) and print its
    headline; first, a run sized for a GPU that runs on the CPU here says so
    (:func:`~benchlib.publish.benchmark_notebook.gpu_sized.cpu_warning`)."""
    from benchlib.run import launch as launcher

    warn_if_gpu_sized(config)
    result = launcher.run(config)
    print(headline(config, result))
    return result


def warn_if_gpu_sized(config: CommonConfig) -> None:
    """The GPU-sized warning, if any, on the process's own standard error: in a notebook it is
    the cell's output, and papermill's terminal shows it too (the kernel's stream is its)."""
    from benchlib.publish.benchmark_notebook.gpu_sized import cpu_warning

    if warning := cpu_warning(config):
        print(warning, file=sys.__stderr__ or sys.stderr, flush=True)


def environment(result: RunResult) -> None:
    """Software, hardware and job, as rank 0 saw them."""
    show(present.environment_tables(result.env))


def ranks(result: RunResult) -> None:
    """One row per rank."""
    show(present.table(plots.rank_table(result).reset_index(), "One row per rank",
                       keep=("throughput",)))


def telemetry(result: RunResult) -> None:
    """NVML readings over the timed loop (a plot when there are any) and their summary."""
    if result.telemetry is not None and result.telemetry.available:
        plots.show(plots.telemetry_plot(result.telemetry))
    show(present.mapping_table(result.telemetry_record(), "GPU telemetry over the timed loop"))


def title(config: CommonConfig) -> str:
    """What ran, for the title of its plots (its kind's title)."""
    return kinds.kind_of(config).title(config)


def timeline(config: CommonConfig, result: RunResult) -> None:
    """Seconds per iteration over the run."""
    plots.show(plots.iteration_timeline(result, title=title(config)))


def phases(result: RunResult) -> None:
    """Seconds per iteration in each phase: bars and the breakdown table."""
    plots.show(plots.phase_bars(result))
    found = result.breakdown()
    table = pd.DataFrame({"phase": found.index, "median_ms": found["median_s"] * 1e3,
                          "p95_ms": found["p95_s"] * 1e3, "spread": found["spread"],
                          "share": found["share"]})
    show(present.table(table, "Milliseconds per iteration in each phase", keep=tuple(table),
                       labels={"median_ms": "median (ms)", "p95_ms": "p95 (ms)",
                               "spread": "spread (IQR / median)",
                               "share": "share of the iteration"}))


def record(config: CommonConfig, result: RunResult) -> dict[str, object]:
    """The run's result record, published in the notebook (what summaries load) after the line
    that says what was measured (:func:`publish`)."""
    made = make_record(config, result)
    publish(made)
    return made


def publish(made: Mapping[str, object]) -> None:
    """The run's result line (speed, within-run interval, flags in words), then the record
    published in the notebook (what summaries load). Run by hand (JupyterLab, plain papermill:
    not by benchlib's runner), the record is also saved under ``outputs/<campaign>/``, where
    ``benchlib results`` and ``benchlib report`` find it (:mod:`benchlib.records.hand_run`)."""
    print(hand_run.result_line(made))
    build.publish(made)  # first: the notebook keeps its record whatever happens to the copy
    try:
        saved = hand_run.save(made)
    except (OSError, BenchlibError) as error:
        print(f"The record is in this notebook, but its copy under outputs/ was not saved: "
              f"{describe_os_error(error) if isinstance(error, OSError) else error} (set "
              f"${hand_run.OUTPUTS_ENV} to a folder you can write).")
        return
    if saved is not None:
        folder = hand_run.shown(saved.parent)
        print(f"Saved as {hand_run.shown(saved)}: see it with `benchlib results {folder}` and "
              f"`benchlib report {folder}`.")


#: The cells of the environment, ranks and telemetry sections.
ENVIRONMENT = (
    "## Environment (rank 0)\n\nSoftware, hardware and job, as rank 0 saw them.",
    Call(environment, "result"),
)
SHARED = (
    *ENVIRONMENT,
    "## Ranks\n\nOne row per rank when several ran; `straggler_spread` in the record is the "
    "slowest rank's wall time over the fastest's.",
    Call(ranks, "result"),
    "## GPU telemetry\n\nNVML readings every `telemetry_interval_s` over the timed loop (rank 0's "
    "device); red points are samples whose clocks were held down by a power or thermal limit. "
    "The record has the means, the throttled share and joules per sample.",
    Call(telemetry, "result"),
    "## Per-iteration timing",
    Call(timeline, "config, result"),
)
#: A timed loop's cells after its configuration cell (classification, language model, and the
#: default of a site's timed-loop kind).
TIMED_LOOP = (
    RUN,
    Call(launch, "config", "result"),
    *SHARED,
    PHASES,
    Call(phases, "result"),
    f"## Result record\n\n{RECORD}",
    Call(record, "config, result", "record"),
)


#: The cells of a run that is not a timed loop (a site's kind without a layout of its own):
#: run it, its environment, its record.
ONE_RUN = (
    RUN,
    Call(launch, "config", "result"),
    *ENVIRONMENT,
    f"## Result record\n\n{RECORD}",
    Call(record, "config, result", "record"),
)
