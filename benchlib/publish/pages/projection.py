"""The projections page (``summary_projection``): hours to a training target, hours through a
data set, and the 3D U-Net runs in lab units beside the reference campaign."""

from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from benchlib import reference, registry
from benchlib.analysis import comparisons, lab_units
from benchlib.kinds import fact_of_rows
from benchlib.publish.pages import Call, Page, note, plots, present, show, summary


def training(done: pd.DataFrame, target_iterations: int) -> None:
    """Hours each training run takes to ``target_iterations`` at its median iteration time:
    what tells the runs apart first, a flagged run marked ⚠ in the table and the plot."""
    runs = summary.training_runs(done)
    if not len(runs):
        note("No training run: nothing to project in iterations.")
        return
    projected = lab_units.derived_units(comparisons.extrapolate(runs, iterations=target_iterations))
    described = summary.described(runs)
    columns = [*described, "time_iteration_s", "iterations_per_minute", "hours", *_flags(runs)]
    caption = f"Hours to {target_iterations:,} iterations at each run's median iteration time"
    frame, apart = present.marked_rows(projected[columns], described)
    show(present.table(frame, caption, keep=(*apart, "hours")))
    plots.show(plots.hours_plot(projected, described, title=f"Hours to {target_iterations:,} "
                                "iterations", xlabel="hours"))


def images(done: pd.DataFrame, dataset_samples: int, epochs: int) -> None:
    """Hours each image run takes through ``dataset_samples`` images: ``epochs`` passes when
    training, one for inference; what tells the runs apart first, a flagged run marked ⚠."""
    runs = comparisons.benchmarks(done[fact_of_rows(done["benchmark"], "samples") == "images"])
    if not len(runs):
        note("No image run.")
        return
    trains = registry.training()
    passes = runs["benchmark"].map(lambda b: epochs if b in trains else 1)
    hours = dataset_samples * passes / runs["throughput"] / 3600
    table = runs.assign(passes=passes, hours=hours)
    described = summary.described(runs)
    frame, apart = present.marked_rows(table[[*described, "throughput", "unit", "passes", "hours",
                                      *_flags(runs)]], described)
    show(present.table(frame, f"Hours for the passes over {dataset_samples:,} images ({epochs} "
                              "epochs when training, one pass for inference)",
                       keep=(*apart, "passes", "hours")))


def unet3d(done: pd.DataFrame, include_reference: bool = True) -> None:
    """The 3D U-Net runs in lab units (days to 100k iterations, hours per teravoxel), beside
    the reference campaign when ``include_reference``."""
    unet = lab_units.unet3d_units(done, reference.unet3d_records() if include_reference else None)
    if not len(unet):
        note("No 3D U-Net runs.")
        return
    frame, apart = present.marked_rows(unet, ["source"])
    show(Markdown(summary.unet_caveat(unet, done)),
         present.table(frame, "3D U-Net runs in lab units, this campaign beside the reference",
                       keep=("source", *apart), missing_reason="does not apply (training rows "
                       "have no prediction figures and the reverse)"))
    plots.show(plots.lab_units_plot(unet))


def _flags(runs: pd.DataFrame) -> list[str]:
    """``["flags"]`` where the runs have flags (records of any version), else none."""
    return ["flags"] if "flags" in runs else []


PAGE = Page(
    "Projections: time to a training target and to process a data set",
    "Training runs: hours to reach `target_iterations` from the median iteration time. Image "
    "runs: hours for `epochs` passes (training) or one pass (inference) over `dataset_samples` "
    "images from the throughput. 3D U-Net runs: days to 100k iterations and hours per teravoxel "
    "beside the reference campaign. Probes are left out.",
    (
        "## Hours to the target number of iterations (training runs)",
        Call(training, "done, target_iterations"),
        "## Hours for the data set (image runs)",
        Call(images, "done, dataset_samples, epochs"),
        "## 3D U-Net beside the reference campaign\n\nThis campaign's `unet3d_train` and "
        "`unet3d_predict` runs next to the published CREMI figures (PyTorch 0.4.0, CUDA 9.1: 1001 "
        "training iterations; blockwise prediction of about 1.9 gigavoxels): days to 100k "
        "iterations and hours per teravoxel.",
        Call(unet3d, "done, include_reference"),
    ),
    {"target_iterations": 100_000, "dataset_samples": 1_281_167, "epochs": 90,
     "include_reference": True},
)
