"""The run's own process tree: the root a rank counts from, wherever it was started."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from benchlib.measure.process_tree import (
    ROOT_HOST_VARIABLE,
    ROOT_PID_VARIABLE,
    ancestors,
    run_root_pid,
)


@pytest.fixture
def stranger():
    """A process that is no ancestor of this one."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child.pid
    child.kill()
    child.wait()


def test_ancestors_reach_up_from_the_parent():
    up = ancestors(os.getpid())
    assert up[0] == os.getppid() and os.getpid() not in up


def test_a_rank_under_the_launcher_counts_from_the_launcher(monkeypatch):
    monkeypatch.setenv(ROOT_PID_VARIABLE, str(os.getppid()))
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert run_root_pid() == os.getppid()
    monkeypatch.setenv(ROOT_PID_VARIABLE, str(os.getpid()))
    assert run_root_pid() == os.getpid()


def test_a_rank_srun_started_counts_from_its_agent(monkeypatch, stranger):
    # srun starts the node's torchrun agent under slurmstepd: the launcher's pid is no ancestor
    # (on another node, another machine's number)
    monkeypatch.setenv(ROOT_PID_VARIABLE, str(stranger))
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert run_root_pid() == os.getppid()
    monkeypatch.delenv("LOCAL_RANK")  # no rank: never another tree, only itself
    assert run_root_pid() == os.getpid()
    monkeypatch.setenv(ROOT_PID_VARIABLE, "not a number")
    assert run_root_pid() == os.getpid()


def test_on_another_host_the_launchers_number_is_never_taken(monkeypatch):
    # pid 1 of a container, or any ancestor's number, names another machine's process there
    monkeypatch.setenv(ROOT_PID_VARIABLE, str(os.getppid()))
    monkeypatch.setenv(ROOT_HOST_VARIABLE, "not-" + socket.gethostname())
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert run_root_pid() == os.getppid()  # its agent, found as its parent, not by the number
    monkeypatch.setenv(ROOT_PID_VARIABLE, "1")
    assert run_root_pid() == os.getppid() != 1
    monkeypatch.setenv(ROOT_HOST_VARIABLE, socket.gethostname())
    monkeypatch.setenv(ROOT_PID_VARIABLE, str(os.getppid()))
    assert run_root_pid() == os.getppid()  # the launcher's host: the number is the launcher
