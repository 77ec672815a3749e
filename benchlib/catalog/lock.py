"""One indexer at a time: a file lock beside a SQLite catalog (``<file>.lock``, filelock), a
PostgreSQL advisory lock on a server. A second indexer says that it waits, waits, then says how
long it waited (or gives up after ``wait_s``: CatalogBusyError)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import sqlalchemy as sa
from filelock import FileLock, Timeout

from benchlib.catalog.database import Catalog
from benchlib.errors import CatalogBusyError

#: The advisory lock's key on a PostgreSQL server (any 64-bit number, the same for everyone).
ADVISORY_KEY = 0x62656E63686C6962  # "benchlib"
#: Seconds an indexer waits for another to finish before giving up.
WAIT_S = 3600.0
POLL_S = 0.5


def _busy(catalog: Catalog, waited: float) -> CatalogBusyError:
    return CatalogBusyError(f"another benchlib index still holds the catalog {catalog.shown} "
                            f"after {waited:.1f} s; try again when it has finished")


@contextlib.contextmanager
def indexer_lock(catalog: Catalog, engine: sa.Engine, say: Callable[[str], None],
                 wait_s: float = WAIT_S) -> Iterator[None]:
    """Hold ``catalog``'s indexer lock while the block runs."""
    if catalog.server:
        with _advisory(catalog, engine, say, wait_s):
            yield
    elif catalog.path is not None:
        lock = FileLock(f"{catalog.path}.lock")
        started = time.monotonic()
        try:
            lock.acquire(timeout=0)
        except Timeout:
            say(f"another benchlib index is writing the catalog {catalog.shown}; waiting for it "
                f"(lock {lock.lock_file})")
            try:
                lock.acquire(timeout=wait_s)
            except Timeout:
                raise _busy(catalog, time.monotonic() - started) from None
            say(f"waited {time.monotonic() - started:.1f} s for the other index to finish")
        try:
            yield
        finally:
            lock.release()
    else:
        yield  # an in-memory catalog: nobody else sees it


@contextlib.contextmanager
def _advisory(catalog: Catalog, engine: sa.Engine, say: Callable[[str], None],
              wait_s: float) -> Iterator[None]:
    """A session-level advisory lock, held on a connection of its own for the block."""
    started = time.monotonic()
    with engine.connect() as connection:
        def take() -> bool:
            got = connection.execute(sa.select(sa.func.pg_try_advisory_lock(ADVISORY_KEY)))
            connection.commit()
            return bool(got.scalar())

        if not take():
            say(f"another benchlib index is writing the catalog {catalog.shown}; waiting for it")
            while not take():
                if time.monotonic() - started > wait_s:
                    raise _busy(catalog, time.monotonic() - started)
                time.sleep(POLL_S)
            say(f"waited {time.monotonic() - started:.1f} s for the other index to finish")
        try:
            yield
        finally:
            connection.execute(sa.select(sa.func.pg_advisory_unlock(ADVISORY_KEY)))
            connection.commit()
