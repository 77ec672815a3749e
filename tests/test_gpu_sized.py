"""A run sized for a GPU that lands on a CPU says so before it starts: docs/sweeps.md's papermill
line (resnet50, batch 256, amp_bf16) sat for minutes in one cell on a CPU, without a word."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.publish.benchmark_notebook import gpu_sized

from .conftest import ROOT, TINY

#: How long the papermill line may take to say it (a kernel started, benchlib imported).
SAID_WITHIN_S = 240


def _papermill_line() -> list[str]:
    """docs/sweeps.md's papermill line, as typed."""
    text = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^ {4}(papermill notebooks/train\.ipynb .*)$", text, flags=re.M)
    return shlex.split(line.split(" # ", 1)[0])  # its comment ("needs a GPU") is not typed


def _stderr_until(command: list[str], cwd: Path, words: str, limit_s: float) -> str:
    """``command``'s standard error up to the point it holds ``words`` (or ``limit_s``); then
    the command is interrupted (papermill shuts its kernel down) and what is left of it and
    the processes it started is killed, each by its id."""
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    said = b""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(child.stderr, selectors.EVENT_READ)
            deadline = time.monotonic() + limit_s
            while words.encode() not in said and time.monotonic() < deadline:
                if not selector.select(timeout=1):
                    continue
                chunk = os.read(child.stderr.fileno(), 65536)
                if not chunk:
                    break  # papermill ended
                said += chunk
    finally:
        _stop(child)
    return said.decode(errors="replace")


def _stop(child: subprocess.Popen) -> None:
    """Interrupt papermill (Ctrl-C: it shuts its kernel down), then kill it and the processes
    it started (the kernel runs in a session of its own) if they are still there."""
    started = psutil.Process(child.pid).children(recursive=True) if child.poll() is None else []
    child.send_signal(signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=60)
    for process in [*started, child]:
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            process.kill()
    child.wait(timeout=60)
    child.stderr.close()


@pytest.mark.slow
@pytest.mark.skipif(not gpu_sized.runs_on_cpu("auto"), reason="a GPU is here: the run is not "
                    "on a CPU")
def test_the_docs_papermill_line_on_a_cpu_says_first_that_it_is_sized_for_a_gpu(tmp_path):
    command = _papermill_line()
    command[0] = str(Path(sys.executable).with_name("papermill"))
    command[2] = str(tmp_path / "out.ipynb")  # not the checkout's out.ipynb
    said = _stderr_until(command, ROOT, "it will be slow", SAID_WITHIN_S)
    # the line as said (papermill's progress bar, drawn without a newline, stands before it)
    (line,) = ["⚠" + line.split("⚠", 1)[1] for line in re.split(r"[\r\n]", said)
               if "sized for a GPU" in line]
    assert line.startswith("⚠ sized for a GPU (precision amp_bf16, autocast; "), said
    assert "TFLOP an iteration) but running on this machine's CPU" in line
    assert "To make it small: -p batch_size 16 -p image_size 64 -p precision fp32" in line


def test_only_a_gpu_sized_run_on_a_cpu_is_warned() -> None:
    tiny = {**TINY, "benchmark": "train"}
    assert gpu_sized.cpu_warning(ClassificationConfig(**tiny)) == ""  # a CPU's size
    amp = gpu_sized.cpu_warning(ClassificationConfig(**{**tiny, "precision": "amp_bf16"}))
    assert amp.startswith("⚠ sized for a GPU (precision amp_bf16, autocast) but running on this "
                          "machine's CPU (device cpu)") and "-p precision fp32" in amp
    big = gpu_sized.cpu_warning(ClassificationConfig(**{**tiny, "model": "resnet50",
                                                        "image_size": 224, "batch_size": 64}))
    assert re.search(r"\(\d\.\d TFLOP an iteration\)", big), big
    assert "-p batch_size 16 -p image_size 64 (" in big
    on_gpu = ClassificationConfig.model_construct(**{**tiny, "precision": "amp_bf16",
                                                     "device": "cuda"})
    assert gpu_sized.cpu_warning(on_gpu) == ""  # a GPU's run, on a GPU
