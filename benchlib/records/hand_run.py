"""A benchmark notebook run by hand (JupyterLab, plain papermill) is a run like a sweep's.

A sweep reads each executed notebook's record and writes its sidecar itself; the kernels of
benchlib's runner (sweeps, Slurm jobs, diagnose, the report) run with :data:`RUNNER_ENV` set
(:class:`benchlib.execute.notebook_run.LocalKernelManager`). A
notebook run anywhere else saves its own record with :func:`save`: the sidecar (and the
per-iteration seconds) under ``outputs/<campaign>/`` (the campaign parameter, ``interactive``
by default), where ``benchlib results`` and ``benchlib report`` find it. :func:`result_line` is
the line such a run ends with: the speed, its within-run interval and its flags in words.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path

from benchlib import PROJECT_ROOT
from benchlib.inputs.config import check_campaign
from benchlib.measure.contention import reasons
from benchlib.records import flags
from benchlib.records.store import (
    ITERATIONS_KEY,
    RECORD_MIME,
    sidecar_path,
    write_bytes_atomic,
    write_sidecar,
)

#: Set in the environment of the kernels benchlib's runner starts: the runner saves the record.
RUNNER_ENV = "BENCHLIB_RUNNER"
#: Where runs by hand are saved, when set (else ``outputs/`` of the project or working folder).
OUTPUTS_ENV = "BENCHLIB_OUTPUTS"


def in_runner() -> bool:
    """Whether this process is a kernel of benchlib's runner (which saves the record itself)."""
    return bool(os.environ.get(RUNNER_ENV))


def outputs_root() -> Path:
    """``$BENCHLIB_OUTPUTS``; else the checkout's ``outputs/`` when working inside the checkout
    (a notebook opened from ``notebooks/``); else ``outputs/`` of the working folder."""
    given = os.environ.get(OUTPUTS_ENV)
    if given:
        return Path(given).expanduser().absolute()
    here = Path.cwd().resolve()
    if (PROJECT_ROOT / "notebooks").is_dir() and here.is_relative_to(PROJECT_ROOT):
        return PROJECT_ROOT / "outputs"
    return here / "outputs"


def _name(record: Mapping[str, object]) -> str:
    benchmark = "".join(c if c.isalnum() or c in "-_" else "-"
                        for c in str(record.get("benchmark") or "run"))[:40]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{benchmark}-{stamp}-{secrets.token_hex(3)}"


def save(record: Mapping[str, object], root: Path | None = None) -> Path | None:
    """Write ``record`` under ``root/<campaign>/`` (``root`` defaults to :func:`outputs_root`):
    a notebook holding it (:func:`record_notebook`), then its sidecar and iteration seconds.
    None in a kernel of benchlib's runner, which saves the record itself. Returns the sidecar's
    path."""
    if in_runner():
        return None
    campaign = str(record.get("campaign") or "interactive")
    check_campaign(campaign)
    folder = (root or outputs_root()) / campaign
    folder.mkdir(parents=True, exist_ok=True)
    notebook = folder / f"{_name(record)}.ipynb"
    write_bytes_atomic(notebook, record_notebook(record).encode("utf-8"))
    write_sidecar(notebook, record)
    return sidecar_path(notebook)


def record_notebook(record: Mapping[str, object]) -> str:
    """A notebook holding what the kernel knows of a run by hand: its result line and its record
    (as the notebook that ran it published them), so the run has a page in the report and a
    ``source`` that exists. The notebook that ran is wherever its user saves it."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    data = {k: v for k, v in record.items() if k != ITERATIONS_KEY}
    cell = new_code_cell("run.publish(record)", outputs=[
        new_output("stream", name="stdout", text=result_line(record) + "\n"),
        new_output("display_data", data={RECORD_MIME: data, "text/plain": "the record"})])
    about = new_markdown_cell(
        f"# {record.get('benchmark') or 'run'} run by hand\n\nSaved by the kernel that ran the "
        "benchmark notebook outside a sweep: its result line and its record. The notebook "
        "itself (plots, tables) is wherever it was saved.")
    notebook = new_notebook(cells=[about, cell])
    notebook.metadata["benchlib"] = {"kind": "benchmark", "by_hand": True}
    return nbformat.writes(notebook)


def shown(path: Path) -> str:
    """``path`` as a person types it from the working folder: relative when both are inside the
    checkout or the path is below the working folder (``../outputs/x`` from ``notebooks/``),
    else whole."""
    here = Path.cwd().resolve()
    if path.is_relative_to(here) or (path.is_relative_to(PROJECT_ROOT)
                                     and here.is_relative_to(PROJECT_ROOT)):
        return os.path.relpath(path, here)
    return str(path)


def _number(value: object, digits: int = 4) -> str:
    found = flags.number(value)
    return f"{found:,.{digits}g}" if found is not None else "?"


def result_line(record: Mapping[str, object]) -> str:
    """``11.22 images/s (within-run 95 % interval 6.71-18.3) over 3 timed iterations (4.28 s).``
    then, when flagged, ``⚠ Flagged contended, short:`` and one line per flag with what this run
    measured and what the flag means (``- contended (others took 69 % of the CPU time): ...``)."""
    unit = str(record.get("unit") or "")
    line = f"{_number(record.get('throughput'))} {unit}".strip()
    low, high = flags.number(record.get("throughput_low")), flags.number(record.get("throughput_high"))
    if low is not None and high is not None:
        line += f" (within-run 95 % interval {_number(low, 3)}-{_number(high, 3)})"
    iterations, seconds = record.get("iterations"), flags.number(record.get("wall_time_s"))
    if flags.number(iterations) is not None:
        line += f" over {int(flags.number(iterations))} timed iterations"
        if seconds is not None:
            line += f" ({seconds:.2f} s)"
    line += "."
    names = flags.of(record.get("flags")) or flags.record_flags(record)
    if not names:
        return line + " Not flagged: nothing disturbed it that benchlib could see."
    said = [f"{name} ({_detail(name, record)}): {flags.FLAGS.get(name, 'see the record')}"
            if _detail(name, record) else f"{name}: {flags.FLAGS.get(name, 'see the record')}"
            for name in names]
    return f"{line}\n⚠ Flagged {', '.join(names)}:\n" + "\n".join(f"- {s}." for s in said)


def _detail(name: str, record: Mapping[str, object]) -> str:
    """What this run measured that raised flag ``name`` ('' when not recorded)."""
    if name == "contended":
        return ", ".join(reasons(record))
    share = flags.number(record.get({"noisy": "spread_iteration",
                                     "throttled": "throttled_share"}.get(name, "")))
    if name == "noisy" and share is not None:
        return f"spread {share * 100:.0f} %"
    if name == "throttled" and share is not None:
        return f"{share * 100:.0f} % of the samples"
    if name == "short":
        seconds = flags.number(record.get("wall_time_s"))
        return f"{_number(record.get('iterations'))} iterations" + (
            f", {seconds:.2f} s" if seconds is not None else "")
    return ""
