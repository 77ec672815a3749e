"""A project checkout as a new user has it, and the commands run the way the README shows them:
``benchlib ...`` as a subprocess, from the project's root, with relative paths."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
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


#: What a documented command may start with (after ``$ `` and ``NAME=value`` settings).
COMMAND = re.compile(r"^(\$ )?(\w+=\S+ )*(benchlib|python3?|make|mkdir|ln|papermill|git|pip) ")


@dataclass(frozen=True)
class DocCommand:
    """One shell command of a guide's code blocks: as typed, its comment, where it stands."""

    guide: str
    heading: str
    typed: str
    comment: str

    def marked(self, *words: str) -> bool:
        """Whether its comment or its section's heading says any of ``words`` (any case)."""
        said = f"{self.comment} {self.heading}".lower()
        return any(word.lower() in said for word in words)


def doc_commands(path: Path) -> list[DocCommand]:
    """The shell commands of a Markdown file's code blocks (indented or fenced), continuation
    lines joined, each with its comment and the heading it sits under."""
    found: list[DocCommand] = []
    fenced, previous_blank, block, joined, heading = False, True, False, "", ""
    transcript = False  # a fenced block of `$ command` lines and their output
    lines = path.read_text(encoding="utf-8").splitlines()
    for at, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            transcript = fenced and any(
                following.startswith("$ ") for following in
                itertools.takewhile(lambda x: not x.startswith("```"), lines[at + 1:]))
            continue
        if transcript and not joined and not line.startswith("$ "):
            continue  # what the command printed
        if line.startswith("#") and not fenced:
            heading = line.lstrip("#").strip()
        # an indented block: indented lines after a blank one, until a line that is neither
        block = (line.startswith("    ") and (previous_blank or block)) or (block and not line.strip())
        code = fenced or (block and line.startswith("    "))
        previous_blank = not line.strip()
        text = line.strip()
        if joined:
            joined += " " + text
        elif code and COMMAND.match(text):
            joined = text
        if joined and not joined.endswith("\\"):
            typed, _, comment = joined.partition(" # ")
            typed = typed.removeprefix("$ ").replace("\\ ", "").strip()
            found.append(DocCommand(path.name, heading, " ".join(typed.split()), comment.strip()))
            joined = ""
    return found
