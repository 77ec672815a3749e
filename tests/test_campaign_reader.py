"""A campaign read again as it grows (diagnose's rounds): each read parses only the points new
or changed since the last, forgets those gone, and gives the table a full load gives."""

from __future__ import annotations

import os

import pandas as pd

from benchlib.diagnosis import analysis
from benchlib.records.campaign_reader import CampaignReader
from benchlib.records.results import load
from tests.fakes import write_record_notebook

from .test_diagnose import SLOW_DATA, _campaign, _plan


def _record(index: int, speed: float) -> dict:
    return {"schema_version": 1, "campaign": "grow", "benchmark": "train", "model": "resnet18",
            "num_devices": 1, "batch_size": 8, "unit": "images/s", "status": "ok", "error": "",
            "throughput": speed, "time_iteration_s": 8 / speed, "point_id": f"p{index}"}


def test_each_read_parses_only_the_new_points_and_equals_a_full_load(tmp_path):
    folder = tmp_path / "grow"
    for index in range(4):
        write_record_notebook(folder / f"p{index}.ipynb", _record(index, 100.0 + index))
    reader = CampaignReader(folder)
    first = reader.read()
    assert reader.parsed == 4 and len(first) == 4
    write_record_notebook(folder / "p4.ipynb", _record(4, 104.0))
    second = reader.read()
    assert reader.parsed == 5  # the four read before are not parsed again
    pd.testing.assert_frame_equal(second, load(folder))
    changed = folder / "p0.ipynb"
    write_record_notebook(changed, _record(0, 50.0))
    os.utime(changed, ns=(1, 1))  # a rewrite is seen by its time and size, whatever the clock
    (folder / "p1.ipynb").unlink()
    third = reader.read()
    assert reader.parsed == 6 and len(third) == 4
    assert set(third["throughput"]) == {50.0, 102.0, 103.0, 104.0}
    pd.testing.assert_frame_equal(third, load(folder))


def test_a_diagnosis_through_the_reader_is_the_one_a_full_load_gives(tmp_path):
    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA, {"disk-w1": 0.6, "disk-w2": 0.3})
    reader = CampaignReader(root)
    read = analysis.load_diagnosis(root, reader)
    again = analysis.load_diagnosis(root, reader)
    full = analysis.load_diagnosis(root)
    assert reader.parsed == len(list(root.glob("*.ipynb")))  # the second diagnosis parsed none
    assert analysis.answer_text(read) == analysis.answer_text(again) == analysis.answer_text(full)
    pd.testing.assert_frame_equal(read.steps, full.steps)
