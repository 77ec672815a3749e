"""Property-based tests: any table of records goes through every summary notebook's code.

Hypothesis writes record notebooks (many factor levels, missing values, a single row, probes
only, failed rows, odd strings); each summary notebook's code cells then run in this process as
Jupyter would run them (last expressions displayed as HTML, figures drawn and closed). No
cell may raise: "nothing to show" is what a summary says about data it cannot use.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlib.report import build as report

from .conftest import ROOT, examples
from .fakes import write_record_notebook

SUMMARIES = report.SUMMARIES  # every summary page the report builds
ODD = ("", " ", "nan", "None", "<b>x</b>", "$\\frac{1}{$", "$x$ and $y$", "a/b", "100%", "{}",
       "line\nbreak", "ünïcødé ✓", "[x](javascript:1)", "-", "0")
TEXT = st.sampled_from(ODD) | st.text(max_size=8)
MAYBE_TEXT = st.none() | TEXT


def _number(low: float, high: float) -> st.SearchStrategy:
    return st.none() | st.floats(low, high, allow_nan=False)


def _count() -> st.SearchStrategy:
    return st.none() | st.integers(1, 8)


RECORD = st.fixed_dictionaries({
    "benchmark": st.sampled_from(["train", "inference", "probe_node", "probe_allreduce",
                                  "unet3d_train", "unet3d_predict"]) | MAYBE_TEXT,
    "status": st.sampled_from(["ok", "ok", "failed"]) | st.none(),
    "error": MAYBE_TEXT,
    "cluster": st.sampled_from(["c1", "c2"]) | MAYBE_TEXT,
    "host": st.sampled_from(["n1", "n2"]) | MAYBE_TEXT,
    "gpu": st.sampled_from(["H100", "A100", "cpu"]) | MAYBE_TEXT,
    "device": st.sampled_from(["cuda", "cpu"]) | st.none(),
    "device_name": st.sampled_from(["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"]) | MAYBE_TEXT,
    "model": st.sampled_from(["resnet50", "vit_b_16", "unet3d"]) | MAYBE_TEXT,
    "dataset": st.sampled_from(["synthetic", "real"]) | MAYBE_TEXT,
    "precision": st.sampled_from(["fp32", "amp_bf16", "tf32"]) | MAYBE_TEXT,
    "unit": st.sampled_from(["images/s", "voxels/s"]) | MAYBE_TEXT,
    "batch_size": _count(), "num_devices": _count(), "num_nodes": _count(),
    "num_workers": st.none() | st.integers(0, 16),
    "throughput": _number(0.0, 1e6), "time_iteration_s": _number(0.0, 10.0),
    "time_data_s": _number(0.0, 10.0), "time_forward_s": _number(0.0, 10.0),
    "time_backward_s": _number(0.0, 10.0), "achieved_tflops": _number(0.0, 1e3),
    "throttled_share": _number(0.0, 1.0), "straggler_spread": _number(1.0, 3.0),
    "matmul_tflops_fp32": _number(0.0, 1e3), "memory_GBps": _number(0.0, 1e4),
    "decode_images_per_s_2w": _number(0.0, 1e4), "decode_images_per_s_8w": _number(0.0, 1e4),
    "busbw_1MiB": _number(0.0, 500.0), "busbw_64MiB": _number(0.0, 500.0),
    "gpu_util_mean": _number(0.0, 100.0), "energy_j": _number(0.0, 1e6),
    "env_note": MAYBE_TEXT,
})
RECORDS = st.lists(RECORD, min_size=1, max_size=6)
DROPPED = st.sets(st.sampled_from(["status", "error", "cluster", "host", "dataset", "precision",
                                   "num_devices", "time_data_s", "unit", "device_name",
                                   "num_workers", "batch_size", "model"]), max_size=4)


def _campaign(folder: Path, records: list[dict], dropped: set[str]) -> None:
    for index, record in enumerate(records):
        kept = {k: v for k, v in record.items() if k not in dropped and v is not None}
        write_record_notebook(folder / f"run-{index}.ipynb",
                              {"schema_version": 1, "campaign": "prop", **kept})


def _show(value: object) -> None:
    """What Jupyter does with a displayed value: its HTML (or Markdown) and any figure drawn."""
    if hasattr(value, "_repr_html_"):
        value._repr_html_()
    elif hasattr(value, "_repr_markdown_"):
        value._repr_markdown_()
    elif isinstance(value, plt.Figure):
        value.canvas.draw()


def _run_cell(source: str, namespace: dict) -> None:
    """Execute a cell; display its last expression; draw and close every figure left open."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), namespace)
    if last is not None:
        _show(eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace))
    for number in plt.get_fignums():
        plt.figure(number).canvas.draw()
    plt.close("all")


def run_summary(name: str, results_dir: Path) -> None:
    """Every code cell of ``notebooks/<name>.ipynb`` on ``results_dir``."""
    import IPython.display

    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    namespace: dict = {}
    original = IPython.display.display
    IPython.display.display = lambda *values, **_: [_show(v) for v in values]
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            _run_cell(cell.source, namespace)
            if "parameters" in cell.metadata.get("tags", []):
                namespace["results_dir"] = str(results_dir)
    finally:
        IPython.display.display = original
        plt.close("all")


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
@pytest.mark.parametrize("name", SUMMARIES)
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=RECORDS, dropped=DROPPED)
def test_every_summary_runs_on_any_records(name, records, dropped):
    with tempfile.TemporaryDirectory() as folder:
        _campaign(Path(folder), records, dropped)
        run_summary(name, Path(folder))
