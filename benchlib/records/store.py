"""Result files on disk: atomic writes that honour the umask and never replace what is not a
regular file (a device or FIFO is written in place), the sidecar (``<point>.json``,
fingerprinted to its notebook) and the per-iteration seconds (``<point>.iterations.csv``);
bounded reads that refuse special files."""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from benchlib.errors import ConfigError, OutputError, RecordError, describe_os_error
from benchlib.records import values

log = logging.getLogger(__name__)

#: Record key of the raw per-iteration seconds; stored beside the sidecar as
#: ``<point>.iterations.csv`` (:func:`write_iterations`), never a column of the loaded table.
ITERATIONS_KEY = "per_iteration_s"


def current_umask() -> int:
    """The process's umask (read from /proc where it can be, so nothing is changed)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: What :func:`output_kind` calls a path it writes: nothing there yet, a regular file (both
#: replaced atomically), a character device or FIFO (written in place: a terminal, /dev/null,
#: a pipe); anything else is refused, never replaced.
NEW, FILE, STREAM = "new", "file", "stream"
WRITABLE = (NEW, FILE, STREAM)


def output_kind(path: str | Path) -> str:
    """How a file written to ``path`` is written, through links: :data:`NEW`, :data:`FILE`,
    :data:`STREAM`, or what it is when it is none of them (``a folder``, ``a block device``,
    ``a socket``): refused. OSError when ``path`` cannot be looked at (a loop of links)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return NEW
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return STREAM
    return what_is(mode)


