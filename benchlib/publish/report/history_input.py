"""``benchlib report DIR --history EARLIER...``: the earlier campaign folders the History page
is drawn from, checked before anything runs (:class:`~benchlib.errors.InputError` naming
``--history``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from benchlib.analysis import selection
from benchlib.errors import InputError
from benchlib.records.results import load


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
