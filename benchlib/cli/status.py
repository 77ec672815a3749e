"""``benchlib status``: where each point of a campaign stands."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlib.cli.base import Command
from benchlib.cli.documents import add_option


class Status(Command):
    name = "status"
    help = "done / running / pending / failed per point"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("campaign_dir", help="outputs/<campaign>")
        add_option(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Print the status table; exit 1 when the folder holds no points."""
        from benchlib.execute.campaign import campaign_status, format_status

        campaign_dir = Path(args.campaign_dir)
        table = campaign_status(campaign_dir)
        if not table:
            print(f"{campaign_dir}: no points (run benchlib sweep first)")
        else:
            print(format_status(campaign_dir, table))
        code = 0 if table else 1
        if args.json:
            from benchlib.cli.documents import render

            render.write(args, render.status(campaign_dir, table, code))
        return code
