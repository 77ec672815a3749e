"""Summary pages reused from the previous report while nothing they are made from changed.

A summary page is a function of the campaign's files, the baseline campaign's files and the
references file (when given), the summary notebook and its parameters, benchlib's own files
(code, reference data, templates) and the libraries that compute and draw it: nothing in them
reads the clock or the environment. Their digest (:func:`inputs_digest`, then
:func:`summary_key`) is kept per page in ``report/.summaries.json``; a build whose key for a
page matches links the previous page and its executed notebook instead of running it again.
Files are compared by path, size and modification time, as the run pages' cache does.

A previous page is reused only when it is still the regular file the build wrote: never through
a symbolic link (which a browser, a web server, ``cp -L`` or zip would follow out of the
report), and only while its SHA-256 is the one recorded with it (:func:`reuse_file`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from benchlib.inputs.layout import REPORT

CACHE_FILE = ".summaries.json"  #: in ``report/``: each summary page's key
#: Distributions whose versions shape a summary page (its numbers, tables and figures).
LIBRARIES = ("pandas", "numpy", "scipy", "matplotlib", "seaborn", "pillow", "ipykernel",
             "ipython", "papermill", "nbformat", "nh3", "mistune", "nbconvert", "pygments",
             "jinja2", "markupsafe")


def _tree(digest: hashlib._Hash, folder: Path) -> None:
    """Every file under ``folder`` but reports and report scratch (``.report-*`` folders and
    owner files of builds, this one's too): path, size, mtime."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != REPORT and not d.startswith(".report"))
        for name in sorted(f for f in files if not f.startswith(".report")):
            path = os.path.join(root, name)
            try:
                stat = os.stat(path)
            except OSError:  # removed meanwhile
                continue
            digest.update(f"{os.path.relpath(path, folder)}\0{stat.st_size}\0"
                          f"{stat.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))


@functools.cache
def code_version() -> str:
    """A digest of benchlib's files and of the versions of :data:`LIBRARIES` and Python."""
    from importlib import metadata

    import benchlib

    digest = hashlib.sha256(sys.version.encode())
    for name in LIBRARIES:
        try:
            digest.update(f"{name} {metadata.version(name)}\n".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name} -\n".encode())
    package = Path(benchlib.__file__).parent
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def inputs_digest(folders: Sequence[Path], files: Sequence[Path]) -> str:
    """What every summary of a build is made from: ``folders`` (the campaign, the baseline),
    ``files`` (a references file) and :func:`code_version`."""
    digest = hashlib.sha256(code_version().encode())
    for folder in folders:
        digest.update(f"folder {folder}\n".encode("utf-8", "surrogateescape"))
        _tree(digest, folder)
    for file in files:
        digest.update(f"file {file}\n".encode("utf-8", "surrogateescape"))
        digest.update(file.read_bytes())
    return digest.hexdigest()


def summary_key(inputs: str, notebook: Path, parameters: Mapping[str, object]) -> str:
    """One summary page's key: :func:`inputs_digest`, its notebook and its parameters."""
    digest = hashlib.sha256(inputs.encode())
    digest.update(notebook.read_bytes())
    digest.update(json.dumps(parameters, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def digest_of(path: Path) -> str | None:
    """The SHA-256 of the regular file ``path`` (a symbolic link is not followed); None for
    anything else or an unreadable file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return hashlib.file_digest(handle, "sha256").hexdigest()


def reuse_file(old: Path, target: Path, sha256: object) -> bool:
    """Put the previous report's file ``old`` at ``target`` when it is a regular file (a link
    is not followed) whose SHA-256 is ``sha256``, what the build that wrote it recorded: a hard
    link to it, else a copy of the bytes checked. Whether it did."""
    try:
        fd = os.open(old, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # a link (ELOOP), or gone
        return False
    with os.fdopen(fd, "rb") as handle:
        checked = os.fstat(fd)
        if (not stat.S_ISREG(checked.st_mode)
                or hashlib.file_digest(handle, "sha256").hexdigest() != sha256):
            return False
        try:
            os.link(old, target, follow_symlinks=False)
            made = os.lstat(target)
            if (made.st_dev, made.st_ino) == (checked.st_dev, checked.st_ino):
                return True
            target.unlink()  # ``old`` was replaced after it was checked
        except OSError:  # a file system without hard links
            pass
        handle.seek(0)
        with open(target, "wb") as out:
            shutil.copyfileobj(handle, out)
    return True


def previous_keys(campaign_dir: Path) -> dict[str, dict]:
    """The previous report's summary keys and the digests of their files ({} when there is
    none or it is unreadable)."""
    try:
        found = json.loads((campaign_dir / REPORT / CACHE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {name: entry for name, entry in found.items() if isinstance(entry, dict)}


SUFFIXES = (".ipynb", ".html")  #: a summary page's files


def link_previous(name: str, key: str, previous: Mapping[str, Mapping], campaign_dir: Path,
          building: Path) -> bool:
    """Link the previous report's page ``name`` (HTML and executed notebook) into ``building``
    when its key is ``key`` and its files are those that build wrote (:func:`reuse_file`);
    whether it did."""
    entry = previous.get(name) or {}
    if entry.get("key") != key or not isinstance(entry.get("sha256"), dict):
        return False
    made = []
    try:
        for suffix in SUFFIXES:
            target = building / f"{name}{suffix}"
            if not reuse_file(campaign_dir / REPORT / f"{name}{suffix}", target,
                              entry["sha256"].get(suffix)):
                raise FileNotFoundError(target)
            made.append(target)
    except OSError:  # changed or gone (a concurrent build swapped its report in)
        for target in made:
            target.unlink()
        return False
    return True


def write_keys(building: Path, keys: Mapping[str, str]) -> None:
    """Keep this build's summary keys with its report, and the SHA-256 of each page's files."""
    entries = {name: {"key": key, "sha256": {suffix: digest_of(building / f"{name}{suffix}")
                                             for suffix in SUFFIXES}}
               for name, key in keys.items()}
    (building / CACHE_FILE).write_text(json.dumps(entries, indent=1), encoding="utf-8")
