"""Shared fixtures: tiny image folders and fast configs that keep tests on the CPU in seconds."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

# One intra-op thread per process (the runs in this process, the notebook kernels, Slurm jobs;
# the launcher sets its ranks' own): tests check behaviour, not speed, and several of them run
# at once on a small machine. OpenMP threads spinning for cores that other processes hold made
# the CPU tests several times slower beside a busy process. Set before torch reads it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

from benchlib.data.generate import write_imagefolder

ROOT = Path(__file__).resolve().parent.parent
TINY = {"model": "resnet18", "image_size": 32, "num_classes": 10, "batch_size": 4,
        "iterations": 3, "warmup": 1, "num_workers": 0, "device": "cpu"}

#: ``make test-fast`` (the edit loop) sets BENCHLIB_TEST_FAST: property tests try a third of
#: their examples there (at least 3); ``make test`` (CI) tries every one.
FAST = bool(os.environ.get("BENCHLIB_TEST_FAST"))


def benchmark_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as a module (its own folder on the path, for the
    planted data it shares with the other benchmarks)."""
    import importlib.util

    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def examples(count: int) -> int:
    """A property test's ``max_examples``: ``count``, a third of it in the edit loop."""
    return max(3, count // 3) if FAST else count



def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker per core this process may use, plus one: about a fifth of the suite's time is
    spent waiting (on Slurm's scheduler, a time limit, a hung rank's timeout), and the extra
    worker's tests fill those gaps (on the 2-core VM: 495 s against 537 s with 2 workers)."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the long tests first (Slurm groups, then the other slow ones): with pytest-xdist they
    # start at once beside each other and the quick tests fill the gaps, instead of a long
    # test starting last and the suite waiting on it alone
    items.sort(key=lambda item: (item.get_closest_marker("xdist_group") is None,
                                 item.get_closest_marker("slow") is None))
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; torch sees none")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _runs_by_hand_save_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A benchmark notebook's record cell run in a test (not by benchlib's runner) saves the
    record as a run by hand: under a temporary folder, never the checkout's outputs/."""
    from benchlib.records.hand_run import OUTPUTS_ENV

    monkeypatch.setenv(OUTPUTS_ENV, str(tmp_path_factory.mktemp("hand-runs")))


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    """``cli(cwd, *args)``: ``benchlib ARGS`` run in this process from folder ``cwd`` (relative
    paths read from there, as typed), its exit status, standard output and standard error. For
    the many bad-input cases: a subprocess each would cost a second of the edit loop; the
    commands' own tests run the installed ``benchlib`` as a subprocess."""
    from benchlib.cli import main

    def run(cwd: Path, *args: str) -> tuple[int, str, str]:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as stopped:  # argparse's own refusal of an option's value
            code = int(stopped.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def image_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 classes x 6 JPEGs of about 48 px."""
    return write_imagefolder(tmp_path_factory.mktemp("images"), classes=3, images_per_class=6,
                             size=48)


@pytest.fixture
def tiny() -> dict:
    return dict(TINY)


@pytest.fixture(scope="session")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The index of a full report of tests/fakes.py's campaign, built once for the tests that
    only read it: every summary page, a references file, and a baseline 1.25x faster than the
    campaign (so the compare page too, and the History page: the baseline's runs are earlier
    runs of its configurations). Its tests share an ``xdist_group``: one build."""
    from benchlib.report.build import build_report

    from .fakes import campaign, references_file, slower_copy

    root = campaign(tmp_path_factory.mktemp("outputs") / "fake")
    base = slower_copy(root, root.parent / "base", 1.25)  # this campaign is the slower one
    return build_report(root, progress=False, baseline=base, references=references_file(root.parent),
                        history=[base])
