"""Which runs two campaigns may be compared on (``benchlib compare``): the columns runs are
paired on, what makes the campaigns' numbers unlike (a warning) or not comparable at all
(another benchmark or unit: bad input), and whether a run is on both sides (a campaign compared
with itself: bad input). See :mod:`benchlib.compare.regression`."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import pandas as pd

from benchlib.analysis.tables import config_columns, ok
from benchlib.errors import InputError
from benchlib.formatting import label_value
from benchlib.records import configuration
from benchlib.vocabulary import CompareVerdict

#: The column that says when a run started (ISO 8601, UTC), in the records benchlib writes.
STARTED_AT = "started_at"
#: Columns taken as the time a run was made, first found first (records of older versions hold
#: none; then the sidecar's, else the notebook's, modification time is used).
TIME_COLUMNS = (STARTED_AT, "timestamp", "time", "finished", "started")
#: Columns that say where or when a run was made, or which run it was, not what it ran: never
#: paired on.
WHERE = ("campaign", "cluster", "host", "side", *TIME_COLUMNS, "ended_at", "run_id")
#: Columns whose difference makes two campaigns' numbers incomparable, and what they hold.
INCOMPARABLE = {"gpu": "GPU model", "device_name": "GPU variant", "env_driver": "driver",
                "env_torch": "torch", "env_container": "container", "env_cuda": "CUDA",
                "env_cudnn": "cuDNN", "env_nccl": "NCCL"}
#: Further columns compared when present: power limits and clock settings.
INCOMPARABLE_PATTERN = re.compile(r"power_limit|clock_limit|applications?_clock|locked_clock")
#: Columns whose difference between the campaigns makes their numbers incomparable (another
#: benchmark, another unit): never paired across.
NOT_COMPARABLE = ("benchmark", "unit")


def distinct(values: pd.Series) -> set[str]:
    """The values of a column as the text a message shows, by the one rule of
    :func:`benchlib.records.configuration.distinct` (64 and 64.0 one value, written ``64``;
    empty and missing ones left out)."""
    return {label_value(v) for v in configuration.distinct(values)}


def incomparable(base: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """One warning per column of :data:`INCOMPARABLE` (or a power-limit / clock column) whose
    values differ between the two campaigns."""
    columns = [*INCOMPARABLE, *sorted(c for c in {*base.columns, *new.columns}
                                      if INCOMPARABLE_PATTERN.search(c) and c not in INCOMPARABLE)]
    warnings = []
    for column in columns:
        a = distinct(base[column]) if column in base else set()
        b = distinct(new[column]) if column in new else set()
        if a and b and a != b:
            what = INCOMPARABLE.get(column, column)
            warnings.append(f"{what} differs ({column}): base {', '.join(sorted(a))}; new "
                            f"{', '.join(sorted(b))}: the numbers are not like for like")
    return warnings


def pairing_columns(base: pd.DataFrame, new: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The configuration columns runs are paired on, and those left out because each campaign
    holds one value of them and the two differ (the difference being compared):
    :func:`benchlib.records.configuration.pair`; a column only one campaign holds is neither."""
    both = pd.concat([base, new], ignore_index=True)
    pairing = configuration.pair(base, new, config_columns(both, exclude=WHERE))
    return pairing.keys, list(pairing.differing)


def not_comparable(base: pd.DataFrame, new: pd.DataFrame, differing: list[str]) -> None:
    """InputError when the campaigns differ in a :data:`NOT_COMPARABLE` column."""
    said = [f"{c} {', '.join(sorted(distinct(base[c])))} (base) vs "
            f"{', '.join(sorted(distinct(new[c])))} (new)"
            for c in NOT_COMPARABLE if c in differing]
    if said:
        raise InputError(f"compare: the campaigns are not comparable: {'; '.join(said)}; "
                         "compare campaigns of one benchmark and unit")


def _run_files(frame: pd.DataFrame) -> dict[object, str]:
    """Each run's notebook (``source``) by identity: its device and inode where it exists (so
    a link and its target are one file), else its absolute path."""
    found: dict[object, str] = {}
    for source in frame.get("source", pd.Series(dtype=object)).tolist():
        if not isinstance(source, str) or not source:
            continue
        try:
            info = os.stat(source)
            found[(info.st_dev, info.st_ino)] = source
        except (OSError, ValueError):
            found[os.path.abspath(source)] = source
    return found


def same_runs(base: pd.DataFrame, new: pd.DataFrame) -> None:
    """InputError when a run is on both sides: the same notebook files (the same campaign
    twice) or the same ``run_id`` (a copy of a campaign)."""
    a, b = _run_files(base), _run_files(new)
    shared = sorted(b[key] for key in a.keys() & b.keys())
    if shared:
        raise InputError(f"compare: base and new hold the same runs ({len(shared)} of "
                         f"{len(a)} base and {len(b)} new notebooks are the same files, e.g. "
                         f"{shared[0]}): a campaign compared with itself certifies nothing; "
                         "give the baseline campaign and the campaign to judge")
    ids = [set(ok(frame)["run_id"].dropna().astype(str)) if "run_id" in frame else set()
           for frame in (base, new)]  # finished runs: a failed one's id may be made from its error
    copied = sorted(ids[0] & ids[1])
    if copied:
        whole = len(copied) == min(len(ids[0]), len(ids[1]))
        said = ("hold copies of the same runs" if whole else
                f"share {len(copied)} run{'' if len(copied) == 1 else 's'}")
        raise InputError(f"compare: base and new {said} ({len(copied)} of {len(ids[0])} base "
                         f"and {len(ids[1])} new runs share their run_id, e.g. {copied[0]}): a "
                         "run on both sides certifies nothing; give the baseline campaign and "
                         "the campaign to judge, each with runs of its own")


def nothing_in_common(compared: pd.DataFrame, pairing: Sequence[str]) -> str:
    """Why no configuration was paired: the pairing columns whose values differ between the
    configurations only in base and those only in new (at most five), those with no value in
    common first (``num_workers: base 0, new 1``)."""
    sides = [compared[compared["verdict"] == v] for v in (CompareVerdict.ONLY_IN_BASE,
                                                          CompareVerdict.ONLY_IN_NEW)]
    said = []
    for column in pairing:
        base, new = (distinct(rows[column]) if column in rows else set() for rows in sides)
        if base != new:
            said.append((bool(base & new), f"{column}: base {', '.join(sorted(base))}, new "
                                            f"{', '.join(sorted(new))}"))
    shown = [text for _, text in sorted(said, key=lambda item: item[0])[:5]]
    return "no configuration in common" + (f" ({'; '.join(shown)})" if shown else "")
