"""``benchlib compare`` certifies only what it compared: campaigns of different benchmarks or
units are bad input, a comparison that judged nothing cannot certify (exit 3, saying why), and
a campaign compared with itself (the same folder, a link to it, links to its notebooks, a copy
of its runs) is bad input; ``analysis.compare_campaigns`` gives the same outcome as the command."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from benchlib import analysis
from benchlib.analysis import gate
from benchlib.cli import main
from benchlib.compare import regression
from benchlib.errors import EXIT_BAD_INPUT, EXIT_UNCERTIFIED, InputError
from benchlib.records.results import load
from tests.fakes import write_record_notebook

RUN = {"schema_version": 1, "cluster": "c", "host": "n1", "gpu": "H100", "benchmark": "train",
       "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16", "num_devices": 1,
       "num_nodes": 1, "unit": "images/s", "status": "ok", "error": "", "iterations": 50,
       "wall_time_s": 10.0}
LM = {"benchmark": "lm_train", "model": "gpt2-small", "unit": "tokens/s"}


def _campaign(root: Path, speeds: list[float], **changes: object) -> Path:
    for repeat, speed in enumerate(speeds):
        write_record_notebook(root / f"r{repeat}.ipynb",
                              {**RUN, "campaign": root.name, "batch_size": 32, "repeat": repeat,
                               "throughput": speed, **changes})
    return root


def _compare(capsys: pytest.CaptureFixture, *args: object) -> tuple[int, str]:
    code = main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_different_benchmarks_or_units_are_not_compared(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    images = _campaign(tmp_path / "images", [1000.0, 1010.0, 990.0])
    tokens = _campaign(tmp_path / "tokens", [1.0, 1.01, 0.99], **LM)
    code, out = _compare(capsys, tokens, images)
    assert code == EXIT_BAD_INPUT, out
    assert "REGRESSION" not in out and "benchmark" in out
    assert "lm_train" in out and "train" in out and "tokens/s" in out and "images/s" in out
    same_benchmark = _campaign(tmp_path / "voxels", [1.0, 1.01, 0.99], unit="voxels/s")
    code, out = _compare(capsys, images, same_benchmark)
    assert code == EXIT_BAD_INPUT and "unit" in out and "voxels/s" in out, out
    with pytest.raises(InputError, match="benchmark"):
        analysis.compare_campaigns(load(tokens), load(images))


def test_nothing_judged_cannot_certify_and_says_why(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    base = _campaign(tmp_path / "base", [1000.0, 1010.0], batch_size=32)
    new = _campaign(tmp_path / "new", [1000.0, 1010.0], batch_size=64, dataset="real")
    write_record_notebook(new / "r2.ipynb", {**RUN, "campaign": "new", "batch_size": 32,
                                             "dataset": "synthetic", "throughput": 5.0,
                                             "repeat": 0, "precision": "fp32"})
    code, out = _compare(capsys, base, new)
    assert code == EXIT_UNCERTIFIED, out
    assert "no configuration in common" in out and "0 configurations judged" not in out
    compared = analysis.compare_campaigns(load(base), load(new)).table
    assert gate.exit_code("compare", compared["verdict"]) == EXIT_UNCERTIFIED
    assert set(compared["verdict"]) == {"only in base", "only in new"}
    assert gate.exit_code("compare", []) == EXIT_UNCERTIFIED  # no rows


def test_some_configurations_judged_still_pass(tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    base = _campaign(tmp_path / "base", [1000.0, 1010.0, 990.0])
    new = _campaign(tmp_path / "new", [1001.0, 1009.0, 992.0])
    write_record_notebook(new / "extra.ipynb", {**RUN, "campaign": "new", "batch_size": 64,
                                                "throughput": 1500.0, "repeat": 0})
    code, out = _compare(capsys, base, new)
    assert code == 0, out
    assert "1 configuration judged" in out


@pytest.mark.parametrize("how", ["same path", "linked folder", "hard-linked notebooks"])
def test_a_campaign_against_itself_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                how: str) -> None:
    base = _campaign(tmp_path / "base", [1000.0, 1010.0, 990.0])
    if how == "same path":
        new = base
    elif how == "linked folder":
        new = tmp_path / "link"
        new.symlink_to(base, target_is_directory=True)
    else:
        new = tmp_path / "new"
        new.mkdir()
        for notebook in base.glob("*.ipynb"):
            os.link(notebook, new / notebook.name)
    code, out = _compare(capsys, base, new)
    assert code == EXIT_BAD_INPUT, out
    assert "same" in out and "certifies nothing" in out and "no change" not in out
    with pytest.raises(InputError, match="certifies nothing"):
        analysis.compare_campaigns(load(base), load(new))


def test_a_folder_of_links_to_the_base_notebooks_has_no_records(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Links inside a campaign are never read (records.results.scan), so a folder of links to
    the base's notebooks is an empty campaign: bad input, nothing certified."""
    base = _campaign(tmp_path / "base", [1000.0, 1010.0, 990.0])
    new = tmp_path / "new"
    new.mkdir()
    for notebook in base.glob("*.ipynb"):
        (new / notebook.name).symlink_to(notebook)
    code, out = _compare(capsys, base, new)
    assert code == EXIT_BAD_INPUT, out
    assert "no result records" in out and "no change" not in out


