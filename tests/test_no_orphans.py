"""Nothing a point starts outlives it: its scratch (``.partial/``, the launch's work folder) and
its processes (the kernel, torchrun and its ranks) end with it, at its cell time limit, on
Ctrl-C and when the sweep is killed (then the next sweep of the campaign removes what is left,
never what a running point is writing)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from benchlib.execute.locks import point_lock
from benchlib.execute.sweep import execute_point, run_sweep
from benchlib.inputs.params import Point, load_sweep

from .conftest import ROOT
from .test_sweep_hardening import PUBLISH, _notebook, _write

MARK = "BENCHLIB_TEST_ORPHAN_MARK"
#: A notebook whose cell starts a 2-rank gloo launch whose rank 1 hangs (tests/dist_targets.py).
TORCHRUN_CELL = """\
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.run import launch
launch.run(ClassificationConfig(device="cpu", num_devices=2, hang_timeout_s=3600),
           target="tests.dist_targets:hang")
"""


def _marked(mark: str) -> list[psutil.Process]:
    """This test's processes: those whose environment carries ``mark`` (inherited from it)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.pid != os.getpid() and process.environ().get(MARK) == mark:
                found.append(process)
        except psutil.Error:
            continue
    return found


def _left_running(mark: str, within_s: float) -> list[str]:
    """The command lines of this test's processes still running after ``within_s``; whatever
    is left is killed (so a failing test leaves nothing behind either)."""
    deadline = time.monotonic() + within_s
    while (left := _marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.5)
    names = []
    for process in left:
        try:
            names.append(" ".join(process.cmdline())[:160])
            process.kill()
        except psutil.Error:
            continue
    return names


def _ranks_running(mark: str, within_s: float = 120) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        workers = [p for p in _marked(mark) if "benchlib.run.launch_worker" in " ".join(
            p.cmdline()) and "torch.distributed.run" not in " ".join(p.cmdline())]
        if len(workers) >= 2:
            return
        time.sleep(0.5)
    raise AssertionError("the launch's two ranks did not start")


