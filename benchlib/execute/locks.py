"""Who may write a campaign folder: one sweep at a time, one run per point, short ledger updates.

Locks are ``filelock`` locks (``flock`` on Unix; released by the kernel when a process dies, so
a crashed sweep leaves no stale lock) under ``outputs/<campaign>/.benchlib/``:

- ``campaign.lock``: held by a local sweep for its whole run and by a SLURM submission while it
  submits. A second one refuses at once, naming the holder (``campaign.holder``: host, pid,
  command, since).
- ``points/<point>.lock``: held while a point runs (locally or in a SLURM job), so the same point
  never runs twice at once.
- ``ledger.lock``: held for each read-modify-write of ``points.json`` / ``jobs.json``.

On file systems where ``flock`` does not work across nodes (some NFS and Lustre mounts), the
locks protect against processes on the same node only.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from filelock import FileLock, Timeout

from benchlib.errors import CampaignBusyError, InputError, describe_os_error
from benchlib.inputs.layout import LEDGER

#: Seconds a ledger update waits for another one to finish before giving up.
LEDGER_TIMEOUT_S = 60.0


def _lock_dir(campaign_dir: Path) -> Path:
    return campaign_dir / LEDGER


def _holder_text(path: Path) -> str:
    try:
        holder = json.loads(path.read_text())
        return (f"{holder['command']} (pid {holder['pid']} on host {holder['host']}, since "
                f"{holder['since']})")
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (no holder details)"


def prepare_campaign_dir(campaign_dir: Path, inner: str = "") -> Path:
    """Create the campaign folder (and ``inner`` inside it) and return that folder; InputError
    (exit 2) naming it when that is impossible (a file in the way, a read-only file system, no
    permission)."""
    folder = campaign_dir / inner if inner else campaign_dir
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"outputs: cannot create the campaign folder "
                         f"({describe_os_error(error, campaign_dir)}); give --outputs a "
                         "writable folder") from None
    return folder


def _make_lock_dir(campaign_dir: Path) -> Path:
    return prepare_campaign_dir(campaign_dir, LEDGER)


@contextlib.contextmanager
def campaign_lock(campaign_dir: Path, command: str | None = None) -> Iterator[None]:
    """Hold the campaign's writer lock; CampaignBusyError naming the holder if another has it.
    InputError when the campaign folder cannot be created or written."""
    folder = _make_lock_dir(campaign_dir)
    lock = FileLock(str(folder / "campaign.lock"), timeout=0)
    holder = folder / "campaign.holder"
    try:
        lock.acquire()
    except Timeout:
        raise CampaignBusyError(
            f"campaign {campaign_dir} is in use by {_holder_text(holder)}; wait for it to "
            "finish (benchlib status shows its points), or write to another campaign") from None
    except OSError as error:
        raise InputError(f"outputs: cannot write the campaign folder "
                         f"({describe_os_error(error, folder)})") from None
    try:
        since = _now()
        text = command or " ".join(["benchlib", *sys.argv[1:]]) or "benchlib"
        with contextlib.suppress(OSError):
            holder.write_text(json.dumps({"command": text, "pid": os.getpid(),
                                          "host": socket.gethostname(), "since": since}))
        yield
    finally:
        with contextlib.suppress(OSError):
            holder.unlink()
        lock.release()


@contextlib.contextmanager
def point_lock(campaign_dir: Path, name: str) -> Iterator[bool]:
    """Try to hold the lock of point ``name``; yields False (and holds nothing) when another
    process is running that point."""
    folder = _make_lock_dir(campaign_dir) / "points"
    folder.mkdir(exist_ok=True)
    lock = FileLock(str(folder / f"{name}.lock"), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        yield False
        return
    holder = folder / f"{name}.holder"
    try:
        with contextlib.suppress(OSError):
            holder.write_text(json.dumps({"command": "benchlib", "pid": os.getpid(),
                                          "host": socket.gethostname(), "since": _now()}))
        yield True
    finally:
        with contextlib.suppress(OSError):
            holder.unlink()
        lock.release()


def point_holder(campaign_dir: Path, name: str) -> str:
    """Who runs point ``name`` now ('' when nobody does, or when the lock cannot be read)."""
    folder = _lock_dir(campaign_dir) / "points"
    path = folder / f"{name}.lock"
    if not path.is_file():
        return ""
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            holder = json.loads((folder / f"{name}.holder").read_text())
            return f"pid {holder['pid']} on host {holder['host']}, since {holder['since']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"
    except OSError:
        return ""
    lock.release()
    return ""


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@contextlib.contextmanager
def ledger_lock(campaign_dir: Path) -> Iterator[None]:
    """Hold the ledger's lock for one read-modify-write (waits up to LEDGER_TIMEOUT_S)."""
    folder = _make_lock_dir(campaign_dir)
    lock = FileLock(str(folder / "ledger.lock"), timeout=LEDGER_TIMEOUT_S)
    try:
        lock.acquire()
    except Timeout:
        raise CampaignBusyError(f"{folder / 'ledger.lock'}: another process kept the campaign's "
                                f"ledger locked for {LEDGER_TIMEOUT_S:.0f} s") from None
    try:
        yield
    finally:
        lock.release()