def test_the_same_frame_twice_is_bad_input_from_python() -> None:
    frame = pd.DataFrame([{**RUN, "campaign": "a", "batch_size": 32, "throughput": v,
                           "repeat": i, "source": f"/a/r{i}.ipynb"}
                          for i, v in enumerate([1000.0, 1010.0])])
    with pytest.raises(InputError, match="certifies nothing"):
        regression.compare(frame, frame)
    other = frame.assign(source=[f"/b/r{i}.ipynb" for i in range(2)])
    assert list(regression.compare(frame, other).table["verdict"]) == ["no change"]


def test_a_copy_of_a_campaign_is_compared(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Two folders holding equal records of schema 1 (no run id) are two campaigns."""
    base = _campaign(tmp_path / "base", [1000.0, 1010.0, 990.0])
    copy = tmp_path / "copy"
    copy.mkdir()
    for notebook in base.glob("*.ipynb"):
        (copy / notebook.name).write_bytes(notebook.read_bytes())
    code, out = _compare(capsys, base, copy)
    assert code == 0 and "no change" in out, out


def test_a_copy_of_the_same_runs_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture
                                              ) -> None:
    """Records that carry their run's id (schema 2): a copied folder holds the same runs, and
    comparing them would certify 'no change' from one set of runs (exit 2, saying so)."""
    base = tmp_path / "base"
    for repeat, speed in enumerate([1000.0, 1010.0, 990.0]):
        write_record_notebook(base / f"r{repeat}.ipynb", {
            **RUN, "schema_version": 2, "run_id": f"{repeat:032x}", "campaign": "base",
            "batch_size": 32, "repeat": repeat, "throughput": speed})
    copy = tmp_path / "copy"
    copy.mkdir()
    for notebook in base.glob("*.ipynb"):
        (copy / notebook.name).write_bytes(notebook.read_bytes())
    code, out = _compare(capsys, base, copy)
    assert code == EXIT_BAD_INPUT and "copies of the same runs (3 of 3" in out, out
    assert "no change" not in out


@pytest.mark.parametrize("flag", ["", "contended"])
def test_new_runs_at_zero_are_a_regression_whatever_their_flags(
        tmp_path: Path, capsys: pytest.CaptureFixture, flag: str) -> None:
    """Contention can slow a run, not stop it: a new campaign at 0 regressed (exit 1), never
    'cannot certify' because its zeros gave no interval."""
    base = _campaign(tmp_path / "base", [1000.0, 1010.0, 990.0])
    new = _campaign(tmp_path / "new", [0.0, 0.0, 0.0], flags=flag, contended=bool(flag))
    code, out = _compare(capsys, base, new)
    assert code == 1, out
    assert "REGRESSION" in out and "did no work" in out and "CANNOT CERTIFY" not in out


def test_a_report_baseline_that_certifies_nothing_is_refused_before_building(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``benchlib report X --baseline X`` (or a baseline of another benchmark) is refused up
    front naming --baseline, as compare refuses the pair; nothing is built."""
    base = _campaign(tmp_path / "base", [1000.0, 1010.0, 990.0])
    lm = _campaign(tmp_path / "lm", [5000.0, 5100.0], **LM)
    for baseline, said in ((base, "same runs"), (tmp_path / "base" / ".", "same runs"),
                           (lm, "not comparable")):
        assert main(["report", str(base), "--baseline", str(baseline)]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert "--baseline" in err and said in err, err
        assert not (base / "report").exists()


def test_nothing_in_common_names_the_column_that_keeps_every_pair_apart_first() -> None:
    """Two campaigns that differ in num_workers only (0 -> 1) where the base also ran more
    devices: num_workers is named first (no value in common), not the columns that overlap."""
    import pandas as pd

    from benchlib.compare import regression

    def runs(campaign: str, workers: int, devices: tuple[int, ...], benchmark: str = "train",
             model: str = "resnet18") -> pd.DataFrame:
        return pd.DataFrame([{"campaign": campaign, "benchmark": benchmark, "model": model,
                              "gpu": "cpu", "unit": "images/s", "status": "ok",
                              "num_workers": workers, "num_devices": d, "batch_size": b,
                              "throughput": 100.0 + i, "repeat": i}
                             for d in devices for b in (16, 32) for i in range(2)])

    base = pd.concat([runs("demo", 0, (1, 2)), runs("demo", 2, (1,)),
                      runs("demo", 0, (1,), "inference", "resnet50")], ignore_index=True)
    compared = regression.compare(base, runs("nu-w1", 1, (1,)))
    said = regression.summary(compared)[-1]
    assert said.startswith("NOTHING CERTIFIED: no configuration in common (num_workers: base "
                           "0, 2, new 1"), said
