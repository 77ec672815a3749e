"""A summary notebook in a real JupyterLab, driven through headless Chromium as a user would:
open it (on the kernel ``make setup`` installs: not modified on open), Run All from the Run menu,
no error output, completion on ``benchlib.`` lists ``load``, save, and the saved notebook passes
``tools/make_notebooks.py --check`` (a cell left in it does not)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .browser import chromium
from .conftest import ROOT
from .fakes import campaign

NOTEBOOK = "summary_comparisons.ipynb"
JUPYTER = Path(sys.executable).with_name("jupyter")
#: Screenshots for people to look at, after Run All and of the completion popup: under outputs/
#: (ignored by git), or where BENCHLIB_SCREENSHOTS says (``BENCHLIB_SCREENSHOTS=docs/images/issue30``
#: rewrote the committed ones).
SHOTS = ROOT / os.environ.get("BENCHLIB_SCREENSHOTS", "outputs/test-artifacts")
#: JupyterLab's user settings for the test: no news prompt, no update check, every cell in the
#: page (no windowing, so the test sees each cell's prompt and outputs).
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
TRACEBACK = re.compile(r"Traceback|Error:")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(what: str, condition: Callable[[], object], timeout: float = 120,
          every: float = 0.5) -> object:
    """``condition()`` once it is truthy; fails naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except AssertionError:
            raise
        except Exception:  # a stale element while JupyterLab redraws: ask again
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def _project(root: Path) -> Path:
    """The project's layout as JupyterLab sees it: ``notebooks/`` as the generator writes them
    (the committed ones are checked against it in test_notebooks.py) and the campaign at the path
    the summary notebooks default to (``outputs/demo``, found from ``notebooks/``)."""
    (root / "notebooks").mkdir(parents=True)
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_notebooks.py"),
                    str(root / "notebooks")], check=True, capture_output=True)
    campaign(root / "outputs" / "demo")
    return root


def _isolated_env(home: Path) -> dict[str, str]:
    """Jupyter's config, data, runtime and JupyterLab's settings and workspaces under ``home``
    (never the user's), and the kernel ``make setup`` installs, installed there the same way."""
    subprocess.run([sys.executable, str(ROOT / "tools" / "jupyter_kernel.py"), "install",
                    "--prefix", str(home / "prefix")], check=True, capture_output=True)
    settings = home / "lab-settings"
    for name, values in SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    dirs = {"JUPYTER_CONFIG_DIR": "config", "JUPYTER_DATA_DIR": "data",
            "JUPYTER_RUNTIME_DIR": "runtime", "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
            "JUPYTERLAB_WORKSPACES_DIR": "workspaces", "IPYTHONDIR": "ipython"}
    env = {**os.environ, **{key: str(home / name) for key, name in dirs.items()},
           "JUPYTER_PATH": str(home / "prefix" / "share" / "jupyter")}
    return env


@pytest.fixture
def lab(tmp_path) -> Iterator[tuple[str, Path]]:
    """A JupyterLab server on the project copy: ``(url of the notebook, project root)``."""
    if not JUPYTER.exists() or shutil.which("jupyter-lab", path=str(JUPYTER.parent)) is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have jupyterlab (the test extra installs it)")
        pytest.skip("no jupyterlab in this environment (pip install -e '.[test]')")
    root = _project(tmp_path / "project")
    port, token = _free_port(), uuid.uuid4().hex
    command = [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                              env=_isolated_env(tmp_path / "home"))
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert server.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                return True
        except OSError:
            return False

    try:
        _wait("the JupyterLab server", up, timeout=120)
        yield f"{base}/lab/tree/notebooks/{NOTEBOOK}?token={token}", root
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _check(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "make_notebooks.py"), "--check",
                           str(folder)], capture_output=True, text=True)


