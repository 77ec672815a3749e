"""``benchlib status`` says a finished run's figure as every other command does (``65,240
voxels/s``, never ``6.524e+04``) and marks a flagged one (``⚠ contended``), with what the flag
means, so a contended figure does not look clean."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchlib.records.store import write_sidecar

from .fakes import write_record_notebook

BENCHLIB = str(Path(sys.executable).with_name("benchlib"))
RUN = {"schema_version": 1, "campaign": "said", "cluster": "c1", "gpu": "H100", "num_nodes": 1,
       "num_devices": 1, "status": "ok", "error": "", "host": "node1", "wall_time_s": 30.0,
       "iterations": 100, "time_iteration_s": 0.3}


def _finished(folder: Path, name: str, **columns: object) -> None:
    """A finished point of ``folder``: its notebook and the sidecar status reads."""
    notebook = write_record_notebook(folder / f"{name}.ipynb", {**RUN, **columns})
    write_sidecar(notebook, {**RUN, **columns})


def test_status_says_figures_readably_and_marks_flagged_runs(tmp_path: Path) -> None:
    _finished(tmp_path / "said", "unet3d-a", benchmark="unet3d_infer", unit="voxels/s",
              throughput=65240.0, contended=True, contention_cpu_share=0.4)
    _finished(tmp_path / "said", "probe-b", benchmark="node_probe", unit="TFLOP/s",
              throughput=0.02246)
    done = subprocess.run([BENCHLIB, "status", "said"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "e+0" not in done.stdout, done.stdout
    (unet,) = [line for line in lines if "unet3d-a" in line]
    assert unet.endswith("65,240 voxels/s on node1 ⚠ contended"), done.stdout
    (probe,) = [line for line in lines if "probe-b" in line]
    assert probe.endswith("0.0225 TFLOP/s on node1"), done.stdout  # unflagged: no mark
    assert any(line.startswith("⚠ contended: other processes took") for line in lines), lines
    assert max(len(line) for line in lines) <= 100, done.stdout
