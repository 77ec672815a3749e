"""``benchlib history``: each configuration's runs on each node in time order, their change
points (Otava's method) with the change, its interval and what changed in the environment."""

from __future__ import annotations

import argparse
import sys

import benchlib.cli.options as options
from benchlib.cli.base import Command, show_wrapped
from benchlib.cli.documents import add_option
from benchlib.vocabulary import DEFAULT_THRESHOLD


class History(Command):
    name = "history"
    help = ("change points of each configuration's runs on each node over time, with what "
            "changed then (exit 1 on a regression)")
    description = ("Orders each configuration's campaigns on each node (host) by started_at "
                   "(one value per campaign: the geometric mean of its runs, which move "
                   "together) and finds change points with Apache Otava's method "
                   "(binary-segmentation candidates, then a Student t-test merge, p < 0.001). "
                   "One line per change that matters (a regression or an improvement beyond "
                   "--threshold): its 95 % interval over the campaigns on either side, the node, "
                   "the date, the means before and after, and what changed in the environment "
                   "then (driver, CUDA, cuDNN, NCCL, torch, container, kernel, ...). Smaller or "
                   "uncertain shifts are counted, an odd campaign is named as an outlier, the "
                   "newest campaigns too few to call are 'too early to tell'. Contended, "
                   "throttled and failed runs are left out and counted.")
    epilog = ("Records written before benchlib recorded started_at are ordered by their\n"
              "sidecar's modification time (the last line says how many).\n\n"
              "exit status:\n"
              "  0  no change point is a regression\n"
              "  1  a change point is a regression (the speed's whole 95 % interval below\n"
              "     1 - threshold)\n"
              "  2  bad input (folders, --metric, --where, --since, --threshold)\n"
              "  3  nothing judged: no history has the campaigns of undisturbed runs a change\n"
              "     point needs (NOTHING JUDGED says what was left out)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        options.add_roots(parser, "results folders (campaigns, or folders of campaigns)")
        options.add_db(parser, "read this catalog (`benchlib index`) instead of folders")
        parser.add_argument("--metric", default="throughput",
                            help="numeric measurement column (default throughput; time_* "
                                 "columns count lower as better)")
        options.add_where(parser)
        options.add_since(parser)
        parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                            help="smallest change listed, and the slowdown a regression must "
                                 f"clear (default {DEFAULT_THRESHOLD}, as benchlib compare)")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")
        add_option(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Print one line per change point and the summary; the exit status the epilog
        lists."""
        from benchlib.analysis import gate
        from benchlib.analysis.metrics import check_metric
        from benchlib.errors import InputError
        from benchlib.history import said as history_said
        from benchlib.history import series as node_history

        if not 0 <= args.threshold < 1:
            raise InputError(f"--threshold {args.threshold}: give a fraction from 0 to 1 "
                             "(0.05 = 5 %)")
        frame = options.selected_runs("history", args.roots, args.db, args.where or (), args.since)
        check_metric(args.metric, {" ".join(args.roots) or "the catalog": frame})
        found = node_history.change_points(frame, metric=args.metric, threshold=args.threshold,
                                           progress=not args.quiet and sys.stderr.isatty())
        for text in history_said.lines(found):  # the strings the page shows, wrapped here
            show_wrapped(text)
        judged = [] if found.judged else [gate.NOTHING_JUDGED]
        drifted = [row["verdict"] for row in found.drifts]  # 'drift' alone stands aside
        code = gate.exit_code("history", [*found.table["verdict"], *drifted, *judged])
        if args.json:
            from benchlib.cli.documents import render

            render.write(args, render.history(found, code))
        return code