@pytest.fixture
def marked_env(tmp_path, monkeypatch) -> str:
    """A mark in the environment every process of the test inherits, and a temporary folder
    of the test's own (``TMPDIR``) for the kernels' and launches' temporary files."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK, mark)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT),
                                                                   os.environ.get("PYTHONPATH")])))
    return mark


def _nothing_left(tmp_path: Path, campaign: Path) -> None:
    assert not (campaign / ".partial").exists(), list((campaign / ".partial").rglob("*"))
    assert not list((tmp_path / "tmp").glob("benchlib-launch-*"))
    assert not list(tmp_path.rglob("benchlib-launch-*"))


# --- a point's scratch left by a killed sweep ----------------------------------------------------

def _sweep_process(tmp_path: Path, params: Path, folder: Path) -> subprocess.Popen:
    code = ("import sys\nfrom pathlib import Path\n"
            "from benchlib.execute.sweep import run_sweep\n"
            "from benchlib.inputs.params import load_sweep\n"
            "run_sweep(load_sweep(Path(sys.argv[1]), Path(sys.argv[2])), Path(sys.argv[3]), "
            "progress=False)\n")
    # Ctrl-C reaches a user's command with SIGINT's default disposition; a test before this one
    # in the same worker may leave SIGINT ignored, which a child inherits (then Ctrl-C does
    # nothing: seen twice in a fresh clone's full suite, never when run alone)
    return subprocess.Popen([sys.executable, "-c", code, str(params), str(folder),
                             str(tmp_path / "outputs")], cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(paths, within_s: float = 120) -> None:
    deadline = time.monotonic() + within_s
    while not list(paths()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(paths()), "never appeared"


@pytest.mark.slow
def test_a_point_killed_with_sigkill_leaves_no_partial_after_the_next_run(tmp_path, marked_env):
    folder, flag = tmp_path / "notebooks", tmp_path / "go"
    _notebook(folder / "waits.ipynb", f"campaign = 'x'\nflag = {str(flag)!r}",
              "import os, time\nwhile not os.path.exists(flag):\n    time.sleep(0.2)", PUBLISH)
    params = _write(tmp_path, "campaign: c\nnotebook: waits\n")
    campaign = tmp_path / "outputs" / "c"
    sweep = _sweep_process(tmp_path, params, folder)
    _wait_for(lambda: campaign.glob(".partial/*/*.ipynb"))
    sweep.send_signal(signal.SIGKILL)
    sweep.wait(30)
    assert list(campaign.glob(".partial/*"))  # what the killed point left
    flag.write_text("")
    (outcome,) = run_sweep(load_sweep(params, folder), tmp_path / "outputs", progress=False)
    assert outcome.status == "done", outcome.error
    _nothing_left(tmp_path, campaign)
    assert _left_running(marked_env, 30) == []


def _scratch(campaign: Path, point: str, host: str) -> Path:
    folder = campaign / ".partial" / f"{point}.abcd1234"
    folder.mkdir(parents=True)
    (folder / "owner.json").write_text(json.dumps({"host": host, "pid": 1}))
    (folder / f"{point}.ipynb").write_text("{")  # half written
    return folder


def test_the_next_sweep_keeps_the_scratch_of_a_point_running_now(tmp_path):
    from benchlib.execute.sweep import remove_stale_scratch

    campaign = tmp_path / "outputs" / "c"
    running = _scratch(campaign, "p1", socket.gethostname())
    left = _scratch(campaign, "p2", socket.gethostname())
    elsewhere = _scratch(campaign, "p3", "another-host")  # its lock may not reach this host
    code = ("import sys, time\nfrom pathlib import Path\n"
            "from benchlib.execute.locks import point_lock\n"
            "with point_lock(Path(sys.argv[1]), 'p1'):\n"
            "    print('held', flush=True)\n    time.sleep(120)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(campaign)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        remove_stale_scratch(campaign)
        assert running.is_dir() and elsewhere.is_dir() and not left.exists()
    finally:
        holder.kill()
        holder.wait()
    with point_lock(campaign, "p1") as mine:
        assert mine
    remove_stale_scratch(campaign)
    assert not running.exists() and elsewhere.is_dir()


def test_scratch_from_another_host_or_without_owner_is_removed_once_a_day_old(tmp_path):
    from benchlib.execute.sweep import remove_stale_scratch

    campaign = tmp_path / "outputs" / "c"
    recent, old = _scratch(campaign, "p1", "another-host"), _scratch(campaign, "p2", "another-host")
    unowned, unowned_old = _scratch(campaign, "p3", ""), _scratch(campaign, "p4", "")
    for folder in (unowned, unowned_old):
        (folder / "owner.json").unlink()
    day_ago = time.time() - 25 * 3600
    for folder in (old, unowned_old):
        for path in (*folder.iterdir(), folder):
            os.utime(path, (day_ago, day_ago))
    remove_stale_scratch(campaign)
    assert recent.is_dir() and unowned.is_dir()
    assert not old.exists() and not unowned_old.exists()


# --- a torchrun point: its time limit, Ctrl-C, kill -9 ------------------------------------------

@pytest.mark.slow
def test_a_torchrun_point_at_its_cell_time_limit_leaves_nothing_running(tmp_path, marked_env):
    folder = tmp_path / "notebooks"
    _notebook(folder / "ranks.ipynb", "campaign = 'x'", TORCHRUN_CELL, PUBLISH)
    campaign = tmp_path / "outputs" / "c"
    campaign.mkdir(parents=True)
    point = Point("ranks", {}, 0, "ranks")
    with ThreadPoolExecutor(1) as pool:  # the ranks are seen running before the limit ends them
        running = pool.submit(execute_point, point, campaign / "ranks.ipynb", 20, ROOT, folder)
        _ranks_running(marked_env, 20)
        outcome = running.result()
    assert outcome.status == "failed" and "CellTimeoutError" in outcome.error, outcome.error
    assert _left_running(marked_env, 10) == []
    _nothing_left(tmp_path, campaign)


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["ctrl-c", "kill", "kill-9"])
def test_a_sweep_stopped_mid_launch_leaves_nothing_running(tmp_path, marked_env, how):
    folder = tmp_path / "notebooks"
    _notebook(folder / "ranks.ipynb", "campaign = 'x'", TORCHRUN_CELL, PUBLISH)
    params = _write(tmp_path, "campaign: c\nnotebook: ranks\n")
    sweep = _sweep_process(tmp_path, params, folder)
    try:
        _ranks_running(marked_env)
        sweep.send_signal(how)
        sweep.wait(60)
    finally:
        sweep.kill()
    assert _left_running(marked_env, 30) == []
    campaign = tmp_path / "outputs" / "c"
    if how == signal.SIGINT:  # the sweep cleaned up itself
        _nothing_left(tmp_path, campaign)
    from benchlib.execute.sweep import remove_stale_scratch

    remove_stale_scratch(campaign)  # what the next sweep does first
    _nothing_left(tmp_path, campaign)


# --- the 3D U-Net's temporary predictions --------------------------------------------------------

def test_predictions_without_output_go_to_the_scratch_never_beside_the_volume(tmp_path,
                                                                              monkeypatch):
    """A shared data set is often read-only: a scratch folder beside the volume fails the point
    ("Read-only file system"), and one a killed run leaves stays in the data folder."""
    import errno
    import tempfile

    from benchlib.kinds.unet3d import workload as unet3d
    from benchlib.kinds.unet3d.config import UNet3DPredictConfig
    from benchlib.kinds.unet3d.data_writer import write_em_volume
    from benchlib.workloads.scratch import SCRATCH_VARIABLE

    data = tmp_path / "shared" / "data"
    data.mkdir(parents=True)
    write_em_volume(data / "em.h5", (12, 40, 40), cell=(4, 12, 12), chunks=(4, 16, 16),
                    progress=False)
    made, real = [], tempfile.mkdtemp

    def read_only_data(*args, **kwargs):
        folder = Path(kwargs.get("dir") or tempfile.gettempdir()).resolve()
        if folder.is_relative_to(data.parent):
            raise OSError(errno.EROFS, "Read-only file system", str(folder))
        made.append(folder)
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkdtemp", read_only_data)
    monkeypatch.setenv(SCRATCH_VARIABLE, str(tmp_path / "point-scratch"))
    config = UNet3DPredictConfig(volume=str(data / "em.h5"), block_shape=[10, 20, 20],
                                 batch_size=2, output_dtype="float32", depth=2,
                                 pooling=[1, 2, 2], base_features=4, growth=2, device="cpu",
                                 num_workers=1)
    assert unet3d.predict(config).samples == 12 * 40 * 40
    assert made == [(tmp_path / "point-scratch").resolve()]
    assert sorted(p.name for p in data.parent.rglob("*")) == ["data", "em.h5"]
    assert not list((tmp_path / "point-scratch").iterdir())  # removed at the run's end


# --- SIGTERM to the benchlib command (timeout, kill, a scheduler) ------------------------------

@pytest.mark.slow
def test_sigterm_to_benchlib_sweep_ends_the_point_like_ctrl_c(tmp_path, marked_env):
    """``benchlib sweep`` given SIGTERM says so, exits 143, ends the point's processes and
    removes its scratch itself (as on Ctrl-C), instead of dying silently with ``.partial/``."""
    from benchlib.workloads.scratch import marked

    params = _write(tmp_path, "campaign: c\nnotebook: train\nbase: {model: resnet18, "
                    "image_size: 32, num_classes: 10, batch_size: 4, iterations: 1000000, "
                    "warmup: 1, num_workers: 0, device: cpu}\n")
    campaign = tmp_path / "outputs" / "c"
    benchlib = str(Path(sys.executable).with_name("benchlib"))
    sweep = subprocess.Popen([benchlib, "sweep", str(params), "--outputs",
                              str(tmp_path / "outputs"), "--quiet"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: campaign.glob(".partial/*/*.ipynb"))
        _wait_for(lambda: marked(campaign / ".partial"))  # the point's kernel is running
        sweep.send_signal(signal.SIGTERM)
        stdout, stderr = sweep.communicate(timeout=60)
    finally:
        sweep.kill()
    assert sweep.returncode == 143, stdout + stderr
    assert "error: terminated (SIGTERM)" in stderr, stderr
    assert marked(campaign) == []
    _nothing_left(tmp_path, campaign)
    assert _left_running(marked_env, 10) == []
