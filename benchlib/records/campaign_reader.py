"""A campaign folder read again and again as it grows (``benchlib diagnose``'s rounds): each
read parses only the points that are new or whose files changed since the last one, and gives
the same table :func:`benchlib.records.results.load` would."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchlib.records import results
from benchlib.records.store import Fingerprint, fingerprint


class CampaignReader:
    """The records under one folder, kept between reads: :meth:`read` walks the folder,
    parses each point whose notebook or sidecar is new or changed, keeps the others' records,
    and forgets the points that are gone. ``parsed`` counts the points parsed so far."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.parsed = 0
        self._points: dict[Path, tuple[Fingerprint, dict | None]] = {}

    def read(self) -> pd.DataFrame:
        """Every record under the folder, as :func:`~benchlib.records.results.load` gives it
        (values checked, columns ordered); what was left out is logged as there."""
        seen: dict[Path, tuple[Fingerprint, dict | None]] = {}
        for notebook in results.candidates(self.folder):
            stamp = fingerprint(notebook)
            kept = self._points.get(notebook)
            if kept is None or kept[0] != stamp:
                kept = (stamp, results.read_point(notebook)[1])
                self.parsed += 1
            seen[notebook] = kept
        self._points = seen
        return results.frame_of([dict(record) for _, record in seen.values() if record is not None])
