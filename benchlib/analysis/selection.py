"""Which runs a history looks at (``benchlib history --where KEY=VALUE --since DATE``): the
options read and checked, and the frame cut to them. Bad input names the option and what it
allows (:class:`~benchlib.errors.InputError`, exit 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from benchlib.analysis.run_order import run_times
from benchlib.analysis.tables import config_columns, ok
from benchlib.compare.comparable import WHERE
from benchlib.errors import CatalogError, InputError
from benchlib.history.series import NODE, configuration_columns
from benchlib.records.runs import identity, once
from benchlib.records.values import one_line

#: How a page names the catalog ``$BENCHLIB_DB`` names: the variable's name, never its value
#: (a database URL may hold a password; papermill keeps parameters in the executed notebook).
CONFIGURED_CATALOG = "$BENCHLIB_DB"
#: How a date is given.
DATE_FORMS = "ISO 8601, e.g. 2026-09-01 or 2026-09-01T02:00:00Z (UTC when no zone is given)"


def parse_where(items: Sequence[str] | None) -> dict[str, str | list[str]]:
    """``["gpu=H100", "batch_size=64"]`` -> ``{"gpu": "H100", "batch_size": "64"}``; the same
    key twice selects either value (``{"host": ["node001", "node017"]}``), as ``benchlib
    results --where`` and ``compare`` selections do. ``since``/``until`` are options
    (``--since``), not keys."""
    found: dict[str, str | list[str]] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise InputError(f"--where {item}: give KEY=VALUE, e.g. --where gpu=H100")
        if key in ("since", "until"):
            raise InputError(f"--where {item}: a time bound is an option: --since DATE")
        if key in found:
            had = found[key]
            found[key] = [*(had if isinstance(had, list) else [had]), value]
        else:
            found[key] = value
    return found


def said(where: Mapping[str, object]) -> str:
    """``where`` as the ``--where`` options that give it."""
    return " ".join(f"--where {key}={value}" for key, values in where.items()
                    for value in (values if isinstance(values, list) else [values]))


def parse_date(text: str | None, option: str = "--since") -> pd.Timestamp | None:
    """``text`` as a UTC time (None when not given)."""
    if text is None:
        return None
    try:
        when = pd.Timestamp(text)
    except (ValueError, TypeError):
        when = pd.NaT
    if pd.isna(when):
        raise InputError(f"{option} {text}: not a date; give {DATE_FORMS}")
    return when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")


def keys(df: pd.DataFrame) -> list[str]:
    """The columns ``--where`` may name: the configuration columns, where a run was made
    (campaign, cluster, host) and the environment columns."""
    where = [c for c in ("campaign", "cluster", "host") if c in df]
    return [*config_columns(df, exclude=WHERE), *where,
            *(c for c in df.columns if str(c).startswith("env_"))]


def _matches(values: pd.Series, wanted: str) -> pd.Series:
    """Where ``values`` equal ``wanted`` as text, or as a number for numeric columns."""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        number = pd.to_numeric(pd.Series([wanted]), errors="coerce").iloc[0]
        return values == number if pd.notna(number) else pd.Series(False, index=values.index)
    return values.astype(str).str.lower() == wanted.lower() if pd.api.types.is_bool_dtype(
        values) else values.astype(str) == wanted


def select(df: pd.DataFrame, where: Mapping[str, str | list[str]] | None = None,
           since: pd.Timestamp | None = None, until: pd.Timestamp | None = None) -> pd.DataFrame:
    """The runs of ``df`` whose columns hold ``where``'s values and that started from
    ``since`` and before ``until`` (:func:`benchlib.analysis.run_order.run_times`)."""
    allowed = keys(df)
    chosen = pd.Series(True, index=df.index)
    for key, value in (where or {}).items():
        if key not in allowed:
            raise InputError(f"{said({key: value})}: no such key in these records; keys: "
                             f"{', '.join(allowed)}")
        wanted = value if isinstance(value, list) else [value]
        either = pd.Series(False, index=df.index)
        for one in wanted:
            either |= _matches(df[key], one)
        chosen &= either
    df = df[chosen]
    if since is not None or until is not None:
        times = run_times(df)
        kept = pd.Series(True, index=df.index)
        if since is not None:
            kept &= times >= since
        if until is not None:
            kept &= times < until
        df = df[kept]
    return df


#: What was done to a frame's columns as it was read (a report page's relative paths).
AsRead = Callable[[pd.DataFrame], pd.DataFrame]


def earlier(campaign: pd.DataFrame, others: pd.DataFrame, own: bool = True) -> pd.DataFrame:
    """The runs of ``others`` (earlier campaigns, a catalog's selection) of ``campaign``'s
    configurations on its nodes, less ``campaign``'s own runs (kept with ``own`` False): what a
    history of the campaign adds to it."""
    done = ok(campaign)
    keys = [k for k in configuration_columns(done) if k in others]
    if not len(done) or not len(others):
        return others.iloc[0:0]
    mine = set(map(tuple, done[keys].astype(str).to_numpy()))
    theirs = pd.Series(list(map(tuple, others[keys].astype(str).to_numpy())), index=others.index)
    chosen = theirs.isin(mine)
    if NODE in done and NODE in others:
        chosen &= others[NODE].isin(set(done[NODE]))
    if own:
        chosen &= ~identity(others).isin(set(identity(done).dropna()))
    return once(others[chosen])


def earlier_in_catalog(campaign: pd.DataFrame, db: str, as_read: AsRead | None = None
                       ) -> pd.DataFrame:
    """:func:`earlier` runs from catalog ``db`` (:data:`CONFIGURED_CATALOG`: the one
    ``$BENCHLIB_DB`` names), read narrowed to the campaign's benchmarks, models and hosts;
    ``as_read``: what was done to ``campaign``'s columns when it was read (a report's pages
    show path columns relative), done to the catalog's runs too so that they pair."""
    return earlier(campaign, catalog_runs(campaign, db, as_read))


