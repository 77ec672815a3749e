"""What the CLI writes for other programs is safe to open: CSV exports run no formula and survive
any text, JUnit XML is well-formed whatever it carries, both are written whole or not at all;
bad ``--metric`` / ``--references`` / results paths are bad input (exit 2)."""

from __future__ import annotations

import builtins
import csv
import errno
import io
import os
import socket
import stat
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from benchlib.analysis import junit
from benchlib.cli import main
from benchlib.errors import InputError
from benchlib.records.csv_export import csv_bytes, neutralize

from .conftest import ROOT
from .fakes import write_record_notebook

BENCHLIB = str(ROOT / ".venv" / "bin" / "benchlib")
RUN = {"schema_version": 1, "campaign": "c", "cluster": "c1", "host": "n1", "gpu": "H100",
       "benchmark": "train", "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16",
       "num_devices": 1, "num_nodes": 1, "batch_size": 32, "unit": "images/s", "status": "ok",
       "error": "", "iterations": 50, "wall_time_s": 10.0, "throughput": 1000.0}
#: Text no XML 1.0 document may hold, and a terminal colour escape.
BAD_TEXT = "a\x01b\x0bc\x1b[31mred\x1b[0m d\x00e"
#: Put in a record's text, then made a lone surrogate in the notebook's JSON (``\ud800``).
SURROGATE = "SURROGATE"
FORMULAS = {"model": '=HYPERLINK("http://evil.example","click")',
            "cluster": "-2+3+cmd|' /C calc'!A0", "gpu": "@SUM(A1:A2)", "dataset": "\t=1+1",
            "host": "\r=cmd", "precision": "+fp32", "=evil": "header"}


def _notebook(path: Path, record: dict) -> Path:
    """A record notebook; every ``SURROGATE`` in its text becomes a lone surrogate."""
    write_record_notebook(path, record)
    path.write_text(path.read_text(encoding="utf-8").replace(SURROGATE, "\\ud800"),
                    encoding="utf-8")
    return path


