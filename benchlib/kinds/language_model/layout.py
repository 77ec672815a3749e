"""The language model's notebook cells: the timed loop's, introduced with ``params/lm.yaml``."""

from __future__ import annotations

from benchlib.publish.benchmark_notebook import run
from benchlib.publish.benchmark_notebook.layouts import Layout, register_layout

LAYOUT = register_layout("language_model", Layout(run.TIMED_LOOP, "params/lm.yaml", "size tiny"))
