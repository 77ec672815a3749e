"""A project checkout as a new user has it, and the commands run the way the README shows them:
``benchlib ...`` as a subprocess, from the project's root, with relative paths."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

BENCHLIB = str(Path(sys.executable).with_name("benchlib"))

#: A campaign named like the demo's (the docs' examples read ``outputs/demo``), at test sizes:
#: train and inference on synthetic and real JPEGs.
TINY_DEMO = """campaign: demo
notebook: [train, inference]
base: {model: resnet18, image_size: 32, num_classes: 4, batch_size: 4, iterations: 3, warmup: 1,
       num_workers: 0, device: cpu, data_dir: data/demo-images}
grid:
  dataset: [synthetic, real]
"""


def benchlib(project: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``benchlib ARGS`` run from ``project`` as a user types it (no extra flags)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([BENCHLIB, *args], cwd=project, capture_output=True, text=True,
                          timeout=timeout, env=env)


def checked(project: Path, *args: str, timeout: float = 600) -> str:
    """Its output; the test fails with the command's own output when it exits non-zero."""
    done = benchlib(project, *args, timeout=timeout)
    assert done.returncode == 0, f"benchlib {' '.join(args)}: exit {done.returncode}\n" \
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def make_project(root: Path) -> Path:
    """A checkout's user-facing part (params/), with the tiny demo and its JPEG folder made by
    the README's own command."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "params", root / "params")
    (root / "params" / "tiny-demo.yaml").write_text(TINY_DEMO)
    checked(root, "data", "imagefolder", "data/demo-images", "--classes", "4", "--images", "6",
            "--size", "48")
    return root


PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(path: Path) -> list[str]:
    """The Python code blocks of a Markdown file."""
    return PYTHON_BLOCK.findall(path.read_text(encoding="utf-8"))
