"""The short API completes at once: its names are real functions that import nothing heavy."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_facade  # noqa: E402


def test_the_facades_are_generated_from_the_functions_they_stand_for():
    assert make_facade.main(["--check"]) == 0


@pytest.mark.parametrize(("relative", "entries"), make_facade.FACADES.items())
def test_each_facade_function_has_its_real_signature_and_docstring(relative, entries):
    module = __import__(relative.removesuffix(".py").removesuffix("/__init__").replace("/", "."),
                        fromlist=["_"])
    for name, real_module, attribute in entries:
        real = getattr(__import__(real_module, fromlist=["_"]), attribute)
        facade = getattr(module, name)
        assert str(inspect.signature(facade)) == str(inspect.signature(real)), name
        assert inspect.getdoc(facade) == inspect.getdoc(real), name
        assert facade.__name__ == name


CHECK = """
import sys
import benchlib, benchlib.analysis, benchlib.results
for module in (benchlib, benchlib.analysis, benchlib.results):
    assert dir(module) == sorted(module.__all__) or dir(module) == list(module.__all__), dir(module)
    for name in dir(module):
        if name not in ("Scan", "Skipped"):   # classes load on first use
            assert hasattr(module, name), name  # what completion asks of every name
heavy = sorted(m for m in ("pandas", "torch", "numpy", "matplotlib", "scipy") if m in sys.modules)
print(",".join(heavy))
"""


def test_completion_imports_nothing_heavy():
    """dir() lists the public names only and asking each for its value (as Jedi does on Tab)
    imports neither pandas nor torch."""
    found = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                           cwd=ROOT, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == ""


def test_the_facade_calls_the_real_function(tmp_path):
    import benchlib
    from benchlib import analysis

    from .fakes import campaign

    df = benchlib.load(campaign(tmp_path / "c"))
    pairs = analysis.compare(df, "dataset", "synthetic", "real")
    assert analysis.headline(pairs) == pytest.approx(1 / 0.7)
    assert analysis.effect(pairs)["geomean"] == analysis.headline(pairs)


def test_a_kernel_completes_the_facade_with_load_and_without_importing_pandas():
    """``complete_request`` on ``benchlib.`` through a real kernel, as JupyterLab sends it."""
    manager_module = pytest.importorskip("jupyter_client.manager")
    manager, client = manager_module.start_new_kernel(kernel_name="python3")
    try:
        client.execute_interactive("import benchlib", timeout=120)
        reply = client.complete("benchlib.", 9, reply=True, timeout=120)["content"]
        assert {"load", "analysis", "scan", "diagnose"} <= set(reply["matches"])
        assert not {"Any", "Path", "importlib", "annotations"} & set(reply["matches"])
        reply = client.complete("benchlib.analysis.", 18, reply=True, timeout=120)["content"]
        assert {"scaling", "compare", "effect", "headline"} <= set(reply["matches"])
        out: list[str] = []
        client.execute_interactive("import sys; print('pandas' in sys.modules)", timeout=120,
                                   output_hook=lambda m: out.append(m["content"].get("text", "")))
        assert "".join(out).strip() == "False"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
