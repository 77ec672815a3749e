"""$BENCHLIB_DB as the commands read it: a relative catalog is where the command was typed."""

from __future__ import annotations

import os

import pytest


@pytest.mark.parametrize(("given", "expected"), [
    ("outputs/catalog.sqlite", "{cwd}/outputs/catalog.sqlite"),
    ("sqlite:///outputs/c.sqlite", "sqlite:///{cwd}/outputs/c.sqlite"),
    ("sqlite:////abs/c.sqlite", "sqlite:////abs/c.sqlite"),
    ("/abs/c.sqlite", "/abs/c.sqlite"),
    ("postgresql://u@h/db", "postgresql://u@h/db"),
])
def test_a_relative_catalog_means_where_the_command_was_typed(given, expected, tmp_path,
                                                              monkeypatch):
    """`BENCHLIB_DB=outputs/catalog.sqlite benchlib report outputs/x`: the report's kernels
    start in the campaign folder, so the command makes the path absolute before they start."""
    from benchlib.catalog import DB_ENV, anchor_configured

    monkeypatch.chdir(tmp_path)
    environ = {DB_ENV: given}
    anchor_configured(environ)
    assert environ[DB_ENV] == expected.format(cwd=tmp_path)


def test_the_command_line_anchors_the_catalog_for_what_it_starts(tmp_path, monkeypatch):
    from benchlib.catalog import DB_ENV
    from benchlib.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(DB_ENV, "outputs/catalog.sqlite")
    (tmp_path / "empty").mkdir()
    main(["results", "empty"])
    assert os.environ[DB_ENV] == str(tmp_path / "outputs" / "catalog.sqlite")
