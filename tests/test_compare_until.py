"""``benchlib compare BASE NEW --until-decided PARAMS``: an undecided comparison asks for more
campaigns of NEW; each is PARAMS swept once more into NEW's folder and judged with the others,
until every configuration is decided or --max-campaigns is spent. The sweeps here are planted
(each writes the records a campaign of the given speeds would); the planted 10 % slowdown and
A/A rounds are ``benchmarks/compare_until_planted.py``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchlib.cli import main
from benchlib.execute import executor as executors
from tests.fakes import write_record_notebook

RUN = {"schema_version": 1, "cluster": "c", "host": "n1", "gpu": "H100", "benchmark": "train",
       "model": "resnet50", "dataset": "synthetic", "precision": "fp32", "num_devices": 1,
       "num_nodes": 1, "unit": "images/s", "status": "ok", "error": "", "iterations": 50,
       "wall_time_s": 10.0, "batch_size": 32}
PARAMS = """campaign: new
notebook: train
base: {model: resnet18, batch_size: 4, iterations: 3, device: cpu, dataset: synthetic}
"""


def _campaign(folder: Path, speed: float) -> Path:
    for repeat, value in enumerate((speed, speed + 1, speed - 1)):
        write_record_notebook(folder / f"r{repeat}.ipynb", {**RUN, "campaign": folder.name,
                                                             "repeat": repeat, "throughput": value})
    return folder


class Planted:
    """An executor whose k-th sweep writes a campaign at the k-th of ``speeds``."""

    def __init__(self, speeds: list[float]) -> None:
        self.speeds, self.campaigns = list(speeds), []

    def __call__(self, settings: object) -> Planted:
        return self

    def check_runnable(self, sweep, outputs: Path, **_: object) -> None:
        """Every planted campaign can run here."""

    def submit_and_wait(self, sweep, outputs: Path, **_: object) -> list:
        self.campaigns.append(sweep.campaign)
        _campaign(outputs / sweep.campaign, self.speeds.pop(0))
        return []


@pytest.fixture
def sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """Three campaigns of BASE (1000, 1025, 985 images/s), one of NEW at 905, a params file."""
    base = tmp_path / "base"
    for name, speed in (("a0", 1000), ("a1", 1025), ("a2", 985)):
        _campaign(base / name, speed)
    params = tmp_path / "new.yaml"
    params.write_text(PARAMS)
    monkeypatch.chdir(tmp_path)
    return base, _campaign(tmp_path / "new" / "new", 905).parent, params


def test_an_undecided_slowdown_is_decided_by_the_campaigns_it_asks_for(
        sides: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    base, new, params = sides
    assert main(["compare", str(base), str(new)]) == 3  # one campaign of NEW: undecided
    assert "UNDECIDED" in capsys.readouterr().out
    planted = Planted([890, 912, 899])
    monkeypatch.setattr(executors, "executor_for", planted)
    code = main(["compare", str(base), str(new), "--until-decided", str(params)])
    out = capsys.readouterr().out
    assert code == 1 and "REGRESSION" in out, out
    assert "round 1 of at most 5: a campaign of NEW" in out and "round 2 of at most 5" in out
    assert "--until-decided: no configuration undecided after 2 rounds of campaigns" in out
    assert len(planted.campaigns) == 2 and all(c.startswith("new-more") for c in planted.campaigns)
    assert sorted(p.name for p in new.iterdir())[1:] == sorted(planted.campaigns)
    for path in new.iterdir():  # again, as a JSON document: the campaigns it swept, named
        if path.name != "new":
            shutil.rmtree(path)
    planted = Planted([890, 912, 899])
    monkeypatch.setattr(executors, "executor_for", planted)
    assert main(["compare", str(base), str(new), "--until-decided", str(params),
                 "--json", "compare.json"]) == 1
    document = json.loads(Path("compare.json").read_text())
    assert document["added_campaigns"] == [f"new/{c}" for c in planted.campaigns]
    assert document["configurations"][0]["verdict"] == "regression"


def test_the_budget_ends_the_campaigns_and_says_what_is_still_undecided(
        sides: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    base, new, params = sides
    monkeypatch.setattr(executors, "executor_for", Planted([1040]))  # the other way: no trend
    code = main(["compare", str(base), str(new), "--until-decided", str(params),
                 "--max-campaigns", "1"])
    out = capsys.readouterr().out
    assert code == 3, out
    assert "1 round of campaigns (--max-campaigns) and 1 configuration still undecided" in out


def test_bad_input_is_refused_before_any_campaign(
        sides: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    base, new, params = sides
    planted = Planted([900])
    monkeypatch.setattr(executors, "executor_for", planted)
    assert main(["compare", str(base), str(new), "--until-decided", str(params),
                 "--max-campaigns", "0"]) == 2
    assert "--max-campaigns 0: give 1 to 20" in capsys.readouterr().err
    assert main(["compare", str(base), str(new), "--until-decided", "missing.yaml"]) == 2
    assert main(["compare", "--db", "x.sqlite", "--base", "gpu=a", "--new", "gpu=b",
                 "--until-decided", str(params)]) == 2
    assert "give two folders (BASE NEW)" in capsys.readouterr().err
    assert main(["compare", "--until-decided", str(params)]) == 2  # was a TypeError, exit 1
    assert "give two results folders" in capsys.readouterr().err
    other = tmp_path / "other.yaml"  # another campaign's params: its runs would never pair
    other.write_text(PARAMS.replace("campaign: new", "campaign: other"))
    assert main(["compare", str(base), str(new), "--until-decided", str(other)]) == 2
    assert "its campaign 'other' is none of" in capsys.readouterr().err
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(PARAMS.replace("device: cpu", "device: cuda"))
    monkeypatch.undo()  # the executors as they are: this machine's checks
    monkeypatch.chdir(tmp_path)
    if not __import__("torch").cuda.is_available():  # refused before the first comparison
        assert main(["compare", str(base), str(new), "--until-decided", str(gpu)]) == 2
        captured = capsys.readouterr()
        assert "ask for device cuda" in captured.err and "UNDECIDED" not in captured.out
    assert planted.campaigns == [] and sorted(p.name for p in new.iterdir()) == ["new"]


class PlantedSides(Planted):
    """A planted executor whose sweeps into BASE's folder run at 1000 images/s."""

    def submit_and_wait(self, sweep, outputs: Path, **_: object) -> list:
        self.campaigns.append(f"{outputs.name}/{sweep.campaign}")
        _campaign(outputs / sweep.campaign, 1000 if outputs.name == "base" else self.speeds.pop(0))
        return []


