"""What each verdict means for a CI gate: the exit status and the JUnit outcome of every verdict
of ``benchlib check``, ``compare``, ``history``, ``fleet`` and ``calibrate``, in one table.

Every verdict has a :class:`Weight`: it fails the gate (exit 1), leaves it uncertain (exit 3:
it could not be judged), passes (judged and fine), or stands aside (does not apply: skipped in
JUnit, and on its own it judges nothing). One rule makes every command's exit status from its
verdicts (:func:`exit_code`): 1 when one fails, else 3 when one is uncertain or none was judged,
else 0; bad input is 2 before any verdict. ``history`` lists only its change points, so an
empty list from histories long enough to judge is steady (0); where no history was long enough
it says :data:`NOTHING_JUDGED` (3). :func:`exit_table` is the table docs/acceptance.md
shows (a test keeps the two the same).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from benchlib.errors import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_UNCERTIFIED
from benchlib.vocabulary import CheckVerdict, CompareVerdict, JUnitOutcome, NodeState


class Weight(StrEnum):
    """What a verdict does to a gate."""

    FAILS = "fails"
    UNCERTAIN = "uncertain"
    PASSES = "passes"
    ASIDE = "aside"


@dataclass(frozen=True)
class Meaning:
    """A verdict's weight and the JUnit outcome of its test case."""

    weight: Weight
    junit: JUnitOutcome


#: The verdict of a command that judged nothing at all (``history`` with no history long
#: enough for a change point, ``calibrate`` with no noise measured): never a pass.
NOTHING_JUDGED = "nothing judged"
#: ``history``: a slow drift whose change so far is not known to pass the threshold (a note).
DRIFT = "drift"
#: ``calibrate``: a configuration's noise between campaigns was measured; a round's point failed.
MEASURED, POINT_FAILED = "noise measured", "a point failed"

_FAIL, _ERROR = Meaning(Weight.FAILS, JUnitOutcome.FAILURE), Meaning(Weight.FAILS, JUnitOutcome.ERROR)
_UNSURE = Meaning(Weight.UNCERTAIN, JUnitOutcome.SKIPPED)
_PASS, _ASIDE = Meaning(Weight.PASSES, JUnitOutcome.PASSED), Meaning(Weight.ASIDE, JUnitOutcome.SKIPPED)

#: Every command's verdicts and what each means; the one place they are mapped.
MEANINGS: dict[str, dict[str, Meaning]] = {
    "check": {CheckVerdict.PASS: _PASS, CheckVerdict.FAIL: _FAIL,
              CheckVerdict.RUN_FAILED: _ERROR, CheckVerdict.UNRELIABLE: _UNSURE,
              CheckVerdict.NO_MEASUREMENT: _ASIDE, CheckVerdict.NO_REFERENCE: _ASIDE},
    "compare": {CompareVerdict.REGRESSION: _FAIL, CompareVerdict.IMPROVEMENT: _PASS,
                CompareVerdict.NO_CHANGE: _PASS, CompareVerdict.UNDECIDED: _UNSURE,
                CompareVerdict.UNKNOWN: _UNSURE,
                CompareVerdict.UNRELIABLE: _UNSURE, CompareVerdict.ONLY_IN_NEW: _ASIDE,
                CompareVerdict.ONLY_IN_BASE: _ASIDE},
    "history": {CompareVerdict.REGRESSION: _FAIL, CompareVerdict.IMPROVEMENT: _PASS,
                CompareVerdict.NO_CHANGE: _PASS, CompareVerdict.UNDECIDED: _ASIDE,
                CompareVerdict.UNKNOWN: _ASIDE,
                CompareVerdict.UNRELIABLE: _ASIDE, DRIFT: _ASIDE, NOTHING_JUDGED: _UNSURE},
    "fleet": {NodeState.FAILED: _FAIL, NodeState.SLOW: _FAIL, NodeState.STALE: _UNSURE,
              NodeState.MISSING: _UNSURE, NodeState.UNKNOWN: _UNSURE, NodeState.OK: _PASS},
    "calibrate": {MEASURED: _PASS, NOTHING_JUDGED: _UNSURE, POINT_FAILED: _FAIL},
}
#: Commands whose table lists only what was found (no rows: nothing changed, exit 0).
LISTS_FINDINGS = frozenset({"history"})
#: Commands with ``--junit``.
WRITES_JUNIT = frozenset({"check", "compare", "fleet"})


def meaning(command: str, verdict: object) -> Meaning:
    """What ``verdict`` means for ``command``; a verdict it never gives stands aside."""
    return MEANINGS[command].get(str(verdict), _ASIDE)


def with_weight(command: str, weight: Weight) -> tuple[str, ...]:
    """``command``'s verdicts of ``weight``, in the vocabulary's order."""
    return tuple(v for v, m in MEANINGS[command].items() if m.weight == weight)


def junit_outcome(command: str, verdict: object) -> JUnitOutcome:
    """The JUnit outcome of a test case with ``verdict``."""
    return meaning(command, verdict).junit


def exit_code(command: str, verdicts: Iterable[object]) -> int:
    """1 when a verdict fails, else 3 when one is uncertain or none was judged (none passed;
    for ``history`` an empty list is steady), else 0."""
    weights = {meaning(command, v).weight for v in verdicts}
    if Weight.FAILS in weights:
        return EXIT_FAILURE
    if Weight.UNCERTAIN in weights:
        return EXIT_UNCERTIFIED
    return 0 if Weight.PASSES in weights or command in LISTS_FINDINGS else EXIT_UNCERTIFIED


def exit_table() -> str:
    """Markdown: each command's verdicts by exit status and JUnit outcome."""
    said = {Weight.FAILS: f"{EXIT_FAILURE}", Weight.UNCERTAIN: f"{EXIT_UNCERTIFIED}",
            Weight.PASSES: "0", Weight.ASIDE: "0; 3 when nothing was judged"}
    lines = ["| command | verdict | exit status | JUnit |", "|---|---|---|---|"]
    for command, verdicts in MEANINGS.items():
        for verdict, found in verdicts.items():
            status = said[found.weight]
            if command in LISTS_FINDINGS and found.weight == Weight.ASIDE:
                status = "0"
            junit = found.junit if command in WRITES_JUNIT else "- (no --junit)"
            lines.append(f"| `{command}` | {verdict} | {status} | {junit} |")
    lines.append(f"| every command | bad input (a file, a key, a value) | {EXIT_BAD_INPUT} | - |")
    return "\n".join(lines)
