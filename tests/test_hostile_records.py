"""Property-based: hostile values in a few sidecars never stop a command on the whole campaign.

Hypothesis writes one to three sidecars into a normal campaign (tests/fakes.py), each a good
record with one to three columns holding a hostile value: huge integers, 1e308, infinities, NaN,
zero, negatives, mappings, lists, null, booleans, lone surrogates, mathtext, markup, very long
text. ``benchlib results`` (and ``--csv``), ``check`` (and ``--junit``) and ``compare`` must
answer with a verdict's exit code, never the "unexpected error" of a crash, and write output
that can be encoded and parsed.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlib.cli import main
from benchlib.records.store import write_sidecar

from .conftest import examples
from .fakes import campaign

GOOD = {"schema_version": 1, "campaign": "fake", "cluster": "c1", "gpu": "H100",
        "benchmark": "train", "model": "resnet50", "precision": "amp_bf16", "num_nodes": 1,
        "num_workers": 8, "unit": "images/s", "status": "ok", "error": "", "num_devices": 1,
        "dataset": "synthetic", "batch_size": 32, "throughput": 2400.0,
        "time_iteration_s": 0.0133, "host": "n1"}
#: Columns a hostile value goes into: essential ones, others of every type, free text, a
#: column the schema does not describe.
COLUMNS = ("schema_version", "campaign", "cluster", "host", "gpu", "device_name", "num_devices",
           "num_nodes", "benchmark", "model", "dataset", "batch_size", "precision", "num_workers",
           "channels_last", "compile", "throughput", "unit", "time_iteration_s", "time_data_s",
           "iterations", "samples", "wall_time_s", "peak_memory_bytes", "status", "flags",
           "error", "contended", "noisy", "throttled_share", "energy_j", "point_id", "repeat",
           "env_torch", "env_slurm_job_nodelist", "result_final_loss", "my_custom_setting")
HOSTILE = (2**70, -(2**70), 10**400, 1e308, -1e308, math.inf, -math.inf, math.nan, 0, 0.0, -1,
           -0.5, 2.5, {}, {"a": [1, {"b": None}]}, [], [1, "x"], None, True, False, "\ud800",
           "a\udfffb", "$\\frac{1}{$", "<script>alert(1)</script>", "x" * 5000, "", "nan")
VALUE = (st.sampled_from(HOSTILE) | st.integers() | st.floats()
         | st.text(st.characters(categories=["Cs", "Sm", "Lo", "Cc"]), max_size=6))
RECORD = st.dictionaries(st.sampled_from(COLUMNS), VALUE, min_size=1, max_size=3)
#: Where a hostile record goes: a lone sidecar, or a sidecar made for a campaign notebook.
PLACES = st.sampled_from(["lone", "train-0", "train-5", "train-11"])


@pytest.fixture(scope="module")
def normal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return campaign(tmp_path_factory.mktemp("normal") / "fake")


def _run(argv: list[str]) -> tuple[int, str]:
    """``benchlib argv``: its exit code and output; fails on a crash or unencodable output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert "unexpected" not in err.getvalue(), (argv, err.getvalue())
    (out.getvalue() + err.getvalue()).encode("utf-8")  # a UTF-8 terminal can show it
    return code, out.getvalue()


def _write(folder: Path, index: int, place: str, changes: dict) -> None:
    record = {**GOOD, **changes}
    if place == "lone":
        text = json.dumps(record)  # NaN and Infinity as Python writes them; surrogates escaped
        (folder / f"hostile-{index}.json").write_text(text, encoding="utf-8")
    else:
        write_sidecar(folder / f"{place}.ipynb", record)  # fingerprinted: it is read first


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile=st.lists(st.tuples(PLACES, RECORD), min_size=1, max_size=3))
def test_every_command_survives_hostile_sidecars(normal, hostile):
    with tempfile.TemporaryDirectory() as scratch:
        folder = shutil.copytree(normal, Path(scratch) / "fake")
        for index, (place, changes) in enumerate(hostile):
            _write(folder, index, place, changes)
        csv, xml = Path(scratch) / "r.csv", Path(scratch) / "c.xml"
        assert _run(["results", str(folder)])[0] == 0  # the normal runs are always there
        assert _run(["results", str(folder), "--csv", str(csv)])[0] == 0
        table = pd.read_csv(csv, encoding="utf-8")
        assert len(table) >= 9  # 12 ok runs, the failed one, at most 3 replaced
        assert _run(["check", str(folder), "--junit", str(xml)])[0] in (0, 1, 3)
        assert ET.parse(xml).getroot().tag == "testsuites"
        assert _run(["compare", str(normal), str(folder)])[0] in (0, 1, 3)
