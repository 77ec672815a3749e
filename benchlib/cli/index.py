"""``benchlib index``: copy every record under some folders into the results catalog."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from benchlib.cli.base import Command, show_wrapped, width, wrapped


def add_db_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--db`` option the catalog commands share."""
    parser.add_argument("--db", nargs="?", const="", default=None, metavar="DB", help=(
        f"{what}: a file (SQLite) or a postgresql://user@host/database URL; --db alone: "
        "$BENCHLIB_DB, else catalog.sqlite in the outputs folder (docs/catalog.md)"))


def selected_runs(command: str, roots: Sequence[str], db: str | None,
                  where: Sequence[str] = (), since: str | None = None):  # -> pd.DataFrame
    """The runs ``benchlib history`` and ``benchlib fleet`` read: the records under each ROOT
    or, with ``--db``, the catalog's (neither given: the catalog ``$BENCHLIB_DB`` names), cut
    to ``--where KEY=VALUE`` and ``--since``, each run once (a note on stderr counts the
    repeats). InputError naming the option when both or neither are given, or nothing matches."""
    import pandas as pd

    from benchlib.analysis import selection
    from benchlib.errors import InputError
    from benchlib.records.paths import load_records

    wanted, start = selection.parse_where(list(where)), selection.parse_date(since)
    chosen = [*(f"--where {w}" for w in where), *([f"--since {since}"] if since else [])]
    if db is not None and roots:
        raise InputError(f"{command}: give results folders or --db, not both")
    if not roots and db is None:
        from benchlib.catalog.database import configured

        if not configured():
            raise InputError(f"{command}: give results folders (ROOT ...) or a catalog (--db DB, "
                             "or $BENCHLIB_DB)")
        db = ""  # the catalog $BENCHLIB_DB names
    if db is not None:
        import benchlib
        from benchlib.catalog.select import selection as checked
        from benchlib.errors import CatalogError

        try:
            checked(wanted)
        except CatalogError as error:  # an unknown key or a value not of its column's type
            raise InputError(f"--where {' '.join(where)}: "
                             f"{str(error).removeprefix('selection: ')}") from None
        frame = benchlib.load(db=db, where=wanted or None, since=start)
        if frame.empty:
            raise InputError(f"--db: no runs in the catalog match {' '.join(chosen)}" if chosen
                             else "--db: no records in the catalog (run `benchlib index ROOT... "
                             "--db DB` first)")
    else:
        frame = pd.concat([load_records(root) for root in roots], ignore_index=True)
        frame = frame.drop_duplicates("source") if "source" in frame else frame
        frame = selection.select(frame, wanted, start)
        if frame.empty:
            raise InputError(f"{command}: no runs under {' '.join(roots)} match "
                             f"{' '.join(chosen)}")
    found = selection.once(frame)
    if len(found) < len(frame):
        print(wrapped(f"note: {len(frame) - len(found)} records repeat a run already read (the "
                      "same run_id in another folder): each run counted once"), file=sys.stderr)
    return found


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
