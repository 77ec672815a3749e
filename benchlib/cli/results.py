"""``benchlib results``: print the records under a folder (and write them as CSV)."""

from __future__ import annotations

import argparse

from benchlib.cli.base import Command, show


class Results(Command):
    name = "results"
    help = "print the records under a folder"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--csv", help="also write every column to this CSV file (text that "
                            "starts like a spreadsheet formula gets a leading '; a device or "
                            "FIFO such as /dev/stdout is written in place, never replaced)")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Print the settings that vary and the results, one row per run."""
        import pandas as pd

        from benchlib.records.csv_export import write_csv
        from benchlib.records.paths import check_output_file, load_records
        from benchlib.records.run_table import RunTable, readable

        check_output_file("--csv", args.csv)
        frame = RunTable(load_records(args.path))
        with pd.option_context("display.width", 200, "display.max_rows", 500,
                               "display.float_format", readable):
            show(frame.tidy().to_string(index=False))
        show(frame.note("--csv FILE writes every column"))
        if args.csv:
            write_csv(args.csv, frame)
            print(f"wrote {len(frame)} records to {args.csv}")
        return 0
