"""The catalog's version and its migration: ``catalog_meta`` says which record schema version
the layout follows. ``benchlib index`` creates a new catalog and migrates an older one (adds the
columns a later schema added, then reads every source again, so records that held them as extra
values get them typed); reading refuses a catalog of another version with the command that
migrates it."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from benchlib import SCHEMA_VERSION
from benchlib.catalog import tables
from benchlib.catalog.database import Catalog
from benchlib.errors import CatalogError

#: ``catalog_meta`` name of the record schema version the layout follows.
SCHEMA_KEY = "record_schema_version"


def version(connection: sa.Connection, catalog: Catalog | None = None) -> int | None:
    """The record schema version the catalog follows (None: no catalog there yet);
    CatalogError (exit 2) for one that is not a whole number (a damaged catalog)."""
    if not sa.inspect(connection).has_table(tables.META.name):
        return None
    found = connection.execute(sa.select(tables.META.c.value)
                               .where(tables.META.c.name == SCHEMA_KEY)).scalar()
    if found is None:
        return None
    try:
        return int(found)
    except ValueError:
        named = f" {catalog.shown}" if catalog is not None else ""
        raise CatalogError(f"the catalog{named} holds {SCHEMA_KEY} {found!r}, not a version "
                           f"number: damaged, or not a benchlib catalog ({tables.META.name})"
                           ) from None


def missing_columns(connection: sa.Connection) -> list[str]:
    """Typed record columns of today's schema the ``records`` table lacks."""
    have = {c["name"] for c in sa.inspect(connection).get_columns(tables.RECORDS.name)}
    return [c.name for c in tables.RECORDS.c if c.name not in have]


def _newer(catalog: Catalog, found: int) -> CatalogError:
    return CatalogError(f"the catalog {catalog.shown} follows record schema {found}, newer than "
                        f"this benchlib's ({SCHEMA_VERSION}); use the benchlib that wrote it")


def refuse_foreign(connection: sa.Connection, catalog: Catalog) -> None:
    """CatalogError (nothing written) where the database holds tables that are not benchlib's
    and no ``catalog_meta``: another application's database is never written into, and its
    own ``records`` table never "migrated". A catalog is benchlib's only when it says so."""
    inspector = sa.inspect(connection)
    ours = tables.METADATA.tables
    others = sorted(name for name in inspector.get_table_names()  # a half-made catalog of our
                    if name not in ours or not set(ours[name].c.keys())  # own passes: its tables
                    <= {c["name"] for c in inspector.get_columns(name)})  # are whole
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise CatalogError(f"{catalog.shown} is not a benchlib catalog: it holds other tables "
                           f"({shown}) and no {tables.META.name}; nothing was written. Give a "
                           "new file or an empty database (schema) for the catalog")


def prepare(connection: sa.Connection, catalog: Catalog, say: Callable[[str], None]) -> None:
    """Make ``catalog``'s tables if there are none; migrate them if they follow an older
    schema (columns added, every source read again), saying so."""
    found = version(connection, catalog)
    if found is None:
        refuse_foreign(connection, catalog)
        tables.METADATA.create_all(connection)
        connection.execute(sa.insert(tables.META).values(name=SCHEMA_KEY,
                                                         value=str(SCHEMA_VERSION)))
        return
    if found > SCHEMA_VERSION:
        raise _newer(catalog, found)
    added = missing_columns(connection)
    if found == SCHEMA_VERSION and not added:
        return
    preparer = connection.dialect.identifier_preparer
    for name in added:
        kind = tables.RECORDS.c[name].type.compile(dialect=connection.dialect)
        connection.execute(sa.text(f"ALTER TABLE {tables.RECORDS.name} ADD COLUMN "
                                   f"{preparer.quote(name)} {kind}"))
    connection.execute(sa.update(tables.SOURCES).values(notebook_size=None, sidecar_size=None))
    connection.execute(sa.update(tables.META).where(tables.META.c.name == SCHEMA_KEY)
                       .values(value=str(SCHEMA_VERSION)))
    say(f"catalog {catalog.shown}: migrated from record schema {found} to {SCHEMA_VERSION} "
        f"({len(added)} column{'' if len(added) == 1 else 's'} added); every source is read "
        "again when its folder is next indexed")


def check_readable(connection: sa.Connection, catalog: Catalog) -> None:
    """CatalogError unless ``catalog`` exists and follows today's schema (the message gives
    the command that makes or migrates it)."""
    found = version(connection, catalog)
    if found is None:
        raise CatalogError(f"no catalog at {catalog.shown} yet; make it with "
                           f"`{catalog.index_command()}`")
    if found > SCHEMA_VERSION:
        raise _newer(catalog, found)
    if found < SCHEMA_VERSION:
        raise CatalogError(f"the catalog {catalog.shown} follows record schema {found}, this "
                           f"benchlib {SCHEMA_VERSION}; migrate it with "
                           f"`{catalog.index_command()}`")
    added = missing_columns(connection)
    if added:
        shown = ", ".join(added[:4]) + (f" and {len(added) - 4} more" if len(added) > 4 else "")
        raise CatalogError(f"the catalog {catalog.shown} lacks {len(added)} record column"
                           f"{'' if len(added) == 1 else 's'} this benchlib writes ({shown}): "
                           f"an older benchlib made it; migrate it with "
                           f"`{catalog.index_command()}`")