def what_is(mode: int) -> str:
    """What a file of ``mode`` (``os.stat``) is, in words: ``a file``, ``a folder``, ..."""
    return ("a file" if stat.S_ISREG(mode) else "a folder" if stat.S_ISDIR(mode)
            else "a block device" if stat.S_ISBLK(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def existing_mode(command: str, path: str) -> int | None:
    """The ``os.stat`` mode of what is at ``path`` (through links); None when nothing is; an
    error reading it is a ConfigError naming ``command`` and ``path``."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ConfigError(f"{command} {path}: {describe_os_error(error)}") from None


def _write_in_place(path: Path, data: bytes) -> None:
    """Write ``data`` into a character device or FIFO as it is (never replaced). The FIFO is
    opened without waiting: one no process reads fails at once instead of hanging."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise OutputError(f"{path}: a FIFO that no process reads; start its reader "
                              "first") from None
        raise OutputError(describe_os_error(error, path)) from error
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            raise OutputError(f"{path}: changed while being written to; not written")
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OutputError:
        raise
    except OSError as error:
        raise OutputError(describe_os_error(error, path)) from error
    finally:
        os.close(fd)


def write_output_file(path: Path, data: bytes) -> None:
    """Write a file the user named (``--csv``, ``--junit``): a link is followed (the file it
    names is replaced atomically, the link kept), a character device or FIFO is written in
    place (``/dev/stdout``), anything else that is not a regular file is refused, never
    replaced. OutputError naming the path and the reason."""
    try:
        kind = output_kind(path)
    except OSError as error:
        raise OutputError(describe_os_error(error, path)) from error
    if kind == STREAM:
        return _write_in_place(path, data)
    if kind not in WRITABLE:
        raise OutputError(f"{path}: is {kind}, not a file; not replaced")
    write_bytes_atomic(Path(os.path.realpath(path)), data)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (a file benchlib names: a sidecar, a ledger) through a
    temporary file, fsync and a rename: never half-written. The file gets the mode a plain
    ``open`` would (0666 less the umask). A link at ``path`` is replaced, never followed (a
    planted link cannot send a record outside its folder); a folder, device, FIFO or socket is
    refused, never replaced. Raises OutputError naming the path and the reason when it cannot
    be written whole."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG
    except OSError as error:
        raise OutputError(describe_os_error(error, path)) from error
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise OutputError(f"{path}: is {what_is(mode)}, not a file; not replaced")
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except OSError as error:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        raise OutputError(describe_os_error(error, path)) from error
    except BaseException:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON to ``path`` atomically (:func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, json.dumps(data, indent=1, default=str).encode())


#: How a run's per-iteration file is named after its notebook (:func:`iterations_path`).
ITERATIONS_SUFFIX = ".iterations.csv"


def iterations_path(notebook: Path) -> Path:
    """``x.ipynb`` -> ``x.iterations.csv`` (the run's seconds per timed iteration and phase)."""
    return notebook.with_name(f"{notebook.stem}{ITERATIONS_SUFFIX}")


def notebook_of(path: Path) -> Path | None:
    """The notebook whose sidecar or iterations file ``path`` is by its name (``x.json``,
    ``x.iterations.csv`` -> ``x.ipynb``), whether or not it exists; None for another name."""
    if path.name.endswith(ITERATIONS_SUFFIX) and path.name != ITERATIONS_SUFFIX:
        notebook = path.with_name(f"{path.name[:-len(ITERATIONS_SUFFIX)]}.ipynb")
        return notebook if iterations_path(notebook) == path else None
    notebook = path.with_suffix(".ipynb") if path.suffix else None
    return notebook if notebook is not None and sidecar_path(notebook) == path else None


def write_iterations(notebook: Path, record: dict) -> None:
    """Move the record's per-iteration seconds (if any) into ``<point>.iterations.csv``."""
    columns = record.pop(ITERATIONS_KEY, None)
    if isinstance(columns, dict) and columns:
        frame = pd.DataFrame(columns)
        frame.index.name = "step"
        write_bytes_atomic(iterations_path(notebook), frame.to_csv().encode())


def read_iterations(notebook: str | Path) -> pd.DataFrame:
    """Seconds per timed iteration (``iteration`` and each phase) of one run: from the file
    beside the notebook, else from the notebook's record. A run without timed iterations (a
    probe, a failed run, an unreadable notebook) gives no rows and one float ``iteration``
    column, so ``.describe()`` works and says ``count 0``."""
    notebook = Path(notebook)
    path = iterations_path(notebook)
    if path.is_file():
        return pd.read_csv(path, index_col="step")
    try:
        nb = json.loads(notebook.read_bytes())
        record = find_record(nb) or {}
    except (OSError, ValueError, AttributeError, TypeError):
        record = {}
    columns = record.get(ITERATIONS_KEY) if isinstance(record, dict) else None
    if not isinstance(columns, dict) or not columns:
        columns = {"iteration": pd.Series(dtype=float)}
    frame = pd.DataFrame(columns)
    frame.index.name = "step"
    return frame


def sidecar_path(notebook: Path) -> Path:
    """``x.ipynb`` -> ``x.json``."""
    return notebook.with_suffix(".json")


#: A point's files as last seen: its notebook's and sidecar's size and modification time (ns).
Fingerprint = tuple[int | None, int | None, int | None, int | None]


def _size_and_time(path: Path) -> tuple[int | None, int | None]:
    try:
        found = os.lstat(path)
    except OSError:
        return None, None
    return found.st_size, found.st_mtime_ns


def fingerprint(notebook: Path) -> Fingerprint:
    """Sizes and modification times (ns) of a point's notebook and sidecar (None: absent):
    what tells a point changed (the catalog's index, a campaign read round after round)."""
    return (*_size_and_time(notebook), *_size_and_time(sidecar_path(notebook)))


#: Largest notebook or sidecar read (bytes): far above any executed benchmark notebook.
MAX_READ_BYTES = 256 << 20


#: A ``\\uD800``-``\\uDFFF`` escape in JSON text: the file may hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: What a character that cannot be encoded (a lone surrogate) is replaced with.
REPLACEMENT = "\ufffd"


def path_text(path: str | os.PathLike) -> str:
    """A file's path as text any output and database can hold, distinct for distinct names:
    bytes that are not UTF-8 (``run-\\xff``) as ``\\xff`` escapes, where :func:`encodable`
    would make ``run-\\xff`` and ``run-\\xfe`` one name."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def encodable(text: str) -> str:
    """``text`` with each lone surrogate (which JSON and file names allow, but no UTF-8 output
    can hold) replaced by U+FFFD."""
    return text if text.isascii() else _SURROGATE.sub(REPLACEMENT, text)


def _encodable_json(data: object) -> object:
    """``data`` (parsed JSON) with every string, keys included, made :func:`encodable`."""
    if isinstance(data, str):
        return encodable(data)
    if isinstance(data, list):
        return [_encodable_json(item) for item in data]
    if isinstance(data, dict):
        return {encodable(key): _encodable_json(value) for key, value in data.items()}
    return data


def read_json_bounded(path: Path, what: str = "sidecar") -> object:
    """JSON from a regular file of at most MAX_READ_BYTES; RecordError naming ``path`` for
    anything else (a device, pipe, unreadable bytes, numbers beyond Python's limits, nesting
    too deep). FileNotFoundError passes through. Lone surrogates (``"\\ud800"``, valid JSON)
    come back as U+FFFD (:func:`encodable`), so any output of the data can be written."""
    mode = path.stat().st_mode  # FileNotFoundError for a missing or dangling path
    if not stat.S_ISREG(mode):
        raise RecordError(f"{path}: not a regular file; not a readable {what}")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
        if len(data) > MAX_READ_BYTES:
            raise RecordError(f"{path}: larger than {MAX_READ_BYTES >> 20} MiB; not a {what}")
        parsed = json.loads(data)
        return _encodable_json(parsed) if _SURROGATE_ESCAPE.search(data) else parsed
    except (OSError, ValueError, RecursionError) as error:
        raise RecordError(f"{path}: not a readable {what} ({type(error).__name__}: "
                          f"{str(error)[:120]})") from None


#: Key of a sidecar that says which notebook file it was made from (size, mtime, sha256).
SIDECAR_SOURCE_KEY = "sidecar_of"


def notebook_fingerprint(notebook: Path) -> dict[str, object]:
    """Size, modification time (ns) and SHA-256 of ``notebook``: what a sidecar is made from."""
    import hashlib

    stat = notebook.stat()
    with notebook.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}


def write_sidecar(notebook: Path, record: Mapping[str, object],
                  fingerprint: Mapping[str, object] | None = None) -> None:
    """Write ``record`` as the sidecar of ``notebook`` with the notebook's fingerprint (so a
    sidecar that no longer matches its notebook is ignored); no notebook: no fingerprint. The
    per-iteration seconds go to ``<point>.iterations.csv`` beside it."""
    data = dict(record)
    write_iterations(notebook, data)
    if fingerprint is None and notebook.is_file():
        fingerprint = notebook_fingerprint(notebook)
    if fingerprint is not None:
        data[SIDECAR_SOURCE_KEY] = dict(fingerprint)
    write_json_atomic(sidecar_path(notebook), data)


def _sidecar_matches(notebook: Path, source: object) -> bool:
    """Whether a sidecar's fingerprint still describes ``notebook``: same size and mtime, or
    the same size and content (a copy that lost its mtime)."""
    if not isinstance(source, dict):
        return False
    try:
        stat = notebook.stat()
        if stat.st_size != source.get("size"):
            return False
        if stat.st_mtime_ns == source.get("mtime_ns"):
            return True
        return notebook_fingerprint(notebook)["sha256"] == source.get("sha256")
    except OSError:
        return False


def _passed_over(notebook: Path, why: str) -> None:
    """Warn that a sidecar is passed over for ``notebook`` (when the notebook exists)."""
    if notebook.exists():
        log.warning("%s; reading the notebook", why)


def read_sidecar(notebook: Path) -> dict | None:
    """The record in ``notebook``'s sidecar when it is a usable one for this notebook, else
    None (missing, unreadable, not a JSON object, or made from another version of the
    notebook: each logged as a warning naming the file while there is a notebook to read;
    without one, the caller says why there is no record)."""
    sidecar = sidecar_path(notebook)
    try:
        data = read_json_bounded(sidecar)
    except FileNotFoundError:
        return None
    except RecordError as error:
        return _passed_over(notebook, str(error))
    if not isinstance(data, dict):
        return _passed_over(notebook, f"{sidecar}: sidecar holds {values.json_kind(data)}, "
                                      "not a record")
    if "schema_version" not in data:  # a foreign JSON object: the notebook has the record
        return _passed_over(notebook, f"{sidecar}: JSON without a schema_version: not a "
                                      "benchlib record (foreign file)")
    source = data.pop(SIDECAR_SOURCE_KEY, None)
    bad = values.problems(data)
    if bad:
        return _passed_over(notebook, f"{sidecar}: not a usable record ({'; '.join(bad)})")
    if not notebook.is_file():
        return data
    if source is None:  # sidecars of earlier versions: trusted while not older than the notebook
        try:
            if sidecar.stat().st_mtime >= notebook.stat().st_mtime:
                return data
        except OSError:
            pass
        return None
    if not _sidecar_matches(notebook, source):
        log.warning("%s: sidecar was made from another version of %s; reading the notebook",
                    sidecar, notebook.name)
        return None
    return data


RECORD_MIME = "application/vnd.benchlib.result+json"


def find_record(nb: Mapping) -> dict | None:
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            data = output.get("data") or {}
            if RECORD_MIME in data:
                return data[RECORD_MIME]
    return None
