"""``benchlib index``: every record under some folders copied into the catalog.

Incremental: each point's notebook and sidecar sizes and modification times are kept
(``sources``); a point whose files did not change is not read again, and a point whose files
are gone loses its record. Streamed and safe to interrupt: points are read and written in
batches, each batch's records and bookkeeping in one transaction (an interrupted index leaves
the batches before it, whole). Records are read as :func:`benchlib.load` reads them
(:func:`benchlib.records.results.read_point`): what a scan leaves out (a corrupt or foreign
sidecar, a record with a bad essential value, a symbolic link) is skipped and named.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from benchlib.catalog import database, lock, migrate, tables
from benchlib.catalog.database import Catalog
from benchlib.errors import InputError, RecordError
from benchlib.records.results import candidates, left_out, read_point
from benchlib.records.store import (
    Fingerprint,
    encodable,
    fingerprint,
    path_text,
    read_json_bounded,
)

#: Points read and written per transaction.
BATCH = 500
#: A progress line every this many points looked at.
PROGRESS_EVERY = 5000
#: Skipped files named one by one at the end, at most.
NAMED_AT_MOST = 50
#: Rows named in one ``IN (...)`` clause.
CHUNK = 500



@dataclass
class Summary:
    """What an index did: points looked at, read again (changed or new), records written,
    unchanged, removed (files gone), and the files skipped (path: reason)."""

    looked: int = 0
    read: int = 0
    records: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self, catalog: Catalog) -> str:
        """One line on what was done."""
        return (f"catalog {catalog.shown}: {self.looked} points looked at in "
                f"{self.seconds:.1f} s: {self.read} read ({self.records} records written), "
                f"{self.unchanged} unchanged, {self.removed} removed (files gone), "
                f"{len(self.skipped)} skipped")


def _not_a_record(origin: Path) -> str:
    """Why a lone JSON file under a campaign folder gave no record (corrupt or foreign)."""
    try:
        read_json_bounded(origin)
    except RecordError as error:
        return str(error)
    except OSError as error:
        return f"{origin}: {error.strerror or error}"
    return f"{origin}: JSON without a schema_version: not a benchlib record (foreign file)"


@contextlib.contextmanager
def _quiet_loader() -> Iterator[None]:
    """The loader's warnings off while indexing: the index names each skipped file once."""
    logger = logging.getLogger("benchlib.records")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def index(roots: list[str | Path], catalog: Catalog, say: Callable[[str], None] = print,
          batch: int = BATCH, wait_s: float = lock.WAIT_S) -> Summary:
    """Copy every record under the folders ``roots`` into ``catalog`` (made or migrated first),
    one indexer at a time; what was done. CatalogError (exit 2) when the catalog cannot be
    reached, the reason given and the password never."""
    folders = []
    for root in roots:
        # the real path: a campaign reached through a symbolic link (/home -> /gpfs/home) is
        # the same points, not a second copy of each record
        folder = Path(os.path.realpath(root))
        if not folder.is_dir():
            if not folder.exists():
                raise FileNotFoundError(f"results folder {str(root)!r} does not exist")
            raise InputError(f"{root}: not a folder; benchlib index takes campaign folders "
                             "(or outputs/)")
        folders.append(folder)
    started = time.monotonic()
    summary = Summary()
    engine = database.engine(catalog)
    try:
        with lock.indexer_lock(catalog, engine, say, wait_s), _quiet_loader():
            with engine.begin() as connection:
                migrate.prepare(connection, catalog, say)
            for folder in folders:
                _index_folder(engine, folder, summary, say, batch)
    except SQLAlchemyError as error:
        raise database.unreachable(catalog, error) from None
    finally:
        engine.dispose()
    summary.seconds = time.monotonic() - started
    return summary


def _prefix(folder: Path) -> str:
    return path_text(folder).rstrip("/") + "/"


def _under(column: sa.Column, folder: Path) -> sa.ColumnElement[bool]:
    """Paths below ``folder``, or a few more: SQL's LIKE (case-blind in SQLite); the rows it
    gives are kept by :func:`_prefix` exactly (no collation orders paths as bytes everywhere)."""
    return column.startswith(_prefix(folder), autoescape=True)


