"""``benchlib results``: print the records under a folder, or a selection of the catalog's (and
write them as CSV)."""

from __future__ import annotations

import argparse
import os

from benchlib.cli import options
from benchlib.cli.base import Command, show, width, wrapped
from benchlib.cli.documents import add_option
from benchlib.errors import InputError


class Results(Command):
    name = "results"
    help = "print the records under a folder, or those of the catalog (--db)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path", nargs="?", help="a results folder (or one notebook); "
                            "none with --db")
        options.add_db(parser, "list the records of this catalog instead of a folder's")
        options.add_where(parser)
        options.add_since(parser, until=True)
        parser.add_argument("--csv", help="also write every column to this CSV file (text that "
                            "starts like a spreadsheet formula gets a leading '; a device or "
                            "FIFO such as /dev/stdout is written in place, never replaced)")
        add_option(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Print the settings that vary and the results, one row per run."""
        import pandas as pd

        from benchlib.records.csv_export import write_csv
        from benchlib.records.paths import check_output_file, load_records
        from benchlib.records.run_table import RunTable, readable

        check_output_file("--csv", args.csv)
        frame = RunTable.of(selected(args) if args.db is not None else
                         narrowed_folder(args, load_records(args.path) if args.path else None))
        with pd.option_context("display.max_rows", 500, "display.float_format", readable):
            show(frame.tidy().to_string(index=False, line_width=width()))  # blocks that fit
        show(wrapped(frame.note("--csv FILE writes every column"), indent=""))
        if args.csv:
            write_csv(args.csv, frame.every_column())
            print(f"wrote {len(frame)} records to {args.csv}")
        if args.json:
            from benchlib.catalog.database import resolve
            from benchlib.cli.documents import render

            source = args.path or f"catalog {resolve(args.db).shown}"
            render.write(args, render.results(frame, source, args.csv, 0))
        return 0


def _selection(args: argparse.Namespace) -> object:
    """The selection ``--where``, ``--since`` and ``--until`` make (keys checked)."""
    from benchlib.catalog.select import parse

    words = list(args.where)
    words += [f"{key}={value}" for key in ("since", "until")
              if (value := getattr(args, key)) is not None]
    return parse(words)


def selected(args: argparse.Namespace) -> object:
    """The catalog's records that ``--where``, ``--since`` and ``--until`` select (InputError
    when there are none, or when a folder is given as well)."""
    from benchlib.catalog import database
    from benchlib.catalog.select import from_catalog

    if args.path:
        raise InputError(f"results: give a folder ({args.path}) or --db, not both")
    chosen = _selection(args)
    frame = from_catalog(args.db, chosen)
    if frame.empty:
        raise InputError(f"no records in the catalog {database.resolve(args.db).shown} match "
                         f"{chosen}")
    return frame


def narrowed_folder(args: argparse.Namespace, frame: object) -> object:
    """The folder's records that ``--where`` / ``--since`` / ``--until`` select."""
    from benchlib.catalog.select import narrowed

    if frame is None:
        configured = os.environ.get("BENCHLIB_DB")
        raise InputError("results: give a results folder, or --db for the catalog"
                         + (" (--db alone reads the one $BENCHLIB_DB names)" if configured else ""))
    chosen = _selection(args)
    found = narrowed(frame, chosen)
    if found.empty:
        raise InputError(f"no records under {args.path} match {chosen}")
    return found
