"""What to do about a fleet's node states (:mod:`benchlib.fleet.health`): each node's overall
state (:func:`node_summary`), the exit status, Slurm drain commands for the failing nodes, and
JUnit test cases for CI.

Node names and reasons are record text: a drain line must never let them run a command in the
shell it is pasted into. A node name is used only when it is a plain Slurm host name
(:data:`~benchlib.fleet.health.NODE_NAME`: letters, digits, ``.``, ``_``, ``-``; else the node
gets a comment line saying why it has no command); a reason keeps only :data:`REASON_CHARACTERS`
(others become ``?``) and is double-quoted, so no ``$``, backquote, backslash, quote or ``!``
reaches the shell.
benchlib prints these lines and never runs them.
"""

from __future__ import annotations

import re

import pandas as pd

import benchlib.fleet.health as fleet_health
from benchlib.analysis.gate import Weight, junit_outcome, with_weight
from benchlib.analysis.junit import Case
from benchlib.errors import InputError
from benchlib.fleet.health import NODE_NAME
from benchlib.records.values import one_line
from benchlib.vocabulary import NodeState

#: States that make a node fail (drained, JUnit failure, exit 1).
FAILING = with_weight("fleet", Weight.FAILS)
#: States that leave a node unjudged (JUnit skipped, exit 3 when nothing fails).
UNJUDGED = with_weight("fleet", Weight.UNCERTAIN)
#: One entry of a Slurm node list: a prefix, at most one bracketed range list, a suffix.
HOSTLIST_ENTRY = re.compile(r"([^\[\],]*)\[([0-9,\-]+)\]([^\[\],]*)")
#: Characters a drain reason keeps; any other becomes ``?``.
REASON_CHARACTERS = re.compile(r"[^A-Za-z0-9 .,:;%()+=/_-]")
#: Longest reason written (Slurm keeps it in its state; the rest is cut with "...").
REASON_LENGTH = 200


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
        outcome = junit_outcome("fleet", row.state)
        message = f"{row.state}: {row.reason}"
        cases.append(Case(f"benchlib.fleet.{row.node}", str(row.configuration), outcome,
                          message, f"{message}\nerror: {row.error or '-'}"))
    return cases


def problem_lines(summary: pd.DataFrame) -> list[str]:
    """``STATE node: reason``, one line for each node that is not ok."""
    return [f"{row.state.upper()} {one_line(row.node)}: {one_line(row.reason)}"
            for row in summary[summary["state"] != NodeState.OK].itertuples()]


MAX_EXPECTED = 100_000  #: node names one --expect entry may expand to


def _entry(entry: str) -> list[str]:
    """One node-list entry's names: ``node[001-003,010]`` -> node001 ... node010."""
    found = HOSTLIST_ENTRY.fullmatch(entry)
    if found is None:
        return [entry]
    prefix, ranges, suffix = found.groups()
    names = []
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or not (high or low).isdigit():
            raise ValueError(part)
        if int(high or low) < int(low):
            raise InputError(f"--expect {entry}: the range {part} runs backwards; write it low "
                             f"to high ({prefix}[{high}-{low}]{suffix})")
        if len(names) + int(high or low) - int(low) + 1 > MAX_EXPECTED:
            raise InputError(f"--expect {entry}: more than {MAX_EXPECTED:,} node names; give "
                             "the nodes of one cluster (node[001-512])")
        names += [f"{prefix}{n:0{len(low)}d}{suffix}" for n in range(int(low), int(high or low) + 1)]
    return names


def expected_nodes(given: list[str]) -> list[str]:
    """``--expect`` values as node names: comma-separated, each a host name or a Slurm node
    list (``node[001-004,010]``); InputError (exit 2) naming one that is neither."""
    names: list[str] = []
    for text in given:
        if not text.strip(" ,"):
            raise InputError(f"--expect {text!r}: no node named; give host names or a Slurm "
                             "node list, comma-separated: node01,node02 or node[001-004]")
        entries = re.split(r",(?![^\[]*\])", text)  # commas outside brackets
        try:
            found = [n for e in entries if e.strip() for n in _entry(e.strip())]
        except InputError:
            raise
        except ValueError:
            found = [text]
        for name in found:
            if not NODE_NAME.fullmatch(name):
                raise InputError(f"--expect {text}: {name!r} is not a node name; give host names "
                                 "(letters, digits, . _ -) or a Slurm node list, comma-separated: "
                                 "node01,node02 or node[001-004]")
        names += found
    return names


def _reasons(rows: pd.DataFrame) -> str:
    """The reasons of ``rows`` (one node's configurations in one state), each said once: a
    configuration's own (``train ...: 0.85x ...``), or how many share it (``14 configurations:
    no baseline ...``), never the same reason once per configuration."""
    parts = []
    for reason, configurations in rows.groupby("reason", sort=False)["configuration"]:
        named = list(configurations)
        parts.append(f"{named[0]}: {reason}" if len(named) == 1
                     else f"{len(named)} configurations: {reason}")
    return "; ".join(parts)


def node_summary(found: fleet_health.FleetStates) -> pd.DataFrame:
    """One row per node of :func:`node_states`' table, most severe first: ``node``, ``gpu``,
    ``state`` (the most severe of its configurations'), ``configurations`` (how many in each
    state) and ``reason`` (those of its most severe state, each reason once: :func:`_reasons`)."""
    states = found.table
    if states.empty:
        return pd.DataFrame(columns=["node", "gpu", "state", "configurations", "reason"])
    order = {s: i for i, s in enumerate(fleet_health.SEVERITY)}
    rows = []
    for node, group in states.groupby("node", sort=True):
        worst = min(group["state"], key=order.__getitem__)
        counts = group["state"].value_counts()
        rows.append({"node": node, "gpu": ", ".join(sorted(set(group["gpu"]) - {""})),
                     "state": worst,
                     "configurations": ", ".join(f"{counts[s]} {s}" for s in fleet_health.SEVERITY
                                                 if s in counts),
                     "reason": _reasons(group[group["state"] == worst])})
    table = pd.DataFrame(rows)
    return table.sort_values("state", key=lambda c: c.map(order), kind="stable") \
        .reset_index(drop=True)
