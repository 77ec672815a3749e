"""Records as a CSV file that is safe to open in a spreadsheet, written whole or not at all.

Record text comes from notebooks, params files and the environment, so a cell may start like a
formula (``=HYPERLINK(...)``, ``-2+3+cmd|' /C calc'!A0``) that a spreadsheet would run. As
OWASP's CSV injection advice says, such text cells get a leading ``'``; numbers (and text that
is only a number) are written as they are. Text that UTF-8 cannot hold (a lone surrogate) is
written as ``?``. Lines end in CRLF (RFC 4180), so a field holding a bare CR is quoted too.
The file is written whole or not at all, and never replaces a device, FIFO or link.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from benchlib.records.store import write_output_file

#: First characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: Text that is only a number (``-3.5``, ``+1e-3``): no formula, kept as it is.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def neutralize_text(value: object) -> object:
    """``value`` with a ``'`` in front when it is text that a spreadsheet would run."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def neutralize(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names run no formula; numeric columns
    are left as they are."""
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(neutralize_text)
    safe.columns = [neutralize_text(str(c)) for c in safe.columns]
    return safe


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` (:func:`neutralize`\\ d) as UTF-8 CSV without the index, CRLF line ends;
    unencodable text as ``?``."""
    text = neutralize(frame).to_csv(index=False, lineterminator="\r\n")
    return text.encode("utf-8", errors="replace")


def write_csv(path: str | Path, frame: pd.DataFrame) -> Path:
    """Write ``frame`` as a safe CSV file through a temporary file and a rename (any previous
    file stays when it cannot be written whole; a character device or FIFO is written in place,
    never replaced: :func:`~benchlib.records.store.write_output_file`); OutputError naming the
    path and the reason."""
    path = Path(path)
    write_output_file(path, csv_bytes(frame))
    return path
