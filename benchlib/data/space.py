"""Free space for the sample-data writers: checked against their estimate before any byte is
written, so a full disk is an error naming the path, not a half-written file."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchlib.errors import OutputError

#: Room left beside an estimate (file system metadata, the estimate's error).
MARGIN = 1.05


def _existing_folder(path: Path) -> Path:
    """The nearest folder of ``path`` that exists (where the new files will land)."""
    folder = path.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def check_free_space(path: str | Path, needed: int) -> None:
    """OutputError naming ``path`` when its file system has fewer than about ``needed`` bytes
    free (``shutil.disk_usage`` of the nearest existing folder)."""
    path = Path(path)
    folder = _existing_folder(path)
    free = shutil.disk_usage(folder).free
    if free < needed * MARGIN:
        raise OutputError(f"no space for {str(path)!r}: it needs about {needed / 1e9:,.2f} GB, "
                          f"{free / 1e9:,.2f} GB free on {str(folder)!r}; nothing was written")
