"""What the flag note promises, the Breakdown and Projections pages keep (issue 54, item 4): a
flagged run's row in their tables and its bar in their plots carry ⚠, and the settings that tell
the rows apart (devices, data) come first in their tables."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from IPython.display import Markdown

from benchlib.analysis import comparisons
from benchlib.publish.pages import breakdown, plots, projection
from benchlib.publish.pages.summary import load_results

from .fakes import write_record_notebook

BASE = {"schema_version": 1, "campaign": "demo", "cluster": "local", "gpu": "cpu",
        "model": "resnet18", "precision": "fp32", "num_nodes": 1, "num_workers": 0,
        "unit": "images/s", "status": "ok", "error": "", "batch_size": 8, "image_size": 64,
        "wall_time_s": 30.0, "iterations": 50}


@pytest.fixture
def shown(monkeypatch):
    """What the pages display: Markdown and tables, and each plot's figure (before its PNG)."""
    import IPython.display

    seen: list = []
    monkeypatch.setattr(IPython.display, "display", lambda *values, **_: seen.extend(values))
    monkeypatch.setattr(plots, "show", lambda figure, alt=None: seen.append(figure))
    yield seen
    plt.close("all")


@pytest.fixture
def done(tmp_path: Path):
    """The demo's shape: train and inference of one model on 1 and 2 devices, synthetic and
    real data; the 2-device real-data runs contended and short."""
    index = 0
    for benchmark in ("train", "inference"):
        for devices in (1, 2):
            for dataset in ("synthetic", "real"):
                seconds = 0.5 * devices * (1.3 if dataset == "real" else 1.0)
                flagged = devices == 2 and dataset == "real"
                write_record_notebook(tmp_path / "demo" / f"p{index}.ipynb", {
                    **BASE, "benchmark": benchmark, "num_devices": devices, "dataset": dataset,
                    "throughput": 8 * devices / seconds, "time_iteration_s": seconds,
                    "time_data_s": seconds * 0.2, "time_h2d_s": seconds * 0.05,
                    "time_forward_s": seconds * 0.3, "time_optimizer_s": seconds * 0.05,
                    "time_backward_s": seconds * 0.4 if benchmark == "train" else None,
                    "flags": "contended,short" if flagged else ""})
                index += 1
    return comparisons.ok(load_results(tmp_path / "demo"))


def _tables(seen: list) -> list[tuple[list[str], list[list[str]]]]:
    """Each table shown: its header and its rows, as cell texts."""
    found = []
    for value in seen:
        if hasattr(value, "_repr_html_") and not isinstance(value, Markdown | plt.Figure):
            html = value._repr_html_()
            header = re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", html)
            rows = [re.findall(r"<td(?:\s[^>]*)?>(.*?)</td>", row)
                    for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)]
            found.append((header, [r for r in rows if r]))
    return found


def _bar_labels(seen: list) -> list[str]:
    return [tick.get_text() for value in seen if isinstance(value, plt.Figure)
            for axes in value.axes for tick in axes.get_yticklabels()]


def test_the_note_s_marks_are_on_the_breakdown_s_rows_and_bars(done, shown) -> None:
    breakdown.phases(done)
    breakdown.plot(done)
    [(header, rows)] = _tables(shown)
    assert header[:4] == ["benchmark", "devices", "data", "flags"], header
    flagged = [row for row in rows if row[3]]
    assert [row[:4] for row in flagged] == [["train", "2", "real", "⚠ contended, short"],
                                            ["inference", "2", "real", "⚠ contended, short"]]
    labels = _bar_labels(shown)
    assert sorted(label for label in labels if label.endswith("⚠")) == [
        "2 dev, inference, real ⚠", "2 dev, train, real ⚠"], labels


def test_the_note_s_marks_are_on_the_projections_rows_and_bars(done, shown) -> None:
    projection.training(done, 100_000)
    projection.images(done, 1_281_167, 90)
    (train_header, train_rows), (image_header, image_rows) = _tables(shown)
    assert train_header[:3] == ["devices", "data", "flags"], train_header
    assert [row[:3] for row in train_rows if row[2]] == [["2", "real", "⚠ contended, short"]]
    assert image_header[:4] == ["benchmark", "devices", "data", "flags"], image_header
    assert len([row for row in image_rows if row[3] == "⚠ contended, short"]) == 2
    assert [label for label in _bar_labels(shown) if label.endswith("⚠")] == ["2 dev, real ⚠"]


def test_unflagged_campaigns_get_no_flags_column(done, shown) -> None:
    clean = done.assign(flags="")
    breakdown.phases(clean)
    projection.training(clean, 100_000)
    for header, _ in _tables(shown):
        assert "flags" not in header and header[0] in ("benchmark", "devices")
