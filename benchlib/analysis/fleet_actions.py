"""What to do about a fleet's node states (:mod:`benchlib.analysis.fleet_health`): the exit
status, Slurm drain commands for the failing nodes, and JUnit test cases for CI.

Node names and reasons are record text: a drain line must never let them run a command in the
shell it is pasted into. A node name is used only when it is a plain Slurm host name
(:data:`NODE_NAME`: letters, digits, ``.``, ``_``, ``-``; else the node gets a comment line
saying why it has no command); a reason keeps only :data:`REASON_CHARACTERS` (others become
``?``) and is double-quoted, so no ``$``, backquote, backslash, quote or ``!`` reaches the shell.
benchlib prints these lines and never runs them.
"""

from __future__ import annotations

import re

import pandas as pd

from benchlib.analysis.junit import Case
from benchlib.errors import EXIT_FAILURE, EXIT_UNCERTIFIED
from benchlib.vocabulary import JUnitOutcome, NodeState

#: States that make a node fail (drained, JUnit failure, exit 1).
FAILING = (NodeState.FAILED, NodeState.SLOW)
#: States that leave a node unjudged (JUnit skipped, exit 3 when nothing fails).
UNJUDGED = (NodeState.STALE, NodeState.MISSING, NodeState.UNKNOWN)
#: A node name a drain line may carry (a Slurm host name).
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: Characters a drain reason keeps; any other becomes ``?``.
REASON_CHARACTERS = re.compile(r"[^A-Za-z0-9 .,:;%()+=/_-]")
#: Longest reason written (Slurm keeps it in its state; the rest is cut with "...").
REASON_LENGTH = 200


def exit_code(summary: pd.DataFrame) -> int:
    """1 when a node failed or is slow, else 3 when a node is stale, missing or unknown (or no
    node was judged), else 0."""
    states = set(summary["state"]) if len(summary) else set()
    if states & set(FAILING):
        return EXIT_FAILURE
    if not states or states & set(UNJUDGED):
        return EXIT_UNCERTIFIED
    return 0


def safe_reason(text: str) -> str:
    """``text`` as a drain reason: one line of :data:`REASON_CHARACTERS`, at most
    :data:`REASON_LENGTH` characters."""
    flat = REASON_CHARACTERS.sub("?", " ".join(str(text).split()))
    return flat if len(flat) <= REASON_LENGTH else flat[:REASON_LENGTH - 3] + "..."


def drain_lines(summary: pd.DataFrame) -> list[str]:
    """``scontrol update nodename=NODE state=drain reason="benchlib: ..."`` for each failing
    node; a comment line for a failing node whose name is not a plain host name."""
    lines = []
    for row in summary[summary["state"].isin(FAILING)].itertuples():
        reason = safe_reason(f"benchlib: {row.state}: {row.reason}")
        if NODE_NAME.fullmatch(str(row.node)):
            lines.append(f'scontrol update nodename={row.node} state=drain reason="{reason}"')
        else:
            lines.append(f"# not drained: node name {safe_reason(str(row.node))!r} is not a "
                         "plain host name (letters, digits, . _ -); check it by hand")
    return lines


def junit_cases(states: pd.DataFrame) -> list[Case]:
    """One case per node and configuration: failed / slow a failure; stale, missing and
    unknown skipped (with the reason); ok passed."""
    cases = []
    for row in states.itertuples():
        outcome = (JUnitOutcome.FAILURE if row.state in FAILING
                   else JUnitOutcome.SKIPPED if row.state in UNJUDGED else JUnitOutcome.PASSED)
        message = f"{row.state}: {row.reason}"
        cases.append(Case(f"benchlib.fleet.{row.node}", str(row.configuration), outcome,
                          message, f"{message}\nerror: {row.error or '-'}"))
    return cases
