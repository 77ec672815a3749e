"""A report's summaries share one kernel (:class:`benchlib.execute.notebook_run.NotebookSession`):
each notebook still starts from an empty namespace, numbered from 1, and a failed notebook never
hands its kernel to the next."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import papermill
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from benchlib.execute.notebook_run import NotebookSession


def _notebook(path: Path, *sources: str) -> Path:
    cells = [new_code_cell("tag = ''", metadata={"tags": ["parameters"]}),
             *(new_code_cell(source) for source in sources)]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(path))
    return path


def _outputs(path: Path) -> list[str]:
    nb = nbformat.read(str(path), as_version=4)
    return ["".join(o.get("text", "")) for c in nb.cells if c.cell_type == "code"
            for o in c.outputs]


def _counts(path: Path) -> list[int | None]:
    nb = nbformat.read(str(path), as_version=4)
    return [c.execution_count for c in nb.cells if c.cell_type == "code"]


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_notebooks_of_a_session_share_a_kernel_but_not_a_namespace(tmp_path):
    first = _notebook(tmp_path / "first.ipynb",
                      "import os, matplotlib.pyplot as plt\nsecret = tag\nplt.figure()\n"
                      "print(os.getpid(), os.getcwd())")
    second = _notebook(tmp_path / "second.ipynb",
                       "import os, matplotlib.pyplot as plt\n"
                       "print(os.getpid(), 'secret' in dir(), len(plt.get_fignums()), tag)")
    work = tmp_path / "work"
    work.mkdir()
    with NotebookSession(work) as session:
        session.execute(first, tmp_path / "a.ipynb", {"tag": "one"})
        session.execute(second, tmp_path / "b.ipynb", {"tag": "two"})
        assert session.kernels_started == 1
    pid, cwd = _outputs(tmp_path / "a.ipynb")[0].split()
    assert cwd == str(work)  # the kernel works in the session's folder
    assert _outputs(tmp_path / "b.ipynb")[0].split() == [pid, "False", "0", "two"]
    assert _counts(tmp_path / "b.ipynb") == [1, 2, 3]  # papermill's injected cell, then its own
    assert not Path(f"/proc/{pid}").exists() or _zombie(int(pid))  # shut down at the end


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_a_warning_shown_on_one_page_is_shown_on_the_next_too(tmp_path):
    """Python shows a warning once per line and module; the modules outlive a page, so without
    the reset a second page would silently lose the warning the first one showed."""
    import os  # the kernel's own folder is never on its import path: the module is given

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "warner.py").write_text(
        "import warnings\n\ndef odd():\n    warnings.warn('something odd', UserWarning)\n")
    page = _notebook(tmp_path / "page.ipynb", "import warner\nwarner.odd()")
    path = os.pathsep.join(filter(None, [str(tmp_path / "lib"), os.environ.get("PYTHONPATH")]))
    with NotebookSession(tmp_path, env={"PYTHONPATH": path}) as session:
        for name in ("a", "b"):
            session.execute(page, tmp_path / f"{name}.ipynb", {})
    for name in ("a", "b"):
        nb = nbformat.read(str(tmp_path / f"{name}.ipynb"), as_version=4)
        said = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                       for o in c.outputs if o.get("name") == "stderr")
        assert "UserWarning: something odd" in said, (name, said)


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_a_failed_notebook_takes_its_kernel_with_it(tmp_path):
    broken = _notebook(tmp_path / "broken.ipynb", "import os\nprint(os.getpid())",
                       "raise KeyError('no such column')")
    fine = _notebook(tmp_path / "fine.ipynb", "import os\nprint(os.getpid())")
    with NotebookSession(tmp_path) as session:
        with pytest.raises(papermill.PapermillExecutionError, match="no such column"):
            session.execute(broken, tmp_path / "a.ipynb", {})
        session.execute(fine, tmp_path / "b.ipynb", {})
        assert session.kernels_started == 2
    first = _outputs(tmp_path / "a.ipynb")[0]
    (second,) = _outputs(tmp_path / "b.ipynb")
    assert first != second and int(second) != os.getpid()


def test_a_session_that_runs_nothing_starts_no_kernel(tmp_path):
    with NotebookSession(tmp_path) as session:
        pass
    assert session.kernels_started == 0


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_a_report_runs_its_summaries_in_one_kernel_per_core(tmp_path, monkeypatch):
    from benchlib.report import build

    from .fakes import campaign

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    names = [f"summary_tiny{i}" for i in range(5)]
    for name in names:
        _notebook(notebooks / f"{name}.ipynb", "import os\nprint(os.getpid())")
        nb = nbformat.read(str(notebooks / f"{name}.ipynb"), as_version=4)
        nb.cells[0].source = "results_dir = ''"
        nbformat.write(nb, str(notebooks / f"{name}.ipynb"))
    sessions: list[NotebookSession] = []

    class Counted(NotebookSession):
        def __enter__(self) -> NotebookSession:
            sessions.append(self)
            return self

    monkeypatch.setattr(build, "NOTEBOOK_DIR", notebooks)
    monkeypatch.setattr(build, "NotebookSession", Counted)
    monkeypatch.setattr(build.os, "cpu_count", lambda: 2)
    index = build.build_report(campaign(tmp_path / "fake"), summaries=names, progress=False)
    assert [s.kernels_started for s in sessions] == [1, 1]  # 5 pages, 2 kernels
    pids = {_outputs(index.parent / f"{name}.ipynb")[0].strip() for name in names}
    assert len(pids) == 2 and all(_counts(index.parent / f"{n}.ipynb")[0] == 1 for n in names)
