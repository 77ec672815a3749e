"""The path a new user walks, walked the same way: every command of the README and docs/sweeps.md
as a subprocess from a project checkout, relative paths, no flags beyond the docs'; every
Python example of the README and docs/ executed against the small real campaign it made."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .walk import benchlib, checked, doc_commands, make_project, python_blocks

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
    assert history.returncode == 3, history.stdout + history.stderr  # one night: nothing judged
    assert "NOTHING JUDGED" in history.stdout
    fleet = benchlib(project, "fleet", "--db", "--drain-list")
    assert fleet.returncode in (0, 3), fleet.stdout + fleet.stderr  # one run a node: not judged
    assert "scontrol" not in fleet.stdout  # nothing failed or slow: nothing to drain
    compare = benchlib(project, "compare", "--db", "--base", "gpu=V100", "--new", "gpu=A40")
    assert compare.returncode == 2 and "gpu=V100" in compare.stderr, compare.stdout + compare.stderr
    listed = checked(project, "results", "--db", "--where", "benchmark=train")
    assert "train" in listed and "inference" not in listed


def test_the_gpu_quick_start_gives_its_data_before_the_sweeps_that_read_it(
        tmp_path: Path, image_dir: Path):
    """README's "Quick start on a GPU node" as typed from a fresh checkout: a step gives
    data/imagenet/train before `benchlib sweep params/node.yaml`; without it both sweeps stop
    (exit 2) saying how to give it and where relative paths start; after the README's step, its
    placeholder standing for a real folder, both validate. From another folder the message
    names that folder as where data_dir was looked for."""
    project = tmp_path / "benchlib"
    shutil.copytree(ROOT / "params", project / "params")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start on a GPU node", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in block.splitlines() if line.startswith("    ")]
    node = next(i for i, line in enumerate(lines) if line.startswith("benchlib sweep params/node"))
    data = next(i for i, line in enumerate(lines) if "data/imagenet/train" in line)
    assert data < node, lines
    assert "benchlib data imagefolder data/imagenet/train" in " ".join(block.split())
    for params in ("params/node.yaml", "params/scaling.yaml"):
        stopped = benchlib(project, "sweep", params, "--dry-run")
        assert stopped.returncode == 2, stopped.stdout + stopped.stderr
        for said in ("data_dir 'data/imagenet/train' is not a directory",
                     f"relative paths start from the working folder, {project}",
                     "benchlib data imagefolder data/imagenet/train",
                     "mkdir -p data/imagenet && ln -s /path/to/imagenet/train data/imagenet/train",
                     "or set data_dir to your folder (in the params file"):
            assert said in stopped.stderr, stopped.stderr
    step = lines[data].split("#", 1)[0].replace("/path/to/imagenet/train", str(image_dir))
    subprocess.run(["bash", "-c", step], cwd=project, check=True, timeout=60)
    for params in ("params/node.yaml", "params/scaling.yaml"):
        assert " points -> outputs/" in checked(project, "sweep", params, "--dry-run")
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    away = benchlib(elsewhere, "sweep", str(project / "params" / "node.yaml"), "--dry-run")
    assert away.returncode == 2, away.stdout + away.stderr
    assert f"relative paths start from the working folder, {elsewhere}" in away.stderr


#: Values in the docs' commands that stand for the user's own (a GPU model, a cluster, a fleet's
#: nights, a folder of theirs): each such command must say so in its comment.
PLACEHOLDERS = ("gpu=V100", "gpu=A40", "cluster=jade2", "outputs/nightly", "/data/imagenet",
                "/path/to/", "/shared/", "outputs/night-", "outputs/new", "--partition gpu",
                "campaign=acceptance")
#: Guides whose every command needs what their title names (docs/slurm.md: a Slurm cluster) or
#: that record commands run elsewhere (docs/measurements.md): not checked line by line.
UNMARKED = {"slurm.md", "measurements.md"}


def test_the_docs_commands_mark_the_values_that_stand_for_the_users_own():
    """Every command of the README and docs/ that names a placeholder (a GPU or cluster of the
    user's catalog, a fleet's nights, a folder of theirs) says so in its comment, so nobody
    takes its exit 2 on a fresh checkout for a fault; and each folder a CPU example reads is
    one a step makes (`make demo`'s JPEGs), never one no step writes (data/jpegs)."""
    unmarked = []
    for path in DOCS:
        if path.name in UNMARKED:
            continue
        for command in doc_commands(path):
            if any(p in command.typed for p in PLACEHOLDERS) and not command.marked("placeholder"):
                unmarked.append(f"{path.relative_to(ROOT)}: {command.typed}")
    assert not unmarked, "\n".join(unmarked)
    demo_data = re.search(r"^DEMO_DATA := (\S+)$", (ROOT / "Makefile").read_text(), re.M)[1]
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for folder in re.findall(r'benchlib\.diagnose\("\w+", "([^"]+)"', text):
            assert folder == demo_data, f"{path.relative_to(ROOT)}: diagnose reads {folder}"
        for command in doc_commands(path):
            for folder in re.findall(r"--data-dir (\S+)", command.typed):
                assert folder == demo_data or command.marked("placeholder"), \
                    f"{path.relative_to(ROOT)}: {command.typed}"


def test_the_nightly_example_of_acceptance_md_runs_as_written(project: Path):
    """docs/acceptance.md's nightly example typed in a checkout after the demo: its folders are
    the ones it wrote (it wrote /tmp/nightly-real and indexed nightly-real), the history exits 1
    naming node002's drop and driver change; the report lines (a whole report each, minutes)
    are not built here, but the folders they read are there."""
    shutil.copytree(ROOT / "benchmarks", project / "benchmarks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    commands = [c.typed for c in doc_commands(ROOT / "docs" / "acceptance.md")]
    first = next(i for i, c in enumerate(commands) if "history_data.py nightly-real" in c)
    odd = next(i for i, c in enumerate(commands) if "history_data.py nightly3" in c)
    example = commands[first:first + 4] + commands[odd:odd + 2]
    assert sum(" report " in f" {c} " for c in example) == 2, example
    env = {**os.environ, "PYTHONWARNINGS": "ignore",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("BENCHLIB_DB", None)
    for typed in example:
        if " report " in f" {typed} ":
            words = typed.split()
            read = [w for w in words[words.index("report") + 1:] if not w.startswith("--")]
            assert read and all((project / w).is_dir() for w in read), (typed, read)
            continue
        done = subprocess.run(["bash", "-c", typed], cwd=project, env=env, capture_output=True,
                              text=True, timeout=600)
        if typed.startswith("benchlib history"):
            assert done.returncode == 1, done.stdout + done.stderr
            assert "node002" in done.stdout and "driver" in done.stdout, done.stdout
        else:
            assert done.returncode == 0, f"{typed}\n{done.stdout}\n{done.stderr}"
