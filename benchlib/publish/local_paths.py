"""Paths of the machine that built a report, as the shared report shows them.

A report is shared across a cluster's users and copied elsewhere: it names no folder of the
machine that built it. A path under the folder the report was built from (its ``root``: where
``benchlib report`` was typed, normally the checkout the campaign ran from) is shown relative to
it (``data/demo-images``), one under the builder's home as ``~/...``; other paths (shared
storage such as ``/scratch/imagenet``) are everyone's and stay as they are. The summary
notebooks' kernels learn the root from :data:`ROOT_ENV`; every page and notebook copy the report
writes passes through :func:`scrub`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

#: The folder a report was built from, for its summary kernels (which work in the campaign's).
ROOT_ENV = "BENCHLIB_REPORT_ROOT"
#: Record columns that hold a path of the machine that ran or built the campaign.
PATH_COLUMNS = ("data_path", "data_dir", "volume", "token_file", "output")


def _prefixes(root: Path) -> list[tuple[str, str]]:
    """(absolute prefix, what replaces it), the longest first."""
    found = [(str(root) + os.sep, ""), (str(Path.home()) + os.sep, "~" + os.sep)]
    return sorted((p for p in found if len(p[0]) > 1), key=lambda p: -len(p[0]))


def shown(value: object, root: Path) -> object:
    """``value`` (a path as text) relative to ``root`` or to ``~`` where it lies under either;
    anything else as it is."""
    if not isinstance(value, str) or not value.startswith(os.sep):
        return value
    if value == str(root):
        return "."
    for prefix, replacement in _prefixes(root):
        if value.startswith(prefix):
            return replacement + value[len(prefix):]
    return value


def scrub(text: str, root: Path) -> str:
    """``text`` with every path under ``root`` (or the builder's home) made relative (``~/``)."""
    for prefix, replacement in _prefixes(root):
        text = text.replace(prefix, replacement)
    return text


def builder_root() -> Path:
    """The folder a report is being built from: where ``benchlib report`` was typed."""
    return Path.cwd().resolve()


def configured_root() -> Path | None:
    """The report's root in a summary kernel (:data:`ROOT_ENV`), None outside a report."""
    given = os.environ.get(ROOT_ENV)
    return Path(given) if given else None


def relative_columns(frame: pd.DataFrame, root: Path | None) -> pd.DataFrame:
    """``frame`` with its path columns (:data:`PATH_COLUMNS`) as :func:`shown` gives them."""
    if root is None:
        return frame
    columns = [c for c in PATH_COLUMNS if c in frame]
    if not columns:
        return frame
    frame = frame.copy()
    for column in columns:
        frame[column] = [shown(v, root) for v in frame[column]]
    return frame
