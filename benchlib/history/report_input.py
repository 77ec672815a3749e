"""What the History page is drawn from besides the campaign: earlier campaign folders
(``benchlib report DIR --history EARLIER...``), checked before anything runs
(:class:`~benchlib.errors.InputError` naming ``--history``), or the configured catalog
(``$BENCHLIB_DB``) when it holds earlier runs of the campaign's configurations."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

import benchlib.analysis.selection as selection
from benchlib.errors import BenchlibError, InputError
from benchlib.records.results import load

log = logging.getLogger(__name__)


def validated_history(given: Sequence[str | Path], campaign: str | Path | None = None
                      ) -> tuple[Path, ...]:
    """The folders of ``given`` as absolute paths: each an existing folder holding records,
    and together holding earlier runs of ``campaign``'s configurations on its nodes (else
    there is no history to draw)."""
    folders = tuple(Path(folder).expanduser().absolute() for folder in given)
    frames = []
    for given_as, folder in zip(given, folders, strict=True):
        if not folder.is_dir():
            raise InputError(f"--history {given_as}: not an existing folder (give earlier "
                             "campaigns' results folders, or a folder holding them)")
        frame = load(folder)
        if frame.empty:
            raise InputError(f"--history {given_as}: no result records in that folder")
        frames.append(frame)
    if frames and campaign is not None:
        earlier = selection.earlier(load(Path(campaign)), pd.concat(frames, ignore_index=True))
        if earlier.empty:
            raise InputError(f"--history {' '.join(map(str, given))}: no earlier runs of this "
                             "campaign's configurations on its nodes there (the same "
                             "benchmark, model, batch size, ... on the same host)")
    return folders


def catalog_history(campaign: str | Path, say: Callable[[str], None] = log.warning) -> str:
    """When a catalog is configured (``$BENCHLIB_DB``) and holds earlier runs of
    ``campaign``'s configurations on its nodes: a stamp of them (how many, the latest start),
    which changes when they do; else "". A catalog that cannot be read is said, never fatal."""
    from benchlib.catalog import database

    if not database.configured():
        return ""
    try:
        earlier = selection.earlier_in_catalog(load(Path(campaign)), selection.CONFIGURED_CATALOG)
    except (BenchlibError, OSError) as error:
        say(f"History page: the catalog of $BENCHLIB_DB not read: {str(error).splitlines()[0]}")
        return ""
    if earlier.empty:
        return ""
    latest = earlier["started_at"].dropna().astype(str).max() if "started_at" in earlier else ""
    return f"{len(earlier)} runs to {latest}"
