"""The classification notebooks' cells (``train``, ``inference``, ``smooth_inference``): the
timed loop's sections."""

from __future__ import annotations

from benchlib.publish.benchmark_notebook import run
from benchlib.publish.benchmark_notebook.layouts import Layout, register_layout

LAYOUT = register_layout("classification", Layout(run.TIMED_LOOP, example="model resnet50"))
