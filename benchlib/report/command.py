"""``benchlib report``: run a campaign's summary notebooks and export the HTML report."""

from __future__ import annotations

import argparse

from benchlib.cli.base import Command


class Report(Command):
    name = "report"
    help = "run the summary notebooks and export HTML"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("campaign_dir", help="outputs/<campaign>")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")
        parser.add_argument("--baseline", help="a baseline campaign folder: adds a page "
                            "comparing this campaign with it (regression / improvement / no "
                            "change)")
        parser.add_argument("--history", nargs="+", metavar="EARLIER", default=(),
                            help="earlier campaign folders (or folders holding them): adds a "
                            "History page, each configuration on each node over time with its "
                            "change points and what changed then")
        parser.add_argument("--references", help="references YAML for the acceptance page "
                            "(default: the shipped published figures and datasheet ceilings)")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Build the report; say where its index is."""
        from benchlib.catalog import index_quietly
        from benchlib.report.build import build_report

        index = build_report(args.campaign_dir, progress=not args.quiet,
                             baseline=args.baseline, references=args.references,
                             history=args.history)
        print(f"report: {index}")
        index_quietly(args.campaign_dir)  # with $BENCHLIB_DB: the catalog follows
        return 0
