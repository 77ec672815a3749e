"""The results catalog: ``benchlib index`` into SQLite (always) and PostgreSQL (a real server:
``BENCHLIB_TEST_POSTGRES``, set by .ci/run; skipped only where it is unset), read back as the
same table ``benchlib.load(folder)`` makes; incremental, idempotent, safe to interrupt, one
indexer at a time, faults named."""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

import benchlib
from benchlib.catalog import database, ingest, lock, migrate, select, tables
from benchlib.errors import CatalogBusyError, CatalogError
from benchlib.records.store import write_json_atomic

from .fakes import campaign, write_record_notebook

POSTGRES_ENV = "BENCHLIB_TEST_POSTGRES"
pytestmark = pytest.mark.xdist_group("catalog_postgres")

NEW = {"schema_version": 2, "campaign": "night", "cluster": "jade2", "host": "node017",
       "gpu": "V100", "device_name": "Tesla V100", "benchmark": "train", "model": "resnet50",
       "dataset": "synthetic", "batch_size": 64, "precision": "amp_fp16", "num_devices": 1,
       "num_nodes": 1, "num_workers": 4, "channels_last": True, "compile": "none",
       "throughput": 812.5, "unit": "images/s", "time_iteration_s": 0.0787,
       "time_forward_s": 0.03, "time_preprocess_s": None, "iterations": 50, "warmup": 5,
       "wall_time_s": 3.9, "peak_memory_bytes": 2**33, "status": "ok", "flags": "",
       "error": "", "run_id": "ab" * 16, "started_at": "2026-09-25T20:00:00+00:00",
       "ended_at": "2026-09-25T20:00:04+00:00", "env_driver": "580.65", "env_cuda": "12.8",
       "decode_workers": [2, 4], "site_note": "anything", "seed": 3.0}


def _new(index: int, **changes: object) -> dict:
    return {**NEW, "run_id": f"{index:032x}", "throughput": 800.0 + index,
            "started_at": f"2026-09-{10 + index:02d}T20:00:00+00:00", **changes}


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    """A fresh catalog: a SQLite file, or a PostgreSQL schema of its own on the test server."""
    if request.param == "sqlite":
        yield str(tmp_path / "catalog.sqlite")
        return
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_ENV} is not set (.ci/run starts a server and sets it)")
    name = f"t_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(database.resolve(url).url)
    with engine.begin() as connection:
        connection.execute(sa.text(f"CREATE SCHEMA {name}"))
    yield f"{url}?options=-csearch_path%3D{name}"
    with engine.begin() as connection:
        connection.execute(sa.text(f"DROP SCHEMA {name} CASCADE"))
    engine.dispose()


@pytest.fixture
def folder(tmp_path):
    """A campaign of fake notebooks (schema 1, a failed run) plus schema-2 sidecars with lists,
    NULLs, env_* values, a column the schema does not know and a value of another type."""
    root = campaign(tmp_path / "outputs" / "fake")
    for index in range(3):
        write_json_atomic(root / "night" / f"train-{index}.json", _new(index))
    return tmp_path / "outputs"


def _index(roots, db, **options):
    return ingest.index([Path(r) for r in roots], database.resolve(db), say=lambda _: None,
                        **options)


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("source", kind="stable").reset_index(drop=True)


def _count(db: str, table: sa.Table) -> int:
    engine = database.engine(database.resolve(db))
    with engine.connect() as connection:
        found = connection.execute(sa.select(sa.func.count()).select_from(table)).scalar()
    engine.dispose()
    return int(found)


def test_the_catalog_gives_the_table_the_folder_gives(db, folder):
    summary = _index([folder], db)
    assert summary.records == 16 and not summary.skipped
    from_folder = benchlib.load(folder)
    from_catalog = benchlib.load(db=db)  # in the order indexed: the scan's
    pd.testing.assert_frame_equal(from_catalog, from_folder)
    assert list(from_catalog.columns) == list(from_folder.columns)
    assert from_catalog["decode_workers"].dropna().iloc[0] == [2, 4]
    assert from_catalog["seed"].dropna().iloc[0] == 3.0  # a float in an int column: kept as is


