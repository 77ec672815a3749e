"""The results catalog: every record under many campaign folders in one SQL database (SQLite by
default, PostgreSQL for a site), through SQLAlchemy Core, so both run the same code.

The sidecars and notebooks stay the source of truth; ``benchlib index`` copies their records
in (:mod:`~benchlib.catalog.ingest`), incrementally and under a lock
(:mod:`~benchlib.catalog.lock`); the table layout is generated from the record schema
(:mod:`~benchlib.catalog.tables`) and migrated when it grows (:mod:`~benchlib.catalog.migrate`);
:func:`benchlib.catalog.select.load` reads a selection back as :func:`benchlib.load` would."""
