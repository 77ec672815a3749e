"""benchlib diagnose after review: one campaign per setting, no CUDA ladder without a GPU, one
way of writing intervals, words a person would write, defaults said once, a short repr, the
estimate of a resumed ladder, and which statistic a speed is."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchlib.analysis import references
from benchlib.diagnosis import against_published as diagnose_others
from benchlib.diagnosis import analysis, ladder
from benchlib.diagnosis import plan as diagnose_plan
from benchlib.diagnosis import text as diagnose_text
from benchlib.diagnosis.defaults import DEFAULTS
from benchlib.diagnosis.waterfall import waterfall_plot
from benchlib.errors import InputError
from tests.fakes import write_record_notebook
from tests.test_diagnose import SLOW_DATA, _campaign, _found, _plan

ROOT = Path(__file__).resolve().parent.parent


def _request(tmp_path: Path, **values) -> diagnose_plan.DiagnoseRequest:
    folder = tmp_path / "jpegs"
    folder.mkdir(exist_ok=True)
    return diagnose_plan.request_from({"model": "resnet18", "data_dir": str(folder),
                                       "device": "cpu", "cores": 2, **values})


def test_each_setting_gets_its_own_default_campaign_and_the_same_resumes(tmp_path):
    one = diagnose_plan.plan(_request(tmp_path, num_workers=1))
    again = diagnose_plan.plan(_request(tmp_path, num_workers=1))
    none = diagnose_plan.plan(_request(tmp_path, num_workers=0))
    assert one.campaign == again.campaign and one.campaign.startswith("diagnose-resnet18-")
    assert none.campaign != one.campaign
    diagnose_plan.write_plan(one, tmp_path / "named")
    diagnose_plan.check_campaign(again, tmp_path / "named")  # the same command resumes
    with pytest.raises(InputError, match=r"--campaign .*other settings.*num_workers"):
        diagnose_plan.check_campaign(none, tmp_path / "named")


def test_an_explicit_campaign_with_other_settings_is_refused_before_running(tmp_path):
    first = _plan(tmp_path, workers=1, campaign="mine")
    diagnose_plan.write_plan(first, tmp_path / "out" / "mine")
    other = _plan(tmp_path, workers=2, campaign="mine")
    with pytest.raises(InputError, match="use another --campaign"):
        ladder.run_ladder(other, tmp_path / "out", say=None)
    assert diagnose_plan.read_plan(tmp_path / "out" / "mine") == first  # not overwritten


def test_the_analysis_uses_only_the_runs_of_its_own_plan(tmp_path):
    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA)
    # another setting run into the same folder (its runs are longer: other point ids)
    stranger = diagnose_plan.plan(_request(tmp_path, num_workers=2, repeats=3, budget_s=2000.0,
                                           campaign="dg"))
    rung = stranger.rungs[1]
    record = {"schema_version": 1, "campaign": plan.campaign, "benchmark": plan.benchmark,
              "model": plan.model, "num_devices": 1, "batch_size": plan.batch_size,
              "image_size": plan.image_size, "unit": "images/s", "status": "ok", "error": "",
              "throughput": 5000.0, "time_iteration_s": 0.01, "time_data_s": 0.0001,
              "synthetic_kind": "", "data_source": "", "flags": "",
              "point_id": sorted(stranger.point_ids()[rung.name])[0], **rung.match}
    assert rung.name == plan.rungs[1].name  # the same rung of another setting
    write_record_notebook(root / "stranger.ipynb", record)
    found = _found(root)
    assert len(found.best.speeds) == 3 and found.best.speed < 200


def test_cuda_on_a_machine_without_a_gpu_is_refused_before_anything_runs(tmp_path, monkeypatch,
                                                                          capsys):
    import torch

    from benchlib.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code = main(["diagnose", "--model", "resnet18", "--device", "cuda", "--outputs",
                 str(tmp_path / "out")])
    assert code == 2
    assert "--device cuda: torch sees no CUDA device here" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _wide(tmp_path: Path) -> analysis.Diagnosis:
    """A campaign whose ``memory-w1`` repeats disagree by a factor of a thousand."""
    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA)
    for i, path in enumerate(sorted(root.glob("*memory-w1*.ipynb"))):
        from benchlib.records.results import read_record

        record = read_record(path)
        record["throughput"] = [40.0, 0.04, 4000.0][i]
        path.unlink()
        path.with_suffix(".json").unlink(missing_ok=True)
        write_record_notebook(path, record)
    return _found(root)


def test_a_too_wide_interval_is_said_in_words_everywhere(tmp_path):
    found = _wide(tmp_path)
    decode = found.steps.set_index("step").loc["decode"]
    assert decode["known"]
    texts = [diagnose_text.loss_text(found.steps.iloc[1]), analysis.answer_text(found),
             diagnose_text.steps_frame(found.steps).to_string(),
             " ".join(t.get_text() for t in waterfall_plot(found).axes[0].texts)]
    for text in texts:
        assert "unknown: the repeats disagree" in text
        assert "-100428106%" not in text and "e+" not in text
    frame = diagnose_text.steps_frame(found.steps)
    assert not any(col.startswith(("loss 95", "share 95")) for col in frame.columns)
    # a normal interval reads the same in the table as on the console
    host = found.steps.iloc[0]
    shown = diagnose_text.steps_frame(found.steps).iloc[0]["change (95 % interval)"]
    assert shown in diagnose_text.loss_text(host)


def test_worker_counts_use_the_same_interval_words(tmp_path):
    from benchlib.diagnosis.text import switch_change

    assert switch_change({"ratio": 1.48, "low": 0.0, "high": 648.47}).startswith(
        "+48% (95 % interval unknown: the repeats disagree")
    assert switch_change({"ratio": 1.7, "low": 1.63, "high": 1.78}) == "+70% (+63% to +78%)"
    found = _found(_campaign(tmp_path, _plan(tmp_path), SLOW_DATA,
                             {"disk-w1": 0.6, "disk-w2": 0.3}))
    assert "(+" in analysis.answer_text(found).split("Worker counts:")[1]
    assert "x (" not in analysis.recommendation(found)


def test_no_internal_values_in_the_words(tmp_path):
    plan = _plan(tmp_path)
    text = diagnose_others.unmatched_text(plan, references.shipped())
    assert "None" not in text and "lm_train" not in text and "on this CPU" in text
    assert "resnet50 (batch 256, 224 px)" in text
    root = _campaign(tmp_path, plan, SLOW_DATA)
    for path in root.glob("*disk-w2*"):
        path.unlink()
    table = analysis.rungs_table(pd.concat([_load(root)]), plan).set_index("rung")
    assert table.loc["host-w1", "disturbed"] == "none"
    assert pd.isna(table.loc["disk-w2", "disturbed"]) and table.loc["disk-w2", "runs"] == 0


def _load(root: Path) -> pd.DataFrame:
    from benchlib.records.results import load

    return load(root)


def test_help_docs_and_plan_say_the_same_cpu_image_size(tmp_path):
    from benchlib.diagnosis.command import Diagnose

    parser = argparse.ArgumentParser()
    Diagnose.setup_arguments(parser.add_subparsers())
    help_text = " ".join(parser._subparsers._group_actions[0].choices["diagnose"]
                         .format_help().split())
    size = DEFAULTS["cpu"]["image_size"]
    assert f"default: {size} on a CPU" in help_text
    assert _plan(tmp_path).image_size == size
    assert f"{size} px images" in (ROOT / "docs" / "diagnose.md").read_text()


def test_a_diagnosis_prints_short(tmp_path):
    found = _found(_campaign(tmp_path, _plan(tmp_path), SLOW_DATA, {"memory-w1": 0.55}))
    assert len(repr(found)) < 200 and "DataFrame" not in repr(found)
    assert repr(found).startswith("<Diagnosis dg: resnet18 train")
    assert str(found) == analysis.recommendation(found)


def test_a_resumed_ladder_says_what_is_left(tmp_path):
    from benchlib.records.results import read_record
    from benchlib.records.store import write_sidecar

    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA)
    for path in root.glob("*.ipynb"):
        write_sidecar(path, read_record(path))
    left = ladder.points_left(plan, tmp_path)
    assert left == ["probe"]  # the fake campaign has every benchmark run, no probe
    text = ladder.describe_plan(plan, left)
    assert f"{len(plan.points()) - 1} of {len(plan.points())} points ran before, 1 left" in text
    assert "in all" not in text
    probe = write_record_notebook(root / f"{plan.points()[0][1].name}.ipynb", {
        "schema_version": 1, "campaign": plan.campaign, "benchmark": "probe_node",
        "status": "ok", "error": ""})
    write_sidecar(probe, read_record(probe))
    assert "nothing left to run" in ladder.describe_plan(plan, ladder.points_left(plan, tmp_path))
    assert "in all" in ladder.describe_plan(plan)


def test_the_speeds_say_which_statistic_they_are(tmp_path):
    found = _found(_campaign(tmp_path, _plan(tmp_path), SLOW_DATA))
    text = analysis.recommendation(found)
    assert text.count("(geometric mean of 3 runs)") == 1 and "geometric mean of 3 runs:" in text
    assert np.isclose(found.user.speed, np.exp(np.log(found.user.speeds).mean()))
