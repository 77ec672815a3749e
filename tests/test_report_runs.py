"""Run pages of same-named notebooks in different subfolders, and the scratch that killed report
builds leave (removed by the next build, never a running build's)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from benchlib.report.build import build_report
from benchlib.report.run_pages import _page_names, page_name
from benchlib.report.scratch import ORPHAN_AFTER_S

from .fakes import campaign, write_record_notebook

RECORD = {"schema_version": 1, "campaign": "c", "cluster": "c1", "gpu": "H100", "benchmark": "train",
          "model": "resnet50", "precision": "amp_bf16", "num_nodes": 1, "num_devices": 1,
          "num_workers": 8, "dataset": "synthetic", "unit": "images/s", "status": "ok",
          "error": "", "time_iteration_s": 0.02}


def _day(root: Path, day: str, throughput: float, batch: int) -> Path:
    """``<day>/train-x.ipynb``: a run whose page says which day it is."""
    path = write_record_notebook(root / day / "train-x.ipynb",
                                 {**RECORD, "throughput": throughput, "batch_size": batch})
    nb = nbformat.read(str(path), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"# Run of {day}"))
    nbformat.write(nb, str(path))
    return path


def _linked_pages(index: Path) -> dict[str, str]:
    """Each run row's link text in the index and the text of the page it links to."""
    text = index.read_text(encoding="utf-8")
    rows = re.findall(r'<td class="text"><a href="(runs/[^"]+)">([^<]+)</a>', text)
    return {label: (index.parent / href).read_text(encoding="utf-8") for href, label in rows}


def test_same_named_runs_in_two_subfolders_each_get_their_own_page(tmp_path):
    root = tmp_path / "outputs" / "c"
    _day(root, "day1", 1000.0, 32)
    _day(root, "day2", 2000.0, 64)
    for build in range(2):  # cold, then with the first build's pages reused
        index = build_report(root, summaries=(), progress=False)
        pages = _linked_pages(index)
        assert sorted(pages) == ["day1/train-x", "day2/train-x"], build
        assert "Run of day1" in pages["day1/train-x"] and "Run of day2" not in pages["day1/train-x"]
        assert "Run of day2" in pages["day2/train-x"] and "Run of day1" not in pages["day2/train-x"]
        assert len(list((index.parent / "runs").glob("*.html"))) == 2
        answer = re.search(r'2,000 images/s.*?\(run <a href="(runs/[^"]+)">', index.read_text())
        assert "Run of day2" in (index.parent / answer.group(1)).read_text()  # the fastest run


def test_page_names_are_safe_and_keep_top_level_names():
    assert page_name(Path("train-0.ipynb")) == "train-0.html"
    nested, other = page_name(Path("day1/train-x.ipynb")), page_name(Path("day1_train-x.ipynb"))
    assert re.fullmatch(r"day1_train-x-[0-9a-f]{10}\.html", nested) and other != nested
    odd = page_name(Path('my run #1 "<b>".ipynb'))
    assert re.fullmatch(r"[A-Za-z0-9._-]+\.html", odd) and odd != page_name(Path("my run 1.ipynb"))
    names = _page_names(Path("/c"), [Path("/c/Run.ipynb"), Path("/c/run.ipynb")])
    assert list(names.values()) == ["Run.html", "run-2.html"]  # one folder on macOS too


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def _fake_scratch(root: Path, token: str, pid: int, host: str | None = None) -> Path:
    """The scratch a build with ``pid`` left: its folder, a report it set aside, its owner file."""
    folder = root / f".report-{token}"
    (folder / "runs").mkdir(parents=True)
    (root / f".report-{token}-old-0").mkdir()
    (root / f".report-{token}.owner").write_text(json.dumps(
        {"host": host or socket.gethostname(), "pid": pid, "since": time.time()}))
    return folder


def _scratch(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".report"))


def test_scratch_of_a_dead_build_is_removed_and_a_live_ones_kept(tmp_path):
    root = campaign(tmp_path / "fake")
    _fake_scratch(root, "deadbuil", _dead_pid())
    _fake_scratch(root, "livebuil", os.getpid())  # not locked, but its process is alive
    _fake_scratch(root, "otherhos", _dead_pid(), host="another-host")  # may be running there
    old = root / ".report-oldvers1"  # from a benchlib without owner files, hours ago
    old.mkdir()
    os.utime(old, (time.time() - 2 * ORPHAN_AFTER_S,) * 2)
    (root / ".report-oldvers2").mkdir()  # the same, just now: it may still be building
    (root / ".report-failed").mkdir()  # a failed summary kept for the user
    build_report(root, summaries=(), progress=False)
    assert _scratch(root) == [".report-failed", ".report-livebuil", ".report-livebuil-old-0",
                              ".report-livebuil.owner", ".report-oldvers2", ".report-otherhos",
                              ".report-otherhos-old-0", ".report-otherhos.owner"]
    assert (root / "report" / "index.html").is_file()


HOLDER = """
import sys, time
from pathlib import Path
from benchlib.report.scratch import scratch_folder
with scratch_folder(Path(sys.argv[1])) as folder:
    (folder / "page.html").write_text("half-built")
    print(folder, flush=True)
    time.sleep(600)
"""


def test_a_running_builds_scratch_is_kept_and_removed_once_it_was_killed(tmp_path):
    root = campaign(tmp_path / "fake")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE,
                              text=True)
    try:
        folder = Path(holder.stdout.readline().strip())
        build_report(root, summaries=(), progress=False)  # concurrent with the holder
        assert (folder / "page.html").is_file() and folder.with_suffix(".owner").is_file()
    finally:
        holder.kill()  # SIGKILL: nothing of its own cleanup runs
        holder.wait()
    assert folder.is_dir()
    build_report(root, summaries=(), progress=False)
    assert _scratch(root) == []


def test_a_run_lead_says_what_was_not_checked_not_none() -> None:
    """A probe measures no contention: its run page says "not checked", never "Flags: none"."""
    from benchlib.records.store import RECORD_MIME
    from benchlib.report.run_lead import lead

    def page(record: dict) -> str:
        book = {"cells": [{"cell_type": "code", "metadata": {}, "source": "", "outputs": [{
            "output_type": "display_data", "metadata": {},
            "data": {RECORD_MIME: record}}]}], "metadata": {}}
        return " ".join(str(lead(book, "probe")).split())

    probe = {"schema_version": 1, "benchmark": "probe_node", "status": "ok", "throughput": 5.0,
             "unit": "TFLOP/s", "flags": ""}
    said = page(probe)
    assert "not checked: contended; throttled; noisy or too short" in said
    assert "Flags: none (not" not in said
    measured = {**probe, "contention_cpu_share": 0.01, "throttled_share": 0.0,
                "time_iteration_s": 0.1}
    assert "Flags: none (not contended, throttled, noisy or too short)" in page(measured)
