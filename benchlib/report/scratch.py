"""The report's scratch folders, and what killed builds leave of them.

A build works in ``.report-XXXXXXXX/`` in the campaign folder; its owner file beside it,
``.report-XXXXXXXX.owner`` (host, pid, start time), exists before the folder and is held locked
(``flock``, released by the kernel when the process dies) until the build has ended, and the
old report a build sets aside when it swaps its own in is ``.report-XXXXXXXX-old-N``. Before it
starts, a build removes the scratch of builds that are gone: those whose owner file is not
locked and whose process is dead on this host, or (another host, whose locks may not reach
this one) that started more than :data:`STALE_AFTER_S` ago; scratch without an owner file (from
an older benchlib) once untouched for :data:`ORPHAN_AFTER_S`. A running build's scratch, on any
host, is never removed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("benchlib.report.build")

PREFIX, OWNER = ".report-", ".owner"
#: A scratch folder, a report set aside for one, or its owner file (``mkstemp``'s 8 characters).
SCRATCH = re.compile(r"\.report-([a-z0-9_]{8})(-old-\d+|\.owner)?")
#: Seconds after which scratch of a build on another host counts as left behind.
STALE_AFTER_S = 24 * 3600.0
#: Seconds after which scratch without an owner file (or with an empty one) counts as left behind.
ORPHAN_AFTER_S = 3600.0


def _lock(fd: int, wait: bool) -> bool | None:
    """Lock ``fd`` exclusively: True when held, False when another process holds it, None
    where this platform or file system has no ``flock``."""
    try:
        import fcntl
    except ImportError:  # not on Unix
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError:  # ENOLCK, EOPNOTSUPP: a file system without locks
        return None
    return True


@contextlib.contextmanager
def scratch_folder(campaign_dir: Path) -> Iterator[Path]:
    """A new scratch folder in ``campaign_dir``, owned for the block: at its end the folder
    (unless the build renamed it into place) and then its owner file are removed."""
    while True:
        fd, name = tempfile.mkstemp(prefix=PREFIX, suffix=OWNER, dir=campaign_dir)
        owner = Path(name)
        _lock(fd, wait=True)  # a cleaner may hold it for an instant: it sees an empty file
        os.write(fd, json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                 "since": time.time()}).encode())
        folder = owner.with_suffix("")
        try:
            folder.mkdir(mode=0o700)
            break
        except FileExistsError:  # a folder left without its owner file: take another name
            owner.unlink()
            os.close(fd)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            owner.unlink()
        os.close(fd)


def _alive(pid: object) -> bool:
    """Whether process ``pid`` exists on this host."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _owner_gone(owner: Path) -> bool:
    """Whether the build that wrote ``owner`` has ended (see the module's rules)."""
    try:
        fd = os.open(owner, os.O_RDONLY)
    except OSError:  # removed meanwhile: that build has ended and cleaned up
        return False
    try:
        if _lock(fd, wait=False) is False:
            return False  # held: the build is running
        age = time.time() - os.fstat(fd).st_mtime
        try:
            info = json.loads(os.read(fd, 4096) or b"null")
        except ValueError:
            info = None
        if not isinstance(info, dict):  # empty: a build between creating and writing it
            return age > ORPHAN_AFTER_S
        if info.get("host") == socket.gethostname() and not _alive(info.get("pid")):
            return True
        return age > STALE_AFTER_S
    finally:
        os.close(fd)


def _untouched_for(paths: list[Path], seconds: float) -> bool:
    now = time.time()
    try:
        return all(now - p.lstat().st_mtime > seconds for p in paths)
    except OSError:  # removed meanwhile
        return False


def remove_stale(campaign_dir: Path) -> list[Path]:
    """Remove the scratch that ended builds left in ``campaign_dir``; the paths removed."""
    found: dict[str, list[Path]] = {}
    for path in campaign_dir.iterdir():
        match = SCRATCH.fullmatch(path.name)
        if match:
            found.setdefault(match.group(1), []).append(path)
    removed = []
    for token, paths in sorted(found.items()):
        owner = campaign_dir / f"{PREFIX}{token}{OWNER}"
        folders = [p for p in paths if p != owner]
        gone = (_owner_gone(owner) if owner in paths or owner.exists()
                else _untouched_for(folders, ORPHAN_AFTER_S))
        if not gone:
            continue
        for folder in folders:  # the folders first: an owner file never outlives them
            shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            owner.unlink()
        removed += paths
        log.info("removed the scratch of an ended report build: %s",
                 ", ".join(p.name for p in sorted(paths)))
    return removed