def comparison_history(base: pd.DataFrame, new: pd.DataFrame, db: str | None,
                       as_read: AsRead | None = None) -> pd.DataFrame | None:
    """The runs of catalog ``db`` (``""``: the default one; ``None``: the one ``$BENCHLIB_DB``
    names, if any) of ``base``'s and ``new``'s configurations on their nodes, less their own runs: where
    a comparison reads each configuration's noise between campaigns
    (:mod:`benchlib.analysis.campaign_noise`). ``None`` without a catalog, or when it cannot be
    read (the reason on stderr: a catalog problem never fails a comparison)."""
    import sys


    if db is None:
        from benchlib.catalog.database import configured

        db = CONFIGURED_CATALOG if configured() else None
    if db is None:
        return None
    both = pd.concat([base, new], ignore_index=True)
    try:  # the base's own campaign is history too; the new one is what is judged
        return earlier(new, earlier(base, catalog_runs(both, db, as_read), own=False))
    except (CatalogError, OSError, ValueError) as error:
        print(f"note: the catalog could not be read ({one_line(str(error))}): the noise between "
              "campaigns comes from the campaigns compared only", file=sys.stderr)
        return None


def catalog_runs(campaign: pd.DataFrame, db: str, as_read: AsRead | None = None
                 ) -> pd.DataFrame:
    """Catalog ``db``'s runs of ``campaign``'s benchmarks, models and hosts (``as_read`` done
    to them: :func:`earlier_in_catalog`)."""
    from benchlib.catalog.select import load as select

    done = ok(campaign)
    narrowed = {key: sorted(done[key].dropna().astype(str).unique().tolist())
                for key in ("benchmark", "model", NODE) if key in done}
    found = select(db="" if db == CONFIGURED_CATALOG else db, where=narrowed)
    return as_read(found) if as_read is not None else found
