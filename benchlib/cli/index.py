"""``benchlib index``: copy every record under some folders into the results catalog."""

from __future__ import annotations

import argparse

from benchlib.cli.base import Command, show


def add_db_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--db`` option the catalog commands share."""
    parser.add_argument("--db", nargs="?", const="", default=None, metavar="DB", help=(
        f"{what}: a file (SQLite) or a postgresql://user@host/database URL; --db alone: "
        "$BENCHLIB_DB, else catalog.sqlite in the outputs folder (docs/catalog.md)"))


class Index(Command):
    name = "index"
    help = "copy every record under folders into the results catalog (SQLite or PostgreSQL)"
    description = ("Reads every record under the folders (as `benchlib results` reads them) "
                   "into a SQL catalog that `benchlib results --db`, `benchlib compare --db` "
                   "and benchlib.load(db=...) select from. Incremental: points whose notebook "
                   "and sidecar did not change are not read again, points whose files are gone "
                   "lose their record. One index at a time: a second one waits for the first.")
    epilog = ("catalog: --db, else $BENCHLIB_DB, else catalog.sqlite in the outputs folder\n"
              "($BENCHLIB_OUTPUTS, the checkout's outputs/ or ./outputs/).\n\n"
              "exit status:\n"
              "  0  indexed (corrupt or foreign files are skipped and named, not failures)\n"
              "  1  another index held the catalog for longer than --wait\n"
              "  2  bad input: a folder that does not exist, a catalog that cannot be reached\n"
              "     (the reason; the password never), a catalog of a newer benchlib")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("roots", nargs="+", metavar="ROOT",
                            help="results folders: outputs/ or outputs/<campaign>")
        parser.add_argument("--db", metavar="DB", help="the catalog: a file (SQLite) or a "
                            "postgresql://user@host/database URL (default: $BENCHLIB_DB, else "
                            "catalog.sqlite in the outputs folder)")
        parser.add_argument("--wait", type=float, default=3600, metavar="SECONDS",
                            help="how long to wait for another index to finish (default 3600)")
        parser.add_argument("--quiet", action="store_true", help="no progress lines")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Index the folders; one line on what was done, then each file skipped."""
        import math

        from benchlib.catalog import database, ingest
        from benchlib.errors import InputError

        if not (math.isfinite(args.wait) and args.wait >= 0):  # filelock waits for ever at -1
            raise InputError(f"--wait {args.wait:g}: give the seconds to wait for another index, "
                             "0 or more (default 3600)")
        catalog = database.resolve(args.db)
        summary = ingest.index(args.roots, catalog, say=(lambda _: None) if args.quiet else print,
                               wait_s=args.wait)
        show(summary.line(catalog))
        for reason in summary.skipped[:ingest.NAMED_AT_MOST]:
            show(f"  skipped: {reason}")
        if len(summary.skipped) > ingest.NAMED_AT_MOST:
            print(f"  ... and {len(summary.skipped) - ingest.NAMED_AT_MOST} more skipped")
        return 0
