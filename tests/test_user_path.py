"""The path a new user walks, walked the same way: every command of the README and docs/sweeps.md
as a subprocess from a project checkout, relative paths, no flags beyond the docs'; every
Python example of the README and docs/ executed against the small real campaign it made."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .walk import benchlib, checked, make_project, python_blocks

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("user-path")]

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with a real (tiny) demo campaign swept into ``outputs/demo``."""
    root = make_project(tmp_path_factory.mktemp("checkout") / "benchlib")
    out = checked(root, "sweep", "params/tiny-demo.yaml")
    assert "4 points: 4 done" in out, out
    return root


def test_sweep_results_and_report_take_relative_paths(project: Path):
    assert checked(project, "sweep", "params/tiny-demo.yaml", "--dry-run").count(" done ") == 4
    table = checked(project, "results", "outputs/demo")
    assert "train" in table and "inference" in table
    checked(project, "results", "outputs/demo", "--csv", "demo.csv")
    assert (project / "demo.csv").read_text().count("\n") == 5  # header + 4 runs
    out = checked(project, "report", "outputs/demo")
    index = project / "outputs" / "demo" / "report" / "index.html"
    assert str(index.relative_to(project)) in out or str(index) in out
    pages = json.loads((index.parent / "runs" / ".pages.json").read_text())
    assert len(pages) == 4  # every run has its page
    assert not list((project / "outputs" / "demo").glob(".report-*"))  # no scratch left


def test_check_and_compare_take_relative_paths(project: Path):
    check = benchlib(project, "check", "outputs/demo")
    # CPU runs match no reference: nothing fails, nothing is judged (exit 3, not a pass)
    assert check.returncode == 3 and "NOTHING CERTIFIED" in check.stdout, check.stderr
    same = benchlib(project, "compare", "outputs/demo", "outputs/demo")
    assert same.returncode == 2 and "same folder" in same.stderr, same.stdout + same.stderr
    shutil.copytree(project / "outputs" / "demo", project / "demo-again",
                    ignore=shutil.ignore_patterns("report", ".report*"))
    # a copy holds the same runs (their run ids): bad input, said, never 'no change'
    copied = benchlib(project, "compare", "outputs/demo", "demo-again")
    assert copied.returncode == 2 and "copies of the same runs" in copied.stderr, copied.stderr
    checked(project, "sweep", "params/tiny-demo.yaml", "--outputs", "again", "--quiet")
    compare = benchlib(project, "compare", "outputs/demo", "again/demo")  # a second campaign
    assert compare.returncode in (0, 3), compare.stdout + compare.stderr


def test_commands_work_from_another_folder(project: Path):
    """Relative paths are taken from wherever the command runs, not from the project."""
    elsewhere = project / "outputs"
    assert "train" in checked(elsewhere, "results", "demo")
    checked(elsewhere, "report", "demo")


def test_every_python_example_of_the_docs_runs(project: Path):
    blocks = [(path, code) for path in DOCS for code in python_blocks(path)]
    assert len(blocks) >= 4  # the README's and docs/python.md's at least
    for path, code in blocks:
        done = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
        assert done.returncode == 0, (f"a Python example of {path.relative_to(ROOT)} failed:\n"
                                      f"{code}\n{done.stderr[-3000:]}")


def test_import_benchlib_is_light_and_gives_the_short_api():
    code = ("import sys, benchlib\n"
            "from benchlib import analysis\n"
            "heavy = sorted({'torch', 'pandas', 'matplotlib'} & set(sys.modules))\n"
            "assert not heavy, heavy\n"
            "names = ['scaling', 'compare', 'effect', 'breakdown', 'extrapolate', 'aggregate',\n"
            "         'outliers', 'history']\n"
            "assert all(callable(getattr(analysis, n)) for n in names)\n"
            "assert benchlib.load is benchlib.results.load\n"
            "assert set(analysis.__all__) <= set(dir(analysis))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_readme_s_across_campaigns_commands_take_relative_paths(
        project: Path, monkeypatch: pytest.MonkeyPatch):
    """README's "Across campaigns" block as typed: index the outputs, then history, fleet and
    compare from the default catalog (outputs/catalog.sqlite of the working folder)."""
    for name in ("BENCHLIB_OUTPUTS", "BENCHLIB_DB"):  # a user's shell sets neither
        monkeypatch.delenv(name, raising=False)
    out = checked(project, "index", "outputs/")
    assert (project / "outputs" / "catalog.sqlite").is_file(), out
    again = checked(project, "index", "outputs/")
    assert "0 read" in again, again  # nothing changed: nothing read again
    history = benchlib(project, "history", "--db")
    assert history.returncode == 0, history.stdout + history.stderr  # one night: no change point
    fleet = benchlib(project, "fleet", "--db", "--drain-list")
    assert fleet.returncode in (0, 3), fleet.stdout + fleet.stderr  # one run a node: not judged
    assert "scontrol" not in fleet.stdout  # nothing failed or slow: nothing to drain
    compare = benchlib(project, "compare", "--db", "--base", "gpu=V100", "--new", "gpu=A40")
    assert compare.returncode == 2 and "gpu=V100" in compare.stderr, compare.stdout + compare.stderr
    listed = checked(project, "results", "--db", "--where", "benchmark=train")
    assert "train" in listed and "inference" not in listed