def _benchlib(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([BENCHLIB, *args], capture_output=True, text=True, cwd=cwd,
                          check=False, encoding="utf-8", errors="replace")


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """A folder whose files take half of what is written, then fail with ENOSPC (as on a full
    disk), whichever way they are opened (``open``, ``os.fdopen``)."""
    folder: list[Path] = []
    real_open = builtins.open

    class Full:
        def __init__(self, handle) -> None:
            self._handle = handle

        def write(self, data):
            self._handle.write(data[: len(data) // 2])
            self._handle.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name: str):
            return getattr(self._handle, name)

        def __iter__(self):
            return iter(self._handle)

        def __enter__(self):
            return self

        def __exit__(self, *exc: object) -> None:
            self._handle.close()

    def where(file: object) -> Path:
        if isinstance(file, int):
            return Path(os.readlink(f"/proc/self/fd/{file}"))
        return Path(os.fspath(file)).absolute()  # type: ignore[arg-type]

    def full_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        writing = any(flag in mode for flag in "wax+")
        if writing and folder and where(file).parent == folder[0]:
            return Full(handle)
        return handle

    def start(path: Path) -> None:
        folder.append(path.absolute())
        monkeypatch.setattr(builtins, "open", full_open)
        monkeypatch.setattr(io, "open", full_open)

    return start


def _assert_kept(folder: Path, target: Path, before: str) -> None:
    assert target.read_text() == before
    assert sorted(p.name for p in folder.iterdir()) == [target.name]  # no temp file left


# --- 2: CSV exports -----------------------------------------------------------------------------

def test_csv_export_runs_no_formula_and_keeps_numbers(tmp_path: Path) -> None:
    campaign = tmp_path / "c"
    _notebook(campaign / "a.ipynb", {**RUN, **FORMULAS, "offset": -3.5,
                                     "result_loss": "-3.5", "result_note": f"x{SURROGATE}y"})
    _notebook(campaign / "b.ipynb", {**RUN, "offset": 2.0, "result_loss": "1e-3"})
    done = _benchlib("results", "c", "--csv", "records.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "records.csv").read_bytes().decode("utf-8")  # valid UTF-8 throughout
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, first = rows[0], dict(zip(rows[0], rows[1], strict=True))
    assert "'=evil" in header and "=evil" not in header
    assert first["'=evil"] == "header"
    for column, value in FORMULAS.items():
        if column in header:  # a CR in record text loads as U+FFFD (no control character)
            assert first[column] == ("'" + value if value[0] != "\r" else "\ufffd" + value[1:])
    assert first["offset"] == "-3.5"  # a number stays a number
    assert first["result_loss"] == "-3.5"  # so does text that is only a number
    assert first["result_note"] in ("x?y", "x\ufffdy")  # the lone surrogate, replaced
    assert len(rows) == 3


def test_csv_cells_are_neutralized_only_where_text_starts_a_formula() -> None:
    frame = pd.DataFrame({"x": [-3.5, 1.0], "n": pd.array([-2, None], dtype="Int64"),
                          "t": ["=1+1", "plain"], "m": [-1.5, "@x"]})
    safe = neutralize(frame)
    assert safe["x"].tolist() == [-3.5, 1.0] and safe["x"].dtype == frame["x"].dtype
    assert safe["n"].dtype == frame["n"].dtype
    assert safe["t"].tolist() == ["'=1+1", "plain"] and safe["m"].tolist() == [-1.5, "'@x"]
    assert frame["t"].tolist() == ["=1+1", "plain"]  # the caller's frame is left alone
    assert csv_bytes(pd.DataFrame({"a": ["\ud800"]})) == b"a\r\n?\r\n"


def test_results_print_text_the_terminal_cannot_encode(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from benchlib.records import results

    frame = pd.DataFrame([{**RUN, "model": "x\ud800y"}])
    monkeypatch.setattr(results, "load", lambda path: frame)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict, as a real terminal's
    monkeypatch.setattr("sys.stdout", out)
    assert main(["results", str(tmp_path)]) == 0
    out.flush()
    assert "x?y" in out.buffer.getvalue().decode()  # type: ignore[attr-defined]


def test_csv_export_on_a_full_disk_keeps_the_previous_file(tmp_path: Path, disk_full,
                                                          capsys: pytest.CaptureFixture) -> None:
    _notebook(tmp_path / "c" / "a.ipynb", RUN)
    out = tmp_path / "out"
    out.mkdir()
    target = out / "records.csv"
    target.write_text("the previous export\n")
    disk_full(out)
    assert main(["results", str(tmp_path / "c"), "--csv", str(target)]) == 1
    assert "no space left on device" in capsys.readouterr().err
    _assert_kept(out, target, "the previous export\n")


def test_csv_export_into_a_missing_folder_is_bad_input(tmp_path: Path) -> None:
    _notebook(tmp_path / "c" / "a.ipynb", RUN)
    done = _benchlib("results", "c", "--csv", "no/such/records.csv", cwd=tmp_path)
    assert done.returncode == 2 and "--csv no/such/records.csv" in done.stderr
    assert not (tmp_path / "no").exists()


# --- 3 and 4: JUnit XML ------------------------------------------------------------------------

def _xml_texts(path: Path) -> str:
    """Every attribute and text of the (well-formed) XML file, joined."""
    root = ET.parse(path).getroot()
    return "".join([*(v for e in root.iter() for v in e.attrib.values()),
                    *(e.text or "" for e in root.iter())])


def test_junit_is_well_formed_whatever_text_it_carries(tmp_path: Path) -> None:
    cases = [junit.Case(f"cls{BAD_TEXT}\ud800", f"name{BAD_TEXT}", "failure",
                        f"msg{BAD_TEXT}\udfff", f"details{BAD_TEXT}\ud83d"),
             junit.Case("ok", "fine", "passed")]
    path = junit.write(tmp_path / "x.xml", f"suite{BAD_TEXT}", cases)
    texts = _xml_texts(path)
    assert "red" in texts and "details" in texts and "msg" in texts and "suite" in texts
    assert [bad for bad in ("\x1b", "[31m", "[0m", "\x01", "\x0b", "\x00") if bad in texts] == []


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_cli_junit_is_well_formed_with_bad_text_in_references_and_errors(tmp_path: Path) -> None:
    campaign = tmp_path / "c"
    _notebook(campaign / "good.ipynb", RUN)
    _notebook(campaign / "oom.ipynb", {**RUN, "status": "failed", "throughput": None,
                                       "error": f"\x1b[31mCUDA out of memory\x1b[0m\x01{SURROGATE}"})
    (tmp_path / "refs.yaml").write_text(
        'references:\n  - name: "H100 \\e[1mbold\\e[0m \\x01"\n'
        "    match: {gpu: H100}\n    metric: throughput\n    value: 2000\n    lower: -0.1\n"
        "    unit: images/s\n    source: a test\n", encoding="utf-8")
    done = _benchlib("check", "c", "--references", "refs.yaml", "--junit", "check.xml",
                     cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    texts = _xml_texts(tmp_path / "check.xml")
    assert "CUDA out of memory" in texts and "H100 bold" in texts
    assert "\x1b" not in texts and "[31m" not in texts and "\x01" not in texts

    base, new = tmp_path / "base", tmp_path / "new"
    for folder, speed in ((base, 1000.0), (new, 500.0)):
        for repeat in range(2):
            _notebook(folder / f"r{repeat}.ipynb", {**RUN, "gpu": f"H1\x1b[2J00{SURROGATE}",
                                                    "throughput": speed + repeat, "repeat": repeat})
    done = _benchlib("compare", "base", "new", "--junit", "compare.xml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    texts = _xml_texts(tmp_path / "compare.xml")
    assert "gpu=H100" in texts and "\x1b" not in texts and "[2J" not in texts


def test_junit_on_a_full_disk_keeps_the_previous_file(tmp_path: Path, disk_full,
                                                     capsys: pytest.CaptureFixture) -> None:
    base, new = tmp_path / "base", tmp_path / "new"
    for folder, speed in ((base, 1000.0), (new, 500.0)):
        for repeat in range(2):
            _notebook(folder / f"r{repeat}.ipynb", {**RUN, "throughput": speed + repeat,
                                                    "repeat": repeat})
    out = tmp_path / "out"
    out.mkdir()
    target = out / "compare.xml"
    target.write_text("<previous/>")
    disk_full(out)
    assert main(["compare", str(base), str(new), "--junit", str(target)]) == 2  # not a verdict
    assert "no space left on device" in capsys.readouterr().err
    _assert_kept(out, target, "<previous/>")
    with pytest.raises(InputError, match="no space left on device"):
        junit.write(target, "s", [junit.Case("a", "b", "passed")])
    _assert_kept(out, target, "<previous/>")


# --- 5 and 6: bad input is exit 2 with a clear message -----------------------------------------

@pytest.mark.parametrize("metric", ["nosuchcolumn", "model", "batch_size", "repeat"])
def test_compare_metric_must_be_a_numeric_measurement(tmp_path: Path, cli, metric: str) -> None:
    for folder in ("base", "new"):
        for repeat in range(2):
            _notebook(tmp_path / folder / f"r{repeat}.ipynb", {**RUN, "repeat": repeat})
    code, _, err = cli(tmp_path, "compare", "base", "new", "--metric", metric)
    assert code == 2, err
    assert f"--metric {metric}" in err and "unexpected" not in err
    assert "numeric measurement columns of these records: throughput" in err


def test_check_with_a_params_file_as_references_says_what_a_references_file_is(
        tmp_path: Path) -> None:
    _notebook(tmp_path / "c" / "a.ipynb", RUN)
    done = _benchlib("check", str(tmp_path / "c"), "--references", "params/demo.yaml")
    assert done.returncode == 2
    assert "params/demo.yaml: not a references file" in done.stderr
    assert "references:" in done.stderr and "docs/acceptance.md" in done.stderr
    assert "unknown parameter" not in done.stderr


@pytest.mark.parametrize("command", [["results", "params/demo.yaml"],
                                     ["check", "params/demo.yaml"],
                                     ["compare", "params/demo.yaml", "params/demo.yaml"]])
def test_a_file_that_is_not_a_notebook_is_not_a_results_folder(command: list[str]) -> None:
    done = _benchlib(*command)
    assert done.returncode == 2, done.stderr
    assert "params/demo.yaml: not a results folder" in done.stderr
    assert "WARNING" not in done.stderr


# --- 7: --csv / --junit never replace what they are pointed at ----------------------------------

def _device(folder: Path, name: str, minor: int) -> Path:
    """A private character device with /dev/null's (minor 3) or /dev/full's (7) numbers."""
    node = folder / name
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except PermissionError:
        pytest.skip("mknod is not permitted here (not root, or a container without CAP_MKNOD)")
    return node


def _is_device(node: Path, minor: int) -> bool:
    info = os.lstat(node)
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, minor)


@pytest.fixture
def one_run(tmp_path: Path) -> Path:
    return _notebook(tmp_path / "c" / "a.ipynb", RUN).parent


@pytest.fixture
def two_campaigns(tmp_path: Path) -> tuple[Path, Path]:
    base, new = tmp_path / "base", tmp_path / "new"
    for folder, speed in ((base, 1000.0), (new, 1001.0)):
        for repeat in range(2):
            _notebook(folder / f"r{repeat}.ipynb", {**RUN, "throughput": speed + repeat,
                                                    "repeat": repeat})
    return base, new


def test_csv_and_junit_write_into_a_character_device_and_keep_it(
        tmp_path: Path, one_run: Path, two_campaigns: tuple[Path, Path],
        capsys: pytest.CaptureFixture) -> None:
    null = _device(tmp_path, "null", 3)
    link = tmp_path / "link"
    link.symlink_to(null)
    assert main(["results", str(one_run), "--csv", str(null)]) == 0
    assert main(["results", str(one_run), "--csv", str(link)]) == 0
    assert main(["compare", *map(str, two_campaigns), "--junit", str(null)]) == 0
    assert main(["check", str(one_run), "--junit", str(link)]) == 3  # nothing judged
    assert _is_device(null, 3) and link.is_symlink() and os.readlink(link) == str(null)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "c", "link", "new", "null"]
    capsys.readouterr()


def test_a_full_device_fails_the_export_and_stays_a_device(
        tmp_path: Path, one_run: Path, capsys: pytest.CaptureFixture) -> None:
    full = _device(tmp_path, "full", 7)
    assert main(["results", str(one_run), "--csv", str(full)]) == 1
    assert f"no space left on device: {full}" in capsys.readouterr().err
    assert _is_device(full, 7)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_csv_into_a_fifo_is_written_in_place(tmp_path: Path, one_run: Path,
                                             capsys: pytest.CaptureFixture) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there: the write goes on
    try:
        assert main(["results", str(one_run), "--csv", str(fifo)]) == 0
        received = os.read(reader, 1 << 20)
    finally:
        os.close(reader)
    assert received.startswith(b"schema_version,") and b"resnet50" in received
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # no reader: said at once (never a hang), and the FIFO stays
    assert main(["results", str(one_run), "--csv", str(fifo)]) == 1
    assert "no process reads" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_csv_to_a_link_to_standard_output_goes_to_standard_output(tmp_path: Path,
                                                                  one_run: Path) -> None:
    """A private link to /proc/self/fd/1, as /dev/stdout is: the CSV comes out of the pipe."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    done = _benchlib("results", "c", "--csv", str(link), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "schema_version," in done.stdout and link.is_symlink()


def test_a_link_to_a_regular_file_keeps_the_link(tmp_path: Path, one_run: Path) -> None:
    target = tmp_path / "exports" / "records.csv"
    target.parent.mkdir()
    target.write_text("the previous export\n")
    link = tmp_path / "latest.csv"
    link.symlink_to(target)
    assert main(["results", str(one_run), "--csv", str(link)]) == 0
    assert link.is_symlink() and target.read_text().startswith("schema_version,")


def _socket(folder: Path) -> Path:
    path = folder / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


def _block(folder: Path) -> Path:
    path = folder / "disk"
    try:
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    except PermissionError:
        pytest.skip("mknod is not permitted here (not root, or a container without CAP_MKNOD)")
    return path


@pytest.mark.parametrize(("make", "what"), [(_socket, "a socket"), (_block, "a block device"),
                                            (lambda f: f, "a folder")])
@pytest.mark.parametrize("through_link", [False, True])
def test_sockets_block_devices_and_folders_are_bad_input(
        tmp_path: Path, one_run: Path, two_campaigns: tuple[Path, Path],
        capsys: pytest.CaptureFixture, make: Callable[[Path], Path], what: str,
        through_link: bool) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    node = make(scratch)
    before = os.lstat(node)
    path = node
    if through_link:
        path = tmp_path / "link"
        path.symlink_to(node)
    assert main(["results", str(one_run), "--csv", str(path)]) == 2
    assert f"--csv {path}: is {what}" in capsys.readouterr().err
    assert main(["compare", *map(str, two_campaigns), "--junit", str(path)]) == 2
    assert f"--junit {path}: is {what}" in capsys.readouterr().err
    after = os.lstat(node)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino,
                                                            before.st_rdev)
    assert path.is_symlink() == through_link


def test_the_writer_itself_never_replaces_a_special_file(tmp_path: Path) -> None:
    """Whoever calls it (a sidecar, a ledger): a socket is refused, a FIFO without a reader
    too, never replaced."""
    from benchlib.errors import OutputError
    from benchlib.records.store import write_bytes_atomic

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (_socket(tmp_path), fifo):
        with pytest.raises(OutputError, match=str(path)):
            write_bytes_atomic(path, b"x")
    assert stat.S_ISSOCK(os.lstat(tmp_path / "sock").st_mode)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_internal_write_replaces_a_planted_link_and_never_follows_it(tmp_path: Path) -> None:
    """A sidecar path that is a link to a file elsewhere: the link is replaced by the record,
    the file it pointed at is untouched (a planted link cannot send a record outside its
    campaign); a character device there is refused, never written."""
    from benchlib.errors import OutputError
    from benchlib.records.store import write_bytes_atomic

    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("mine")
    link = tmp_path / "campaign" / "point.json"
    link.parent.mkdir()
    link.symlink_to(elsewhere)
    write_bytes_atomic(link, b"{}")
    assert not link.is_symlink() and link.read_bytes() == b"{}"
    assert elsewhere.read_text() == "mine"
    device = _device(tmp_path, "null", 3)
    with pytest.raises(OutputError, match="character device"):
        write_bytes_atomic(device, b"x")
    assert _is_device(device, 3)
