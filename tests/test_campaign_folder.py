"""A campaign is its name and its folder (issue 54, item 5): a catalog selection names the
folder (``folder=PATH``), so two folders holding campaigns of one name are compared, and one
selection given twice says which folders it spans; ``benchlib sweep --campaign NAME`` names
each night, as docs/slurm.md's nightly recipe does."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest

from .conftest import ROOT
from .fakes import campaign, slower_copy
from .walk import benchlib, checked


def _two_folders(root: Path) -> Path:
    """One campaign (named ``fake``) in outputs/demo and a copy 20 % slower in
    elsewhere/demo, both in the catalog cat.sqlite."""
    campaign(root / "outputs" / "demo")
    slower_copy(root / "outputs" / "demo", root / "elsewhere" / "demo", 0.8)
    checked(root, "index", "outputs/demo", "elsewhere/demo", "--db", "cat.sqlite", "--quiet")
    return root


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_one_name_in_two_folders_is_compared_by_folder(tmp_path: Path) -> None:
    root = _two_folders(tmp_path)
    same = benchlib(root, "compare", "--db", "cat.sqlite", "--base", "campaign=fake",
                    "--new", "campaign=fake")
    assert same.returncode == 2, same.stdout + same.stderr
    said = " ".join(same.stderr.split())
    assert "a campaign compared with itself certifies nothing" in said
    assert "its records lie in 2 folders (elsewhere/demo, outputs/demo)" in said, said
    suggested = re.search(r'e\.g\. --base "([^"]+)" --new "([^"]+)"', said)
    assert suggested, said
    # what the error suggests runs, and tells the two apart: the copy is 20 % slower (one run
    # a side: each configuration unknown, exit 3, but compared: no longer bad input)
    told = benchlib(root, "compare", "--db", "cat.sqlite", "--base", suggested[2],
                    "--new", suggested[1])
    assert told.returncode == 3, told.stdout + told.stderr
    assert told.stdout.count("0.80x") == 12
    checked(root, "results", "--db", "cat.sqlite", "--where", "folder=elsewhere/demo",
            "--csv", "listed.csv")
    sources = pd.read_csv(root / "listed.csv")["source"]
    assert len(sources) == 13 and sources.str.contains("/elsewhere/demo/").all()


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_a_folder_that_holds_none_of_the_records_matches_nothing(tmp_path: Path) -> None:
    root = _two_folders(tmp_path)
    (root / "empty").mkdir()
    none = benchlib(root, "compare", "--db", "cat.sqlite", "--base", "folder=outputs/demo",
                    "--new", "folder=empty")
    assert none.returncode == 2
    assert "--new folder=empty: no records in the catalog" in " ".join(none.stderr.split())
    twice = benchlib(root, "compare", "--db", "cat.sqlite", "--base",
                     "folder=outputs/demo folder=elsewhere/demo", "--new", "folder=empty")
    assert twice.returncode == 2 and "folder= given 2 times" in twice.stderr


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_sweep_names_the_campaign_as_the_nightly_recipe_does(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "params", tmp_path / "params")
    dry = checked(tmp_path, "sweep", "params/fleet-nightly.yaml", "--dry-run", "--outputs",
                  "outputs/nightly", "--campaign", "nightly-2026-11-26")
    assert "campaign nightly-2026-11-26: 4 points -> outputs/nightly/nightly-2026-11-26" in dry
    bad = benchlib(tmp_path, "sweep", "params/fleet-nightly.yaml", "--dry-run", "--campaign",
                   "night 1")
    assert bad.returncode == 2 and "--campaign 'night 1' cannot name a campaign's folder" \
        in bad.stderr
    # docs/slurm.md's recipe names each night, and runs as written (a night's date for date)
    recipe = [line.strip() for line in (ROOT / "docs" / "slurm.md").read_text().splitlines()
              if line.strip().startswith("benchlib sweep params/fleet-nightly.yaml")]
    assert recipe and all("--campaign nightly-$(date -u +%F)" in line for line in recipe)
    words = shlex.split(recipe[0].replace("$(date -u +%F)", "2026-11-27"))
    assert words[0] == "benchlib"
    night = checked(tmp_path, *words[1:], "--dry-run")
    assert "-> outputs/nightly/nightly-2026-11-27" in night
