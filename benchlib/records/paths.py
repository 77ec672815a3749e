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
from benchlib.inputs.layout import LEDGER, PARTIAL, REPORT
from benchlib.records import store

#: The folder ``benchlib report`` builds in a campaign's folder (:mod:`benchlib.report`).


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


def result_file(target: Path) -> str | None:
    """What ``target`` (a resolved path) is when it is one of benchlib's own result files, in
    words; None when it is not: a notebook, the sidecar or iterations file of a notebook beside
    it, anything under a ledger (``.benchlib``), a sweep's scratch (``.partial``) or a campaign's
    report (``report`` beside the campaign's notebooks or ledger)."""
    if target.suffix == ".ipynb":
        return "a notebook (a run's record)"
    notebook = store.notebook_of(target)
    if notebook is not None and (notebook.exists() or notebook.is_symlink()):
        return f"a record file of {notebook.name}"
    for folder in (target, *target.parents):
        if folder.name in (LEDGER, PARTIAL):
            return f"{'' if folder == target else 'in '}{folder} (benchlib's own folder)"
        if folder.name == REPORT and _is_campaign(folder.parent):
            return f"{'' if folder == target else 'in '}{folder} (the campaign's report)"
    return None


def _is_campaign(folder: Path) -> bool:
    """A campaign's folder: it holds a ledger or a notebook."""
    try:
        return (folder / LEDGER).is_dir() or any(folder.glob("*.ipynb"))
    except OSError:
        return False


def check_output_file(option: str, path: str | None) -> None:
    """An output file (``--csv``, ``--junit``; None: not asked for) is a new or regular file in
    an existing folder that takes new files (written to a temporary file there, then renamed),
    or a character device or FIFO you can write (``/dev/stdout``: written in place); an empty
    path, a campaign's own file (:func:`result_file`) and anything else are refused
    (:func:`benchlib.records.store.output_kind`)."""
    if path is None:
        return
    if not path:
        raise InputError(f"{option} '': an empty path; give a file path (or /dev/stdout)")
    target = Path(path).expanduser().absolute()
    try:
        kind = store.output_kind(target)
    except OSError as error:
        raise InputError(f"{option} {path}: {describe_os_error(error)}") from None
    real = Path(os.path.realpath(target))
    what = result_file(real)
    if what:
        via = "" if real == target else f"leads to {real}, which "
        raise InputError(f"{option} {path}: {via}is {what}, a result file benchlib keeps; give "
                         "a new file (outputs/<campaign>/table.csv is fine)")
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
