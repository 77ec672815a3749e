"""``benchlib index``: copy every record under some folders into the results catalog."""

from __future__ import annotations

import argparse

from benchlib.cli import options
from benchlib.cli.base import Command, show_wrapped, width


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
        options.add_roots(parser, "results folders: outputs/ or outputs/<campaign>", required=True)
        options.add_db(parser, "the catalog to index into", alone=False)
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
        new = catalog.path is not None and not catalog.named_by and not catalog.path.exists()
        summary = ingest.index(args.roots, catalog,
                               say=(lambda _: None) if args.quiet else show_wrapped,
                               wait_s=args.wait)
        show_wrapped(summary.line(catalog))
        if new:  # the default location depends on the working folder: say where it went
            import textwrap

            print(textwrap.fill(
                f"note: a new catalog, {catalog.path}, since neither --db nor $BENCHLIB_DB named "
                "one; `history --db`, `fleet --db` and the others read it when run from this "
                f"folder; from elsewhere give them --db {catalog.path}, or export "
                f"BENCHLIB_DB={catalog.path}", width(), subsequent_indent="  ",
                break_on_hyphens=False, break_long_words=False))
        for reason in summary.skipped[:ingest.NAMED_AT_MOST]:
            show_wrapped(f"  skipped: {reason}")
        if len(summary.skipped) > ingest.NAMED_AT_MOST:
            print(f"  ... and {len(summary.skipped) - ingest.NAMED_AT_MOST} more skipped")
        return 0
