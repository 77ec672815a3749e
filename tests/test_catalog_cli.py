"""The catalog as users meet it: ``benchlib index``, ``benchlib results --db`` and ``benchlib
compare --base ... --new ...`` as subprocesses with relative paths, and the commands that keep
the catalog up to date (``$BENCHLIB_DB``) never failing for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from benchlib.catalog import index_quietly
from benchlib.records.store import RECORD_MIME

from .fakes import campaign, slower_copy

ROOT = Path(__file__).resolve().parent.parent
BENCHLIB = str(Path(sys.executable).with_name("benchlib"))
SECRET = "s3cr3t-pw"


def benchlib(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    if "BENCHLIB_DB" not in env:
        environ.pop("BENCHLIB_DB", None)
    return subprocess.run([BENCHLIB, *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Two campaigns of one configuration set: ``fake`` on cluster c1, ``slow`` (0.8 x)."""
    root = tmp_path_factory.mktemp("cli")
    campaign(root / "outputs" / "fake")
    slower_copy(root / "outputs" / "fake", root / "outputs" / "slow", 0.8)
    for path in (root / "outputs" / "slow").glob("*.ipynb"):  # another cluster's campaign
        notebook = nbformat.read(path, as_version=4)
        for output in notebook.cells[0].get("outputs", []):
            record = output.get("data", {}).get(RECORD_MIME)
            if record:
                record.update(cluster="tn", campaign="slow")
        nbformat.write(notebook, str(path))
    return root


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_index_then_list_and_compare_with_relative_paths(outputs):
    first = benchlib(outputs, "index", "outputs", "--db", "cat.sqlite")
    assert first.returncode == 0, first.stderr
    said = " ".join(first.stdout.split())  # the line as said, before it was wrapped
    assert "26 points looked at" in said and "26 read (26 records written)" in said
    again = " ".join(benchlib(outputs, "index", "outputs", "--db", "cat.sqlite").stdout.split())
    assert "0 read" in again and "26 unchanged" in again
    listed = benchlib(outputs, "results", "--db", "cat.sqlite", "--where", "num_devices=4",
                      "--where", "dataset=real")
    assert listed.returncode == 0, listed.stderr
    assert "4 runs" in listed.stdout  # batch 32 and 64 in each campaign
    compared = benchlib(outputs, "compare", "--db", "cat.sqlite", "--base", "cluster=c1 gpu=H100",
                        "--new", "cluster=tn gpu=H100")
    assert compared.returncode == 3, compared.stderr  # one run a side: cannot certify
    assert "NEW / BASE throughput per configuration (above 1 is better)" in compared.stdout
    assert "0.8" in compared.stdout


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_bad_keys_and_selections_exit_2_naming_them(outputs):
    benchlib(outputs, "index", "outputs", "--db", "cat.sqlite")
    bad = benchlib(outputs, "results", "--db", "cat.sqlite", "--where", "gpu_model=V100")
    assert bad.returncode == 2 and "unknown column 'gpu_model'; allowed: " in bad.stderr
    assert "cluster" in bad.stderr and "Traceback" not in bad.stderr
    same = benchlib(outputs, "compare", "--db", "cat.sqlite", "--base", "gpu=H100",
                    "--new", "gpu=H100")
    assert same.returncode == 2 and "select the same records" in same.stderr
    word = benchlib(outputs, "compare", "--db", "cat.sqlite", "--base", "H100", "--new", "x=1")
    assert word.returncode == 2 and "'H100' is not KEY=VALUE" in word.stderr
    none = benchlib(outputs, "compare", "--db", "cat.sqlite", "--base", "gpu=A40", "--new",
                    "gpu=H100")
    assert none.returncode == 2 and "--base gpu=A40: no records" in none.stderr
    empty = benchlib(outputs, "compare", "--db", "cat.sqlite", "--base", "", "--new", "gpu=H100")
    assert empty.returncode == 2 and "--base is empty: it would select every record" in empty.stderr


@pytest.mark.slow  # 2.5-4.6 s: in make test, out of the edit loop
def test_an_unreachable_server_is_exit_2_without_the_password(outputs):
    url = f"postgresql://bench:{SECRET}@127.0.0.1:1/catalog"
    for args in (("index", "outputs", "--db", url), ("results", "--db", url)):
        found = benchlib(outputs, *args)
        said = found.stdout + found.stderr
        assert found.returncode == 2, said
        assert "cannot use the catalog postgresql+psycopg://bench:***@127.0.0.1:1/catalog" in said
        assert SECRET not in said and "Traceback" not in said


