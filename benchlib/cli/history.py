"""``benchlib history``: each configuration's runs on each node in time order, their change
points (Otava's method) with the change, its interval and what changed in the environment."""

from __future__ import annotations

import argparse
import sys

from benchlib.cli.base import Command, show


class History(Command):
    name = "history"
    help = ("change points of each configuration's runs on each node over time, with what "
            "changed then (exit 1 on a regression)")
    description = ("Orders each configuration's runs on each node (host) by started_at and "
                   "finds change points with Apache Otava's method (binary-segmentation "
                   "candidates, then a Student t-test merge, p < 0.001). One line per change "
                   "point: the change with its 95 % interval over the runs on either side, the "
                   "node, the date, the means before and after, and what changed in the "
                   "environment then (driver, CUDA, cuDNN, NCCL, torch, container, kernel, ...). "
                   "Contended and throttled runs are left out and counted.")
    epilog = ("Records written before benchlib recorded started_at are ordered by their\n"
              "sidecar's modification time (the last line says how many).\n\n"
              "exit status:\n"
              "  0  no change point is a regression\n"
              "  1  a change point is a regression (the speed's whole 95 % interval below\n"
              "     1 - threshold)\n"
              "  2  bad input (folders, --metric, --where, --since, --threshold)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("roots", nargs="*", metavar="ROOT",
                            help="results folders (campaigns, or folders of campaigns)")
        from benchlib.cli.index import add_db_argument

        add_db_argument(parser, "read this catalog (`benchlib index`) instead of folders")
        parser.add_argument("--metric", default="throughput",
                            help="numeric measurement column (default throughput; time_* "
                                 "columns count lower as better)")
        parser.add_argument("--where", action="append", metavar="KEY=VALUE",
                            help="only runs whose column KEY holds VALUE (repeatable), e.g. "
                                 "--where gpu=H100 --where batch_size=64")
        parser.add_argument("--since", metavar="DATE",
                            help="only runs started from DATE (ISO 8601, UTC)")
        parser.add_argument("--threshold", type=float, default=0.05,
                            help="smallest slowdown a regression change point has (default "
                                 "0.05, as benchlib compare)")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Print one line per change point and the summary; the exit status the epilog
        lists."""
        from benchlib.analysis import node_history, selection
        from benchlib.analysis.metrics import check_metric
        from benchlib.errors import InputError

        if not 0 <= args.threshold < 1:
            raise InputError(f"--threshold {args.threshold}: give a fraction from 0 to 1 "
                             "(0.05 = 5 %)")
        frame = selection.once(records(args))
        if frame.attrs["repeated"]:
            print(f"note: {frame.attrs['repeated']} records repeat a run already read (the same "
                  "run_id in another folder): each run counted once", file=sys.stderr)
        check_metric(args.metric, {" ".join(args.roots) or "the catalog": frame})
        table = node_history.change_points(frame, metric=args.metric, threshold=args.threshold,
                                           progress=not args.quiet and sys.stderr.isatty())
        for text in node_history.lines(table):
            show(text)
        return node_history.exit_code(table)


def records(args: argparse.Namespace):
    """The runs ``args`` select: the records under each ROOT (concatenated) or, with
    ``--db``, the catalog's; cut to ``--where`` and ``--since``."""
    import pandas as pd

    from benchlib.analysis import selection
    from benchlib.errors import InputError
    from benchlib.records.paths import load_records

    where, since = selection.parse_where(args.where), selection.parse_date(args.since)
    if args.db is not None and args.roots:
        raise InputError("history: give results folders or --db, not both")
    if not args.roots and args.db is None:
        from benchlib.catalog.database import configured

        if not configured():
            raise InputError("history: give results folders (ROOT ...) or a catalog (--db DB, "
                             "or $BENCHLIB_DB)")
        args.db = ""  # the catalog $BENCHLIB_DB names
    if args.db is not None:
        import benchlib
        from benchlib.catalog.select import selection as checked
        from benchlib.errors import CatalogError

        try:
            checked(where)
        except CatalogError as error:  # an unknown key or a value not of its column's type
            raise InputError(f"--where {' '.join(args.where or [])}: "
                             f"{str(error).removeprefix('selection: ')}") from None
        frame = benchlib.load(db=args.db, where=where or None, since=since)
        if frame.empty:
            chosen = [*([selection.said(where)] if where else []),
                      *([f"--since {args.since}"] if args.since else [])]
            raise InputError(f"--db: no runs in the catalog match {' '.join(chosen)}")
        return frame
    frame = pd.concat([load_records(root) for root in args.roots], ignore_index=True)
    frame = selection.select(frame, where, since)
    if frame.empty:
        chosen = [*(f"--where {w}" for w in args.where or []),
                  *([f"--since {args.since}"] if args.since else [])]
        raise InputError(f"history: no runs under {' '.join(args.roots)} match "
                         f"{' '.join(chosen)}")
    return frame
