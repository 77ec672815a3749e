"""The options several commands share, each defined once (as asv adds its common arguments
once): the results folders (``ROOT``), the catalog (``--db``), the selection (``--where``,
``--since``, ``--until``), and the runs they select (:func:`selected_runs`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from benchlib.cli.base import wrapped


def add_roots(parser: argparse.ArgumentParser, what: str, required: bool = False) -> None:
    """The results folders a command reads (``ROOT ...``; ``what``: its help)."""
    parser.add_argument("roots", nargs="+" if required else "*", metavar="ROOT", help=what)


def add_db(parser: argparse.ArgumentParser, what: str, alone: bool = True) -> None:
    """The ``--db`` option the catalog commands share (``alone``: ``--db`` without a value
    names the default catalog; else it takes one, as for ``benchlib index``, whose folders
    follow it)."""
    default = "$BENCHLIB_DB, else catalog.sqlite in the outputs folder (docs/catalog.md)"
    if not alone:
        parser.add_argument("--db", metavar="DB", help=(
            f"{what}: a file (SQLite) or a postgresql://user@host/database URL (default: "
            f"{default})"))
        return
    parser.add_argument("--db", nargs="?", const="", default=None, metavar="DB", help=(
        f"{what}: a file (SQLite) or a postgresql://user@host/database URL; --db alone: "
        f"{default}"))


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


def add_where(parser: argparse.ArgumentParser) -> None:
    """``--where KEY=VALUE``, repeatable: only runs whose column KEY holds VALUE."""
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help="only runs whose column KEY is VALUE (repeat: all of them; the same "
                             "KEY twice: either value); KEY a record column (docs/record.md), "
                             "e.g. --where gpu=H100 --where batch_size=64")


def add_since(parser: argparse.ArgumentParser, until: bool = False) -> None:
    """``--since DATE`` (and, with ``until``, ``--until DATE``): only runs started from DATE."""
    parser.add_argument("--since", metavar="DATE", help="only runs started at or after this date "
                        "or time (ISO 8601, UTC: 2026-09-26, 2026-09-26T08:00)")
    if until:
        parser.add_argument("--until", metavar="DATE",
                            help="only runs started before this date or time")
