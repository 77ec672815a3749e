"""A slow file system for planted cases: a read-only FUSE passthrough of SOURCE at MOUNTPOINT
that sleeps ``--open-delay-ms`` on every open of a file (what a network file system's metadata
round trip costs per small file), and passes every read through unchanged.

Needs ``/dev/fuse``, libfuse2 (Debian's ``libfuse2``) and fusepy (``pip install fusepy``).
Usage: python tools/slowfs.py SOURCE MOUNTPOINT [--open-delay-ms 40] [--background]
Unmount with ``fusermount -u MOUNTPOINT`` (or ``umount MOUNTPOINT`` as root); in the
foreground, Ctrl-C unmounts too. ``--background`` returns once the mount answers.
"""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fuse import FUSE, FuseOSError, Operations  # fusepy

#: Seconds ``--background`` waits for the mount to answer.
MOUNT_WAIT_S = 10.0


class SlowPassthrough(Operations):
    """Read-only passthrough of ``source``; every ``open`` sleeps ``open_delay_s`` first."""

    def __init__(self, source: str, open_delay_s: float) -> None:
        self.source = os.path.realpath(source)
        self.open_delay_s = open_delay_s

    def _full(self, path: str) -> str:
        return os.path.join(self.source, path.lstrip("/"))

    def access(self, path: str, amode: int) -> None:
        if amode & os.W_OK or not os.access(self._full(path), amode):
            raise FuseOSError(errno.EACCES)

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        try:
            found = os.lstat(self._full(path))
        except OSError as error:
            raise FuseOSError(error.errno) from None
        return {key: getattr(found, key) for key in (
            "st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size",
            "st_uid")}

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._full(path))]

    def open(self, path: str, flags: int) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR):
            raise FuseOSError(errno.EROFS)
        time.sleep(self.open_delay_s)
        return os.open(self._full(path), flags)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def release(self, path: str, fh: int) -> None:
        os.close(fh)

    def statfs(self, path: str) -> dict[str, Any]:
        found = os.statvfs(self._full(path))
        return {key: getattr(found, key) for key in (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax")}


def mount(source: str, mountpoint: str, open_delay_ms: float) -> None:
    """Mount in this process, in the foreground, until unmounted (or Ctrl-C)."""
    FUSE(SlowPassthrough(source, open_delay_ms / 1000), mountpoint, foreground=True,
         ro=True, nothreads=False, allow_other=False)


def mounted(mountpoint: str) -> bool:
    """Whether ``mountpoint`` is a mount point now."""
    return os.path.ismount(mountpoint)


def mount_in_background(source: str, mountpoint: str, open_delay_ms: float) -> subprocess.Popen:
    """Start this script in the foreground in a child process and wait until the mount
    answers (RuntimeError when it does not within :data:`MOUNT_WAIT_S`); the child."""
    child = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), source, mountpoint,
                              "--open-delay-ms", str(open_delay_ms)], start_new_session=True)
    deadline = time.monotonic() + MOUNT_WAIT_S
    while time.monotonic() < deadline:
        if mounted(mountpoint):
            return child
        if child.poll() is not None:
            raise RuntimeError(f"slowfs exited with {child.returncode} before mounting")
        time.sleep(0.05)
    child.terminate()
    raise RuntimeError(f"slowfs did not mount {mountpoint} within {MOUNT_WAIT_S:g} s")


def unmount(mountpoint: str) -> None:
    """``fusermount -u``, or ``umount`` where fusermount is missing (as root)."""
    for command in (["fusermount", "-u", mountpoint], ["umount", mountpoint]):
        try:
            if subprocess.run(command, capture_output=True).returncode == 0:
                return
        except FileNotFoundError:
            continue
    raise RuntimeError(f"could not unmount {mountpoint} (fusermount -u / umount)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="the folder to pass through")
    parser.add_argument("mountpoint", help="an empty folder to mount it on")
    parser.add_argument("--open-delay-ms", type=float, default=40.0,
                        help="milliseconds every open of a file waits (default 40)")
    parser.add_argument("--background", action="store_true",
                        help="mount in a child process and return once the mount answers")
    args = parser.parse_args(argv)
    if not Path(args.source).is_dir() or not Path(args.mountpoint).is_dir():
        parser.error("source and mountpoint must be folders")
    if args.open_delay_ms < 0:
        parser.error("--open-delay-ms must be 0 or more")
    if args.background:
        child = mount_in_background(args.source, args.mountpoint, args.open_delay_ms)
        print(f"mounted {args.source} on {args.mountpoint} (process {child.pid}); unmount "
              f"with: fusermount -u {args.mountpoint}")
        return 0
    mount(args.source, args.mountpoint, args.open_delay_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
