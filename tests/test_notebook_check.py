"""``tools/make_notebooks.py --check`` compares what a notebook means, not how JupyterLab saved it;
the notebooks name the kernel ``make setup`` installs (tools/jupyter_kernel.py)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

TOOLS = ROOT / "tools"


@pytest.fixture(scope="module")
def tools():
    sys.path.insert(0, str(TOOLS))
    try:
        yield importlib.import_module("make_notebooks"), importlib.import_module("jupyter_kernel")
    finally:
        sys.path.remove(str(TOOLS))


@pytest.fixture(scope="module")
def generated(tools, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("notebooks")
    assert tools[0].main([str(folder)]) == 0
    return folder


def _copy(generated: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for path in generated.glob("*.ipynb"):
        (folder / path.name).write_bytes(path.read_bytes())
    return folder


def _lab_save(path: Path, edit=None) -> None:
    """``path`` as JupyterLab writes it after Run All and a save, with another ipykernel's display
    name; ``edit(nb)`` then changes what the test wants changed."""
    nb = json.loads(path.read_text())
    nb["nbformat_minor"] = 4
    nb["metadata"]["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
    nb["metadata"]["language_info"] = {
        "codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
        "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3", "version": "3.11.2"}
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for count, cell in enumerate(nb["cells"], 1):
        cell.pop("id")  # nbformat 4.4 has no cell ids
        cell["metadata"]["jupyter"] = {"source_hidden": False}
        if cell["cell_type"] == "code":
            cell["execution_count"] = count
            cell["metadata"]["execution"] = {"iopub.status.idle": "2026-11-24T21:00:00.000Z"}
            cell["metadata"]["scrolled"] = True
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran\n"]}]
    if edit:
        edit(nb)
    path.write_text(json.dumps(nb, indent=2, ensure_ascii=False))  # no final newline


def test_the_notebooks_name_the_kernel_make_setup_installs(tools):
    _, kernel = tools
    makefile = (ROOT / "Makefile").read_text()
    assert "tools/jupyter_kernel.py install" in makefile and "ipykernel install" not in makefile
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert json.loads(path.read_text())["metadata"]["kernelspec"] == kernel.KERNELSPEC, path.name


def test_the_kernel_installs_under_a_prefix_with_its_name(tools, tmp_path):
    _, kernel = tools
    assert kernel.main(["install", "--prefix", str(tmp_path)]) == 0
    spec = json.loads((tmp_path / "share/jupyter/kernels" / kernel.NAME / "kernel.json").read_text())
    assert spec["display_name"] == kernel.DISPLAY_NAME
    assert spec["argv"][0] == sys.executable


def test_a_notebook_saved_by_jupyterlab_passes_the_check(tools, generated, tmp_path, capsys):
    make_notebooks, _ = tools
    folder = _copy(generated, tmp_path)
    for path in folder.glob("*.ipynb"):
        _lab_save(path)
    assert make_notebooks.main(["--check", str(folder)]) == 0, capsys.readouterr().out


@pytest.mark.parametrize(("edit", "why"), [
    (lambda nb: nb["cells"][2]["source"].append("\nprint('hello')"), "cell 2: source differs"),
    (lambda nb: nb["cells"][1]["metadata"].update(tags=[]), "cell 1: tags differs"),
    (lambda nb: nb["cells"][3].update(cell_type="raw"), "cell 3: type differs"),
    (lambda nb: nb["cells"].append({"cell_type": "code", "metadata": {}, "source": "1",
                                    "outputs": [], "execution_count": None}), "17 cells, expected 16"),
    (lambda nb: nb["metadata"]["kernelspec"].update(name="python3-other"), "kernel: 'python3-other'"),
])
def test_a_changed_notebook_fails_the_check_naming_what_changed(tools, generated, tmp_path, capsys,
                                                                edit, why):
    make_notebooks, _ = tools
    folder = _copy(generated, tmp_path)
    _lab_save(folder / "summary_comparisons.ipynb", edit)
    assert make_notebooks.main(["--check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"summary_comparisons.ipynb: {why}" in out
    assert out.count("ipynb:") == 1  # only the changed notebook


def test_a_missing_or_broken_notebook_fails_the_check(tools, generated, tmp_path, capsys):
    make_notebooks, _ = tools
    folder = _copy(generated, tmp_path)
    (folder / "train.ipynb").unlink()
    (folder / "summary_node.ipynb").write_text("{not json")
    assert make_notebooks.main(["--check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "train.ipynb: missing" in out and "summary_node.ipynb: unreadable" in out
