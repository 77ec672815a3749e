"""One vocabulary per concept (benchlib.vocabulary): the values are plain strings, the mapping
from a run's precision to the probe's matmul precision is the only one, and no module outside
the vocabulary spells a precision or writes a record status of its own."""

from __future__ import annotations

import ast
import json
import typing
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from benchlib import vocabulary
from benchlib.analysis import junit, references
from benchlib.compare import regression
from benchlib.execute.campaign import LEDGER_STATES, PointStatus
from benchlib.execute.sweep import skip_reason
from benchlib.inputs.config import Precision
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.probes.config import NodeProbeConfig
from benchlib.records import flags, schema
from benchlib.vocabulary import (
    CheckVerdict,
    CompareVerdict,
    JobPhase,
    JUnitOutcome,
    MatmulPrecision,
    PointState,
    RecordStatus,
    matmul_precision,
)

from .conftest import ROOT

PACKAGE = ROOT / "benchlib"
#: Values only the vocabulary may spell as a string constant (shared words such as "ok" and
#: "failed" appear in prose and other vocabularies, so they are checked by use below).
OWNED = {"fp32", "amp_fp16", "amp_bf16", "tf32", "fp16", "bf16", "no change", "undecided", "only in new",
         "only in base", "no measurement", "no reference", "run failed"}


def _constants(tree: ast.AST) -> list[ast.Constant]:
    """String constants of a module that are not docstrings."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [node for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docstrings]


def test_values_are_plain_strings_in_files_and_frames():
    assert RecordStatus.OK == "ok" and json.dumps({"status": RecordStatus.OK}) == '{"status": "ok"}'
    assert f"{PointState.DONE}" == "done" and str(CompareVerdict.NO_CHANGE) == "no change"
    frame = pd.DataFrame({"status": ["ok", "failed"]})
    assert list(frame["status"] == RecordStatus.OK) == [True, False]
    assert schema.STATUSES == ("ok", "failed")


def test_config_literals_come_from_the_vocabulary():
    assert typing.get_args(Precision) == tuple(vocabulary.Precision)
    assert NodeProbeConfig().precisions == list(MatmulPrecision)
    assert type(ClassificationConfig(precision="amp_bf16").precision) is str
    with pytest.raises(ValueError, match="'fp32', 'tf32', 'amp_fp16' or 'amp_bf16'"):
        ClassificationConfig(precision="fp8")


def test_one_mapping_from_run_precision_to_matmul_precision():
    assert set(vocabulary.MATMUL_PRECISION) == set(vocabulary.Precision)
    assert matmul_precision("amp_fp16") == "fp16" and matmul_precision("tf32") == "tf32"
    assert matmul_precision("int8") is None and matmul_precision(None) is None


def test_no_module_outside_the_vocabulary_spells_its_owned_values():
    spelled = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "vocabulary.py":
            continue
        found = {c.value for c in _constants(ast.parse(path.read_text())) if c.value in OWNED}
        if found:
            spelled[str(path.relative_to(ROOT))] = sorted(found)
    assert spelled == {}


def test_every_status_is_named_through_the_vocabulary():
    """``"status": ...`` in a dict and ``status=...`` in a call, anywhere in the package, name
    a RecordStatus or PointState member: no module spells a status of its own."""
    written = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                written += [(path.name, v) for k, v in zip(node.keys, node.values, strict=True)
                            if isinstance(k, ast.Constant) and k.value == "status"]
            elif isinstance(node, ast.Call):
                written += [(path.name, kw.value) for kw in node.keywords if kw.arg == "status"]
    assert len(written) >= 5, "the scan no longer finds where records and points get a status"
    spelled = [(name, value.value) for name, value in written if isinstance(value, ast.Constant)]
    assert spelled == []


def test_one_point_state_for_sweep_and_ledger():
    assert skip_reason(PointState.DONE, force=False, retry_failed=False) == "done"
    assert skip_reason(PointState.FAILED, force=False, retry_failed=True) == ""
    assert skip_reason(PointState.PENDING, force=False, retry_failed=False) == ""
    assert PointState.of_record("ok") == "done" and PointState.of_record("failed") == "failed"
    assert set(LEDGER_STATES) == set(PointState) - {PointState.SKIPPED}
    assert PointStatus("p", "train", PointState("running")).status == "running"


def test_verdict_tables_hold_vocabulary_values():
    ref = references.Reference(metric="throughput", value=100.0, unit="images/s", name="r",
                               source="s", match={})
    rows = pd.DataFrame([{"status": "ok", "throughput": 100.0, "flags": ""},
                         {"status": "failed", "error": "boom", "flags": ""}])
    checked = references.check(rows, [ref])
    assert set(checked["verdict"]) <= set(CheckVerdict)
    assert all(type(v) is str for v in checked["verdict"])
    found = {"pairs": 3, "known": True, "low": 0.5, "high": 0.6}
    assert regression.verdict(found) == CompareVerdict.REGRESSION
    assert type(regression.verdict(found)) is str
    cases = references.junit_cases(checked)
    assert [c.outcome for c in cases] == [JUnitOutcome.PASSED, JUnitOutcome.ERROR]
    xml = ET.tostring(junit.to_xml("check", cases).getroot(), encoding="unicode")
    assert '<error message="boom"' in xml and 'errors="1"' in xml


def test_flags_are_a_list_in_python():
    assert flags.of("contended,short") == ["contended", "short"]
    assert flags.of(["noisy"]) == ["noisy"] and flags.of(float("nan")) == []
    assert flags.of({"flags": "throttled"}) == ["throttled"]
    assert flags.of(pd.Series({"flags": "short,noisy"})) == ["short", "noisy"]
    assert flags.join(flags.of("short,contended")) == "contended,short"


def test_a_queued_or_running_job_gives_its_point_state():
    from benchlib.execute import slurm

    assert set(slurm.ACTIVE_STATES.values()) == {JobPhase.PENDING, JobPhase.RUNNING}
    assert all(PointState(phase) == phase for phase in slurm.ACTIVE_STATES.values())
    assert slurm.parse_scontrol("5", "JobId=5 JobState=TIMEOUT Reason=TimeLimit").phase == "ended"


def test_the_threshold_is_written_once():
    """5 % is vocabulary.DEFAULT_THRESHOLD: no module of benchlib spells it as a default (the
    generated facade copies the signatures it stands for)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "benchlib"
    spelled = re.compile(r"(threshold\w*\s*(:\s*float\s*)?=\s*0\.05\b|\"threshold\":\s*0\.05\b"
                         r"|default=0\.05\b|\"threshold\",\s*0\.05\b)")
    found = [f"{path.relative_to(root)}:{number}" for path in sorted(root.rglob("*.py"))
             if path.name != "vocabulary.py" and path != root / "analysis" / "__init__.py"
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if spelled.search(line)]
    assert found == []