def test_where_each_side_needs_campaigns_base_params_runs_base_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """One campaign a side and no catalog: '3 campaigns a side' would tell; NEW alone cannot
    (BASE's own campaign noise stays unknown), BASE's params file sweeps BASE again."""
    base = _campaign(tmp_path / "base" / "base", 1000).parent
    new = _campaign(tmp_path / "new" / "new", 900).parent
    params, base_params = tmp_path / "new.yaml", tmp_path / "base.yaml"
    params.write_text(PARAMS)
    base_params.write_text(PARAMS.replace("campaign: new", "campaign: base"))
    monkeypatch.chdir(tmp_path)
    planted = PlantedSides([895, 903, 899, 901, 900])
    monkeypatch.setattr(executors, "executor_for", planted)
    code = main(["compare", str(base), str(new), "--until-decided", str(params),
                 "--base-params", str(base_params)])
    out = capsys.readouterr().out
    assert code == 1 and "REGRESSION" in out, out
    assert "a campaign of NEW and one of BASE" in out
    assert any(c.startswith("base/base-more") for c in planted.campaigns), planted.campaigns
    assert len(list(base.iterdir())) > 1
    for option in (["--base-params", str(base_params)], ["--max-campaigns", "3"]):
        assert main(["compare", str(base), str(new), *option]) == 2
        assert f"{option[0]}: give it with --until-decided" in capsys.readouterr().err