@pytest.mark.slow
def test_jupyterlab_runs_completes_and_saves_a_summary_notebook_that_stays_clean(lab):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url, root = lab
    saved = root / "notebooks" / NOTEBOOK
    generated = json.loads(saved.read_text())
    started = time.monotonic()
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium() as driver:
        driver.set_window_size(1400, 1000)
        driver.get(url)

        def css(selector: str) -> list:
            return driver.find_elements(By.CSS_SELECTOR, selector)

        def status() -> str | None:
            found = css(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator")
            return found[0].get_attribute("data-status") if found else None

        def tab_dirty() -> bool:
            return any(NOTEBOOK in t.text for t in css("li.lm-TabBar-tab.jp-mod-dirty"))

        def keys(*sequence: str) -> None:
            ActionChains(driver).send_keys(*sequence).perform()

        def chord(modifier: str, key: str) -> None:  # send_keys would let go of the modifier
            ActionChains(driver).key_down(modifier).send_keys(key).key_up(modifier).perform()

        _wait("the notebook and its kernel", lambda: css(".jp-Notebook .jp-Cell")
              and status() == "idle", timeout=240)
        # opened on the kernel it names, make setup's (no kernel dialog, the kernelspec unchanged
        # in the saved notebook below)
        _wait("the kernel's name in the toolbar", lambda: "Python 3 (benchlib)" in
              css(".jp-NotebookPanel-toolbar")[0].text, timeout=30)

        # Run All from the Run menu
        next(m for m in css(".lm-MenuBar-item") if m.text.strip() == "Run").click()
        _wait("Run All Cells in the Run menu", lambda: [
            i for i in css("#jp-mainmenu-run .lm-Menu-item")
            if i.text.startswith("Run All Cells")], timeout=30)[0].click()
        prompts = ".jp-Notebook .jp-CodeCell .jp-InputPrompt"

        def finished() -> bool:
            texts = [p.text.strip() for p in css(prompts)]
            return (status() == "idle" and texts != []
                    and all(re.fullmatch(r"\[\d+\]:", t) for t in texts))

        _wait("Run All to finish", finished, timeout=300, every=1)
        errors = [o.text for o in css('.jp-OutputArea-output[data-mime-type='
                                      '"application/vnd.jupyter.stderr"]')]
        assert not [e for e in errors if TRACEBACK.search(e)], errors
        text = driver.find_element(By.CSS_SELECTOR, ".jp-Notebook").text
        # the test's campaign, found from notebooks/ at the default results_dir
        assert "13 runs" in text and "12 finished" in text and "synthetic vs real" in text, text[:2000]
        # every table caption reads whole where the table is: none runs past its output area
        clipped = driver.execute_script("""
            return Array.from(document.querySelectorAll('.jp-OutputArea-output caption'))
              .filter(c => c.getBoundingClientRect().right >
                           c.closest('.jp-OutputArea-output').getBoundingClientRect().right + 1)
              .map(c => c.innerText.slice(0, 80));""")
        assert css(".jp-OutputArea-output caption") and not clipped, clipped
        images = css(".jp-Notebook .jp-OutputArea-output img")
        assert len(images) >= 2  # the ratio plots
        driver.execute_script("arguments[0].scrollIntoView({block: 'end'})", images[0])
        time.sleep(1)
        driver.save_screenshot(str(SHOTS / "jupyterlab-run-all.png"))

        # a new cell at the end: import benchlib, then complete `benchlib.` with Tab
        cells = css(".jp-Notebook .jp-Cell")
        cells[-1].find_element(By.CSS_SELECTOR, ".jp-InputPrompt").click()
        keys(Keys.ESCAPE, "b", Keys.ENTER, "import benchlib")
        chord(Keys.SHIFT, Keys.ENTER)
        _wait("import benchlib to run", lambda: len(css(".jp-Notebook .jp-Cell")) == len(cells) + 2
              and status() == "idle", timeout=120)
        keys("benchlib.", Keys.TAB)
        t0 = time.monotonic()
        try:
            items = _wait("the completer to list benchlib.load", lambda: [
                i.text for i in css(".jp-Completer .jp-Completer-item")
                if i.find_element(By.CSS_SELECTOR, ".jp-Completer-match").text == "load"],
                timeout=20, every=0.2)
        finally:
            shown = time.monotonic() - t0
            driver.save_screenshot(str(SHOTS / "jupyterlab-completion.png"))
            print(f"completion popup: {shown:.1f} s after Tab")
        assert items
        # each name typed as the kernel reports it (function, module, instance), never the
        # '<unknown>' JupyterLab shows when the kernel sends no types
        listed = [i.text for i in css(".jp-Completer .jp-Completer-item")]
        assert "function" in items[0] and not [t for t in listed if "unknown" in t], listed
        assert any("module" in t and "analysis" in t for t in listed), listed

        # saved with the two new cells: the check names the change
        keys(Keys.ESCAPE, Keys.ESCAPE)
        chord(Keys.CONTROL, "s")
        _wait("the save", lambda: not tab_dirty() and "benchlib." in saved.read_text(), timeout=60)
        result = _check(saved.parent)
        changed = f"{NOTEBOOK}: {len(cells) + 2} cells, expected {len(cells)}"
        assert result.returncode == 1 and changed in result.stdout, result.stdout
        # the two cells deleted (in command mode: d d, twice), saved again: clean
        keys(Keys.ESCAPE, "d", "d")
        time.sleep(0.5)
        keys("d", "d")
        _wait("the added cells deleted", lambda: len(css(".jp-Notebook .jp-Cell")) == len(cells),
              timeout=30)
        chord(Keys.CONTROL, "s")
        _wait("the second save", lambda: not tab_dirty() and len(json.loads(saved.read_text())[
            "cells"]) == len(cells), timeout=60)

    nb = json.loads(saved.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] for c in code)  # every cell ran and was saved with outputs
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    # JupyterLab wrote the kernel's language_info (with the Python's patch version, so the
    # generator does not commit it) and left the rest of the notebook's metadata as generated
    assert {k: v for k, v in nb["metadata"].items() if k != "language_info"} == \
        {k: v for k, v in generated["metadata"].items() if k != "language_info"}
    assert nb["metadata"]["kernelspec"]["display_name"] == "Python 3 (benchlib)"
    result = _check(saved.parent)
    assert result.returncode == 0, result.stdout
    print(f"JupyterLab in Chromium: {time.monotonic() - started:.0f} s")