def test_selections_pick_rows_by_column_and_time(db, folder):
    _index([folder], db)
    night = benchlib.load(db=db, where={"cluster": "jade2", "gpu": "V100"})
    assert len(night) == 3 and set(night["campaign"]) == {"night"}
    assert len(benchlib.load(db=db, where={"num_devices": [2, 4]})) == 8
    assert len(benchlib.load(db=db, where={"env_driver": "580.65"})) == 3  # a family column
    window = benchlib.load(db=db, since="2026-09-11", until="2026-09-12T20:00:00")
    assert list(window["run_id"]) == [f"{1:032x}"]
    same = benchlib.load(folder, where={"cluster": "jade2"}, since="2026-09-11")
    assert len(same) == 2
    from benchlib.records.run_table import RunTable

    for selected in (night, window, same):  # a selection is the table a whole folder gives
        assert isinstance(selected, RunTable) and len(selected.tidy()) == len(selected)
    with pytest.raises(CatalogError, match=r"unknown column 'gpu_model'.*allowed: .*cluster"):
        benchlib.load(db=db, where={"gpu_model": "V100"})
    with pytest.raises(CatalogError, match="num_devices='four'"):
        select.parse("num_devices=four")
    with pytest.raises(CatalogError, match="no closing quotation; quote a value"):
        select.parse("host='node 001 gpu=H100")
    with pytest.raises(CatalogError, match=r"unknown column 'since'.*own argument") as told:
        benchlib.load(db=db, where={"since": "2026-09-11"})
    assert ", since, until" not in str(told.value)  # not listed as a key it refuses


def test_a_folder_reached_through_a_symbolic_link_is_indexed_once(db, folder, tmp_path):
    (tmp_path / "link").symlink_to(folder, target_is_directory=True)
    first = _index([folder], db)
    again = _index([tmp_path / "link"], db)
    assert again.read == 0 and again.unchanged == first.looked and again.removed == 0
    assert len(benchlib.load(db=db)) == len(benchlib.load(folder))


def test_compare_counts_a_run_indexed_from_two_folders_once(db, folder, tmp_path):
    import shutil

    _index([folder], db)
    alone = [len(f) for _, f in select.pair(db, "until=2026-09-11", "since=2026-09-11")]
    shutil.copytree(folder / "fake" / "night", tmp_path / "copy" / "night")
    assert _index([tmp_path / "copy"], db).records == 3
    both = [len(f) for _, f in select.pair(db, "until=2026-09-11", "since=2026-09-11")]
    assert both == alone and alone[0] == 1


def test_since_and_until_compare_times_not_text(db, tmp_path):
    root = tmp_path / "tz"
    times = {"east": "2026-09-26T01:00:00+05:00",   # the 25th, 20:00 UTC
             "west": "2026-09-25T20:00:00-05:00",   # the 26th, 01:00 UTC
             "utc": "2026-09-26T00:00:00Z", "spaced": "2026-09-26 23:00:00"}
    for index, (name, when) in enumerate(times.items()):
        write_json_atomic(root / "night" / f"{name}.json", _new(index, started_at=when))
    _index([root], db)
    for read in (lambda **kw: benchlib.load(db=db, **kw), lambda **kw: benchlib.load(root, **kw)):
        assert len(read(since="2026-09-26")) == 3 and len(read(until="2026-09-26")) == 1
        assert len(read(since="2026-09-26T00:30", until="2026-09-27")) == 2


def test_a_second_index_of_an_unchanged_tree_reads_nothing(db, folder):
    _index([folder], db)
    before = _sorted(benchlib.load(db=db))
    again = _index([folder], db)
    assert (again.read, again.unchanged, again.removed) == (0, 16, 0)
    pd.testing.assert_frame_equal(_sorted(benchlib.load(db=db)), before)
    changed = folder / "fake" / "night" / "train-1.json"
    write_json_atomic(changed, _new(1, throughput=1.0))
    (folder / "fake" / "night" / "train-2.json").unlink()
    third = _index([folder], db)
    assert (third.read, third.removed, third.unchanged) == (1, 1, 14)
    frame = benchlib.load(db=db, where={"campaign": "night"})
    assert sorted(frame["throughput"]) == [1.0, 800.0]
    assert _count(db, tables.RECORDS) == 15 and _count(db, tables.SOURCES) == 15


