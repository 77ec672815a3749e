"""The paths the record commands take (``benchlib results|check|compare``), checked before any
work: a results folder (or one notebook) that holds records, and an output file (``--csv``,
``--junit``) that can be written. Each bad one is :class:`~benchlib.errors.InputError` (exit 2)
naming the option or path and what to give instead."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

from benchlib.errors import InputError, describe_os_error
from benchlib.records import store


def check_results_path(path: str) -> None:
    """A results path is a folder or one notebook: any other file is bad input."""
    if Path(path).is_file() and Path(path).suffix != ".ipynb":
        raise InputError(f"{path}: not a results folder (a file that is not a notebook); give a "
                         "campaign's folder (outputs/<campaign>) or one executed notebook (.ipynb)")


def load_records(path: str) -> pd.DataFrame:
    """The records under ``path`` (:func:`benchlib.records.results.load`); InputError when the
    path is not a results path or holds no record (every command says the same)."""
    from benchlib.records.results import load

    check_results_path(path)
    frame = load(path)
    if frame.empty:
        raise InputError(f"no result records under {path} (give a campaign's folder, "
                         "outputs/<campaign>, after `benchlib sweep`)")
    return frame


def check_output_file(option: str, path: str | None) -> None:
    """An output file (``--csv``, ``--junit``) is a new or regular file in an existing folder
    that takes new files (written to a temporary file there, then renamed), or a character
    device or FIFO you can write (``/dev/stdout``: written in place); anything else is refused
    (:func:`benchlib.records.store.output_kind`)."""
    if not path:
        return
    target = Path(path).expanduser().absolute()
    try:
        kind = store.output_kind(target)
    except OSError as error:
        raise InputError(f"{option} {path}: {describe_os_error(error)}") from None
    if kind == store.STREAM:
        if not os.access(target, os.W_OK):
            raise InputError(f"{option} {path}: you may not write to it")
        return
    if kind not in store.WRITABLE:
        raise InputError(f"{option} {path}: is {kind}; give a file path (or a character device "
                         "or FIFO such as /dev/stdout, written in place)")
    target = Path(os.path.realpath(target))
    if not target.parent.is_dir():
        raise InputError(f"{option} {path}: its folder does not exist (create it, or give a "
                         "path in an existing folder)")
    try:
        with tempfile.TemporaryFile(dir=target.parent):
            pass
    except OSError as error:
        reason = (error.strerror or type(error).__name__).lower()
        raise InputError(f"{option} {path}: no file can be created in {target.parent} "
                         f"({reason}); give a path in a folder you can write") from None
