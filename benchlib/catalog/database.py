"""Which catalog: a file path (SQLite) or a database URL (``postgresql://...``: a site's shared
catalog), its engine, and its name as shown (the password never).

The default is ``catalog.sqlite`` in the outputs folder runs are saved under
(:func:`benchlib.records.hand_run.outputs_root`: ``$BENCHLIB_OUTPUTS``, else the checkout's or
the working folder's ``outputs/``); ``$BENCHLIB_DB`` overrides it, ``--db`` overrides both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from benchlib.catalog import DB_ENV, configured  # noqa: F401  ($BENCHLIB_DB: defined there)
from benchlib.errors import CatalogError
from benchlib.measure.redact import redact

#: The default catalog's file name, in the outputs folder.
DEFAULT_NAME = "catalog.sqlite"
#: Database URL schemes a catalog may use, and the driver each runs through.
DRIVERS = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg",
           "postgresql+psycopg": "postgresql+psycopg", "postgres": "postgresql+psycopg"}
#: URL query parameters that hold a secret (libpq's): shown as ``***`` like the password.
SECRET_QUERY = ("password", "sslpassword")
#: Seconds to wait for a database server to answer.
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class Catalog:
    """A catalog's URL; ``path``: its file (SQLite; None for a server or in-memory);
    ``named_by``: what named it, ``--db`` or ``$BENCHLIB_DB`` ("": the default location)."""

    url: URL
    path: Path | None = None
    named_by: str = field(default="--db", compare=False)

    @property
    def shown(self) -> str:
        """The catalog as people read it: its file, or its URL without the password."""
        if self.path is not None:
            return str(self.path)
        query = {k: ("***" if k in SECRET_QUERY else v) for k, v in self.url.query.items()}
        return (self.url.set(query=query).render_as_string(hide_password=True)
                .replace("%2A%2A%2A", "***"))

    @property
    def secrets(self) -> list[str]:
        """The password and any secret query parameter of the URL (to mask in messages)."""
        found = [self.url.password, *(self.url.query.get(k) for k in SECRET_QUERY)]
        return [str(v) for one in found if one
                for v in (one if isinstance(one, tuple) else (one,)) if v]

    @property
    def server(self) -> bool:
        """Whether the catalog is on a database server (not a file)."""
        return self.url.get_backend_name() != "sqlite"

    def index_command(self) -> str:
        """The ``benchlib index`` command that brings this catalog up to date."""
        return f"benchlib index ROOT... --db {self.shown!r}"


def default_location() -> Path:
    """Where the catalog is when neither ``--db`` nor ``$BENCHLIB_DB`` says."""
    from benchlib.records.hand_run import outputs_root

    return outputs_root() / DEFAULT_NAME


def resolve(given: str | os.PathLike | None = None) -> Catalog:
    """The catalog ``given`` names (``--db``), else ``$BENCHLIB_DB``, else the default file.
    A value with ``://`` is a URL (``sqlite:///file``, ``postgresql://user@host/db``); anything
    else a file path. CatalogError (exit 2) naming the allowed kinds for another URL."""
    named_by = "--db" if given not in (None, "") else ("$BENCHLIB_DB" if configured() else "")
    text = str(given) if given not in (None, "") else (configured() or str(default_location()))
    if "://" not in text:
        path = Path(text).expanduser().absolute()
        return _not_a_folder(Catalog(URL.create("sqlite", database=str(path)), path, named_by))
    scheme, _, rest = text.partition("://")
    authority = rest.split("/", 1)[0]
    if authority.count("@") > 1:  # an unencoded @ in the password: the parser would show part of it
        raise CatalogError(f"--db: {scheme}://***@{authority.rsplit('@', 1)[1]}: the password "
                           "holds an '@'; percent-encode it as %40 (a password never appears "
                           "in benchlib's output)")
    try:
        url = make_url(text)
    except (ArgumentError, ValueError):  # not a URL, or a port that is not a number
        raise CatalogError(f"--db: {redact(text)!r} is not a database URL; give a file path "
                           "(SQLite) or postgresql://user@host/database") from None
    driver = DRIVERS.get(url.drivername)
    if driver is None:
        raise CatalogError(f"--db: database {url.drivername!r} is not supported; allowed: a "
                           f"file path (SQLite), {', '.join(f'{d}://' for d in DRIVERS)}")
    url = url.set(drivername=driver)
    if driver == "sqlite" and url.database in (None, "", ":memory:"):
        raise CatalogError("--db: an in-memory SQLite catalog is gone when the command exits; "
                           "give a file path (outputs/catalog.sqlite) or sqlite:///FILE")
    path = Path(url.database).absolute() if driver == "sqlite" and url.database else None
    return _not_a_folder(Catalog(url.set(database=str(path)) if path else url, path, named_by))


def _not_a_folder(catalog: Catalog) -> Catalog:
    """``catalog``, unless its file is a folder (a results folder given to ``--db``, or taken
    by it: ``--db`` takes an optional value): CatalogError saying so."""
    if catalog.path is not None and catalog.path.is_dir():
        raise CatalogError(f"--db {catalog.shown}: a folder, not a catalog file; give the "
                           "catalog's file (--db=outputs/catalog.sqlite), or read the folder "
                           "itself without --db (its value is optional, so `--db FOLDER` takes "
                           "FOLDER as the catalog)")
    return catalog


def engine(catalog: Catalog) -> sa.Engine:
    """An engine for ``catalog``; nothing is connected yet. The default SQLite file's folder
    (``outputs/``) is made; the folder of one ``--db`` or ``$BENCHLIB_DB`` names must exist
    (CatalogError naming it: a mistyped path makes no folders)."""
    if catalog.path is not None:
        folder = catalog.path.parent
        if catalog.named_by and not folder.exists():
            raise CatalogError(f"{catalog.named_by} {catalog.shown}: the folder {folder} does not "
                               f"exist\n  make it first (mkdir -p {folder}), or name a catalog "
                               "file in a folder that exists")
        try:
            catalog.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CatalogError(f"--db: cannot make the folder of {catalog.path}: "
                               f"{error.strerror or error}") from None
        return sa.create_engine(catalog.url, connect_args={"timeout": 60})
    if catalog.server:
        return sa.create_engine(catalog.url, pool_pre_ping=True,
                                connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
    return sa.create_engine(catalog.url)


def unreachable(catalog: Catalog, error: SQLAlchemyError) -> CatalogError:
    """The error to raise when ``catalog`` cannot be used: its name and the database's reason
    (first line, the password masked), never a traceback."""
    reason = str(getattr(error, "orig", None) or error).strip().splitlines()
    text = reason[0] if reason else type(error).__name__
    for secret in catalog.secrets:
        text = text.replace(secret, "***")
    return CatalogError(f"cannot use the catalog {catalog.shown}: {redact(text)}")