def test_corrupt_and_foreign_sidecars_are_skipped_and_named(db, folder):
    (folder / "fake" / "broken.json").write_text('{"schema_version": 2, "cam')
    (folder / "fake" / "other-tool.json").write_text(json.dumps({"hello": "world"}))
    write_json_atomic(folder / "fake" / "bad.json", {**NEW, "throughput": "fast"})
    summary = _index([folder], db)
    named = "\n".join(summary.skipped)
    assert "broken.json: not a readable sidecar" in named
    assert "other-tool.json: JSON without a schema_version" in named
    assert "bad.json" in named and "throughput" in named
    assert summary.records == 16 and len(summary.skipped) == 3
    assert len(_index([folder], db).skipped) == 3  # still named, not read again


def test_an_interrupted_index_leaves_whole_batches(db, folder, monkeypatch):
    real, calls = tables.to_row, []

    def interrupted(record):
        calls.append(record)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(record)

    monkeypatch.setattr(tables, "to_row", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _index([folder], db, batch=2)
    monkeypatch.setattr(tables, "to_row", real)
    assert _count(db, tables.RECORDS) == 4 and _count(db, tables.SOURCES) == 4
    summary = _index([folder], db, batch=2)
    assert summary.unchanged == 4 and summary.records == 12
    pd.testing.assert_frame_equal(_sorted(benchlib.load(db=db)), _sorted(benchlib.load(folder)))


def test_an_interrupted_transaction_rolls_back_whole(db, folder, monkeypatch):
    _index([folder], db)
    before = _sorted(benchlib.load(db=db))
    for index in range(3):
        write_json_atomic(folder / "fake" / "night" / f"train-{index}.json",
                          _new(index, throughput=1.0))
    real = ingest._forget

    def forget_then_stop(connection, paths):
        real(connection, paths)  # the old records deleted inside the batch's transaction
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest, "_forget", forget_then_stop)
    with pytest.raises(KeyboardInterrupt):
        _index([folder], db)
    monkeypatch.setattr(ingest, "_forget", real)
    pd.testing.assert_frame_equal(_sorted(benchlib.load(db=db)), before)  # rolled back
    assert _index([folder], db).read == 3
    assert set(benchlib.load(db=db, where={"campaign": "night"})["throughput"]) == {1.0}


def test_a_catalog_an_older_benchlib_made_names_the_columns_it_lacks(tmp_path, folder):
    """Same schema version, fewer columns (a benchlib before a column was added): readers say
    which columns and how to migrate, never "schema 2, this benchlib 2"."""
    db = str(tmp_path / "older.sqlite")
    _index([folder], db)
    engine = database.engine(database.resolve(db))
    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE records DROP COLUMN pressure_io_share"))
    engine.dispose()
    with pytest.raises(CatalogError, match=r"lacks 1 record column this benchlib writes "
                                           r"\(pressure_io_share\).*benchlib index ROOT"):
        benchlib.load(db=db)
    said = []
    ingest.index([folder], database.resolve(db), say=said.append)
    assert "(1 column added)" in said[0]
    assert len(benchlib.load(db=db)) == len(benchlib.load(folder))


def test_an_older_catalog_is_refused_then_migrated(tmp_path, folder):
    db = str(tmp_path / "old.sqlite")
    _index([folder], db)
    engine = database.engine(database.resolve(db))
    with engine.begin() as connection:  # as a catalog of schema 1 was: no run_id column
        connection.execute(sa.text("DROP INDEX ix_records_run_id"))
        connection.execute(sa.text("ALTER TABLE records DROP COLUMN run_id"))
        connection.execute(sa.update(tables.META).values(value="1"))
    engine.dispose()
    with pytest.raises(CatalogError, match=r"follows record schema 1.*benchlib index ROOT\.\.\. "
                                           r"--db"):
        benchlib.load(db=db)
    said = []
    summary = ingest.index([folder], database.resolve(db), say=said.append)
    assert "migrated from record schema 1 to 2" in said[0] and summary.read == 16
    pd.testing.assert_frame_equal(_sorted(benchlib.load(db=db)), _sorted(benchlib.load(folder)))
    with engine.begin() as connection:
        connection.execute(sa.update(tables.META).values(value="99"))
    with pytest.raises(CatalogError, match="newer than this benchlib"):
        benchlib.load(db=db)
    with engine.begin() as connection:
        connection.execute(sa.update(tables.META).values(value="abc"))  # damaged by hand
    for read in (lambda: benchlib.load(db=db), lambda: _index([folder], db)):
        with pytest.raises(CatalogError, match=r"record_schema_version 'abc', not a version"):
            read()


