"""A command whose reader closes the pipe (``benchlib results DIR | head -1``) ends quietly with
the shell's SIGPIPE status, never with a status about its results nor an error message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.errors import EXIT_BROKEN_PIPE

from .fakes import campaign

BENCHLIB = str(Path(sys.executable).with_name("benchlib"))


@pytest.mark.slow  # 2.5-4.6 s: in make test, out of the edit loop
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    campaign(tmp_path / "fake")
    for command in (["results", "fake"], ["check", "fake"]):
        # the reader goes before the command writes a byte (it is still importing): its first
        # write meets a closed pipe, as under `| head` once head has its line
        child = subprocess.Popen([BENCHLIB, *command], cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        child.stdout.close()
        _, errors = child.communicate(timeout=300)
        assert child.returncode == EXIT_BROKEN_PIPE, errors
        assert "error" not in errors.lower() and "Exception" not in errors, errors
