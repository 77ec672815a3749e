"""The static walk (``benchmarks/static_walks.py``) follows a value through the source: the
sweep's walk reaches the params reader, a value made by a call is followed only through calls,
and an entry the tree lacks is said."""

from __future__ import annotations

import pytest

from .conftest import ROOT, benchmark_module

WALKS = benchmark_module("static_walks")


def _walk(spec: str, through: bool) -> list[tuple[str, str]]:
    WALKS.THROUGH_CALLS = through
    try:
        walker = WALKS.Walker(WALKS.load(ROOT))
        path, qualname, parameter = spec.split(":")
        walker.visit(("benchlib." + path.removesuffix(".py").replace("/", "."), qualname),
                     {parameter})
        return walker.order
    finally:
        WALKS.THROUGH_CALLS = False


@pytest.mark.slow  # 2.5-4.6 s: in make test, out of the edit loop
def test_the_sweep_walk_reaches_the_params_reader_and_through_calls_goes_further():
    by_values = _walk("cli/sweep.py:Sweep.run:args", through=False)
    through = _walk("cli/sweep.py:Sweep.run:args", through=True)
    assert ("benchlib.inputs.params", "load_sweep") in by_values
    assert set(by_values) < set(through)  # the Sweep load_sweep returns is followed too
    assert by_values[0] == ("benchlib.cli.sweep", "Sweep.run")


@pytest.mark.slow  # 2.5-4.6 s: in make test, out of the edit loop
def test_an_entry_the_tree_lacks_is_none():
    assert WALKS.run_walk(WALKS.load(ROOT), "cli/nothing.py:Nope.run:args",
                          lambda module: "benchlib", ["benchlib"]) is None


def test_a_tree_without_benchlib_is_refused_by_name(tmp_path, capsys):
    with pytest.raises(SystemExit) as ended:
        WALKS.main([str(tmp_path)])
    assert ended.value.code == 2
    assert f"{tmp_path}: no benchlib/ folder" in capsys.readouterr().err