def _index_folder(engine: sa.Engine, folder: Path, summary: Summary,
                  say: Callable[[str], None], batch: int) -> None:
    s, prefix = tables.SOURCES, _prefix(folder)
    with engine.connect() as connection:
        known: dict[str, Fingerprint] = {
            row.path: (row.notebook_size, row.notebook_mtime_ns, row.sidecar_size,
                       row.sidecar_mtime_ns)
            for row in connection.execute(sa.select(
                s.c.path, s.c.notebook_size, s.c.notebook_mtime_ns, s.c.sidecar_size,
                s.c.sidecar_mtime_ns).where(_under(s.c.path, folder)))
            if row.path.startswith(prefix)}
    pending: list[tuple[Path, Fingerprint]] = []
    for notebook in candidates(folder):
        summary.looked += 1
        if summary.looked % PROGRESS_EVERY == 0:
            say(f"index: {summary.looked} points looked at, {summary.read} read, "
                f"{summary.unchanged} unchanged")
        found = fingerprint(notebook)
        if known.pop(path_text(notebook), None) == found:
            summary.unchanged += 1
            continue
        pending.append((notebook, found))
        if len(pending) >= batch:
            _write(engine, pending, summary)
            pending = []
    if pending:
        _write(engine, pending, summary)
    gone = list(known)
    for start in range(0, len(gone), CHUNK):
        with engine.begin() as connection:
            _forget(connection, gone[start:start + CHUNK])
    summary.removed += len(gone)
    with engine.connect() as connection:
        summary.skipped += [row.reason for row in connection.execute(
            sa.select(s.c.path, s.c.reason).where(_under(s.c.path, folder),
                                                  s.c.state == "skipped").order_by(s.c.path))
            if row.path.startswith(prefix)]


def _forget(connection: sa.Connection, paths: list[str]) -> None:
    connection.execute(sa.delete(tables.RECORDS).where(tables.RECORDS.c.source.in_(paths)))
    connection.execute(sa.delete(tables.SOURCES).where(tables.SOURCES.c.path.in_(paths)))


def _write(engine: sa.Engine, pending: list[tuple[Path, Fingerprint]], summary: Summary) -> None:
    """Read ``pending`` points and write their records and bookkeeping in one transaction."""
    sources, records, origins = [], [], []
    for notebook, found in pending:
        origin, record, skipped = read_point(notebook)
        reason = encodable("; ".join(str(s) for s in skipped))
        if record is None and not skipped and origin.suffix == ".json":
            reason = encodable(_not_a_record(origin))
        key = path_text(notebook)
        sources.append({"path": key, "notebook_size": found[0], "notebook_mtime_ns": found[1],
                        "sidecar_size": found[2], "sidecar_mtime_ns": found[3],
                        "state": "skipped" if reason else "none", "reason": reason})
        if record is not None:
            sources[-1]["state"] = "record"
            records.append(record)
            origins.append(origin)
    dropped = left_out(records, origins) if records else {}
    by_path = {row["path"]: row for row in sources}
    for position, why in dropped.items():
        row = by_path[str(records[position]["source"])]
        row.update(state="skipped", reason=str(why))
    kept = [tables.to_row(r) for i, r in enumerate(records) if i not in dropped]
    with engine.begin() as connection:
        _forget(connection, list(by_path))
        connection.execute(sa.insert(tables.SOURCES), sources)
        if kept:
            connection.execute(sa.insert(tables.RECORDS), kept)
    summary.read += len(pending)
    summary.records += len(kept)


def index_configured(folder: str | Path, say: Callable[[str], None] = print) -> None:
    """Index ``folder`` into the configured catalog (``$BENCHLIB_DB``), never failing the
    command: a catalog that cannot be used is said in one line
    (:func:`benchlib.catalog.index_quietly` calls it only where one is configured)."""
    given = database.configured()
    if not given:
        return
    catalog = None
    try:
        catalog = database.resolve(given)
        summary = index([folder], catalog, say=lambda _: None, wait_s=60)
    except Exception as error:  # a catalog problem never fails the command that indexes
        shown = catalog.shown if catalog else "$BENCHLIB_DB"
        say(f"catalog {shown} not updated: {str(error).splitlines()[0]}")
        return
    say(summary.line(catalog))
