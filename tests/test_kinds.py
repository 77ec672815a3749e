"""Benchmark kinds as registered objects: the registry loads each lazily, one make_record
serves every kind (probes included), and code outside the kinds does not ask which kind it has."""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import torch

from benchlib import discovery, kinds, registry
from benchlib.kinds import Kind
from benchlib.kinds.probes.config import AllReduceConfig, NodeProbeConfig
from benchlib.kinds.probes.workload import NodeProbeResult
from benchlib.kinds.probes.workload_collectives import AllReduceResult
from benchlib.kinds.record import make_record
from benchlib.records.results import load

from .conftest import ROOT

#: The places outside a kind's own modules that still name benchmarks, each with its reason
#: (file -> how many such lines). Adding one fails the test: ask the kind instead.
NAMED_ON_PURPOSE = {
    # the shipped published tables become records: their benchmark column has to be written
    "benchlib/reference/__init__.py": 3,
}


def _own_modules() -> set[str]:
    """Each kind's own files: benchlib/kinds/ (what it is where records are made), the
    registry, every entry's config module and run function's module, and how each kind is
    shown (its notebook's layout, by kind name)."""
    own = {"benchlib/registry.py", "benchlib/publish/benchmark_notebook/layouts.py"}
    for entry in registry.benchmarks():
        own.add(entry.config.__module__.replace(".", "/") + ".py")
        own.add(kinds.KINDS[entry.kind].run.partition(":")[0].replace(".", "/") + ".py")
    return own


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def _is_unit(node: ast.AST) -> bool:
    """``x["unit"]`` or ``x.get("unit")``: a record's throughput unit."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "unit"
    return (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get"
            and bool(node.args) and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "unit")


def _asks(node: ast.AST, docs: set[int], names: set[str], configs: set[str]) -> bool:
    """Whether ``node`` is a benchmark's name (or shared prefix) outside a docstring, an
    ``isinstance`` of a config class, or a proxy for the kind: a record's unit compared with a
    unit's text (``df["unit"] == "voxels/s"``: ask the kind what it counts instead)."""
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        return any(map(_is_unit, sides)) and any(
            isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return id(node) not in docs and node.value in names
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance":
        return any(getattr(n, "id", getattr(n, "attr", "")) in configs
                   for n in ast.walk(node.args[1]))
    return False


def dispatch_lines(root: Path) -> dict[str, list[int]]:
    """Lines of ``root/benchlib`` outside the kinds' own modules that ask which kind they
    have: a benchmark's or notebook's name as a string (``== "train"``, ``{"probe_node": ...}``,
    ``startswith("probe_")``: a prefix two names share), or ``isinstance`` of a config class."""
    names = {n for e in registry.benchmarks() for n in (e.benchmark, e.notebook)}
    prefixes = {a[:i] for a in names for b in names if a != b
                for i in range(3, len(a)) if a[i - 1] == "_" and b.startswith(a[:i])}
    configs = {e.config.__name__ for e in registry.benchmarks()} | \
        {base.__name__ for e in registry.benchmarks() for base in e.config.__mro__[1:]
         if base.__name__.endswith("Config")}
    own, found = _own_modules(), {}
    for path in sorted((root / "benchlib").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("benchlib/kinds/") or rel in own:
            continue
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        lines = {node.lineno for node in ast.walk(tree) if _asks(node, docs, names | prefixes,
                                                                 configs)}
        if lines:
            found[rel] = sorted(lines)
    return found


def test_no_code_outside_the_kinds_asks_which_kind_it_has():
    found = {path: len(lines) for path, lines in dispatch_lines(ROOT).items()}
    assert found == NAMED_ON_PURPOSE, dispatch_lines(ROOT)
    assert len(NAMED_ON_PURPOSE) <= 5


def test_the_scan_finds_a_kind_asked_by_name(tmp_path):
    planted = tmp_path / "benchlib" / "analysis" / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text('"""A module."""\n\n\ndef f(df, config):\n'
                       '    """unet3d_train in a docstring is fine."""\n'
                       '    a = df[df["benchmark"] == "unet3d_train"]\n'
                       '    b = df["benchmark"].str.startswith("probe_")\n'
                       '    c = df[df["unit"] == "voxels/s"]\n'
                       '    d = config.get("unit") != "images/s"\n'
                       '    return a, b, c, d, isinstance(config, UNet3DTrainConfig)\n')
    assert dispatch_lines(tmp_path) == {"benchlib/analysis/planted.py": [6, 7, 8, 9, 10]}


def test_every_entry_names_a_registered_kind_whose_run_function_exists():
    for entry in registry.shipped():
        kind = kinds.KINDS[entry.kind]
        assert isinstance(kind, Kind), entry.notebook
        module, function = kind.run.split(":")
        assert callable(getattr(importlib.import_module(module), function)), kind.run
    assert kinds.kind_named("probe_node").timed_loop is False
    assert kinds.kind_named("train").timed_loop is True
    assert kinds.kind_named("not_a_benchmark") is None
    assert kinds.is_probe("probe_allreduce") and not kinds.is_probe("lm_train")


def test_a_kind_name_is_registered_once():
    with pytest.raises(ValueError, match="'classification' is already registered"):
        kinds.register_kind("classification")(type("Again", (Kind,), {}))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.shipped()[0])


def test_each_row_gets_its_kinds_fact_and_the_default_where_no_kind_has_it():
    rows = pd.Series(["train", "unet3d_predict", "no-such-benchmark", None, float("nan"), "train"])
    samples = kinds.fact_of_rows(rows, "samples", "?")
    assert samples.tolist() == ["images", "voxels", "?", "?", "?", "images"]
    assert kinds.fact_of_rows(rows, "lab_units", ()).map(bool).tolist() == [
        False, True, False, False, False, False]


def test_loading_records_imports_only_the_kinds_columns_and_no_torch():
    """The record schema reads each kind folder's ``columns`` module; no kind, network or
    workload comes with it."""
    code = ("import sys, benchlib.registry, benchlib.records.results, benchlib.records.schema as s; "
            "s.every_column(); "
            "print(sorted(m for m in sys.modules if m.startswith('benchlib.kinds') or m == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = ast.literal_eval(out.stdout.strip())
    folders = discovery.kind_folders()
    assert {"benchlib.kinds", "benchlib.kinds.base"} | {
        f"benchlib.kinds.{k}" for k in folders} | {f"benchlib.kinds.{k}.columns" for k in folders
                                                    } == set(loaded)


def test_the_shared_record_columns_name_no_kind():
    """A kind's own columns live in its folder: the shared table's entries say nothing only one
    kind has (a kind's words in a description mean the column belongs in that kind's folder)."""
    from benchlib.records import columns

    words = ("3D U-Net", "language model:", "node probe:", "smooth inference:")
    owned = [(c.name, w) for c in columns.COLUMNS for w in words if w in c.description]
    assert owned == []
    assert len(columns.every_column()) == len({c.name for c in columns.every_column()})


def test_a_column_declared_twice_names_both_places(monkeypatch):
    from types import SimpleNamespace

    from benchlib.records import columns

    twice = SimpleNamespace(__name__="site.columns", COLUMNS=(columns.COLUMNS[1],))
    monkeypatch.setattr(columns.discovery, "role_modules", lambda role: [twice])
    columns.every_column.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"'campaign' is declared in benchlib\.records\.columns "
                                              "and in site.columns"):
            columns.every_column()
    finally:
        columns.every_column.cache_clear()


def test_an_unknown_kind_names_the_known_ones():
    with pytest.raises(KeyError, match=r"known: .*unet3d_train"):
        kinds.get("no_such_kind")


def _node_result() -> NodeProbeResult:
    table = pd.DataFrame([{"probe": "matmul", "setting": "fp32", "value": 1.5, "unit": "TFLOP/s",
                           "note": ""}])
    return NodeProbeResult(device=torch.device("cpu"), table=table,
                           decode=pd.DataFrame(columns=["workers", "images_per_s"]))


def test_probe_records_go_through_the_one_make_record():
    config = NodeProbeConfig(device="cpu", precisions=["fp32"], iterations=2)
    record = make_record(config, _node_result(), {"env_torch": "x"},
                         allreduce={"throughput": 3.0, "num_devices": 2})
    assert record["benchmark"] == "probe_node" and record["throughput"] == 1.5
    assert record["status"] == "ok" and record["flags"] == ""  # 2 iterations: not "short"
    assert record["throughput_low"] is None and "throughput_high" in record
    assert record["allreduce_busbw_GBps"] == 3.0 and record["env_torch"] == "x"
    assert "flops_per_sample" not in record and "schema_version" in record


def test_allreduce_record_has_flags_and_interval_columns():
    table = pd.DataFrame({"size_bytes": [1024, 2048], "size": ["1KiB", "2KiB"], "count": [256, 512],
                          "time_us": [10.0, 12.0], "algbw_GBps": [0.1, 0.17],
                          "busbw_GBps": [0.1, 0.17]})
    result = AllReduceResult(device=torch.device("cpu"), world_size=2, table=table, num_devices=2)
    record = make_record(AllReduceConfig(device="cpu", iterations=3), result, {})
    # two sizes: both are the largest ones, the headline is their median
    assert record["throughput"] == 0.135 and record["busbw_2KiB"] == 0.17
    assert record["busbw_peak_size"] == "2KiB"
    assert record["flags"] == "" and record["throughput_low"] is None
    assert record["precision"] == "fp32"  # float32 said as every float32 run says it
    half = make_record(AllReduceConfig(device="cpu", iterations=3, dtype="bfloat16"), result, {})
    assert half["precision"] == "bf16"


def test_the_allreduce_headline_is_the_large_message_plateau_not_a_spike():
    """1.00 GB/s at 1 MiB once, 0.30-0.39 from 2 to 16 MiB (the demo's probe): the headline is
    the plateau of the largest messages, as nccl-tests users quote it."""
    sizes = [1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20]
    busbw = [1.00, 0.30, 0.39, 0.35, 0.33]
    table = pd.DataFrame({"size_bytes": sizes, "size": [f"{s >> 20}MiB" for s in sizes],
                          "count": [s // 4 for s in sizes], "time_us": [1.0] * 5,
                          "algbw_GBps": busbw, "busbw_GBps": busbw})
    result = AllReduceResult(device=torch.device("cpu"), world_size=2, table=table, num_devices=2)
    record = make_record(AllReduceConfig(device="cpu", iterations=3), result, {})
    assert record["throughput"] == pytest.approx(0.34)  # median of 0.30, 0.39, 0.35, 0.33
    assert record["busbw_peak_size"] == "1MiB"
    assert record["num_devices"] == 2 and record["unit"] == "GB/s (bus)"


PLUGIN = ROOT / "tests" / "example_kind"
PLUGIN_RUN = """
import json, pandas as pd
from benchlib import discovery, kinds, registry
from benchlib.analysis import comparisons
from benchlib.kinds.record import make_record
from benchlib.records.results import load
from benchlib.run import launch

entry = registry.by_notebook("example_axpy")
config = entry.config(device="cpu", elements=10000, repeats=3)
record = make_record(config, launch.run(config), {})
print(json.dumps({
    "kind": type(kinds.kind_of(config)).__name__, "probe": kinds.is_probe("example_axpy"),
    "record": {k: record[k] for k in ("benchmark", "unit", "status", "flags", "num_devices")},
    "throughput": record["throughput"] > 0, "kept": len(comparisons.benchmarks(pd.DataFrame([record]))),
}))
"""


@pytest.mark.slow  # installs a package (23 s of the edit loop)
def test_a_site_adds_a_kind_from_its_own_package_by_entry_point(tmp_path):
    plugin = tmp_path / "site"
    shutil.copytree(PLUGIN, plugin)  # its notebook is written into its own package's folder
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)])}
    (tmp_path / "shipped").mkdir()  # the shipped notebooks, written beside (not over) the checkout's
    made = subprocess.run([sys.executable, str(ROOT / "tools" / "make_notebooks.py"),
                           str(tmp_path / "shipped")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stderr
    notebook = plugin / "benchlib_example_kind" / "notebooks" / "example_axpy.ipynb"
    made_cells = nbformat.read(notebook, as_version=4).cells
    cell = made_cells[1]
    assert "parameters" in cell.metadata.tags and "elements = 1000000" in cell.source
    # its own view and layout, registered from its package: the comments and the heading
    assert "# float32 values in x and in y" in cell.source
    assert any(c.source.startswith("## Axpy settings") for c in made_cells), \
        [c.source[:40] for c in made_cells]

    out = subprocess.run([sys.executable, "-c", PLUGIN_RUN], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "kind": "Axpy", "probe": False, "throughput": True, "kept": 1,
        "record": {"benchmark": "example_axpy", "unit": "GB/s", "status": "ok", "flags": "",
                   "num_devices": 1}}

    # the user's path: a params file naming it, swept through papermill by the CLI
    (tmp_path / "axpy.yaml").write_text("campaign: axpy\nnotebook: example_axpy\n"
                                        "base: {device: cpu, repeats: 3}\n"
                                        "grid: {elements: [1000, 2000]}\n")
    benchlib = str(Path(sys.executable).with_name("benchlib"))
    swept = subprocess.run([benchlib, "sweep", "axpy.yaml", "--outputs", "out", "--quiet"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert swept.returncode == 0 and "2 points: 2 done" in swept.stdout, swept.stdout + swept.stderr
    frame = load(tmp_path / "out" / "axpy")
    assert len(frame) == 2 and set(frame["status"]) == {"ok"} and frame["point_id"].nunique() == 2
    assert set(frame["unit"]) == {"GB/s"} and (frame["throughput"] > 0).all()

    # without the entry point the name is unknown, and said so
    bare = subprocess.run([benchlib, "sweep", "axpy.yaml", "--dry-run"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert bare.returncode == 2 and "'example_axpy'" in bare.stderr


def test_a_site_package_that_fails_to_load_is_named(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(PLUGIN / "benchlib_example_kind-0.1.dist-info",
                    broken / "benchlib_example_kind-0.1.dist-info")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(broken), str(ROOT)])}
    (tmp_path / "p.yaml").write_text("campaign: p\nnotebook: train\n")
    done = subprocess.run([str(Path(sys.executable).with_name("benchlib")), "sweep", "p.yaml",
                           "--dry-run"], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "benchlib.benchmarks entry point 'example_axpy'" in done.stderr
    assert "package benchlib-example-kind" in done.stderr and "ModuleNotFoundError" in done.stderr


def test_a_kind_s_layout_is_registered_once():
    from benchlib.publish.benchmark_notebook import layouts

    assert set(layouts.LAYOUTS) <= set(kinds.KINDS)
    with pytest.raises(ValueError, match="has a layout already"):
        layouts.register_layout("node_probe", layouts.ONE_RUN)


def test_a_site_kind_cannot_take_a_shipped_kinds_name_before_the_shipped_ones_load():
    """In a fresh process, where no shipped kind is loaded yet, a site's kind named as a
    shipped one is refused at once, and the shipped kinds still load."""
    code = ("from benchlib import kinds\nfrom benchlib.kinds import Kind\ntry:\n"
            "    kinds.register_kind('classification')(type('Mine', (Kind,), {'run': 'x:y'}))\n"
            "except ValueError as error:\n    print('refused:', error)\n"
            "print(type(kinds.get('unet3d_train')).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "refused: kind 'classification' is already registered (Classification)", "UNet3DTrain"]
