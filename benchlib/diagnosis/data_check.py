"""Whether ``benchlib diagnose``'s data folder holds images, asked before the ladder is planned
(every rung that reads a folder without images could only fail, minutes later)."""

from __future__ import annotations

import os
from pathlib import Path

from benchlib.errors import InputError

#: Entries looked at when searching ``data_dir`` for an image before planning.
IMAGE_SEARCH_ENTRIES = 100_000


def find_image(folder: str | Path) -> bool | None:
    """Whether ``folder`` holds an image file (torchvision's ``IMG_EXTENSIONS``) one or two
    levels down (``DIR/<class>/<image>``, or ``DIR/<image>``); None when it is not a folder
    (the config names that) or when the first :data:`IMAGE_SEARCH_ENTRIES` entries held none
    (too many to tell; the run's loader decides)."""
    from torchvision.datasets.folder import IMG_EXTENSIONS

    root = Path(folder)
    if not root.is_dir():
        return None
    seen = 0
    try:
        with os.scandir(root) as top:
            for entry in top:
                for item in _inner(entry):
                    seen += 1
                    if item.name.lower().endswith(IMG_EXTENSIONS) and item.is_file():
                        return True
                    if seen > IMAGE_SEARCH_ENTRIES:
                        return None
    except OSError:
        return None  # unreadable: the run names the reason
    return False


def _inner(entry: os.DirEntry) -> list[os.DirEntry]:
    """``entry`` itself, or the entries of the folder it is (a class folder)."""
    if not entry.is_dir():
        return [entry]
    with os.scandir(entry.path) as inner:
        return [item for _, item in zip(range(IMAGE_SEARCH_ENTRIES + 1), inner, strict=False)]


def check_data_dir(data_dir: str | Path) -> None:
    """InputError when ``data_dir`` is a folder without images (every rung that reads it could
    only fail, minutes later); ``benchlib diagnose`` asks before it plans."""
    if data_dir and find_image(data_dir) is False:
        from torchvision.datasets.folder import IMG_EXTENSIONS

        raise InputError(f"diagnose: data_dir: {data_dir!r} holds no image file "
                         f"({', '.join(IMG_EXTENSIONS)}) in it or in its class folders; give an "
                         "ImageNet-layout folder (DIR/<class>/<image>.jpg), or no --data-dir for "
                         "synthetic data only")