def test_commands_keep_the_configured_catalog_up_to_date_and_never_fail_for_it(outputs,
                                                                                monkeypatch):
    said: list[str] = []
    monkeypatch.delenv("BENCHLIB_DB", raising=False)
    index_quietly(outputs / "outputs" / "fake", say=said.append)
    assert said == []  # no catalog configured: nothing done, nothing said
    monkeypatch.setenv("BENCHLIB_DB", f"postgresql://bench:{SECRET}@127.0.0.1:1/catalog")
    index_quietly(outputs / "outputs" / "fake", say=said.append)
    assert len(said) == 1 and said[0].startswith("catalog postgresql+psycopg://bench:***@")
    assert "not updated: cannot use the catalog" in said[0] and SECRET not in said[0]
    monkeypatch.setenv("BENCHLIB_DB", str(outputs / "auto.sqlite"))
    index_quietly(outputs / "outputs" / "fake", say=said.append)
    assert "13 read (13 records written)" in said[1]


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_index_names_what_is_not_a_folder(outputs):
    missing = benchlib(outputs, "index", "nowhere", "--db", "cat.sqlite")
    assert missing.returncode == 2 and "'nowhere' does not exist" in missing.stderr
    for wait in ("-1", "nan"):
        bad = benchlib(outputs, "index", "outputs", "--db", "cat.sqlite", "--wait", wait)
        assert bad.returncode == 2 and f"--wait {wait}: give the seconds" in bad.stderr
    (outputs / "file.txt").write_text("x")
    a_file = benchlib(outputs, "index", "file.txt", "--db", "cat.sqlite")
    assert a_file.returncode == 2 and "not a folder" in a_file.stderr


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_a_catalog_in_a_missing_folder_is_refused_and_a_new_default_one_is_said(outputs,
                                                                                tmp_path):
    """`--db` naming a file in a folder that does not exist is bad input naming the folder (it
    made the folder and exited 0); a catalog made at the default place (the working folder's
    outputs/, which depends on where the command runs) is said, with how to read it from
    elsewhere; indexing into it again says nothing more."""
    missing = benchlib(outputs, "index", "outputs/fake", "--db", "no/such/dir/cat.sqlite")
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert f"the folder {outputs / 'no' / 'such' / 'dir'} does not exist" in missing.stderr
    assert "mkdir -p" in missing.stderr and not (outputs / "no").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environ = {k: v for k, v in os.environ.items() if k not in ("BENCHLIB_DB", "BENCHLIB_OUTPUTS")}
    environ.update(PYTHONPATH=str(ROOT), COLUMNS="100")

    def index() -> subprocess.CompletedProcess:
        return subprocess.run([BENCHLIB, "index", str(outputs / "outputs" / "fake")], cwd=elsewhere,
                              env=environ, capture_output=True, text=True, timeout=300)

    first = index()
    catalog = elsewhere / "outputs" / "catalog.sqlite"
    assert first.returncode == 0 and catalog.is_file(), first.stdout + first.stderr
    said = " ".join(first.stdout.split())
    assert f"note: a new catalog, {catalog}, since neither --db nor $BENCHLIB_DB named one" in said
    assert f"export BENCHLIB_DB={catalog}" in said
    again = index()
    assert again.returncode == 0 and "new catalog" not in again.stdout, again.stdout


def test_a_sweep_without_a_catalog_does_not_import_sqlalchemy(tmp_path):
    """A node with a minimal install (no SQLAlchemy) runs sweeps: the catalog is imported only
    where one is configured."""
    code = ("import sys; from benchlib.catalog import index_quietly; "
            f"index_quietly({str(tmp_path)!r}); assert 'sqlalchemy' not in sys.modules, 'imported'")
    environ = {k: v for k, v in os.environ.items() if k != "BENCHLIB_DB"}
    done = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_the_calendar_s_ends_select_everything_not_an_overflow(outputs):
    assert benchlib(outputs, "index", "outputs", "--db", "ends.sqlite").returncode == 0
    dated = benchlib(outputs, "results", "--db", "ends.sqlite", "--since", "1970-01-01")
    for bounds in (("--since", "0001-01-01"), ("--until", "9999-12-31"),
                   ("--since", "0001-01-01T00:00+05:00")):
        listed = benchlib(outputs, "results", "--db", "ends.sqlite", *bounds)
        assert listed.returncode == 0 and "unexpected" not in listed.stderr, (bounds, listed.stderr)
        assert listed.stdout.splitlines()[-1] == dated.stdout.splitlines()[-1]  # every dated run


@pytest.mark.slow  # 2.5-4.6 s: in make test, out of the edit loop
def test_an_integer_beyond_64_bits_is_refused_naming_the_column(outputs):
    assert benchlib(outputs, "index", "outputs", "--db", "big.sqlite").returncode == 0
    listed = benchlib(outputs, "results", "--db", "big.sqlite", "--where",
                      "num_devices=99999999999999999999999")
    assert listed.returncode == 2 and "num_devices=" in listed.stderr
    assert "< 2^53" in listed.stderr and "unexpected" not in listed.stderr
    from benchlib import load
    from benchlib.errors import CatalogError

    with pytest.raises(CatalogError, match="batch_size"):
        load(db=str(outputs / "big.sqlite"), where={"batch_size": 2**70})


def test_results_without_a_folder_says_how_to_read_the_configured_catalog(monkeypatch, capsys,
                                                                         tmp_path):
    from benchlib.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCHLIB_DB", "outputs/catalog.sqlite")
    assert main(["results"]) == 2
    assert "--db alone reads the one $BENCHLIB_DB names" in capsys.readouterr().err


def test_a_folder_given_to_db_is_named_as_a_folder(tmp_path: Path, cli) -> None:
    (tmp_path / "outputs").mkdir()
    code, _out, err = cli(tmp_path, "fleet", "--db", "outputs")
    assert code == 2 and "outputs: a folder, not a catalog file" in err
    assert "make it with" not in err  # following that advice could only fail
