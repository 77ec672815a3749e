"""tools/slowfs.py, the slow file system of diagnose's planted cases: a read-only passthrough
whose every open waits the given delay. Skipped where FUSE cannot mount (no /dev/fuse, no
fusepy or libfuse2, no permission)."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _slowfs():
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    try:
        import fuse  # noqa: F401  (fusepy; loads libfuse2)
    except (ImportError, OSError) as error:
        pytest.skip(f"fusepy or libfuse2 missing: {error}")
    spec = importlib.util.spec_from_file_location("slowfs", ROOT / "tools" / "slowfs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_open_waits_and_reads_pass_through(tmp_path):
    slowfs = _slowfs()
    source, mountpoint = tmp_path / "source", tmp_path / "mount"
    (source / "class").mkdir(parents=True)
    mountpoint.mkdir()
    data = os.urandom(5000)
    (source / "class" / "a.jpg").write_bytes(data)
    try:
        child = slowfs.mount_in_background(str(source), str(mountpoint), 60)
    except RuntimeError as error:
        pytest.skip(f"FUSE cannot mount here: {error}")
    try:
        assert sorted(os.listdir(mountpoint / "class")) == ["a.jpg"]
        start = time.perf_counter()
        with open(mountpoint / "class" / "a.jpg", "rb") as handle:
            opened = time.perf_counter() - start
            assert handle.read() == data
        assert opened >= 0.06  # the delay is a sleep: never shorter
        with pytest.raises(OSError):
            (mountpoint / "class" / "b.jpg").write_bytes(b"x")
        assert not (source / "class" / "b.jpg").exists()
    finally:
        slowfs.unmount(str(mountpoint))
        child.wait(timeout=10)
    assert not slowfs.mounted(str(mountpoint))
