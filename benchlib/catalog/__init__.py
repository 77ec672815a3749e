"""The results catalog: every record under many campaign folders in one SQL database (SQLite by
default, PostgreSQL for a site), through SQLAlchemy Core, so both run the same code.

The sidecars and notebooks stay the source of truth; ``benchlib index`` copies their records
in (:mod:`~benchlib.catalog.ingest`), incrementally and under a lock
(:mod:`~benchlib.catalog.lock`); the table layout is generated from the record schema
(:mod:`~benchlib.catalog.tables`) and migrated when it grows (:mod:`~benchlib.catalog.migrate`);
:func:`benchlib.catalog.select.load` reads a selection back as :func:`benchlib.load` would."""

import os
from collections.abc import Callable
from pathlib import Path

#: The environment variable that names the catalog commands keep up to date.
DB_ENV = "BENCHLIB_DB"


def configured() -> str | None:
    """``$BENCHLIB_DB`` when set: a catalog that ``sweep``, ``diagnose`` and ``report`` keep
    up to date with the campaigns they write."""
    return os.environ.get(DB_ENV) or None


def anchor_configured(environ: dict | None = None) -> None:
    """Make a relative ``$BENCHLIB_DB`` (a file path or ``sqlite:///relative``) absolute, from
    the folder the command was typed in: the report's kernels start in the campaign folder,
    where a relative path would name another file."""
    environ = os.environ if environ is None else environ
    value = environ.get(DB_ENV) or ""
    prefix = "sqlite:///"
    if "://" not in value and value:
        environ[DB_ENV] = str(Path(value).expanduser().absolute())
    elif value.startswith(prefix) and not value[len(prefix):].startswith("/"):
        path, _, query = value[len(prefix):].partition("?")
        environ[DB_ENV] = prefix + str(Path(path).absolute()) + (f"?{query}" if query else "")


def index_quietly(folder: str | Path, say: Callable[[str], None] = print) -> None:
    """Index ``folder`` into the configured catalog (``$BENCHLIB_DB``) when there is one, as
    ``sweep``, ``diagnose`` and ``report`` do after their work: never failing the command; a
    catalog that cannot be used is said in one line. Without one, SQLAlchemy is not imported
    (a node with a minimal install runs sweeps)."""
    if not configured():
        return
    from benchlib.catalog.ingest import index_configured

    index_configured(folder, say)
