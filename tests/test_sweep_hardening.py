"""Sweeps against hostile or unlucky input: notebook paths in params, symbolic-link loops in
``data_dir``, hung cells, grids too long for file names, the kernel's shutdown noise."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from benchlib.errors import ConfigError, InputError
from benchlib.execute.sweep import DEFAULT_CELL_TIMEOUT_S, cell_timeout_for, run_sweep
from benchlib.inputs.params import MAX_STEM_BYTES, NOTEBOOK_DIR, Point, load_sweep
from benchlib.records.results import load
from benchlib.registry import shipped

from .walk import benchlib

REGISTERED = ", ".join(sorted(b.notebook for b in shipped()))

PUBLISH = """\
from IPython.display import display
display({"application/vnd.benchlib.result+json": {"schema_version": 1, "status": "ok",
         "error": "", "benchmark": "custom", "throughput": 1.0, "unit": "x/s",
         "campaign": campaign}, "text/plain": "record"}, raw=True)
"""


def _notebook(path: Path, parameters: str, *cells: str) -> Path:
    """A notebook with a ``parameters`` cell and ``cells``, for the python3 kernel."""
    nb = new_notebook(cells=[new_code_cell(parameters, metadata={"tags": ["parameters"]}),
                             *(new_code_cell(cell) for cell in cells)])
    nb.metadata["benchlib"] = {"kind": "benchmark"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def _write(folder: Path, text: str, name: str = "params.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# --- 1. a notebook is a name from the registry, never a path ----------------------------------

def _evil(tmp_path: Path) -> tuple[Path, Path]:
    """A notebook outside the project that leaves a mark when it runs, and that mark."""
    mark = tmp_path / "elsewhere" / "ran"
    notebook = _notebook(tmp_path / "elsewhere" / "evil.ipynb", "campaign = 'x'",
                         f"open({str(mark)!r}, 'w').write('ran')")
    return notebook, mark


@pytest.mark.parametrize("form", ["absolute", "relative", "listed"])
def test_a_params_file_cannot_run_a_notebook_elsewhere(tmp_path, form):
    notebook, mark = _evil(tmp_path)
    stem = notebook.with_suffix("")
    name = {"absolute": str(stem), "relative": os.path.relpath(stem, NOTEBOOK_DIR),
            "listed": str(stem)}[form]
    value = f"[{{{name!r}: {{}}}}]" if form == "listed" else repr(name)
    project = tmp_path / "project"
    _write(project, f"campaign: c\nnotebook: {value}\n")  # before, this ran evil.ipynb
    done = benchlib(project, "sweep", "params.yaml", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "params.yaml: notebook: bad value" in done.stderr, done.stderr
    assert f"not a benchmark notebook; allowed: {REGISTERED}" in done.stderr, done.stderr
    assert not mark.exists()
    assert sorted(p.name for p in notebook.parent.iterdir()) == ["evil.ipynb"]
    assert not (project / "outputs").exists()


def test_a_tests_notebook_dir_takes_plain_names_of_its_notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    _notebook(folder / "custom.ipynb", "campaign = 'x'", PUBLISH)
    sweep = load_sweep(_write(tmp_path, "campaign: c\nnotebook: custom\n"), folder)
    assert [p.notebook for p in sweep.points] == ["custom"]
    for name in ("../notebooks/custom", str(folder / "custom")):
        with pytest.raises(ConfigError) as caught:
            load_sweep(_write(tmp_path, f"campaign: c\nnotebook: {name!r}\n"), folder)
        assert "notebook: bad value" in str(caught.value)
        assert "not a notebook name (letters, digits and _); allowed: custom" in str(caught.value)


@pytest.mark.parametrize("campaign", ["..", "../x", "/tmp/x", "a/../../b", ".benchlib", "a\\b"])
def test_a_campaign_name_cannot_leave_the_outputs_folder(tmp_path, campaign):
    with pytest.raises(ConfigError, match="campaign: bad value"):
        load_sweep(_write(tmp_path, f"campaign: {campaign!r}\nnotebook: train\n"))


# --- 2. symbolic links that loop ----------------------------------------------------------------

def test_a_data_dir_linked_to_itself_is_bad_input(tmp_path):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "loop").symlink_to("loop")
    _write(project, """\
        campaign: c
        notebook: train
        base: {model: resnet18, device: cpu, dataset: real, data_dir: data/loop}
        """)
    done = benchlib(project, "sweep", "params.yaml", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "params.yaml: base.data_dir: bad value 'data/loop': its symbolic links loop" \
        in done.stderr, done.stderr
    assert not (project / "outputs").exists()


def _looping_folder(root: Path) -> Path:
    """Classes a and b, one image each, linked into each other, to themselves and upwards."""
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        (root / name / "1.jpg").write_bytes(b"not decoded when listing")
    (root / "a" / "x").symlink_to("../b")
    (root / "b" / "y").symlink_to("../a")
    (root / "a" / "self").symlink_to(".")
    (root / "b" / "up").symlink_to("..")
    (root / "b" / "loop").symlink_to("loop")
    return root


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_symbolic_link_loops_inside_data_dir_end(tmp_path):
    root = _looping_folder(tmp_path / "images")
    code = ("import sys\nfrom benchlib.data.imagefolder import image_folder\n"
            "ds = image_folder(sys.argv[1], 32, False)\n"
            "print(len(ds), ds.classes, sorted(p[len(sys.argv[1]):] for p, _ in ds.samples))")
    try:  # torchvision's own walk takes for ever here: a generous limit, not a timing test
        done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("listing a data_dir with symbolic-link loops did not end within 60 s")
    assert done.returncode == 0, done.stderr
    # each real folder once per class: a's own image and b's through a/x, and the other way
    assert done.stdout.split() == ["4", "['a',", "'b']", "['/a/1.jpg',", "'/a/x/1.jpg',",
                                   "'/b/1.jpg',", "'/b/y/1.jpg']"]


def test_the_listing_is_torchvisions_where_nothing_loops(image_dir, tmp_path):
    from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

    from benchlib.data.imagefolder import list_samples

    root = tmp_path / "images"
    for folder in image_dir.iterdir():
        (root / folder.name / "nested").mkdir(parents=True)
        for image in folder.iterdir():
            (root / folder.name / image.name).symlink_to(image)
            (root / folder.name / "nested" / image.name).symlink_to(image)
    (root / folder.name / "linked").symlink_to(image_dir / next(iter(sorted(find_classes(
        image_dir)[0]))))
    _, classes = find_classes(root)
    expected = make_dataset(str(root), classes, IMG_EXTENSIONS)
    assert list_samples(str(root), classes, IMG_EXTENSIONS) == expected and len(expected) == 42


def test_a_listing_past_its_bound_stops_naming_data_dir(tmp_path):
    from torchvision.datasets.folder import IMG_EXTENSIONS

    from benchlib.data.imagefolder import list_samples

    root = _looping_folder(tmp_path / "images")
    with pytest.raises(InputError, match=r"data_dir: more than 3 files and folders under the "
                                         r"class folders of '.*images'"):
        list_samples(str(root), {"a": 0, "b": 1}, IMG_EXTENSIONS, max_entries=3)


# --- 3. every cell has a time limit ----------------------------------------------------------------

@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_a_hung_cell_fails_its_point_by_default(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    _notebook(folder / "sleepy.ipynb", "seconds = 0\ncampaign = 'x'",
              "import time\ntime.sleep(seconds)", PUBLISH)
    monkeypatch.setattr("benchlib.execute.sweep.DEFAULT_CELL_TIMEOUT_S", 2)
    sweep = load_sweep(_write(tmp_path, "campaign: c\nnotebook: sleepy\ngrid: {seconds: [40]}\n"),
                       folder)
    start = time.monotonic()
    (outcome,) = run_sweep(sweep, tmp_path / "outputs", progress=False)
    assert time.monotonic() - start < 40  # stopped, not slept out
    assert outcome.status == "failed"
    assert outcome.error.startswith("CellTimeoutError: a cell ran longer than 2 s and was "
                                    "stopped (the cell time limit: executor.cell_timeout_s"), \
        outcome.error
    assert load(tmp_path / "outputs" / "c")["error"].tolist() == [outcome.error]


def test_the_cell_time_limit_comes_from_the_params_or_the_time_budget(tmp_path):
    point = Point("train", {}, 0, "train")
    assert cell_timeout_for(point, None) == DEFAULT_CELL_TIMEOUT_S == 7200
    assert cell_timeout_for(point, 30) == 30
    budget = Point("train", {"iterations": "auto", "max_time_s": 5000}, 0, "train")
    assert cell_timeout_for(budget, None) == 10000
    with pytest.raises(ConfigError, match=r"executor\.cell_timeout_s: bad value 0"):
        load_sweep(_write(tmp_path, "campaign: c\nnotebook: train\n"
                                    "executor: {kind: local, cell_timeout_s: 0}\n"))


# --- 4. point names fit the file system ------------------------------------------------------------

@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_grid_values_too_long_for_file_names_are_shortened(tmp_path):
    axes = [f"p{i}" for i in range(10)]
    folder = tmp_path / "notebooks"
    _notebook(folder / "wide.ipynb", "\n".join([*(f"{a} = ''" for a in axes), "value = 0",
                                                "campaign = 'x'"]), PUBLISH)
    grid = {a: [f"{a}{'v' * 300}"] for a in axes} | {"value": [1, 2]}
    lines = "".join(f"  {k}: {v!r}\n" for k, v in grid.items())
    sweep = load_sweep(_write(tmp_path, f"campaign: c\nnotebook: wide\ngrid:\n{lines}"), folder)
    outcomes = run_sweep(sweep, tmp_path / "outputs", progress=False)
    assert [o.status for o in outcomes] == ["done", "done"], [o.error for o in outcomes]
    campaign = tmp_path / "outputs" / "c"
    names = [p.name for p in campaign.rglob("*")]
    assert max(len(n.encode()) for n in names) <= 255
    for point in sweep.points:
        assert len(point.name.encode()) <= MAX_STEM_BYTES and point.name.endswith(point.point_id)
        assert point.name.startswith("wide-p0vvv")
        assert {f"{point.name}.ipynb", f"{point.name}.json"} <= set(names)
    assert load(campaign)["status"].tolist() == ["ok", "ok"]
    again = run_sweep(load_sweep(sweep.path, folder), tmp_path / "outputs", progress=False)
    assert [o.status for o in again] == ["skipped", "skipped"]  # the same names again


def test_shortened_names_keep_labels_that_differ_only_in_their_tails_apart():
    long = "train-" + "x" * 300
    one, two = (Point("train", {}, 0, f"{long}-on-{node}") for node in ("n1", "n2"))
    assert one.point_id == two.point_id and one.name != two.name
    assert one.name == Point("train", {}, 0, f"{long}-on-n1").name  # deterministic
    wide = Point("train", {}, 0, "é" * 300)
    assert len(wide.name.encode()) <= MAX_STEM_BYTES and wide.name.encode().decode() == wide.name
    assert Point("train", {}, 0, "train-8").name == f"train-8-{one.point_id}"  # short: as before


# --- 5. the kernel's shutdown ----------------------------------------------------------------------

SLOW_KERNEL_INFO = """\
import time
kernel = get_ipython().kernel
reply_to_kernel_info = kernel.shell_handlers["kernel_info_request"]