def test_no_catalog_yet_says_how_to_make_one(tmp_path):
    with pytest.raises(CatalogError, match=r"no catalog at .*benchlib index ROOT"):
        benchlib.load(db=str(tmp_path / "none.sqlite"))


def test_a_second_indexer_waits_and_says_so(db, folder):
    catalog = database.resolve(db)
    engine = database.engine(catalog)
    with engine.begin() as connection:
        migrate.prepare(connection, catalog, print)
    said: list[str] = []
    with lock.indexer_lock(catalog, engine, print):
        worker = threading.Thread(target=lambda: ingest.index([folder], catalog,
                                                              say=said.append))
        worker.start()
        time.sleep(1.5)
        assert len(said) == 1 and "another benchlib index is writing" in said[0]
        assert _count(db, tables.RECORDS) == 0
    worker.join(60)
    assert "waited" in said[1] and _count(db, tables.RECORDS) == 16
    with lock.indexer_lock(catalog, engine, print), pytest.raises(CatalogBusyError) as busy:
        ingest.index([folder], catalog, say=said.append, wait_s=0.6)
    waited = re.search(r"after (\d+\.\d) s;", str(busy.value))  # 0.6 s is not said "1 s"
    assert waited and float(waited.group(1)) >= 0.6, busy.value
    engine.dispose()


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path):
    catalog = database.resolve("postgresql://bench:s3cr3t-pw@127.0.0.1:1/catalog")
    assert "s3cr3t" not in catalog.shown
    with pytest.raises(CatalogError) as raised:
        ingest.index([tmp_path], catalog)
    assert "cannot use the catalog postgresql+psycopg://bench:***@127.0.0.1:1/catalog" \
        in str(raised.value)
    assert "s3cr3t" not in str(raised.value)


def test_a_password_in_the_query_and_a_malformed_url_never_show_the_password(tmp_path):
    catalog = database.resolve("postgresql://bench@127.0.0.1:1/catalog?password=s3cr3t-pw")
    assert "s3cr3t" not in catalog.shown and "password=***" in catalog.shown
    with pytest.raises(CatalogError) as raised:
        ingest.index([tmp_path], catalog)
    assert "cannot use the catalog" in str(raised.value) and "s3cr3t" not in str(raised.value)
    for url in ("postgresql://bench:s3cr3t-pw@127.0.0.1:notaport/catalog",
                "postgresql://bench:s3cr3t-pw@[::1:1/catalog"):
        with pytest.raises(CatalogError, match="is not a database URL") as raised:
            database.resolve(url)
        assert "s3cr3t" not in str(raised.value)


def test_the_default_catalog_and_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHLIB_OUTPUTS", str(tmp_path / "out"))
    monkeypatch.delenv(database.DB_ENV, raising=False)
    assert database.resolve().path == tmp_path / "out" / "catalog.sqlite"
    monkeypatch.setenv(database.DB_ENV, str(tmp_path / "site.sqlite"))
    assert database.resolve().path == tmp_path / "site.sqlite"
    assert database.resolve("x.sqlite").path == Path.cwd() / "x.sqlite"
    with pytest.raises(CatalogError, match="'mysql' is not supported; allowed: a file path"):
        database.resolve("mysql://u:p@h/db")


def test_a_row_keeps_every_value_and_the_key_order():
    record = {**NEW, "source": "/x/a.ipynb", "big": 2**70, "nan": float("nan"), "none": None}
    back = tables.from_row(tables.to_row(record))
    assert list(back) == list(record)
    assert back["big"] == 2**70 and back["none"] is None and back["nan"] != back["nan"]
    assert back["decode_workers"] == [2, 4] and back["seed"] == 3.0


def test_index_a_campaign_of_failed_and_old_records_from_the_notebooks(db, tmp_path):
    root = campaign(tmp_path / "c")
    write_record_notebook(root / "train-new.ipynb", _new(7))
    _index([root], db)
    frame = benchlib.load(db=db)
    assert set(frame["status"]) == {"ok", "failed"} and frame["run_id"].notna().sum() == 2


