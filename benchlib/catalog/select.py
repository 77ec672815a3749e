"""Selections: records of the catalog (or of a folder) by column values and time, as the table
:func:`benchlib.load` makes (:func:`load`); selections as people type them
(``"cluster=jade2 gpu=V100 since=2026-09-01"``, :func:`parse`), each key checked against the
record schema. ``folder=PATH`` selects the records under a campaign folder: a campaign is its
name and its folder, and two folders may hold campaigns of one name."""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from benchlib.catalog import database, migrate, tables
from benchlib.errors import CatalogError, InputError
from benchlib.records import flags, schema
from benchlib.records import results as folder_results
from benchlib.records.results import frame_of
from benchlib.records.run_table import RunTable
from benchlib.records.runs import once

#: Keys of a typed selection that bound ``started_at`` rather than name a column.
TIME_KEYS = ("since", "until")
#: The key that names a campaign folder: the records whose notebook (``source``) lies under it.
FOLDER_KEY = "folder"
#: Rows fetched from the catalog at a time.
FETCH = 2000


@dataclass(frozen=True)
class Selection:
    """Column values (``where``: each a value or a list of values, any of which matches), a
    time window on ``started_at`` (``since`` inclusive, ``until`` exclusive; ISO UTC text) and
    a campaign folder (``folder``: its real path; the records whose ``source`` lies under it)."""

    where: dict[str, object] = field(default_factory=dict)
    since: str | None = None
    until: str | None = None
    folder: str | None = None

    def __str__(self) -> str:
        said = [f"{k}={v}" for k, v in self.where.items()]
        said += [f"{k}={v}" for k, v in (("since", self.since), ("until", self.until),
                                         (FOLDER_KEY, self.folder and shown(self.folder))) if v]
        return " ".join(said) or "every record"


def shown(path: str) -> str:
    """``path`` relative to the working folder where it lies below it, else as it is."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def real_folder(value: object) -> str | None:
    """A ``folder=`` value as the catalog holds its records' paths: the real path (relative
    paths start at the working folder, links followed, as ``benchlib index`` reads a folder);
    None when not given; CatalogError for two folders in one selection."""
    if value is None:
        return None
    if isinstance(value, list | tuple | set):
        raise CatalogError(f"selection: {FOLDER_KEY}= given {len(value)} times; a selection "
                           "names one campaign folder")
    return os.path.realpath(os.path.expanduser(str(value)))


def under(source: object, folder: str) -> bool:
    """Whether the notebook ``source`` lies under ``folder`` (a real path)."""
    prefix = folder.rstrip(os.sep) + os.sep
    text = str(source) if isinstance(source, str) else ""
    return bool(text) and (text.startswith(prefix) or os.path.realpath(text).startswith(prefix))


def allowed_keys(times: bool = True) -> str:
    """The selection keys, in words (for a message naming a bad one); ``since`` and ``until``
    only where they are keys (a typed selection), not for a ``where`` mapping."""
    return (", ".join(sorted(tables.typed_columns())) + ", a column family of docs/record.md "
            "(env_driver, time_forward_s, ...), folder (a campaign folder)"
            + (", since, until" if times else ""))


LARGEST_INTEGER = 2**63 - 1  #: what SQLite and PostgreSQL (bigint) store


def _in_range(key: str, value: object) -> object:
    """``value`` where a database can compare it: CatalogError naming ``key`` for an integer
    beyond 64 bits (no record holds one; SQLite and PostgreSQL would fail on it)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise CatalogError(f"selection: {key}={value}: beyond the largest integer a catalog "
                           f"holds ({LARGEST_INTEGER:,}); no record has it")
    return value


def _coerce(key: str, value: object) -> object:
    """``value`` as a value of column ``key`` (text from a command line made a number or a
    boolean where the schema says so); InputError naming the key for a value that is not."""
    if isinstance(value, list | tuple | set):
        return [_coerce(key, v) for v in value]
    column = schema.column(key)
    if column is None:
        raise CatalogError(f"selection: unknown column {key!r}; allowed: "
                           f"{allowed_keys(times=False)}"
                           + ("; a time bound is its own argument (since=, until=)"
                              if key in TIME_KEYS else ""))
    if not isinstance(value, str):
        return _in_range(key, value)
    try:
        if column.dtype in ("count", "int"):
            return _in_range(key, int(value))
        if column.dtype == "float":
            return float(value)
    except ValueError:
        raise CatalogError(f"selection: {key}={value!r}: {key} takes {column.valid}") from None
    if column.dtype == "bool":
        if value.lower() not in ("true", "false"):
            raise CatalogError(f"selection: {key}={value!r}: {key} takes true or false")
        return value.lower() == "true"
    return value