async def slow_kernel_info(*args):
    result = reply_to_kernel_info(*args)
    if hasattr(result, "__await__"):
        await result
    time.sleep(2)  # replied, still in the handler: papermill's last request, the shutdown next

kernel.shell_handlers["kernel_info_request"] = slow_kernel_info
kernel.log.error("a real kernel error")
"""


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_a_normal_kernel_shutdown_prints_no_keyboard_interrupt(tmp_path):
    source = _notebook(tmp_path / "quiet.ipynb", "campaign = 'x'", SLOW_KERNEL_INFO)
    code = ("import sys\nfrom pathlib import Path\n"
            "from benchlib.execute.notebook_run import execute_notebook\n"
            "execute_notebook(Path(sys.argv[1]), Path(sys.argv[2]), {}, Path(sys.argv[3]))\n")
    done = subprocess.run([sys.executable, "-c", code, str(source), str(tmp_path / "out.ipynb"),
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "KeyboardInterrupt" not in done.stderr, done.stderr
    assert "[IPKernelApp] ERROR | a real kernel error" in done.stderr, done.stderr


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_what_a_kernel_left_running_is_stopped_with_it(tmp_path):
    from benchlib.execute.notebook_run import execute_notebook

    pid_file = tmp_path / "child.pid"
    source = _notebook(tmp_path / "child.ipynb", "campaign = 'x'",
                       "import subprocess\nchild = subprocess.Popen(['sleep', '300'])\n"
                       f"open({str(pid_file)!r}, 'w').write(str(child.pid))")
    execute_notebook(source, tmp_path / "out.ipynb", {}, tmp_path)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pid)
