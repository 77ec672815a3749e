"""``benchlib fleet``: each node's health over the campaigns of a fleet (ok / slow / failed /
missing / stale / unknown), the baselines made from the fleet, Slurm drain lines, JUnit."""

from __future__ import annotations

import argparse
import math

import benchlib.cli.options as options
from benchlib.cli.base import Command, relative, show, show_table, wrapped
from benchlib.cli.documents import add_option
from benchlib.errors import InputError
from benchlib.vocabulary import MAX_WINDOW_DAYS


class Fleet(Command):
    name = "fleet"
    help = ("each node's state over the fleet's campaigns: ok, slow, failed, missing, stale "
            "(exit 1 when a node failed or is slow)")
    description = ("Reads every record under the folders (or the catalog, --db), makes a "
                   "baseline per GPU model and configuration (the median of the healthy nodes' "
                   "recent runs) and gives each node its state. Slow: the node's recent runs "
                   "against the other healthy nodes, the whole 95 % interval more than 5 % "
                   "below; contended or throttled runs are left out and named, never slow. "
                   "docs/acceptance.md ('Fleet health over time') defines each word.")
    epilog = ("states: failed (latest run failed), slow, stale (no run in the window), missing\n"
              "(a node seen in the records, or listed with --expect, that never ran the\n"
              "configuration), unknown (no baseline, one run, or only disturbed runs), ok.\n\n"
              "--drain-list prints scontrol lines for the failed and slow nodes; benchlib\n"
              "never runs them.\n\n"
              "exit status:\n"
              "  0  every node of every configuration is ok\n"
              "  1  a node failed or is slow\n"
              "  2  bad input (folders, --db, --window, --junit)\n"
              "  3  nothing failed, but some node is stale, missing or unknown")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        options.add_roots(parser, "results folders (every record under each, e.g. outputs/nightly)")
        options.add_db(parser, "read this catalog (`benchlib index`) instead of folders")
        options.add_where(parser)
        parser.add_argument("--window", type=float, default=None, metavar="DAYS",
                            help="validity window: a node without a run in the last DAYS days "
                            "is stale (default 7)")
        parser.add_argument("--expect", action="append", default=[], metavar="NODES",
                            help="nodes that should have run (comma-separated host names or a Slurm "
                            "node list such as node[001-004]; repeatable): "
                            "one without a run is missing")
        parser.add_argument("--drain-list", action="store_true",
                            help="print `scontrol update nodename=... state=drain reason=...` "
                            "for the failed and slow nodes (printed, never run)")
        parser.add_argument("--junit", metavar="FILE", help="also write one JUnit test case per node and "
                            "configuration to this file")
        add_option(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Print the baselines, the node table and what is wrong; the epilog's exit status."""
        from benchlib.analysis import gate, junit
        from benchlib.fleet import actions as fleet_actions
        from benchlib.fleet import health as fleet_health
        from benchlib.records.paths import check_output_file

        window = fleet_health.VALIDITY_DAYS if args.window is None else args.window
        if not (math.isfinite(window) and 0 < window <= MAX_WINDOW_DAYS):
            raise InputError(f"--window {args.window:g}: give the validity window in days, "
                             f"above 0 and at most {MAX_WINDOW_DAYS:,} (default 7)")
        expected = fleet_actions.expected_nodes(args.expect)
        check_output_file("--junit", args.junit)
        found = options.selected_runs("fleet", args.roots, args.db, args.where)
        states = fleet_health.node_states(found, window_days=window, expected=expected)
        summary = fleet_actions.node_summary(states)
        written = args.junit and junit.write(args.junit, "benchlib fleet", fleet_actions.junit_cases(
            states.table.assign(configuration=relative(states.table["configuration"]))))
        print_states(states, summary)
        if args.drain_list:
            print("\n# drain the failing nodes (benchlib prints these lines, never runs them):")
            for line in fleet_actions.drain_lines(summary) or ["# no node failed or is slow"]:
                show(line)
        if written:
            print(f"JUnit XML: {written}")
        code = gate.exit_code("fleet", summary["state"])
        if args.json:
            from benchlib.cli.documents import render

            render.write(args, render.fleet(
                states, summary, fleet_actions.drain_lines(summary), args.junit, code))
        return code


def print_states(states, summary) -> None:  # (FleetStates, pd.DataFrame) -> None
    """The window, the baselines, one line per node, then each node that is not ok."""
    import pandas as pd

    from benchlib import formatting
    from benchlib.fleet import actions as fleet_actions
    from benchlib.fleet import health as fleet_health
    from benchlib.vocabulary import NodeState

    start = states.now - pd.Timedelta(days=states.window_days)
    show(f"fleet health at {states.now:%Y-%m-%d %H:%M} UTC; validity window "
         f"{states.window_days:g} days (runs since {start:%Y-%m-%d %H:%M})")
    show(wrapped("slow: against the fleet (each of its campaigns against the fleet's median of "
                 f"the same campaign: the whole 95 % interval more than "
                 f"{states.threshold * 100:g} % below) or against its own past (a change point "
                 "of that series, as benchlib history finds them)", indent=""))
    table = states.baselines
    for row in table.to_dict("records") if len(table) else []:
        if row.get("fleet_moved"):
            show(wrapped(f"the whole fleet moved: {row['configuration']}: {row['fleet_moved']} "
                         "(the nodes' median campaign by campaign: no node's fault, so no "
                         "node is slow for it; history lists it on every node)", indent="    "))
    if len(table):
        shown = table.drop(columns="fleet_moved", errors="ignore").assign(
            baseline=table["baseline"].map(lambda v: "none" if pd.isna(v) else
                                           formatting.number(v)))
        print(f"\nbaselines: the median of the healthy nodes' recent runs "
              f"({fleet_health.MIN_BASELINE_NODES} healthy nodes needed)")
        show_table(shown[[*(c for c in shown if c != "configuration"), "configuration"]],
                   "configuration", separator=" ", fold=("gpu", "baseline", "healthy_nodes", "nodes"))
    print()
    with pd.option_context("display.width", 200, "display.max_rows", 10_000,
                           "display.max_colwidth", 60):
        show(summary[["node", "gpu", "state", "configurations"]].to_string(index=False))
    if states.unplaced:
        print(f"{states.unplaced} failed runs name no node (jobs that never started): "
              "left out")
    if states.future:
        print(f"{states.future} runs dated in the future (a wrong clock): left out")
    counts = summary["state"].value_counts()
    print(", ".join(f"{counts[s]} {s}" for s in NodeState if s in counts)
          + (" node" if int(counts.sum()) == 1 else " nodes"))
    for line in fleet_actions.problem_lines(summary):
        show(wrapped(line, indent="    "))