def moment(value: object, key: str = "since") -> str | None:
    """A time bound (a date, a datetime, ISO text; naive means UTC) as ISO 8601 UTC text to
    the second, as records hold ``started_at``; None stays None."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, datetime):
            found = value
        elif isinstance(value, date):
            found = datetime(value.year, value.month, value.day)
        else:
            found = datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise CatalogError(f"selection: {key}={value!r}: {key} takes a date or time in ISO 8601 "
                           "(2026-09-26, 2026-09-26T08:00, 2026-09-26T08:00:00+00:00)") from None
    found = found if found.tzinfo else found.replace(tzinfo=timezone.utc)
    try:
        found = found.astimezone(timezone.utc)
    except OverflowError:  # the calendar's ends with an offset: the end itself, in UTC
        found = (datetime.min if found.year == 1 else datetime.max).replace(tzinfo=timezone.utc)
    return found.isoformat(timespec="seconds")


def selection(where: Mapping[str, object] | None = None, since: object = None,
              until: object = None) -> Selection:
    """A checked :class:`Selection`: every key a record column (or ``folder``: a campaign
    folder, :func:`real_folder`), every value of its type, a value given (``benchmark=``
    selects nothing), ``since`` before ``until``."""
    where = {str(k): v for k, v in (where or {}).items()}
    empty = [k for k, v in where.items() if v == "" or v == []]
    if empty:
        raise CatalogError(f"selection: {empty[0]}= has no value; give one ({empty[0]}=VALUE), "
                           "or leave the key out to select any")
    folder = real_folder(where.pop(FOLDER_KEY, None))
    chosen = Selection({k: _coerce(k, v) for k, v in where.items()},
                       moment(since, "since"), moment(until, "until"), folder)
    if chosen.since and chosen.until and pd.Timestamp(chosen.since) >= pd.Timestamp(chosen.until):
        raise CatalogError(f"selection: since={chosen.since} is not before until={chosen.until}: "
                           "the window holds no time (until is exclusive)")
    return chosen


def parse(text: str | list[str]) -> Selection:
    """A selection as typed: ``"cluster=jade2 gpu=V100 since=2026-09-01"`` (or its words as a
    list); CatalogError (exit 2) naming a word that is not ``KEY=VALUE`` or an unknown key."""
    try:
        words = shlex.split(text) if isinstance(text, str) else list(text)
    except ValueError as error:  # an unbalanced quote
        raise CatalogError(f"selection: {text!r}: {str(error).lower()}; quote a value with "
                           "spaces whole: host='node 001' gpu=H100") from None
    where: dict[str, object] = {}
    bounds: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise CatalogError(f"selection: {word!r} is not KEY=VALUE (e.g. cluster=jade2); "
                               f"allowed keys: {allowed_keys()}")
        if key in TIME_KEYS:
            bounds[key] = value
        elif key in where:
            where[key] = [*(where[key] if isinstance(where[key], list) else [where[key]]), value]
        else:
            where[key] = value
    return selection(where, bounds.get("since"), bounds.get("until"))


def _matches(frame: pd.DataFrame, chosen: Selection) -> pd.Series:
    keep = pd.Series(True, index=frame.index)
    for key, value in chosen.where.items():
        wanted = value if isinstance(value, list) else [value]
        if key == "flags" and key in frame:  # flags=noisy: every run flagged noisy, with others
            names = set(map(str, wanted))
            keep &= frame[key].map(lambda text, names=names: bool(set(flags.of(text)) & names))
            continue
        keep &= frame[key].isin(wanted) if key in frame else False
    if chosen.folder:
        sources = frame.get("source", pd.Series("", index=frame.index))
        keep &= sources.map(lambda source: under(source, chosen.folder))
    if chosen.since or chosen.until:
        started = (_instants(frame["started_at"]) if "started_at" in frame
                   else pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns, UTC]"))
        if chosen.since:
            keep &= started.notna() & (started >= pd.Timestamp(chosen.since))
        if chosen.until:
            keep &= started.notna() & (started < pd.Timestamp(chosen.until))
    return keep


def _instants(values: pd.Series) -> pd.Series:
    """``started_at`` text as UTC instants (any offset, ``Z`` or none: UTC; NaT when not a
    time), so a bound compares times, not text ("2026-09-26T01:00+05:00" is the 25th)."""
    return pd.to_datetime(values.astype("string"), utc=True, errors="coerce", format="ISO8601")


def narrowed(frame: pd.DataFrame, chosen: Selection) -> pd.DataFrame:
    """The rows of ``frame`` (a loaded table) that ``chosen`` selects."""
    if not chosen.where and not chosen.since and not chosen.until and not chosen.folder:
        return frame
    return frame[_matches(frame, chosen)].reset_index(drop=True)


def _query(chosen: Selection) -> sa.Select:
    r = tables.RECORDS
    query = sa.select(r).order_by(r.c[tables.ROW_ID])
    for key, value in chosen.where.items():
        if key == "flags":  # a list of names: narrowed by name (:func:`_matches`), not here
            continue
        if key in r.c:
            query = query.where(r.c[key].in_(value) if isinstance(value, list)
                                else r.c[key] == value)
    if chosen.folder:  # a few more in SQLite (LIKE ignores case): :func:`narrowed` keeps exact
        query = query.where(r.c[tables.SOURCE].startswith(
            chosen.folder.rstrip(os.sep) + os.sep, autoescape=True))
    # started_at is text as each record has it (offsets other than UTC, a space for "T"):
    # the database narrows by text a day wider than asked, :func:`narrowed` by time.
    if chosen.since:
        query = query.where(r.c.started_at >= _shifted(chosen.since, -1))
    if chosen.until:
        query = query.where(r.c.started_at < _shifted(chosen.until, 1))
    return query


def _shifted(bound: str, days: int) -> str:
    """The date of ``bound`` (ISO UTC text) ``days`` later, as text that sorts before every
    time of that day in any form."""
    try:
        return (datetime.fromisoformat(bound) + timedelta(days=days)).date().isoformat()
    except OverflowError:  # past the calendar's end: text before / after every date
        return "" if days < 0 else "~"


def records(db: str | Path | None, chosen: Selection) -> Iterator[dict]:
    """The catalog's records that the typed columns of ``chosen`` select, as they were read,
    streamed, in the order they were indexed (a folder indexed once: the order of a scan)."""
    catalog = database.resolve(db)
    if catalog.path is not None and not catalog.path.is_file():
        raise CatalogError(f"no catalog at {catalog.shown} yet; make it with "
                           f"`{catalog.index_command()}`")
    engine = database.engine(catalog)
    try:
        with engine.connect() as connection:
            migrate.check_readable(connection, catalog)
            result = connection.execution_options(yield_per=FETCH).execute(_query(chosen))
            for row in result.mappings():
                try:
                    yield tables.from_row(row)
                except (ValueError, TypeError, KeyError) as error:  # a damaged row: left out
                    logging.getLogger(__name__).warning(
                        "catalog %s: the row of %s is damaged (%s): left out; index its folder "
                        "again to read it anew", catalog.shown, row.get(tables.SOURCE, "?"),
                        type(error).__name__)
    except SQLAlchemyError as error:
        raise database.unreachable(catalog, error) from None
    finally:
        engine.dispose()


def from_catalog(db: str | Path | None, chosen: Selection) -> pd.DataFrame:
    """The table of the catalog's records that ``chosen`` selects (:func:`load`'s)."""
    return RunTable.of(narrowed(frame_of(records(db, chosen)), chosen))


def load(path: str | Path | None = None, strict: bool = False, db: str | Path | None = None,
         where: Mapping[str, object] | str | None = None, since: object = None,
         until: object = None) -> pd.DataFrame:
    """Every record under ``path`` as one row each (see :func:`scan` for what is left out);
    with ``db`` (a catalog: a SQLite file or a ``postgresql://`` URL; ``""``: the default,
    ``$BENCHLIB_DB`` or ``outputs/catalog.sqlite``), the catalog's records instead, as the same
    table. ``where`` ({column: value or list of values}), ``since`` and ``until`` (on
    ``started_at``: a date, datetime or ISO text, ``until`` exclusive) select rows. A
    ``source`` column names each row's notebook. Every record column is in the frame; shown in
    a notebook it leads with the settings that vary and the results
    (:class:`~benchlib.records.run_table.RunTable`: ``df.tidy()``, ``df.every_column()``).
    ``where`` may also be text as the commands take it (``"benchmark=train gpu=H100"``)."""
    if where is not None and not isinstance(where, (str, Mapping)):
        raise InputError(f"load: where={where!r:.60}: give {{column: value or [values]}} or the "
                         "commands' text, \"benchmark=train gpu=H100\"")
    if isinstance(where, str):
        typed = parse(where)
        where = {**typed.where, **({FOLDER_KEY: typed.folder} if typed.folder else {})}
        since, until = (since if since is not None else typed.since,
                        until if until is not None else typed.until)
    chosen = selection(where, since, until)
    if db is None:
        if path is None:
            raise InputError("load: give a results folder (path) or a catalog (db=)")
        found = folder_results.load(path, strict)
        if found.empty:  # as `benchlib results` says it (exit 2 there), not an empty table only
            logging.getLogger(__name__).warning("load: no records under %s (a results folder "
                                                "holds executed notebooks and their .json)", path)
        return RunTable.of(narrowed(found, chosen))
    if path is not None:
        raise InputError("load: give a results folder (path) or a catalog (db=), not both")
    return from_catalog(db, chosen)


def pair(db: str | Path | None, base: str | None, new: str | None
         ) -> list[tuple[str, pd.DataFrame]]:
    """Two selections of the catalog ``db`` (``benchlib compare --base ... --new ...``): each
    one's name and its records. InputError (exit 2) for one without the other, an empty one
    (it would select everything), an unknown key
    (named, with the allowed ones), the same selection twice, or one that matches nothing."""
    if base is None or new is None:
        raise InputError("compare: give --base and --new together (two selections of the "
                         "catalog)")
    for option, text in (("--base", base), ("--new", new)):
        if not text.strip():
            raise InputError(f"compare: {option} is empty: it would select every record; give "
                             "KEY=VALUE pairs such as campaign=nightly-41 or gpu=H100")
    chosen = [parse(base), parse(new)]
    if chosen[0] == chosen[1]:
        raise InputError(same_twice(db, chosen[0]))
    found = []
    for option, selected in zip(("--base", "--new"), chosen, strict=True):
        frame = once(from_catalog(db, selected))  # a run indexed from two folders: once
        if frame.empty:
            raise InputError(f"compare: {option} {selected}: no records in the catalog "
                             f"{database.resolve(db).shown} match")
        found.append((f"{option} {selected}", frame))
    return found


def same_twice(db: str | Path | None, chosen: Selection) -> str:
    """What compare says when ``--base`` and ``--new`` are one selection: a campaign compared
    with itself certifies nothing; where its records lie in several folders (two campaigns of
    one name), those folders and how to name each side's (``folder=``)."""
    said = (f"compare: --base and --new select the same records ({chosen}): a campaign compared "
            "with itself certifies nothing")
    try:
        sources = from_catalog(db, chosen).get("source", pd.Series(dtype=object)).dropna()
    except CatalogError:
        sources = pd.Series(dtype=object)
    folders = sorted({shown(os.path.dirname(str(s))) for s in sources})
    if len(folders) < 2:
        return (f"{said}; two campaigns of one name in two folders are told apart by naming "
                f"each side's folder ({FOLDER_KEY}=PATH)")
    listed = ", ".join(folders[:3]) + (f" and {len(folders) - 3} more" if len(folders) > 3 else "")
    return (f"{said}; its records lie in {len(folders)} folders ({listed}): name each side's, "
            f"e.g. --base \"{chosen} {FOLDER_KEY}={folders[0]}\" "
            f"--new \"{chosen} {FOLDER_KEY}={folders[1]}\"")
