"""One table maps every verdict of check, compare, history and fleet to its exit status and
JUnit outcome (benchlib.analysis.gate); the docs show that table, and no other module maps
a verdict to an exit status or a JUnit outcome."""

from __future__ import annotations

import re

import pytest

from benchlib.analysis import gate
from benchlib.vocabulary import CheckVerdict, CompareVerdict, NodeState

from .conftest import ROOT


def test_the_docs_show_the_table_the_code_uses():
    text = (ROOT / "docs" / "acceptance.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- exit-table:[^\n]*-->\n(.*?)\n<!-- /exit-table -->", text, re.S)
    assert shown and shown.group(1) == gate.exit_table()


@pytest.mark.parametrize(("command", "vocabulary"), [
    ("check", CheckVerdict), ("compare", CompareVerdict), ("fleet", NodeState)])
def test_every_verdict_of_a_command_has_a_meaning(command, vocabulary):
    assert set(gate.MEANINGS[command]) == {v.value for v in vocabulary}


@pytest.mark.parametrize(("command", "found", "status"), [
    ("check", ["pass", "no reference"], 0), ("check", ["no reference"], 3),
    ("check", ["pass", "unreliable"], 3), ("check", ["pass", "run failed"], 1),
    ("compare", ["no change", "only in new"], 0), ("compare", ["only in new"], 3),
    ("compare", [], 3), ("compare", ["regression", "unknown"], 1),
    ("history", [], 0), ("history", ["unknown"], 0), ("history", ["regression"], 1),
    ("fleet", ["ok"], 0), ("fleet", ["ok", "stale"], 3), ("fleet", [], 3),
    ("fleet", ["slow", "missing"], 1)])
def test_one_rule_makes_every_exit_status(command, found, status):
    assert gate.exit_code(command, found) == status


def test_no_other_module_maps_a_verdict_to_an_exit_status_or_a_junit_outcome():
    mapped = re.compile(r"EXIT_UNCERTIFIED|JUnitOutcome\.(PASSED|FAILURE|ERROR|SKIPPED)")
    elsewhere = [path.relative_to(ROOT).as_posix() for path in (ROOT / "benchlib").rglob("*.py")
                 if mapped.search(path.read_text(encoding="utf-8"))]
    # the table itself, the exit codes' definitions, the CLI's epilog and the XML writer
    assert sorted(elsewhere) == ["benchlib/analysis/gate.py", "benchlib/analysis/junit.py",
                                 "benchlib/cli/__init__.py", "benchlib/errors.py"]