def test_a_folder_is_told_from_its_look_alikes(db, tmp_path):
    """Indexing outputs/a removes nothing of outputs/a-b, outputs/A or outputs/a_ (LIKE's
    wildcards and SQLite's case-blind LIKE kept out)."""
    for name in ("a", "a-b", "A", "a_", "a%"):
        write_json_atomic(tmp_path / "o" / name / "train-0.json", _new(len(name)))
    _index([tmp_path / "o"], db)
    (tmp_path / "o" / "a" / "train-0.json").unlink()
    summary = _index([tmp_path / "o" / "a"], db)
    assert (summary.removed, summary.looked) == (1, 0)
    assert _count(db, tables.RECORDS) == 4
    assert _index([tmp_path / "o"], db).unchanged == 4


def test_another_application_s_database_is_refused_untouched(db, folder):
    """An app's own tables (one named `records` too) and no catalog_meta: the index refuses,
    names what it found, and writes nothing, the second time as the first."""
    engine = sa.create_engine(database.resolve(db).url)
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE records (id INTEGER, note TEXT)"))
        connection.execute(sa.text("CREATE TABLE users (id INTEGER)"))
    before = sa.inspect(engine).get_table_names()
    for _ in range(2):
        with pytest.raises(CatalogError, match=r"not a benchlib catalog: it holds other tables "
                                               r"\(records, users\)"):
            _index([folder], db)
    inspector = sa.inspect(engine)
    assert inspector.get_table_names() == before
    assert [c["name"] for c in inspector.get_columns("records")] == ["id", "note"]
    engine.dispose()


def test_file_names_that_are_not_utf8_are_indexed_distinct_and_named(db, folder):
    """A corrupt sidecar named with a byte that is not UTF-8 is skipped and named (not an
    "unexpected UnicodeEncodeError" that stops the index), and two good runs whose names
    differ only in such bytes stay two sources (not "UNIQUE constraint failed")."""
    night = os.fsencode(folder / "fake" / "night")
    with open(os.path.join(night, b"broken-\xff.json"), "w") as out:
        out.write('{"schema_version": 2, "cam')
    for byte, index in ((b"\xff", 7), (b"\xfe", 8)):
        write_json_atomic(Path(os.fsdecode(os.path.join(night, b"run-" + byte + b".json"))),
                          _new(index))
    summary = _index([folder], db)
    assert summary.records == 18
    assert any("broken-" in line and "not a readable sidecar" in line for line in summary.skipped)
    sources = benchlib.load(db=db)["source"]
    assert {s for s in sources if "run-\\x" in s} == {
        str(folder / "fake" / "night" / "run-\\xff.ipynb"),
        str(folder / "fake" / "night" / "run-\\xfe.ipynb")}


def test_a_damaged_row_is_left_out_and_named_not_a_crash(db, folder, caplog):
    _index([folder], db)
    engine = sa.create_engine(database.resolve(db).url)
    with engine.begin() as connection:
        first = connection.execute(sa.select(sa.func.min(tables.RECORDS.c[tables.ROW_ID]))).scalar()
        connection.execute(sa.update(tables.RECORDS).where(tables.RECORDS.c[tables.ROW_ID] == first)
                           .values({tables.EXTRA: "{"}))
    engine.dispose()
    frame = benchlib.load(db=db)
    assert len(frame) == 15  # 16 records, one damaged
    assert "is damaged (JSONDecodeError): left out" in caplog.text


def test_a_very_long_indexed_value_is_stored_whole_on_every_database(db, tmp_path):
    """A record with a 9,000-character host: PostgreSQL's index would refuse its row (8,191
    bytes at most) and the batch with it; every record is stored, the host comes back whole."""
    import random

    host = "".join(random.Random(0).choices("abcdefghijklmnopqrstuvwxyz0123456789", k=9000))
    root = tmp_path / "outputs" / "long"  # random text: PostgreSQL cannot compress it to fit
    for index in range(6):
        record = _new(index)
        if index == 3:
            record["host"] = host
        write_json_atomic(root / f"train-{index}.json", record)
    assert _index([tmp_path / "outputs"], db).records == 6
    hosts = benchlib.load(db=db)["host"]
    assert host in set(hosts)
